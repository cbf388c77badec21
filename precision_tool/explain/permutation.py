"""The permutation hypothesis: the NPU tensor is its golden with the elements moved around.

Candidates, for tensors of rank <= 5 and one size:

* ``transpose``: ``npu == golden.transpose(p)`` for every axis permutation ``p`` (when the
  shapes are equal these are the permutations of equal-length axes, H/W swaps among them), and
  the same values read in the NPU's shape when the shapes differ (NCHW data read as NHWC);
* ``read_as``: ``npu.transpose(q)`` holds the golden's values in C order: the golden's bytes
  read in another shape and converted back (NHWC data read as NCHW);
* ``reverse``: ``npu == flip(golden, axis)`` for each axis (reversed channels: RGB vs BGR).

Each candidate maps an NPU flat position to a golden flat position. All are screened on a fixed
sample of positions (gathered from the memory-mapped tensors, so nothing else is read); the best
few are verified by a full streamed pass, and one holds when its comparison no longer diverges
and at most halves the relative error.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..compare.pair_stats import (
    DtypeFacts,
    PairAccumulator,
    PairStats,
    as_float64,
    dtype_facts,
    pieces,
)
from .subject import Cause, Subject

MAX_RANK = 5
SAMPLE = 4096
VERIFY = 3  # candidates verified by a full pass
SCREEN_COSINE = 0.95
VERIFY_CHUNK = 1 << 18
_NAMED_4D = {(0, 3, 1, 2): "NCHW", (0, 2, 3, 1): "NHWC"}


@dataclass(frozen=True)
class Candidate:
    """One way the elements may have moved: ``kind`` (transpose, read_as, reverse) and its axes."""

    kind: str
    axes: tuple[int, ...]

    def golden_positions(
        self, flat: np.ndarray, npu_shape: tuple[int, ...], golden_shape: tuple[int, ...]
    ) -> np.ndarray:
        """The golden flat position each NPU flat position in ``flat`` takes its value from."""
        if self.kind == "transpose":
            moved = tuple(golden_shape[a] for a in self.axes)
            index = np.unravel_index(flat, moved)
            golden_index = [None] * len(golden_shape)
            for j, axis in enumerate(self.axes):
                golden_index[axis] = index[j]
            return np.ravel_multi_index(tuple(golden_index), golden_shape)
        index = list(np.unravel_index(flat, npu_shape))
        if self.kind == "read_as":
            moved = tuple(npu_shape[a] for a in self.axes)
            return np.ravel_multi_index(tuple(index[a] for a in self.axes), moved)
        axis = self.axes[0]
        index[axis] = npu_shape[axis] - 1 - index[axis]
        return np.ravel_multi_index(tuple(index), npu_shape)

    def describe(self, npu_shape, golden_shape, channel_axis: int | None) -> str:
        """What this candidate means, in words."""
        if self.kind == "reverse":
            what = "reversed channels" if self.axes[0] == channel_axis else "reversed"
            return f"the golden {what} along axis {self.axes[0]}"
        named = _NAMED_4D.get(self.axes) if channel_axis == 3 and len(self.axes) == 4 else None
        if self.kind == "transpose":
            moved = tuple(golden_shape[a] for a in self.axes)
            if moved == tuple(npu_shape):
                return f"the golden with axes permuted {list(self.axes)}"
            prefix = f"{named} data read as NHWC: " if named == "NCHW" else ""
            return f"{prefix}the golden transposed by {list(self.axes)} and read in shape {list(npu_shape)}"
        inverse = [int(i) for i in np.argsort(self.axes)]
        prefix = "NHWC data read as NCHW: " if named == "NCHW" else ""
        return (
            f"{prefix}the golden's values read in shape {[npu_shape[a] for a in self.axes]} and transposed by {inverse}"
        )


def candidates(npu_shape: tuple[int, ...], golden_shape: tuple[int, ...]) -> list[Candidate]:
    """Every candidate for two shapes of one size (none above rank :data:`MAX_RANK`)."""
    found = []
    if len(golden_shape) <= MAX_RANK:
        identity = tuple(range(len(golden_shape)))
        found += [Candidate("transpose", p) for p in itertools.permutations(identity) if p != identity]
    if len(npu_shape) <= MAX_RANK:
        identity = tuple(range(len(npu_shape)))
        found += [Candidate("read_as", q) for q in itertools.permutations(identity) if q != identity]
        if tuple(npu_shape) == tuple(golden_shape):
            found += [Candidate("reverse", (a,)) for a, n in enumerate(npu_shape) if n > 1]
    return found


def _gather(array: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """``array``'s values at C-order flat positions, without copying the rest (works on strided
    views and memory maps).

    Axes of length 1 move no C-order position, so they are dropped first (a view): numpy takes
    at most 63 index arrays, and a rank-64 tensor (numpy's most) has at most 62 longer axes.
    """
    array = np.squeeze(array)
    if array.ndim == 0:
        return as_float64(array)[np.zeros(flat.size, np.int64)]
    return as_float64(array[np.unravel_index(flat, array.shape)])


def _cosine(x: np.ndarray, y: np.ndarray) -> float:
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    norm = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / norm if norm else math.nan


def screen(
    npu: np.ndarray, golden: np.ndarray, found: list[Candidate], sample: int = SAMPLE
) -> list[tuple[float, Candidate]]:
    """``(sample cosine, candidate)`` of the candidates that look right on a fixed sample,
    best first, duplicates (candidates moving the sampled elements alike) dropped."""
    size = npu.size
    rng = np.random.default_rng(0)
    flat = np.sort(rng.choice(size, sample, replace=False)) if size > sample else np.arange(size)
    values = _gather(npu, flat)
    base = _cosine(values, _gather(golden, flat))
    seen, scored = set(), []
    for candidate in found:
        positions = candidate.golden_positions(flat, npu.shape, golden.shape)
        key = positions.tobytes()
        if key in seen:
            continue
        seen.add(key)
        cosine = _cosine(values, _gather(golden, positions))
        if cosine >= SCREEN_COSINE and not cosine <= base:
            scored.append((cosine, candidate))
    return sorted(scored, key=lambda item: -item[0])


def verify(
    npu: np.ndarray,
    golden: np.ndarray,
    candidate: Candidate,
    facts: DtypeFacts | None = None,
    chunk: int = VERIFY_CHUNK,
) -> PairStats:
    """The full streamed comparison of ``npu`` with the golden moved by ``candidate``."""
    acc = PairAccumulator(facts or dtype_facts(npu.dtype))
    start = 0
    for index in pieces(npu.shape, chunk):
        x = as_float64(npu[index])
        flat = np.arange(start, start + x.size)
        acc.update(start, x, _gather(golden, candidate.golden_positions(flat, npu.shape, golden.shape)))
        start += x.size
    return acc.result(npu.shape)


def permutation(s: Subject) -> Cause | None:
    """The NPU tensor equals its golden with axes permuted, read in another layout, or reversed
    along an axis; reports the axes and the cosine after the move."""
    npu, golden = s.npu, s.golden
    if not s.differs or npu.size != golden.size or npu.size < 2:
        return None
    found = candidates(tuple(npu.shape), tuple(golden.shape))
    before = s.stats.red
    for _, candidate in screen(npu, golden, found)[:VERIFY]:
        after = verify(npu, golden, candidate, s.stats.facts)
        if s.criterion.diverges(after) or not (after.red <= 0.5 * before or s.stats.nonfinite_mismatch):
            continue
        score = 1.0 if not math.isfinite(before) or before == 0 else max(0.0, 1.0 - (after.red / before) ** 2)
        what = candidate.describe(npu.shape, golden.shape, s.channel_axis)
        return Cause(
            "permutation",
            f"the NPU tensor is {what}: cosine {after.cosine:.6f} after the "
            f"move (was {s.stats.cosine:.6f}), relative error {after.red:.3g} (was {before:.3g})",
            {
                "kind": candidate.kind,
                "axes": list(candidate.axes),
                "cosine": after.cosine,
                "cosine_before": s.stats.cosine,
                "red": after.red,
                "red_before": before,
            },
            score,
        )
    return None
