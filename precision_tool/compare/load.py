"""One side of a tensor pair, opened for streaming: flat, contiguous, C-order blocks.

The engine never holds a whole tensor when it can help it. A side becomes a :class:`Source`
whose :meth:`~Source.blocks` yields the host-layout tensor in C order, a block of at most about
``chunk`` elements at a time, in its stored dtype (the metrics upcast block by block):

* :class:`FileRegion`: the host tensor is a contiguous run of the file (ND dumps, dumps whose
  host layout needs no transpose, C-order ``.npy``). Blocks are read with ``readinto`` into one
  reused buffer, so memory stays one block whatever the tensor size, and nothing is mapped.
* :class:`DeviceRows`: NC1HWC0 / NC1HWC0_C04 / NDC1HWC0 with a full-rank origin shape, and
  FRACTAL_NZ of rank 3 or more. Device axis 0 is host axis 0 (N, or the leading batch dim), so
  rows of the device tensor are read and converted to host layout a few at a time (a batch of
  one is one block).
* :class:`ArrayBlocks`: everything else (FRACTAL_Z weights, 2-D FRACTAL_NZ, transposed plain
  layouts, packed sub-byte types, Fortran-order ``.npy``): the whole host view (memory-mapped
  where the layout code allows), copied into contiguous blocks along axis 0, one at a time.

Buffers are reused per role (``"x"``, ``"y"``) through a :class:`Buffers` object, so a worker
allocates them once: fresh multi-megabyte arrays would cost a page fault per 4 KiB each time.
A consumer must be done with a block before asking for the next one (:func:`aligned` is).

Ranges: ``blocks(..., start, stop)`` streams only the elements ``[start, stop)`` of the flat C
order, so one tensor can be compared in ranges by several workers (:mod:`.split`). A FileRegion
seeks to the range; DeviceRows read the device rows that hold it (:attr:`Source.unit` elements
each: a range on row boundaries reads nothing twice); ArrayBlocks copy only the views that
cover it. :func:`range_extent` says, from the header alone, whether a side reads in ranges
without being converted whole first.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import PrecisionToolError
from ..formats import layouts
from ..formats.blocked_formats import BLOCKED_FORMATS
from ..formats.dtypes import dump_dtype, numpy_name
from ..formats.dump import DumpFile, DumpTensor, read_dump
from ..formats.file_identity import FileIdentities
from ..formats.files import held_fetch, open_regular
from ..formats.golden import load_npy, npy_header_and_bytes
from .golden_pairing import DumpSide, NpySide, TensorFileSide
from .metrics import dtype_problem

DEFAULT_CHUNK = 1 << 22  # elements per block: ~32 MiB of buffers a worker for float16 vs float32
_ROW_FORMATS = frozenset({"NC1HWC0", "NC1HWC0_C04", "NDC1HWC0"})
# A dump file up to this size is read whole with one read per job (HeaderCache.data), not
# mapped and opened again per tensor: at ~100 KB a tensor the opens and maps cost more than the
# bytes. Bounded so a worker holds at most this much of a file at a time.
SMALL_DUMP_BYTES = 16 << 20
# A C-order .npy up to this size is read with its header, in one open (open_npy_side); a larger
# one is read block by block into the reused buffers.
SMALL_NPY_BYTES = 1 << 20


class Buffers:
    """Reusable scratch arrays, one per role, grown on demand."""

    def __init__(self) -> None:
        self._raw: dict[str, np.ndarray] = {}

    def get(self, role: str, count: int, dtype: np.dtype) -> np.ndarray:
        """A contiguous array of ``count`` elements of ``dtype`` (contents undefined)."""
        dtype = np.dtype(dtype)
        nbytes = max(count * dtype.itemsize, 1)
        raw = self._raw.get(role)
        if raw is None or raw.size < nbytes:
            raw = self._raw[role] = np.empty(nbytes, np.uint8)
        return raw[: count * dtype.itemsize].view(dtype)

    def clear(self) -> None:
        """Drop every buffer."""
        self._raw.clear()


@dataclass
class Source:
    """A tensor in host layout, ready to stream; see the module docstring for the kinds."""

    shape: tuple[int, ...]
    dtype: np.dtype
    dtype_name: str
    nbytes: int  # bytes the tensor occupies on disk (for progress)
    note: str = ""  # goes into the row's CompareFailReason (e.g. a format compared as stored)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def unit(self) -> int:
        """Elements of the smallest piece this side reads on its own (ranges on multiples of it
        read nothing twice)."""
        return 1

    def blocks(
        self, chunk: int, buffers: Buffers, role: str, start: int = 0, stop: int | None = None
    ) -> Iterator[np.ndarray]:
        """Flat contiguous blocks covering elements ``[start, stop)`` (default: all) in C order."""
        raise NotImplementedError

    def _span(self, start: int, stop: int | None) -> tuple[int, int]:
        stop = self.size if stop is None else min(stop, self.size)
        return start, max(stop, start)


def _read_exact(handle, out: np.ndarray, path: Path) -> None:
    view = memoryview(out.view(np.uint8))
    done = 0
    while done < len(view):
        got = handle.readinto(view[done:])
        if not got:
            raise PrecisionToolError("the file ended before the tensor did: truncated since its header was read?", path)
        done += got


def advise(handle, offset: int, length: int, *advice: int) -> None:
    """``posix_fadvise`` hints for a region of an open file; nothing where the OS has none.

    SEQUENTIAL doubles the kernel's read-ahead window; WILLNEED starts reading a region in the
    background now, so a cold file's next block is read while this one is being compared.
    (WILLNEED on whole files at a job's start was measured: no gain cold, and system time warm,
    as it walks every cached page; docs/performance.md.)
    """
    fadvise = getattr(os, "posix_fadvise", None)
    if fadvise is None:
        return
    for hint in advice:
        try:
            fadvise(handle.fileno(), offset, length, hint)
        except OSError:  # e.g. a pipe or a file system without the hint: only a hint
            return


def _read_flat(
    path: Path, offset: int, dtype: np.dtype, count: int, chunk: int, buffers: Buffers, role: str
) -> Iterator[np.ndarray]:
    """``count`` elements stored contiguously at ``offset``, read block by block into a buffer.

    Large sequential reads (``readinto`` of a whole block, no Python-level buffering), with the
    next block of a tensor of several requested ahead (:func:`advise`) while this one is compared.
    """
    sequential, willneed = (getattr(os, name, None) for name in ("POSIX_FADV_SEQUENTIAL", "POSIX_FADV_WILLNEED"))
    step = chunk * dtype.itemsize
    try:
        with open_regular(path, "tensor file", buffering=0) as handle:
            if sequential is not None:
                advise(handle, offset, count * dtype.itemsize, sequential)
            for start in range(0, count, chunk):
                out = buffers.get(role, min(chunk, count - start), dtype)
                handle.seek(offset + start * dtype.itemsize)
                if willneed is not None and start + chunk < count:
                    advise(handle, offset + (start + chunk) * dtype.itemsize, step, willneed)
                _read_exact(handle, out, path)
                yield out
    except OSError as exc:
        raise PrecisionToolError(f"cannot read: {exc.strerror or exc}", path) from None


@dataclass
class FileRegion(Source):
    """A tensor stored contiguously in C order at ``offset`` of ``path``."""

    path: Path = Path()
    offset: int = 0

    def blocks(
        self, chunk: int, buffers: Buffers, role: str, start: int = 0, stop: int | None = None
    ) -> Iterator[np.ndarray]:
        start, stop = self._span(start, stop)
        return _read_flat(
            self.path, self.offset + start * self.dtype.itemsize, self.dtype, stop - start, chunk, buffers, role
        )


@dataclass
class DeviceRows(Source):
    """A row-separable device tensor, converted to host layout a few device rows at a time.

    Each block of device rows is read into one buffer and converted by the layout code straight
    into another (:func:`~precision_tool.formats.layouts.to_host` with ``out``): one copy.
    """

    tensor: DumpTensor | None = None
    origin: str | None = None
    raw: np.ndarray | None = None  # the flat device tensor in memory (a small file), or None: read

    @property
    def unit(self) -> int:
        return max(math.prod(self.shape[1:]), 1)  # one host row: one device row

    def blocks(
        self, chunk: int, buffers: Buffers, role: str, start: int = 0, stop: int | None = None
    ) -> Iterator[np.ndarray]:
        start, stop = self._span(start, stop)
        first, last = start // self.unit, -(-stop // self.unit)  # the rows holding the range
        return _trimmed(self._rows(first, last, chunk, buffers, role), start - first * self.unit, stop - start)

    def _rows(self, first: int, last: int, chunk: int, buffers: Buffers, role: str) -> Iterator[np.ndarray]:
        """Host rows ``[first, last)``, converted a few device rows at a time."""
        t = self.tensor
        row_shape = t.shape[1:]
        device_row = math.prod(row_shape)
        block = max(1, chunk // self.unit) * device_row
        if self.raw is not None:  # the same blocks, sliced from memory instead of read
            stop = last * device_row
            pieces = (self.raw[at : min(at + block, stop)] for at in range(first * device_row, stop, block))
        else:
            pieces = _read_flat(
                t.path,
                t.offset + first * device_row * t.dtype.itemsize,
                t.dtype,
                (last - first) * device_row,
                block,
                buffers,
                role + ".device",
            )
        for raw in pieces:
            device = raw.reshape(-1, *row_shape)
            host_shape = (device.shape[0], *self.shape[1:])
            out = buffers.get(role, math.prod(host_shape), self.dtype).reshape(host_shape)
            try:
                layouts.to_host(device, t.format, host_shape, self.origin, max(t.sub_format, 1), out=out)
            except PrecisionToolError as exc:
                raise PrecisionToolError(f"{t.name}: {exc.problem}", t.path) from None
            yield out.reshape(-1)


def _trimmed(blocks: Iterator[np.ndarray], skip: int, count: int) -> Iterator[np.ndarray]:
    """The ``count`` elements of a block stream that follow its first ``skip`` elements."""
    for block in blocks:
        if count <= 0:
            return
        if skip >= block.size:
            skip -= block.size
            continue
        piece = block[skip : skip + count]
        skip, count = 0, count - piece.size
        yield piece


@dataclass
class ArrayBlocks(Source):
    """Any array (a possibly non-contiguous host view), copied out block by block."""

    array: np.ndarray | None = None

    def blocks(
        self, chunk: int, buffers: Buffers, role: str, start: int = 0, stop: int | None = None
    ) -> Iterator[np.ndarray]:
        start, stop = self._span(start, stop)
        array = self.array
        if array.flags.c_contiguous:
            flat = array.reshape(-1)
            for at in range(start, stop, chunk):
                yield flat[at : min(at + chunk, stop)]
            return
        if (start, stop) == (0, self.size):
            yield from _copied_blocks(array, chunk, buffers, role)
            return
        for view in _covering_views(array, start, stop):
            yield from _copied_blocks(view, chunk, buffers, role)


def _covering_views(array: np.ndarray, start: int, stop: int) -> Iterator[np.ndarray]:
    """Views of ``array`` that hold its flat C-order elements ``[start, stop)``, in order: whole
    rows along axis 0 as one view, the partial rows at either end split further."""
    if start >= stop:
        return
    if array.ndim == 0:
        yield array.reshape(1)
        return
    if array.ndim == 1:
        yield array[start:stop]
        return
    row = math.prod(array.shape[1:])
    first, last = start // row, (stop - 1) // row
    if first == last:
        yield from _covering_views(array[first], start - first * row, stop - first * row)
        return
    head = start - first * row
    if head:
        yield from _covering_views(array[first], head, row)
        first += 1
    tail = stop - last * row
    whole_end = last + 1 if tail == row else last
    if whole_end > first:
        yield array[first:whole_end]
    if tail != row:
        yield from _covering_views(array[last], 0, tail)


def _copied_blocks(array: np.ndarray, chunk: int, buffers: Buffers, role: str) -> Iterator[np.ndarray]:
    """Contiguous copies of ``array`` along axis 0, recursing into rows bigger than ``chunk``."""
    if array.ndim == 0 or array.size <= chunk:
        out = buffers.get(role, array.size, array.dtype)
        np.copyto(out.reshape(array.shape), array)
        yield out
        return
    row = math.prod(array.shape[1:])
    if row <= chunk:
        step = chunk // max(row, 1)
        for start in range(0, array.shape[0], step):
            yield from _copied_blocks(array[start : start + step], chunk, buffers, role)
        return
    for i in range(array.shape[0]):
        yield from _copied_blocks(array[i], chunk, buffers, role)


def aligned(xs: Iterator[np.ndarray], ys: Iterator[np.ndarray]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pairs of equal-length pieces of two block streams over the same number of elements.

    A stream is only advanced once its current block is used up, so sources may reuse their
    buffers. Raises ValueError when one stream ends before the other (a bug in a source).
    """
    x = y = None
    while True:
        if x is None or not x.size:
            x = next(xs, None)
        if y is None or not y.size:
            y = next(ys, None)
        if x is None or y is None:
            if x is not None and x.size or y is not None and y.size:
                raise ValueError("tensor block streams of different lengths")
            return
        n = min(x.size, y.size)
        yield x[:n], y[:n]
        x, y = x[n:], y[n:]


