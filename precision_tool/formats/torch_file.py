"""PyTorch ``.pt`` tensor files (msprobe's ``dump_tensor_data/*.pt``) read without torch.

msprobe writes each dumped tensor with ``torch.save(tensor.clone().contiguous().detach())``,
on the device it was on (float8 ones with ``.detach().to("cpu")``), sliced afterwards when the
dump config asks for a slice: so a file may hold a strided view with a storage offset, and the
whole storage beside it. ``torch.save`` (torch 1.6 and later, torch_npu likewise) writes a zip
archive of one folder (``archive/`` by default; torch reads any name, the first record's):

- ``data.pkl``: a pickle that rebuilds the tensor (:mod:`.torch_pickle` reads it, running
  nothing);
- ``data/<key>``: each storage's raw bytes, stored uncompressed (torch reads deflated ones too);
- ``byteorder``: ``little`` or ``big`` (absent from older files, which were little-endian);
- ``version``, ``.format_version``, ``.storage_alignment``, ``.data/serialization_id``: unused.

The archive's directory is read straight from its bytes (:mod:`.torch_zip`; zipfile for an
archive torch's writer would not write, which then names any problem). The pickle is small and
read up front, and a :class:`PtReader` interprets each distinct one once (the process's
reader, :data:`PROCESS_READER`, for as long as the process lives: a worker's every job). A
file of up to :data:`WHOLE_LIMIT` bytes is read in one read; a larger one's storage is
memory-mapped straight out of the zip (a stored member's bytes are contiguous in the file). The storage is viewed with
the tensor's offset, size and strides, checked to stay inside the storage. The pre-1.6
("legacy") format, a bare pickle stream, is refused: msprobe supports torch 2.1 and later, whose
``torch.save`` never writes it.
"""

from __future__ import annotations

import math
import os
import struct
import sys
import zipfile
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from ..errors import PrecisionToolError
from .file_identity import FileIdentities
from .files import held_fetch, open_regular_descriptor, read_whole, size_text
from .shapes import shape_problem
from .text import shape_text
from .torch_pickle import TensorRecord, read_tensor_pickle, shown
from .torch_zip import StoredRecord, read_directory, record_bytes, stored_record

KIND = "tensor file"
PICKLE_LIMIT = 1 << 20  # a tensor's data.pkl is a few hundred bytes
# files up to this size are read in one read: cheaper than a mapping's setup and page faults
# (msprobe's .pt files are mostly tens to hundreds of kilobytes)
WHOLE_LIMIT = 1 << 20
PICKLES_KEPT = 4096  # distinct data.pkl a PtReader remembers (each a few hundred bytes)
# and at most this many bytes of them: the process's reader lives as long as a worker, and a
# pickle may be up to PICKLE_LIMIT
PICKLE_BYTES_KEPT = 16 << 20
# a legacy torch.save stream begins with the pickle of its magic number 0x1950a86a20f9469cfc6c
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., file name length, extra length
_ZIP_PROBLEMS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    ValueError,
    struct.error,
    NotImplementedError,
    RuntimeError,
    OSError,
)


@dataclass(frozen=True)
class _Layout:
    """Where a ``.pt`` file's tensor is: what ``data.pkl`` says and the record of its storage."""

    record: TensorRecord
    member: zipfile.ZipInfo
    byteorder: str
    elements: int  # elements of the tensor's dtype the storage holds
    plain: bool  # the whole storage in C order (:attr:`_Known.plain`)


@dataclass(frozen=True)
class _Known:
    """A ``data.pkl``'s record and what it says of its storage, worked out once per distinct
    pickle; :func:`_check_extent` holds each file's storage record to it."""

    record: TensorRecord
    problem: str  # the shape's (:func:`.shape_problem`): such a record is never remembered
    storage_bytes: int
    elements: int  # elements of the tensor's dtype the storage holds
    last: int  # the tensor's last element in its storage; -1 when it has none
    plain: bool  # the tensor is its whole storage in C order (the usual file): reshaped, not strided

    @classmethod
    def of(cls, record: TensorRecord) -> _Known:
        storage_bytes = record.storage.numel * record.storage.dtype.itemsize
        empty = math.prod(record.shape) == 0
        last = -1 if empty else record.offset + sum((d - 1) * s for d, s in zip(record.shape, record.stride))
        problem = shape_problem(record.shape, record.dtype.itemsize) or ""
        elements = storage_bytes // record.dtype.itemsize
        plain = (
            not problem
            and record.offset == 0
            and elements == math.prod(record.shape)
            and record.stride == _contiguous(record.shape)
        )
        return cls(record, problem, storage_bytes, elements, last, plain)


