"""Write one tensor as ``torch.save`` writes it, without torch: for tests and the msprobe sample.

msprobe's PyTorch dumps hold one ``.pt`` file per tensor (``torch.save`` of a contiguous,
detached tensor). The bytes written here are the bytes torch 2.13 writes for a contiguous CPU
tensor (``bench/check_torch_write.py`` compares them with real torch):

* a zip archive of stored (uncompressed) records named ``{archive}/...``, where ``archive`` is
  the file name without its last suffix (``Functional.linear.0.forward.input.0`` for
  ``...input.0.pt``), or ``archive`` when the path is not ASCII, as torch names it;
* every record's data starts at a multiple of 64 bytes: its local header carries an extra field
  ``FB`` padded with ``Z``; a record with data has a data descriptor (flag bit 3) after it;
* records in torch's order: ``data.pkl``, ``.format_version`` (``1``), ``.storage_alignment``
  (``64``), ``byteorder`` (``little``), ``data/0`` (the raw little-endian elements),
  ``version`` (``3\\n``), ``.data/serialization_id``; then the central directory, a zip64 end
  record and locator, and the classic end record;
* ``data.pkl`` is pickle protocol 2: ``torch._utils._rebuild_tensor_v2(storage, 0, shape,
  stride, False, OrderedDict())`` with the storage as the persistent id ``("storage",
  torch.HalfStorage, "0", "cpu", numel)``; dtypes without a typed storage (uint16/32/64,
  float8) use ``_rebuild_tensor_v3`` with an ``UntypedStorage`` of ``nbytes`` and the dtype
  (``torch.uint16``) as a last argument.

The pickle is written opcode by opcode: nothing here imports torch or pickles an object.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from ..errors import PrecisionToolError


@dataclass(frozen=True)
class TorchDType:
    """One torch dtype: its name, numpy dtype, and the typed storage torch pickles it with."""

    name: str  # "float16": torch.float16
    numpy: np.dtype
    storage: str | None  # "HalfStorage"; None: an UntypedStorage and _rebuild_tensor_v3

    @property
    def text(self) -> str:
        """How msprobe writes it in dump.json: ``str(tensor.dtype)``."""
        return f"torch.{self.name}"


def _t(name: str, dtype, storage: str | None) -> tuple[str, TorchDType]:
    return name, TorchDType(name, np.dtype(dtype), storage)


TORCH_DTYPES = dict(
    (
        _t("float16", np.float16, "HalfStorage"),
        _t("bfloat16", ml_dtypes.bfloat16, "BFloat16Storage"),
        _t("float32", np.float32, "FloatStorage"),
        _t("float64", np.float64, "DoubleStorage"),
        _t("int8", np.int8, "CharStorage"),
        _t("uint8", np.uint8, "ByteStorage"),
        _t("int16", np.int16, "ShortStorage"),
        _t("int32", np.int32, "IntStorage"),
        _t("int64", np.int64, "LongStorage"),
        _t("bool", np.bool_, "BoolStorage"),
        _t("complex64", np.complex64, "ComplexFloatStorage"),
        _t("complex128", np.complex128, "ComplexDoubleStorage"),
        _t("uint16", np.uint16, None),
        _t("uint32", np.uint32, None),
        _t("uint64", np.uint64, None),
        _t("float8_e4m3fn", ml_dtypes.float8_e4m3fn, None),
        _t("float8_e5m2", ml_dtypes.float8_e5m2, None),
        _t("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, None),
        _t("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, None),
    )
)
_BY_NUMPY = {d.numpy: d for d in TORCH_DTYPES.values()}

ALIGNMENT = 64  # torch's storage alignment inside the archive
FORMAT_VERSION = b"1"
ARCHIVE_VERSION = b"3\n"
_NAME_HASH_SEED = 0xC70F6907  # libstdc++'s std::hash<std::string> seed
_MASK = (1 << 64) - 1


def torch_dtype(array_or_name) -> TorchDType:
    """The torch dtype of a numpy dtype, array, or name (``"bfloat16"``, ``"torch.bfloat16"``)."""
    if isinstance(array_or_name, str):
        name = array_or_name.removeprefix("torch.")
        if name in TORCH_DTYPES:
            return TORCH_DTYPES[name]
        raise PrecisionToolError(f"no torch dtype {array_or_name!r}")
    dtype = np.dtype(getattr(array_or_name, "dtype", array_or_name))
    try:
        return _BY_NUMPY[dtype.newbyteorder("=")]
    except KeyError:
        raise PrecisionToolError(f"torch has no dtype for numpy {dtype}") from None


# --- data.pkl ------------------------------------------------------------------------------------


class _Pickle:
    """Protocol-2 opcodes, memoising what Python's pickler memoises (strings, globals, tuples,
    reduce results) so the stream matches torch's byte for byte."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")  # PROTO 2
        self.memo = 0

    def put(self) -> None:
        assert self.memo < 256, "a tensor pickle memoises a handful of objects"
        self.out += b"q" + bytes([self.memo])  # BINPUT
        self.memo += 1

    def global_(self, module: str, name: str) -> None:
        self.out += b"c" + f"{module}\n{name}\n".encode("ascii")
        self.put()

    def text(self, value: str) -> None:
        data = value.encode("utf-8")
        self.out += b"X" + struct.pack("<I", len(data)) + data  # BINUNICODE
        self.put()

    def int_(self, value: int) -> None:
        if 0 <= value <= 0xFF:
            self.out += b"K" + bytes([value])
        elif 0 <= value <= 0xFFFF:
            self.out += b"M" + struct.pack("<H", value)
        elif -0x80000000 <= value <= 0x7FFFFFFF:
            self.out += b"J" + struct.pack("<i", value)
        else:  # LONG1: little-endian two's complement, as pickle.encode_long
            data = value.to_bytes((value.bit_length() >> 3) + 1, "little", signed=True)
            self.out += b"\x8a" + bytes([len(data)]) + data

    def int_tuple(self, values: tuple[int, ...]) -> None:
        if not values:
            self.out += b")"  # EMPTY_TUPLE, never memoised
            return
        if len(values) > 3:
            self.out += b"("
        for value in values:
            self.int_(value)
        self.out += {1: b"\x85", 2: b"\x86", 3: b"\x87"}.get(len(values), b"t")
        self.put()


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides in elements, as torch computes them (a 0-sized dim counts as 1)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def tensor_pickle(shape: tuple[int, ...], dtype: TorchDType, location: str = "cpu") -> bytes:
    """The ``data.pkl`` of a contiguous tensor of ``shape`` whose storage is record ``data/0``."""
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    p = _Pickle()
    p.global_("torch._utils", "_rebuild_tensor_v2" if dtype.storage else "_rebuild_tensor_v3")
    p.out += b"(("  # MARK (the call's arguments), MARK (the persistent id)
    p.text("storage")
    if dtype.storage:
        p.global_("torch", dtype.storage)
    else:
        p.global_("torch.storage", "UntypedStorage")
    p.text("0")
    p.text(location)
    p.int_(numel if dtype.storage else numel * dtype.numpy.itemsize)
    p.out += b"t"
    p.put()
    p.out += b"Q"  # BINPERSID
    p.int_(0)  # storage offset
    p.int_tuple(tuple(int(d) for d in shape))
    p.int_tuple(contiguous_strides(tuple(shape)))
    p.out += b"\x89"  # requires_grad: False (msprobe saves detached tensors)
    p.global_("collections", "OrderedDict")
    p.out += b")R"  # OrderedDict(): the backward hooks
    p.put()
    if not dtype.storage:
        p.global_("torch", dtype.name)
    p.out += b"t"
    p.put()
    p.out += b"R"
    p.put()
    p.out += b"."
    return bytes(p.out)