# --- opening sides ---------------------------------------------------------------------------


def check_numeric(dtype: np.dtype, what: str, path: Path) -> None:
    """Raise PrecisionToolError unless ``dtype`` holds real numbers (:func:`.metrics.dtype_problem`).

    Decided by the dtype's kind, before one element is allocated: ``|V2147483647`` is a 2 GiB
    element, and a datetime64 converts to float64 without complaint.
    """
    problem = dtype_problem(dtype)
    if problem:
        raise PrecisionToolError(f"{what}: {problem} is not compared", path)


class HeaderCache:
    """Dump headers read once per job: consecutive tasks of one dump file share it; so do the
    bytes of a small dump file (:meth:`data`)."""

    def __init__(self) -> None:
        self._dumps: dict[Path, DumpFile] = {}
        self._data: tuple[Path | None, np.ndarray | None] = (None, None)

    def data(self, t: DumpTensor, identities: FileIdentities | None = None) -> np.ndarray | None:
        """The bytes of the dump file holding ``t`` (up to its last tensor's end), read with one
        read for all the tensors of a job, when the file is at most :data:`SMALL_DUMP_BYTES`;
        None for larger files (streamed from disk). Only the last file read is kept: a job's
        tasks read one dump file. ``identities`` records the file's identity from that read.
        PrecisionToolError when the file is shorter than its header says (truncated since the
        header was read)."""
        path, data = self._data
        if path == t.path:
            return data
        dump = self.dump(t.path)
        end = max((x.offset + x.size for x in dump.tensors), default=0)
        if end > SMALL_DUMP_BYTES:
            return None
        data = np.empty(end, np.uint8)
        try:
            with open_regular(t.path, "dump file", buffering=0) as handle:
                info = os.fstat(handle.fileno()) if identities is not None else None  # before the read
                _read_exact(handle, data, t.path)
                if identities is not None:
                    identities.record(t.path, info, held_fetch(data, handle.fileno()))
        except OSError as exc:
            raise PrecisionToolError(f"cannot read: {exc.strerror or exc}", t.path) from None
        data.flags.writeable = False  # as the read-only map it replaces
        self._data = (t.path, data)
        return data

    def dump(self, path: Path) -> DumpFile:
        """The header of the dump at ``path``; PrecisionToolError when unreadable."""
        if path not in self._dumps:
            self._dumps[path] = read_dump(path)
        return self._dumps[path]

    def tensor(self, side: DumpSide) -> DumpTensor:
        """The tensor a DumpSide names; PrecisionToolError when the dump lacks it."""
        dump = self.dump(side.path)
        tensors = dump.inputs if side.kind == "input" else dump.outputs
        if not 0 <= side.index < len(tensors):
            raise PrecisionToolError(f"the dump has no {side.kind} {side.index}", side.path)
        return tensors[side.index]


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