class PtReader:
    """Reads ``.pt`` files, interpreting each distinct ``data.pkl`` once: msprobe's files of one
    kind of tensor (same dtype, shape and device) hold byte-identical pickles (44 distinct ones
    in 3,108 files of a 500 MB dump), so whoever reads many files shares one reader
    (:data:`PROCESS_READER` by default). The records it remembers are immutable, keyed by the
    pickle's bytes alone, so a record serves any file; at most :data:`PICKLES_KEPT` are kept, of
    :data:`PICKLE_BYTES_KEPT` bytes in all. A refusal is never remembered: it is raised again,
    naming the file, for each file holding it.
    """

    def __init__(self) -> None:
        self._records: dict[bytes, _Known] = {}
        self._kept_bytes = 0

    def record(self, data: bytes, path) -> TensorRecord:
        """What the ``data.pkl`` bytes ``data`` rebuild (:func:`.read_tensor_pickle`); a
        refusal is raised for every file that holds it, naming that file."""
        return self._known(data, path).record

    def _known(self, data: bytes, path) -> _Known:
        found = self._records.get(data)
        if found is None:
            found = _Known.of(read_tensor_pickle(data, path))
            kept = self._kept_bytes + len(data)
            if len(self._records) < PICKLES_KEPT and kept <= PICKLE_BYTES_KEPT and not found.problem:
                self._records[data] = found  # no refusal is kept
                self._kept_bytes = kept
        return found

    def header(self, path: str | os.PathLike) -> tuple[np.dtype, tuple[int, ...]]:
        """As :func:`pt_header`."""
        descriptor, info = open_regular_descriptor(path, KIND)
        try:
            record = self._open(descriptor, info, path, whole=False)[0].record
        finally:
            os.close(descriptor)
        return record.dtype, record.shape

    def read(self, path: str | os.PathLike, identities: FileIdentities | None = None) -> np.ndarray:
        """As :func:`read_pt`."""
        descriptor, info = open_regular_descriptor(path, KIND)
        try:
            layout, storage = self._open(descriptor, info, path, whole=True, identities=identities)
        finally:
            os.close(descriptor)
        return _strided(storage, layout.record, layout.plain)

    def _open(
        self, descriptor: int, info: os.stat_result, path, whole: bool, identities: FileIdentities | None = None
    ) -> tuple[_Layout, np.ndarray | None]:
        """The layout and (``whole``: wanted) the storage of the file open as ``descriptor``
        (``info`` its fstat); one read of a file up to :data:`WHOLE_LIMIT` bytes, zipfile for an
        archive torch's writer would not write. ``identities`` records the file's identity from
        what is read (:func:`read_pt`)."""
        size = info.st_size
        # the size fstat gave, which the directory is found from: one read
        data = read_whole(descriptor, size) if whole and size <= WHOLE_LIMIT else None
        held = b"" if data is None else data
        fetch = held_fetch(held, descriptor)
        if identities is not None:  # the sample read in place
            identities.record(path, info, held_fetch(held, descriptor, copy=False))
        found = _fast_layout(self, fetch, size, path)
        if found is None or (whole and data is None):  # zipfile, or a mapping: a file object
            with open(descriptor, "rb", closefd=False) as handle:
                return self._open_handle(handle, path, whole, found)
        if not whole:
            return found, None
        return found, _stored_view(data, found, path)

    def _open_handle(self, handle: BinaryIO, path, whole: bool, found: _Layout | None) -> tuple:
        """:meth:`_open` through a file object: zipfile reads an archive torch's writer would
        not write (``found`` None), and a larger file's storage is mapped."""
        if found is None:
            handle.seek(0)  # past what was read whole
            with _archive(handle, path) as archive:
                layout = _layout(self, archive, path)
                return layout, _storage(handle, archive, layout, path) if whole else None
        return found, _storage(handle, None, found, path)


PROCESS_READER = PtReader()  # lives as long as the process: one pool worker reads many jobs' files


def pt_header(path: str | os.PathLike, reader: PtReader | None = None) -> tuple[np.dtype, tuple[int, ...]]:
    """The dtype and shape of the tensor in the ``.pt`` file ``path``, from its zip directory
    and ``data.pkl`` alone (no tensor data is read), with every check :func:`read_pt` makes on
    them; ``reader`` remembers pickles across calls (:data:`PROCESS_READER` by default).

    Raises:
        PrecisionToolError: as :func:`read_pt`.
    """
    return (reader or PROCESS_READER).header(path)


