"""Read the header of an Ascend "nano" dump file: a TLV list of input and output descriptors.

:func:`.dump.read_dump` looks at byte 8 of every dump file and hands a nano dump's header to
:func:`read_nano_header`; this module turns those bytes into plain descriptors
(:class:`NanoHeader`), and :mod:`.dump` makes them the same ``DumpFile``/``DumpTensor`` objects
it makes of a DumpData dump, with the same lazy, memory-mapped reading of the data.

The layout
----------

Learnt from msaccucmp's nano reader (mindstudio-probe 26.2.0, ``msaccucmp/dump_parse/
nano_dump_data.py`` and ``cmp_utils/tlv_parse.py``), GE's packed descriptor structs
(``inc/framework/common/tlv/nano_dbg_desc.h``, ``#pragma pack(1)``), GE's ``DataType`` enum
(metadef ``docs/api/DataType.md``) and the one public nano dump, msprobe's test sample
``ConcatV2D.concatv2.0.0.550288648`` (its bytes agree with all of these). Every integer is
little-endian (msaccucmp unpacks in the host's order, and Ascend hosts are little-endian; the
sample's lengths only make sense read so) and nothing is padded::

    [0, 8)        uint64 L, the length of the TLV header
    [8, 8 + L)    the TLV header:
                    uint32 magic 0x5A5A5A5A, uint32 version
                    then level-2 entries to its end: uint32 type, uint32 length, value
                      type 4  input descriptors:  uint32 count, then count descriptors
                      type 5  output descriptors: uint32 count, then count descriptors
    then          the bytes of input 0, 1, ..., then output 0, 1, ..., each exactly its size

    input descriptor, 40 bytes then its level-3 list:
      int32 data_type, int32 format, int32 address_type,
      uint64 address, uint64 offset, uint64 size, uint32 list_length
    output descriptor, 52 bytes then its level-3 list:
      int32 data_type, int32 format, int32 address_type,
      int32 original_index, int32 original_data_type, int32 original_format,
      uint64 address, uint64 offset, uint64 size, uint32 list_length
    level-3 list: list_length bytes of entries uint32 type, uint32 length, value
      type 0  shape: length / 8 uint64 dimensions
      type 1  original shape: the same
      type 2  (outputs) the original op's name: bytes (UTF-8; the sample has no terminator)

The magic at byte 8 tells the two forms apart: a DumpData header's first byte there would be
0x5A, the key of a protobuf field 11 that DumpData does not have. The file holds
``8 + L + sum(size)`` bytes. ``address`` and ``offset`` are the device's (the
sample's offsets are all 0): the data is found by adding up the sizes, as msaccucmp does.

``data_type`` is numbered as GE's ``DataType`` (0 FLOAT, 1 FLOAT16, 2 INT8, 3 INT32, 4 UINT8,
5 unused, 6 INT16, 7 UINT16, 8 UINT32, 9 INT64, 10 UINT64, 11 DOUBLE, 12 BOOL, 13 to 27 as in
``OutputDataType``, 28 UNDEFINED, 29 INT4, 30 UINT1, 31 INT2, 32 UINT2, 33 COMPLEX32,
34 HIFLOAT8, 35 FLOAT8_E5M2, 36 FLOAT8_E4M3FN, 37 FLOAT8_E8M0, 38 FLOAT6_E3M2,
39 FLOAT6_E2M3, 40 FLOAT4_E2M1, 41 FLOAT4_E1M2, 42 HIFLOAT4), not as the DumpData header's
``OutputDataType``; it is translated by name. ``format`` is GE's ``Format``, whose numbers
``OutputFormat`` shares (msaccucmp uses it as is).

Our choices where the sources are silent: level-2 and level-3 entries of other types are
skipped (msaccucmp knows no others, so real files have none); a second list of inputs (or of
outputs), a list that does not fill its entry exactly, or an entry running past its container
is an error. Every error is one line starting ``nano dump:``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import PrecisionToolError
from .proto.dump_enums import DATA_TYPE_VALUES
from .shapes import rank_problem

NANO_MAGIC = 0x5A5A5A5A
MAGIC_OFFSET = 8  # after the uint64 header length
MAX_HEADER = 1 << 30  # a header is a few KB; anything near this is a corrupt length field

INPUTS, OUTPUTS = 4, 5  # level-2 entry types
SHAPE, ORIGINAL_SHAPE, ORIGINAL_NAME = 0, 1, 2  # level-3 entry types

_ENTRY = struct.Struct("<II")  # type, length
_INPUT = struct.Struct("<iiiQQQI")
_OUTPUT = struct.Struct("<iiiiiiQQQI")

# GE's DataType names by value ("" for the unused 5); 13 to 27 are OutputDataType's too.
GE_DATA_TYPES = (
    *"FLOAT FLOAT16 INT8 INT32 UINT8".split(),
    "",
    *(
        "INT16 UINT16 UINT32 INT64 UINT64 DOUBLE BOOL STRING DUAL_SUB_INT8 DUAL_SUB_UINT8 COMPLEX64 "
        "COMPLEX128 QINT8 QINT16 QINT32 QUINT8 QUINT16 RESOURCE STRING_REF DUAL VARIANT BF16 "
        "UNDEFINED INT4 UINT1 INT2 UINT2 COMPLEX32 HIFLOAT8 FLOAT8_E5M2 FLOAT8_E4M3FN FLOAT8_E8M0 "
        "FLOAT6_E3M2 FLOAT6_E2M3 FLOAT4_E2M1 FLOAT4_E1M2 HIFLOAT4"
    ).split(),
)


@dataclass(frozen=True)
class NanoType:
    """A nano ``data_type``: its ``OutputDataType`` value, or None and a label when it has none."""

    value: int | None
    label: str  # "FLOAT16", "HIFLOAT4 (nano 42)", "UNKNOWN(nano 5)"


def nano_type(code: int) -> NanoType:
    """The ``OutputDataType`` of GE ``DataType`` ``code`` (translated by name)."""
    name = GE_DATA_TYPES[code] if 0 <= code < len(GE_DATA_TYPES) else ""
    if name in DATA_TYPE_VALUES:
        return NanoType(DATA_TYPE_VALUES[name], name)
    return NanoType(None, f"{name} (nano {code})" if name else f"UNKNOWN(nano {code})")


@dataclass(frozen=True)
class NanoOriginal:
    """The host tensor an output stands for (its name, output index, type and format)."""

    name: str
    index: int
    data_type: NanoType
    format: int


@dataclass(frozen=True)
class NanoTensor:
    """One input or output descriptor, its shapes checked for rank (not yet for size)."""

    data_type: NanoType
    format: int
    size: int
    shape: tuple[int, ...] = ()
    original_shape: tuple[int, ...] = ()
    defect: str | None = None  # a shape of more dimensions than numpy allows (shape left empty)
    original_defect: str | None = None
    original: NanoOriginal | None = None


@dataclass(frozen=True)
class NanoHeader:
    """What a nano dump's TLV header says: its version and tensors, and where the data starts."""

    version: int
    inputs: tuple[NanoTensor, ...]
    outputs: tuple[NanoTensor, ...]
    data_start: int


