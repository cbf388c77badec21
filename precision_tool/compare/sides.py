"""Opening one side of a tensor pair as a :class:`~.load.Source`: an NPU dump's tensor in host
layout, a golden ``.npy``, an msprobe tensor file.

A call's tasks share a :class:`ReadCache`: a dump file's header is read once, and a small dump
file's bytes are read once, for all its tensors; a small golden read for one task serves the
next few that name it. What kind of source a side becomes is the
layout's choice (:mod:`.load` says which streams how); a side that cannot be opened is one line
naming the file (:class:`~precision_tool.errors.PrecisionToolError`), and the row says why.
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..errors import PrecisionToolError
from ..formats import layouts
from ..formats.blocked_formats import BLOCKED_FORMATS
from ..formats.dtypes import dump_dtype, numpy_name
from ..formats.dump import dump_tensors_from_bytes, read_dump
from ..formats.dump_tensor import DumpTensor
from ..formats.file_identity import FileIdentities
from ..formats.files import held_fetch, open_regular_descriptor, read_whole
from ..formats.golden import NpyHeader, load_npy, npy_header_and_bytes
from .golden_pairing import DumpSide, NpySide, TensorFileSide
from .load import CONVERSION_PLANS, ArrayBlocks, DeviceRows, FileRegion, Source
from .metrics import dtype_problem

_ROW_FORMATS = frozenset({"NC1HWC0", "NC1HWC0_C04", "NDC1HWC0"})
# A dump file up to this size is read whole with one read per job (ReadCache.data), not
# mapped and opened again per tensor: at ~100 KB a tensor the opens and maps cost more than the
# bytes. Bounded so a worker holds at most this much of a file at a time.
SMALL_DUMP_BYTES = 16 << 20
# A C-order .npy up to this size is read with its header, in one open (open_npy_side); a larger
# one is read block by block into the reused buffers.
SMALL_NPY_BYTES = 1 << 20
# The dump headers and small .npy files read last are kept (ReadCache): an op's output golden is
# the input golden of the ops that take it, a few tasks later (on the 1.5 GB GE bench network 30%
# of the golden reads are such repeats at 16 files); a dump's tasks are consecutive. Bounded, so
# one cache serves a whole run: at most this many times SMALL_NPY_BYTES of goldens held.
KEPT_FILES = 16


def check_numeric(dtype: np.dtype, what: str, path: str | os.PathLike) -> None:
    """Raise PrecisionToolError unless ``dtype`` holds real numbers (:func:`.metrics.dtype_problem`).

    Decided by the dtype's kind, before one element is allocated: ``|V2147483647`` is a 2 GiB
    element, and a datetime64 converts to float64 without complaint.
    """
    problem = dtype_problem(dtype)
    if problem:
        raise PrecisionToolError(f"{what}: {problem} is not compared", path)


class ReadCache:
    """What the engine read last, for a call or an inline run: the last :data:`KEPT_FILES` dump
    headers (consecutive tasks of one dump file share one read) and small ``.npy`` files
    (:meth:`npy`); the bytes of the last small dump file (:meth:`data`). Within it a path is
    one file, as for the row keys (:class:`~precision_tool.formats.file_identity.FileIdentities`)."""

    def __init__(self) -> None:
        # keyed by a side's path text (golden_pairing): the files a call's tasks name
        self._dumps: OrderedDict[str, tuple[list[DumpTensor], list[DumpTensor]]] = OrderedDict()
        self._data: tuple[str | None, np.ndarray | None] = (None, None)
        self._npys: OrderedDict[str, tuple[NpyHeader, memoryview]] = OrderedDict()

    def data(self, path: str, identities: FileIdentities | None = None) -> np.ndarray | None:
        """The bytes of the dump file at ``path`` when it is at most :data:`SMALL_DUMP_BYTES`,
        read whole with one read for all its tensors, and its header (:meth:`tensors`) parsed from
        those bytes: no second open; None for a larger file (streamed from disk). Only the last
        file read is kept: a job's tasks read one dump file. ``identities`` records the file's
        identity from that read. PrecisionToolError names the file when it cannot be read or is
        not a well-formed dump (one cut since its header was read elsewhere: truncated)."""
        kept, data = self._data
        if kept == path:
            return data
        descriptor, info = open_regular_descriptor(path, "dump file")  # info: the fstat before the read
        try:
            whole = read_whole(descriptor, info.st_size) if info.st_size <= SMALL_DUMP_BYTES else None
            if whole is not None and identities is not None:
                identities.record(path, info, held_fetch(whole, descriptor, copy=False))
        except OSError as exc:
            raise PrecisionToolError(f"cannot read dump file ({exc.strerror or exc})", path) from None
        finally:
            os.close(descriptor)
        if whole is None:  # large: its tensors are read from the file, and it is not opened again here
            self._data = (path, None)
            return None
        _keep(self._dumps, path, dump_tensors_from_bytes(path, whole))  # the header these bytes hold
        data = np.frombuffer(whole, np.uint8)  # read-only, as the map it replaces
        self._data = (path, data)
        return data

    def npy(self, path: str, identities: FileIdentities | None = None) -> tuple[NpyHeader, memoryview | None]:
        """:func:`~precision_tool.formats.golden.npy_header_and_bytes` of ``path`` with the
        limit :data:`SMALL_NPY_BYTES`; a small file this cache read lately is not read again
        (its identity was recorded by that read)."""
        kept = _kept(self._npys, path)
        if kept is not None:
            return kept
        header, data = npy_header_and_bytes(path, SMALL_NPY_BYTES, identities)
        if data is not None:  # read-only: a memoryview of bytes
            _keep(self._npys, path, (header, data))
        return header, data

    def tensors(self, path: str) -> tuple[list[DumpTensor], list[DumpTensor]]:
        """The inputs and outputs the header of the dump at ``path`` holds; PrecisionToolError
        when unreadable."""
        tensors = _kept(self._dumps, path)
        if tensors is None:
            dump = read_dump(path)
            tensors = _keep(self._dumps, path, (dump.inputs, dump.outputs))
        return tensors

    def tensor(self, side: DumpSide) -> DumpTensor:
        """The tensor a DumpSide names; PrecisionToolError when the dump lacks it."""
        inputs, outputs = self.tensors(side.path)
        tensors = inputs if side.kind == "input" else outputs
        if not 0 <= side.index < len(tensors):
            raise PrecisionToolError(f"the dump has no {side.kind} {side.index}", side.path)
        return tensors[side.index]


def _kept(kept: OrderedDict, path: str):
    """What ``kept`` holds for ``path`` (now its most recent), or None."""
    found = kept.get(path)
    if found is not None:
        kept.move_to_end(path)
    return found


def _keep(kept: OrderedDict, path: str, value):
    """``value`` kept for ``path``, the least recent dropped beyond :data:`KEPT_FILES`."""
    kept[path] = value
    if len(kept) > KEPT_FILES:
        kept.popitem(last=False)
    return value


def _row_separable(t: DumpTensor, device_shape: tuple[int, ...]) -> bool:
    """Whether host axis 0 is device axis 0 and the rest converts per row (module docstring)."""
    original = t.original_shape
    if not original or not device_shape or device_shape[0] != original[0]:
        return False
    if t.format in _ROW_FORMATS:
        return len(original) == len(device_shape) - 1
    return t.format == "FRACTAL_NZ" and len(original) >= 3 and len(device_shape) == len(original) + 2


def _same_start(a: np.ndarray, b: np.ndarray) -> bool:
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


def _format_note(t: DumpTensor) -> str:
    """A note for a device format the layout code does not know (compared as stored)."""
    if t.format in layouts.SUPPORTED_DEVICE_FORMATS:
        return ""
    return f"{t.name}: unsupported format {t.format}, compared in its stored order."


def _stored(t: DumpTensor, data: np.ndarray | None) -> np.ndarray | None:
    """The tensor's stored bytes as a view of its small dump file's bytes ``data``
    (:meth:`ReadCache.data`), or None: the file is large, or the tensor is empty or has no
    shape (read from the file)."""
    if data is None or not t.shape or not t.size:
        return None
    if t.offset + t.size > data.size:
        raise PrecisionToolError(
            f"{t.name}: the file ended before the tensor did: truncated since its header was read?", t.path
        )
    return data[t.offset : t.offset + t.size]


def _in_memory(t: DumpTensor, data: np.ndarray | None) -> np.ndarray | None:
    """The device tensor as a view of its stored bytes (:func:`_stored`), or None."""
    stored = _stored(t, data)
    return None if stored is None else stored.view(t.dtype).reshape(t.shape)


def device_values(t: DumpTensor, data: np.ndarray | None) -> np.ndarray:
    """Tensor ``t`` in its device layout: a view of its dump file's bytes ``data`` when the
    read cache holds them (:meth:`ReadCache.data`: a small file, read once for all its tensors),
    else from the file (:meth:`~precision_tool.formats.dump_tensor.DumpTensor.device`: mapped,
    or unpacked for a sub-byte type). PrecisionToolError says why it cannot be read."""
    device = None if dump_dtype(t.data_type).packed else _in_memory(t, data)
    return t.device() if device is None else device


def open_dump_side(side: DumpSide, reads: ReadCache, identities: FileIdentities | None = None) -> Source:
    """Open one tensor of an NPU dump in host layout; PrecisionToolError names the problem.
    ``identities``: as :func:`open_side` (recorded here when the file is read whole)."""
    data = reads.data(side.path, identities)  # first: a small file's header comes from its bytes
    t = reads.tensor(side)
    problem = t.host_problem
    if problem:
        raise PrecisionToolError(problem, t.path)
    common = dict(dtype=t.dtype, dtype_name=t.dtype_name, nbytes=t.size, note=_format_note(t))
    check_numeric(t.dtype, t.name, t.path)
    origin = t.origin_format(side.origin_format)
    device = device_values(t, data)
    if not dump_dtype(t.data_type).packed and _row_separable(t, device.shape):
        # the layout code always returns exactly the original shape (or raises, per block)
        raw = device.reshape(-1) if not isinstance(device, np.memmap) else None
        return DeviceRows(shape=tuple(t.original_shape), tensor=t, origin=origin, raw=raw, **common)
    try:
        host = layouts.to_host(
            device, t.format, t.original_shape, origin, groups=max(t.sub_format, 1), plans=CONVERSION_PLANS
        )
    except PrecisionToolError as exc:
        raise PrecisionToolError(f"{t.name}: {exc.problem}", t.path) from None
    if isinstance(device, np.memmap) and host.flags.c_contiguous and _same_start(host, device):
        return FileRegion(shape=host.shape, path=t.path, offset=t.offset, **common)
    return ArrayBlocks(shape=host.shape, array=host, **common)


def stored_tensor(
    side: DumpSide, reads: ReadCache, identities: FileIdentities | None = None
) -> tuple[tuple, np.ndarray] | None:
    """``(facts, stored bytes)`` of a dump side whose file is read whole: two sides with equal
    facts and bytes open (:func:`open_dump_side`) to the same host array, dtype and note. None
    for any other side (a large file, a packed type, a format the layouts do not know, a
    problem: opening it says what). ``identities``: as :func:`open_side`."""
    try:
        data = reads.data(side.path, identities)
        t = reads.tensor(side)
        if t.host_problem or _format_note(t) or dump_dtype(t.data_type).packed:
            return None  # the type is known by now: host_problem checked it
        stored = _stored(t, data)
    except PrecisionToolError:
        return None
    if stored is None:
        return None
    facts = (t.data_type, t.format, t.shape, t.original_shape, t.sub_format, t.origin_format(side.origin_format))
    return facts, stored


def open_npy_side(side: NpySide, identities: FileIdentities | None = None, reads: ReadCache | None = None) -> Source:
    """Open a ``.npy`` tensor (never unpickling); PrecisionToolError names the problem.

    A C-order file (what every dumper writes) is not mapped: one of up to
    :data:`SMALL_NPY_BYTES` is read whole with its header, a larger one's blocks are read with
    ``readinto`` (mapping it first would cost a memory map a file for nothing). Fortran order
    is mapped and copied out block by block. ``identities``: as :func:`open_side`; ``reads``: a
    call's cache, whose small files are not read again (:meth:`ReadCache.npy`; None: a cache of
    its own)."""
    header, data = (ReadCache() if reads is None else reads).npy(side.path, identities)
    count = math.prod(header.shape)
    if not header.fortran_order and count:
        check_numeric(header.dtype, os.path.basename(side.path), side.path)
        if data is not None:  # a small file: already read with its header
            array = np.frombuffer(data, header.dtype, count).reshape(header.shape)
            common = dict(dtype=header.dtype, dtype_name=numpy_name(header.dtype), nbytes=header.file_size)
            return ArrayBlocks(shape=tuple(header.shape), array=array, **common)
        return FileRegion(
            shape=tuple(header.shape),
            dtype=header.dtype,
            dtype_name=numpy_name(header.dtype),
            nbytes=header.file_size,
            path=Path(os.path.abspath(side.path)),
            offset=header.offset,
        )
    array = load_npy(side.path)
    check_numeric(array.dtype, os.path.basename(side.path), side.path)
    try:
        nbytes = os.stat(side.path).st_size
    except OSError:
        nbytes = array.nbytes
    common = dict(shape=tuple(array.shape), dtype=array.dtype, dtype_name=numpy_name(array.dtype), nbytes=nbytes)
    if isinstance(array, np.memmap) and array.flags.c_contiguous and array.size:
        return FileRegion(path=Path(array.filename), offset=int(array.offset), **common)
    return ArrayBlocks(array=array, **common)


def open_tensor_file_side(side: TensorFileSide, identities: FileIdentities | None = None) -> Source:
    """Open a tensor file of an msprobe dump (``.pt`` or ``.npy``, never unpickled) as its
    ``dump.json`` dtype; PrecisionToolError names the problem. A ``.pt`` is read with the
    process's reader (:data:`~precision_tool.formats.torch_file.PROCESS_READER`), so the files
    of a run share its memo of their ``data.pkl``. ``identities``: as :func:`open_side`."""
    from ..formats.msprobe_dump import read_tensor_file  # msprobe dumps only

    array = read_tensor_file(side.path, side.dtype_name, identities)
    check_numeric(array.dtype, os.path.basename(side.path), side.path)
    # a view of the mapped storage (msprobe saves sliced tensors with their whole storage):
    # read in blocks from the array, whose mapping pages in only what is read
    dtype = array.dtype
    return ArrayBlocks(
        shape=tuple(array.shape), array=array, dtype=dtype, dtype_name=numpy_name(dtype), nbytes=int(array.nbytes)
    )


def open_side(
    side: DumpSide | NpySide | TensorFileSide, reads: ReadCache, identities: FileIdentities | None = None
) -> Source:
    """A :class:`Source` for any kind of side. ``identities`` (a row cache's, for the row's
    key: :mod:`.row_keys`) gets the side's file identity: recorded by the reader that reads
    the file whole (a ``.pt``, a small ``.npy`` or dump file: the ``fstat`` of its descriptor
    before the read, the sample from the bytes read), else found on an open of its own before
    any of the data is streamed (or after a failed open, as the row says why)."""
    if isinstance(side, TensorFileSide):
        return open_tensor_file_side(side, identities)
    try:
        if isinstance(side, DumpSide):
            return open_dump_side(side, reads, identities)
        if isinstance(side, NpySide):
            return open_npy_side(side, identities, reads)
    finally:
        if identities is not None and isinstance(side, (DumpSide, NpySide)):
            identities.of(side.path)  # the one recorded, else its own open
    raise PrecisionToolError(f"no tensor data to read: {type(side).__name__}")


def _converted_whole(t: DumpTensor) -> bool:
    """Whether opening this dump tensor converts all of it at once (an ArrayBlocks of a copy):
    blocked layouts and FRACTAL_NZ that are not row-separable, and packed sub-byte types."""
    if dump_dtype(t.data_type).packed:
        return True
    fmt = (t.format or "").upper()
    blocked = fmt in BLOCKED_FORMATS or fmt == "FRACTAL_NZ"
    return blocked and not _row_separable(t, tuple(t.shape))


def range_extent(side: DumpSide | NpySide, reads: ReadCache) -> Source | None:
    """The side opened for reading in ranges, or None when it does not read in ranges cheaply
    (opening would convert it whole, see :func:`_converted_whole`) or cannot be opened (the
    comparison then reports why). Only headers (and memory maps) are read."""
    try:
        if isinstance(side, DumpSide):
            t = reads.tensor(side)
            if t.problem or _converted_whole(t):
                return None
        return open_side(side, reads)
    except PrecisionToolError:
        return None