# --- the zip archive -----------------------------------------------------------------------------


def _hash_bytes(data: bytes, seed: int = _NAME_HASH_SEED) -> int:
    """libstdc++'s 64-bit ``std::hash<std::string>`` (``_Hash_bytes``, a MurmurHash2 variant)."""
    mul = 0xC6A4A7935BD1E995

    def shift_mix(v: int) -> int:
        return v ^ (v >> 47)

    aligned = len(data) & ~7
    value = (seed ^ (len(data) * mul)) & _MASK
    for start in range(0, aligned, 8):
        word = (shift_mix((int.from_bytes(data[start : start + 8], "little") * mul) & _MASK) * mul) & _MASK
        value = ((value ^ word) * mul) & _MASK
    if len(data) & 7:
        value = ((value ^ int.from_bytes(data[aligned:], "little")) * mul) & _MASK
    return shift_mix((shift_mix(value) * mul) & _MASK)


def _hash_combine(seed: int, value: int) -> int:
    """``c10::hash_combine`` on 64-bit size_t."""
    return (seed ^ ((value + 0x9E3779B9 + (seed << 6) + (seed >> 2)) & _MASK)) & _MASK


class _Zip:
    """torch's ``PyTorchStreamWriter`` (miniz with zip64 end records) for small archives."""

    def __init__(self, archive: str) -> None:
        self.prefix = archive + "/"
        self.out = bytearray()
        self.central = bytearray()
        self.count = 0
        self.names: list[str] = []
        self.crc_hash = 0

    def record(self, name: str, data: bytes) -> None:
        full = (self.prefix + name).encode("utf-8")
        offset = len(self.out)
        if offset + len(full) + len(data) + 200 > 0xFFFFFFFF:
            raise PrecisionToolError(f"{name}: archives of 4 GiB or more are not written")
        start = offset + 30 + len(full) + 4
        pad = (-start) % ALIGNMENT
        extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        crc = zlib.crc32(data)
        flags = 0x0808 if data else 0x0800  # UTF-8 names; a data descriptor follows the data
        self.out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, flags, 0, 0, 0, 0, 0, 0, len(full), len(extra))
        self.out += full + extra + data
        if data:
            self.out += struct.pack("<IIII", 0x08074B50, crc, len(data), len(data))
            self.crc_hash = _hash_combine(self.crc_hash, crc)
        self.central += (
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                0,
                0,
                flags,
                0,
                0,
                0,
                crc,
                len(data),
                len(data),
                len(full),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + full
        )
        self.count += 1
        self.names.append(name)

    def serialization_id(self) -> bytes:
        """Hash of the record names and of their CRCs. torch walks the names in its
        ``files_written_`` set's order, which for these six names under libstdc++ is the
        reverse of the order they were written in (checked against torch 2.13)."""
        names = 0
        for name in reversed(self.names):
            names = _hash_combine(names, _hash_bytes(name.encode("utf-8")))
        return f"{names:020d}{self.crc_hash:020d}".encode("ascii")

    def finish(self) -> bytes:
        self.record(".data/serialization_id", self.serialization_id())
        where = len(self.out)
        self.out += self.central
        end64 = len(self.out)
        self.out += struct.pack(
            "<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 0x002D, 0, 0, self.count, self.count, len(self.central), where
        )
        self.out += struct.pack("<IIQI", 0x07064B50, 0, end64, 1)
        self.out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, self.count, self.count, len(self.central), where, 0)
        return bytes(self.out)