def is_nano(head: bytes) -> bool:
    """Whether a file starting with ``head`` (at least its first 12 bytes) is a nano dump."""
    end = MAGIC_OFFSET + 4
    return len(head) >= end and struct.unpack_from("<I", head, MAGIC_OFFSET)[0] == NANO_MAGIC


def _fail(message: str, path: Path) -> PrecisionToolError:
    return PrecisionToolError(f"nano dump: {message}", path)


def read_nano_header(path: Path, handle: BinaryIO, file_size: int) -> NanoHeader:
    """Read and check the TLV header of the nano dump open in ``handle`` (at its start).

    Raises PrecisionToolError (``nano dump: ...``) naming the file for a header length that
    does not fit the file, a corrupt TLV list, or sizes that do not add up to the file's.
    """
    (length,) = struct.unpack("<Q", handle.read(8))
    if length < 8:
        raise _fail(f"header length {length} leaves no room for its magic and version (8 bytes)", path)
    if length > min(file_size - 8, MAX_HEADER):
        raise _fail(f"header length {length} does not fit a file of {file_size} bytes", path)
    header = memoryview(handle.read(length))  # its lists are views of it, not copies
    if len(header) != length:  # the file shrank since its size was taken
        raise _fail(f"the file ends {length - len(header)} bytes into its header", path)
    lists = _level2(header, path)
    inputs = _descriptors(lists.get(INPUTS, memoryview(b"")), "input", path)
    outputs = _descriptors(lists.get(OUTPUTS, memoryview(b"")), "output", path)
    data_start = 8 + length
    expected = data_start + sum(t.size for t in (*inputs, *outputs))
    if expected != file_size:
        raise _fail(
            f"sizes do not add up: header and tensor sizes give {expected} bytes, file has "
            f"{file_size} ({'truncated' if expected > file_size else 'trailing bytes'})",
            path,
        )
    return NanoHeader(struct.unpack_from("<I", header, 4)[0], inputs, outputs, data_start)