def _in_memory(t: DumpTensor, headers: HeaderCache, identities: FileIdentities | None) -> np.ndarray | None:
    """The device tensor as a view of its small dump file's bytes (:meth:`HeaderCache.data`),
    or None: the file is large, or the tensor is empty or has no shape (read as before)."""
    if not t.shape or not t.size:
        return None
    data = headers.data(t, identities)
    if data is None:
        return None
    if t.offset + t.size > data.size:
        raise PrecisionToolError(
            f"{t.name}: the file ended before the tensor did: truncated since its header was read?", t.path
        )
    return data[t.offset : t.offset + t.size].view(t.dtype).reshape(t.shape)


def open_dump_side(side: DumpSide, headers: HeaderCache, identities: FileIdentities | None = None) -> Source:
    """Open one tensor of an NPU dump in host layout; PrecisionToolError names the problem.
    ``identities``: as :func:`open_side` (recorded here when the file is read whole)."""
    t = headers.tensor(side)
    problem = t.host_problem
    if problem:
        raise PrecisionToolError(problem, t.path)
    common = dict(dtype=t.dtype, dtype_name=t.dtype_name, nbytes=t.size, note=_format_note(t))
    check_numeric(t.dtype, t.name, t.path)
    origin = t.origin_format(side.origin_format)
    packed = dump_dtype(t.data_type).packed
    device = None if packed else _in_memory(t, headers, identities)
    if device is None:
        device = t.device()
    if not packed and _row_separable(t, device.shape):
        # the layout code always returns exactly the original shape (or raises, per block)
        raw = device.reshape(-1) if not isinstance(device, np.memmap) else None
        return DeviceRows(shape=tuple(t.original_shape), tensor=t, origin=origin, raw=raw, **common)
    try:
        host = layouts.to_host(device, t.format, t.original_shape, origin, groups=max(t.sub_format, 1))
    except PrecisionToolError as exc:
        raise PrecisionToolError(f"{t.name}: {exc.problem}", t.path) from None
    if isinstance(device, np.memmap) and host.flags.c_contiguous and _same_start(host, device):
        return FileRegion(shape=host.shape, path=t.path, offset=t.offset, **common)
    return ArrayBlocks(shape=host.shape, array=host, **common)


