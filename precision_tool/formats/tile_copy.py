"""The one copy of a layout conversion: a tiled view of a device tensor into its host array.

:func:`copy_tiles` is what :mod:`.layouts` ends every blocked and FRACTAL_NZ conversion with:
plain strided ``copyto`` calls, the device padding dropped, and an axis contiguous on both
sides (C0) moved as single wide elements, since numpy's strided loops cost per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np


def copy_tiles(tiles: np.ndarray, out: np.ndarray, tiled: Sequence[int], copies: list | None = None) -> None:
    """Copy a tiled view into ``out`` in one pass: the single copy of every conversion.

    ``tiles`` has ``out``'s axes, except that each axis ``i`` in ``tiled`` is two axes
    ``(outer, inner)`` in ``tiles``, holding ``outer * inner >= out.shape[i]`` elements (the
    excess is device padding, dropped). The padded tail of an axis is copied apart, so every
    copy is a plain strided ``copyto`` and nothing is merged (which would copy first).
    ``copies`` (a list) gets each copy made, as ``(out view, tiles view)``
    (:mod:`.conversion_plans` replays them).
    """
    tiled = tuple(sorted(tiled))
    for i in tiled:
        at = i + sum(1 for t in tiled if t < i)  # the outer axis of out's axis i in tiles
        outer, inner = tiles.shape[at], tiles.shape[at + 1]
        length = out.shape[i]
        if length == outer * inner:
            continue
        full, rest = divmod(length, inner)
        if full:
            copy_tiles(
                tiles[(slice(None),) * at + (slice(0, full),)],
                out[(slice(None),) * i + (slice(0, full * inner),)],
                tiled,
                copies,
            )
        if rest:
            copy_tiles(
                tiles[(slice(None),) * at + (full, slice(0, rest))],
                out[(slice(None),) * i + (slice(full * inner, length),)],
                [t for t in tiled if t != i],
                copies,
            )
        return
    _copy_runs(_split_axes(out, tiles.shape, tiled), tiles, copies)


def _copy_runs(dst: np.ndarray, src: np.ndarray, copies: list | None) -> None:
    """``np.copyto(dst, src)``, with an axis that is contiguous on both sides moved as one
    element: numpy's strided loops cost per call, and device tiles make that axis short (C0:
    16 elements), so copying each run of it as one 32-byte item is 2.5 times as fast."""
    size, shape, src_strides, dst_strides = src.itemsize, src.shape, src.strides, dst.strides  # tuples made once
    ndim = len(shape)
    run = next((a for a in range(ndim) if shape[a] > 1 and src_strides[a] == dst_strides[a] == size), None)
    if run is not None and src.dtype == dst.dtype:
        if run != ndim - 1:  # the run's axis last (most often it is: C0)
            order = [axis for axis in range(ndim) if axis != run] + [run]
            dst, src = dst.transpose(order), src.transpose(order)
        item = _run_item(shape[run] * size)
        dst, src = dst.view(item)[..., 0], src.view(item)[..., 0]
    np.copyto(dst, src)
    if copies is not None:
        copies.append((dst, src))


@lru_cache(maxsize=64)
def _run_item(size: int) -> np.dtype:
    """The dtype of one run of ``size`` bytes, copied as a single element."""
    return np.dtype((np.void, size))


def _split_axes(out: np.ndarray, shape: Sequence[int], tiled: Sequence[int]) -> np.ndarray:
    """A writable view of ``out`` with each axis in ``tiled`` split in two (never a copy)."""
    strides, at = [], 0
    for i, stride in enumerate(out.strides):
        if i in tiled:
            strides += [stride * shape[at + 1], stride]
            at += 2
        else:
            strides.append(stride)
            at += 1
    return np.lib.stride_tricks.as_strided(out, tuple(shape), tuple(strides), writeable=True)


__all__ = ["copy_tiles"]