def _entries(data: memoryview, start: int, what: str, path: Path):
    """``(type, value)`` of each TLV entry of ``data[start:]``, each checked to fit."""
    at = start
    while at < len(data):
        if at + _ENTRY.size > len(data):
            raise _fail(f"{what}: {len(data) - at} bytes left, too few for an entry's type and length", path)
        kind, length = _ENTRY.unpack_from(data, at)
        at += _ENTRY.size
        if length > len(data) - at:
            raise _fail(f"{what}: entry of type {kind} claims {length} bytes, {len(data) - at} are left", path)
        yield kind, data[at : at + length]
        at += length


_KIND = {INPUTS: "input", OUTPUTS: "output"}


def _level2(header: memoryview, path: Path) -> dict[int, memoryview]:
    """The input and output lists of the header (other entries are skipped)."""
    lists: dict[int, memoryview] = {}
    for kind, value in _entries(header, 8, "header", path):
        if kind in (INPUTS, OUTPUTS):
            if kind in lists:
                raise _fail(f"header has two lists of {_KIND[kind]}s", path)
            lists[kind] = value
    return lists


def _descriptors(value: memoryview, kind: str, path: Path) -> tuple[NanoTensor, ...]:
    """The descriptors of one list: a uint32 count, then each fixed part and its level-3 list."""
    if not value:
        return ()
    if len(value) < 4:
        raise _fail(f"{kind} list of {len(value)} bytes has no room for its count", path)
    (count,) = struct.unpack_from("<I", value)
    fixed = _OUTPUT if kind == "output" else _INPUT
    if count * fixed.size > len(value) - 4:  # checked before anything is made per descriptor
        raise _fail(
            f"{kind} list claims {count} descriptors of at least {fixed.size} bytes in {len(value) - 4} bytes", path
        )
    tensors, at = [], 4
    for index in range(count):
        where = f"{kind} {index}"
        if at + fixed.size > len(value):
            raise _fail(f"{where}: descriptor cut short ({len(value) - at} of {fixed.size} bytes)", path)
        fields = fixed.unpack_from(value, at)
        at += fixed.size
        list_length = fields[-1]
        if list_length > len(value) - at:
            raise _fail(f"{where}: its shape list claims {list_length} bytes, {len(value) - at} are left", path)
        tensors.append(_tensor(kind, fields, value[at : at + list_length], where, path))
        at += list_length
    if at != len(value):
        raise _fail(f"{kind} list has {len(value) - at} bytes after its {count} descriptors", path)
    return tuple(tensors)


def _tensor(kind: str, fields: tuple, level3: memoryview, where: str, path: Path) -> NanoTensor:
    """One descriptor from its fixed fields and its level-3 entries."""
    if kind == "output":
        data_type, fmt, _, index, original_type, original_format, _, _, size, _ = fields
    else:
        data_type, fmt, _, _, _, size, _ = fields
    shapes: dict[int, tuple[tuple[int, ...], str | None]] = {}
    name = None
    for entry, value in _entries(level3, 0, where, path):
        if entry in (SHAPE, ORIGINAL_SHAPE):
            if entry in shapes:
                raise _fail(f"{where}: two {'shapes' if entry == SHAPE else 'original shapes'}", path)
            shapes[entry] = _dims(value, where, path)
        elif entry == ORIGINAL_NAME and kind == "output":
            name = _text(value, where, path)
    (shape, defect), (original_shape, original_defect) = (
        shapes.get(entry, ((), None)) for entry in (SHAPE, ORIGINAL_SHAPE)
    )
    original = None
    if name is not None:  # an output that names its host tensor: a DumpData header's OriginalOp
        original = NanoOriginal(name, index, nano_type(original_type), original_format)
    return NanoTensor(nano_type(data_type), fmt, size, shape, original_shape, defect, original_defect, original)


def _dims(value: memoryview, where: str, path: Path) -> tuple[tuple[int, ...], str | None]:
    """The uint64 dimensions of a shape entry, or () and why when no array can have that many
    (they are not unpacked then)."""
    if len(value) % 8:
        raise _fail(f"{where}: a shape of {len(value)} bytes is not a whole number of 8-byte dimensions", path)
    problem = rank_problem(len(value) // 8)
    return ((), problem) if problem else (struct.unpack(f"<{len(value) // 8}Q", value), None)


def _text(value: memoryview, where: str, path: Path) -> str:
    try:  # a C writer may count the terminator in the length
        return bytes(value).rstrip(b"\0").decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(f"{where}: its original name is not UTF-8", path) from None