def read_pt(
    path: str | os.PathLike, reader: PtReader | None = None, identities: FileIdentities | None = None
) -> np.ndarray:
    """The tensor ``torch.save`` wrote to ``path``, as a read-only numpy array (bfloat16 and
    float8 as ml_dtypes' types): a file of up to :data:`WHOLE_LIMIT` bytes is read in one
    read, a larger one memory-mapped (a copy only for a deflated storage or a byte order other
    than this machine's). ``reader`` remembers pickles across calls (:data:`PROCESS_READER` by
    default). ``identities`` (a row cache's) records the file's identity
    (:meth:`.FileIdentities.record`) from the descriptor read and the bytes it gave, before
    the archive is parsed: no second open, and the identity is of the very bytes compared.

    Raises:
        PrecisionToolError: naming ``path``: not a regular file, not a torch zip archive (or a
            truncated one), the legacy format, a pickle that does more than rebuild one tensor
            (the refused global or opcode is named), a missing or short storage record, or a
            shape, offset or stride that reaches outside the storage.
    """
    return (reader or PROCESS_READER).read(path, identities)


def _strided(storage: np.ndarray, record: TensorRecord, plain: bool) -> np.ndarray:
    """The tensor's view of its storage. as_strided goes through the array interface, which
    cannot name ml_dtypes' 8-bit floats: those are strided as bytes and viewed back."""
    dtype, itemsize = storage.dtype, storage.dtype.itemsize
    if plain:
        view = storage.reshape(record.shape)  # the usual file: the whole storage, C order
        view.flags.writeable = False
        return view
    if dtype.isbuiltin != 1:  # ml_dtypes' (2)
        storage = storage.view(f"u{itemsize}")
    view = np.lib.stride_tricks.as_strided(
        storage[record.offset :], record.shape, tuple(s * itemsize for s in record.stride), writeable=False
    )
    return view if view.dtype == dtype else view.view(dtype)


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


def _archive(handle: BinaryIO, path) -> zipfile.ZipFile:
    """The zip archive open in ``handle``; the legacy format and a non-zip named in words."""
    try:
        legacy = handle.read(len(_LEGACY_MAGIC)) == _LEGACY_MAGIC
        if not legacy:
            handle.seek(0)
            return zipfile.ZipFile(handle)
    except _ZIP_PROBLEMS as exc:
        raise PrecisionToolError(f"not a torch .pt zip archive, or a truncated one ({exc})", path) from None
    raise PrecisionToolError(
        "legacy torch format (torch.save with _use_new_zipfile_serialization=False, or torch "
        "before 1.6): not read; save it again with torch 1.6 or later",
        path,
    )


def _layout(reader: PtReader, archive: zipfile.ZipFile, path) -> _Layout:
    """What ``data.pkl`` rebuilds and the storage record it needs, all checked."""
    members = archive.infolist()
    prefix = members[0].filename.split("/", 1)[0] if members else ""
    pickle_name = f"{prefix}/data.pkl"
    try:
        info = archive.getinfo(pickle_name)
    except KeyError:
        raise PrecisionToolError(f"not a torch.save archive: no {shown(pickle_name)}", path) from None
    if info.file_size > PICKLE_LIMIT:
        raise PrecisionToolError(
            f"{shown(pickle_name)} is larger than {size_text(PICKLE_LIMIT)} "
            f"({info.file_size:,} bytes): not one tensor's",
            path,
        )
    known = reader._known(_read_member(archive, info, PICKLE_LIMIT, path), path)
    record = known.record
    byteorder = _byteorder(archive, prefix, path)
    name = f"{prefix}/data/{record.storage.key}"
    try:
        member = archive.getinfo(name)
    except KeyError:
        raise PrecisionToolError(f"has no record {shown(name)}: the tensor's storage is missing", path) from None
    return _Layout(record, member, byteorder, _check_extent(known, member, path), known.plain)


def _fast_layout(reader: PtReader, fetch, size: int, path) -> _Layout | None:
    """:func:`_layout` from the archive's bytes (:mod:`.torch_zip`), or None: the archive is
    not as torch writes it, or a record is missing or damaged (zipfile then names the problem)."""
    entries = read_directory(fetch, size)
    if not entries:
        return None
    prefix = next(iter(entries)).split("/", 1)[0]
    info = stored_record(fetch, entries, f"{prefix}/data.pkl", size)
    if info is None or info.file_size > PICKLE_LIMIT:
        return None
    data = record_bytes(fetch, info, PICKLE_LIMIT)
    if data is None:
        return None
    known = reader._known(data, path)
    record = known.record
    byteorder = "little"
    if f"{prefix}/byteorder" in entries:
        order = stored_record(fetch, entries, f"{prefix}/byteorder", size)
        raw = None if order is None else record_bytes(fetch, order, 16)
        if raw is None:
            return None
        byteorder = _checked_order(raw, path)
    member = stored_record(fetch, entries, f"{prefix}/data/{record.storage.key}", size)
    if member is None:
        return None
    return _Layout(record, member, byteorder, _check_extent(known, member, path), known.plain)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, path) -> bytes:
    try:
        with archive.open(info) as member:
            return member.read(limit)
    except _ZIP_PROBLEMS as exc:
        raise PrecisionToolError(f"cannot read {shown(info.filename)} from the archive ({exc})", path) from None


