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

Opening a side (a dump tensor in host layout, a golden, an msprobe tensor file) as one of these
is :mod:`.sides`.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import PrecisionToolError
from ..formats import layouts
from ..formats.conversion_plans import ConversionPlans
from ..formats.dump_tensor import DumpTensor
from ..formats.files import open_regular

DEFAULT_CHUNK = 1 << 22  # elements per block: ~32 MiB of buffers a worker for float16 vs float32
# The copies of this process's blocked and FRACTAL_NZ conversions by their shapes, dtype and
# names (:mod:`~precision_tool.formats.conversion_plans`): per process, as the buffers are, so a
# worker replays a shape another job of its converted (a network repeats a few shapes).
CONVERSION_PLANS = ConversionPlans()


class Buffers(threading.local):
    """Reusable scratch arrays, one per role, grown on demand; per thread, as a Dask worker
    started with ``--nthreads N`` runs N calls at once in one process (one buffer shared by two
    of them would mix their blocks)."""

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


def read_exact(handle, out: np.ndarray, path: Path) -> None:
    """Fill ``out`` from ``handle``; PrecisionToolError when the file ends first."""
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
                read_exact(handle, out, path)
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
                layouts.to_host(
                    device, t.format, host_shape, self.origin, max(t.sub_format, 1), out=out, plans=CONVERSION_PLANS
                )
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