def archive_name(path: str | os.PathLike) -> str:
    """The record prefix torch uses for a file: its name without the last suffix (``archive``
    when the path is not ASCII, which torch writes through a Python stream)."""
    text = os.fspath(path)
    if not text.isascii():
        return "archive"
    base = text.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base else base


def pt_bytes(array, dtype_name: str | None = None, archive: str = "archive", location: str = "cpu") -> bytes:
    """The bytes ``torch.save(tensor, f)`` writes for ``array`` as a contiguous tensor.

    ``dtype_name`` (``"bfloat16"``, ``"torch.int64"``) casts the values to that dtype; by default
    the array's own dtype is used. ``location`` is the device tag torch records (``"cpu"``,
    ``"cuda:0"``, ``"npu:0"`` for a tensor saved from the device).
    """
    dtype = torch_dtype(dtype_name if dtype_name is not None else np.asarray(array))
    # asarray keeps a 0-d array 0-d (ascontiguousarray would make it 1-d)
    values = np.asarray(np.asarray(array).astype(dtype.numpy, copy=False), order="C")
    data = values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes()
    zipped = _Zip(archive)
    zipped.record("data.pkl", tensor_pickle(values.shape, dtype, location))
    zipped.record(".format_version", FORMAT_VERSION)
    zipped.record(".storage_alignment", str(ALIGNMENT).encode("ascii"))
    zipped.record("byteorder", b"little")
    zipped.record("data/0", data)
    zipped.record("version", ARCHIVE_VERSION)
    return zipped.finish()


def write_pt(path: str | os.PathLike, array, dtype_name: str | None = None, location: str = "cpu") -> Path:
    """Write ``array`` to ``path`` as ``torch.save`` would (see :func:`pt_bytes`); returns the path.

    Raises PrecisionToolError for a dtype torch has no counterpart for (strings, objects).
    """
    path = Path(path)
    data = pt_bytes(array, dtype_name, archive_name(path), location)
    with open(path, "wb") as handle:
        handle.write(data)
    return path