def _byteorder(archive: zipfile.ZipFile, prefix: str, path) -> str:
    try:
        info = archive.getinfo(f"{prefix}/byteorder")
    except KeyError:
        return "little"
    return _checked_order(_read_member(archive, info, 16, path), path)


def _checked_order(raw: bytes, path) -> str:
    order = raw.decode("ascii", "replace").strip()
    if order not in ("little", "big"):
        raise PrecisionToolError(f"byteorder record says {shown(order)!r}, not little or big", path)
    return order


def _check_extent(known: _Known, member: zipfile.ZipInfo, path) -> int:
    """The elements of the tensor's dtype in its storage, once the storage record is known to
    hold the storage and the tensor's last element is known to lie inside it."""
    if known.problem:
        raise PrecisionToolError(known.problem, path)
    if member.flag_bits & 0x1:
        raise PrecisionToolError(f"record {shown(member.filename)} is encrypted: not read", path)
    held = (
        member.file_size if member.compress_type != zipfile.ZIP_STORED else min(member.file_size, member.compress_size)
    )  # a stored record's bytes are both
    if held < known.storage_bytes:
        raise PrecisionToolError(
            f"truncated: record {shown(member.filename)} holds {held} bytes, the tensor's storage is "
            f"{known.storage_bytes}",
            path,
        )
    if known.last >= known.elements:
        record = known.record
        raise PrecisionToolError(
            f"tensor of shape {shape_text(record.shape)}, stride {shape_text(record.stride)} at "
            f"offset {record.offset} reaches element {known.last} of a storage of {known.elements}: out of "
            "bounds",
            path,
        )
    return known.elements


def _raw_type(layout: _Layout) -> tuple[np.dtype, bool]:
    """The dtype the stored bytes are read as, and whether they are then swapped."""
    dtype = layout.record.dtype
    swap = layout.byteorder != sys.byteorder and dtype.itemsize > 1
    numeric = dtype.isbuiltin == 1  # ml_dtypes' types (2) have no swapped form: their bits do
    return (dtype.newbyteorder() if numeric else np.dtype(f"u{dtype.itemsize}")) if swap else dtype, swap


def _native(storage: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A storage read in the other byte order, as read-only values of ``dtype``."""
    storage = storage.astype(dtype) if dtype.isbuiltin == 1 else storage.byteswap().view(dtype)
    storage.flags.writeable = False
    return storage


def _stored_view(data: bytes, layout: _Layout, path) -> np.ndarray:
    """The storage of a file read whole (``data``), as :func:`_storage` gives it."""
    dtype, count = layout.record.dtype, layout.elements
    if count == 0:
        return np.empty(0, dtype)
    raw, swap = _raw_type(layout)
    storage = np.frombuffer(data, raw, count, layout.member.start)  # bytes: read-only
    return _native(storage, dtype) if swap else storage


def _storage(handle: BinaryIO, archive: zipfile.ZipFile | None, layout: _Layout, path) -> np.ndarray:
    """The storage as a 1-d read-only array of the tensor's dtype (native byte order)."""
    dtype, count = layout.record.dtype, layout.elements
    raw, swap = _raw_type(layout)
    if count == 0:
        return np.empty(0, dtype)
    member = layout.member
    if member.compress_type == zipfile.ZIP_STORED:
        start = member.start if isinstance(member, StoredRecord) else _data_start(handle, member, path)
        if start + count * dtype.itemsize > os.fstat(handle.fileno()).st_size:
            raise PrecisionToolError(f"truncated: record {shown(member.filename)} ends past the end of the file", path)
        try:
            storage = np.memmap(handle, raw, "r", start, (count,))
        except (ValueError, OSError) as exc:
            raise PrecisionToolError(f"cannot map {shown(member.filename)}: {exc}", path) from None
    else:
        data = _read_member(archive, member, count * dtype.itemsize, path)
        if len(data) < count * dtype.itemsize:
            raise PrecisionToolError(f"truncated: record {shown(member.filename)}", path)
        storage = np.frombuffer(data, raw, count)
    return _native(storage, dtype) if swap else storage


def _data_start(handle: BinaryIO, member: zipfile.ZipInfo, path) -> int:
    """Where a stored member's bytes begin: after its local header, whose extra field may
    differ in length from the central directory's."""
    try:
        handle.seek(member.header_offset)
        header = handle.read(_LOCAL_HEADER.size)
    except OSError as exc:
        raise PrecisionToolError(f"cannot read {KIND}: {exc.strerror or exc}", path) from None
    if len(header) < _LOCAL_HEADER.size or not header.startswith(b"PK\x03\x04"):
        raise PrecisionToolError(f"bad zip local header for {shown(member.filename)}", path)
    _, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    return member.header_offset + _LOCAL_HEADER.size + name_length + extra_length