def open_npy_side(side: NpySide, identities: FileIdentities | None = None) -> Source:
    """Open a ``.npy`` tensor (never unpickling); PrecisionToolError names the problem.

    A C-order file (what every dumper writes) is not mapped: one of up to
    :data:`SMALL_NPY_BYTES` is read whole with its header, a larger one's blocks are read with
    ``readinto`` (mapping it first would cost a memory map a file for nothing). Fortran order
    is mapped and copied out block by block. ``identities``: as :func:`open_side`."""
    header, data = npy_header_and_bytes(side.path, SMALL_NPY_BYTES, identities)
    count = math.prod(header.shape)
    if not header.fortran_order and count:
        check_numeric(header.dtype, side.path.name, side.path)
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
    check_numeric(array.dtype, side.path.name, side.path)
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
    check_numeric(array.dtype, side.path.name, side.path)
    # a view of the mapped storage (msprobe saves sliced tensors with their whole storage):
    # read in blocks from the array, whose mapping pages in only what is read
    dtype = array.dtype
    return ArrayBlocks(
        shape=tuple(array.shape), array=array, dtype=dtype, dtype_name=numpy_name(dtype), nbytes=int(array.nbytes)
    )


def open_side(
    side: DumpSide | NpySide | TensorFileSide, headers: HeaderCache, identities: FileIdentities | None = None
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
            return open_dump_side(side, headers, identities)
        if isinstance(side, NpySide):
            return open_npy_side(side, identities)
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


def range_extent(side: DumpSide | NpySide, headers: HeaderCache) -> Source | None:
    """The side opened for reading in ranges, or None when it does not read in ranges cheaply
    (opening would convert it whole, see :func:`_converted_whole`) or cannot be opened (the
    comparison then reports why). Only headers (and memory maps) are read."""
    try:
        if isinstance(side, DumpSide):
            t = headers.tensor(side)
            if t.problem or _converted_whole(t):
                return None
        return open_side(side, headers)
    except PrecisionToolError:
        return None
