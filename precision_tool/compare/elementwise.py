"""Element-by-element comparison of two tensors (the ``cp`` command): pure, vectorised, chunked.

Both tensors are read as flat sequences, a block of 64 Ki elements at a time, upcast to float64
into buffers allocated once per comparison and small enough to stay in the CPU cache; every step
writes into them (``out=``), so no temporary is allocated per block and memory stays a few
hundred KiB whatever the tensor size. The mismatch indexes are never materialised for the whole
tensor: only a block's worth, and only while fewer than ``limit`` mismatches have been found.

Semantics (the same as ``numpy.isclose(left, right, rtol, atol, equal_nan=True)``; ``right`` is
the reference):

* a pair is close when ``|left - right| <= atol + rtol * |right|`` with a finite ``right``, or
  when the two are equal (same-signed infinities), or when both are NaN;
* ``max_abs_error`` is the largest ``|left - right|`` over the pairs where it is a number (pairs
  with a NaN on either side are left out; an Inf against a finite value gives Inf);
* ``cosine`` is ``sum(l*r) / sqrt(sum(l*l) * sum(r*r))``, accumulated in float64 by the metrics'
  folds of those sums; when finite values overflow them (beyond about 1e154), they are taken
  again as the metrics take them, scaled (:func:`.kernels.fold_first`: a second pass, only
  then). It is NaN when either tensor holds a NaN or Inf, or when either tensor is all zeros
  (the angle is undefined).

Only real numbers are compared: dates, text, complex values... are refused by
:func:`.metrics.dtype_problem`, naming the tensor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import PrecisionToolError
from .kernels import fold_first
from .metric_data import Stats
from .metrics import dtype_problem
from .stat_groups import COSINE_GROUPS, stat_group, sums_finite

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5
DEFAULT_LIMIT = 20
DEFAULT_CHUNK = 1 << 16  # elements per block: 512 KiB float64 buffers, cache-resident


@dataclass(frozen=True)
class ElementPair:
    """One element of both tensors: its flat index and the two values (as float64)."""

    index: int
    left: float
    right: float

    @property
    def abs_diff(self) -> float:
        """``|left - right|`` (NaN when either side is NaN)."""
        return abs(self.left - self.right)


@dataclass(frozen=True)
class ElementwiseResult:
    """The outcome of :func:`compare_elementwise`."""

    total: int
    mismatches: int
    cosine: float
    max_abs_error: float
    max_abs_index: int | None  # flat index of the largest error; None when there is none
    first_mismatches: tuple[ElementPair, ...]
    nan_left: int
    nan_right: int
    atol: float
    rtol: float

    @property
    def allclose(self) -> bool:
        """True when every pair is close (see the module docstring)."""
        return self.mismatches == 0

    @property
    def error_ratio(self) -> float:
        """Mismatching elements over all elements (0.0 for empty tensors)."""
        return self.mismatches / self.total if self.total else 0.0


_COSINE_SUMS = tuple(stat_group(name) for name in sorted(COSINE_GROUPS))


def check_numbers(values: np.ndarray, name: str) -> None:
    """PrecisionToolError naming the tensor ``name`` unless ``values`` holds real numbers."""
    problem = dtype_problem(np.asarray(values).dtype)
    if problem:
        raise PrecisionToolError(f"cannot compare {name}: {problem} is not compared")


def as_float64(values: np.ndarray) -> np.ndarray:
    """``values`` as float64 (bool, integers, float16, bfloat16 and fp8 upcast exactly)."""
    check_numbers(values, "the tensor")
    return np.asarray(values).astype(np.float64, copy=False)


@dataclass(frozen=True)
class _Chunk:
    """One chunk's comparison: the close mask, ``|left - right|`` and where it peaks."""

    close: np.ndarray
    diff: np.ndarray
    peak: int | None  # index of the largest numeric diff; None when every diff is NaN
    special: bool  # some value is NaN or Inf


class _Scratch:
    """float64 and bool buffers for blocks of up to ``size`` elements, reused block after block."""

    def __init__(self, size: int) -> None:
        self.left, self.right, self.diff, self.tolerance = (np.empty(size) for _ in range(4))
        self.close = np.empty(size, np.bool_)

    def upcast(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two blocks as float64 in the buffers (bool, integers, float16, bfloat16: exact)."""
        n = left.size
        a, b = self.left[:n], self.right[:n]
        np.copyto(a, left, casting="unsafe")
        np.copyto(b, right, casting="unsafe")
        return a, b


def _compare_chunk(
    left: np.ndarray, right: np.ndarray, atol: float, rtol: float, scratch: _Scratch | None = None
) -> _Chunk:
    """Compare float64 chunks; the NaN/Inf fix-ups of isclose's rules run only when needed."""
    n = left.size
    scratch = scratch or _Scratch(n)
    diff, tolerance, close = scratch.diff[:n], scratch.tolerance[:n], scratch.close[:n]
    with np.errstate(invalid="ignore", over="ignore"):
        np.subtract(left, right, out=diff)
        np.abs(diff, out=diff)
        np.abs(right, out=tolerance)
        np.multiply(tolerance, rtol, out=tolerance)
        np.add(tolerance, atol, out=tolerance)
        np.less_equal(diff, tolerance, out=close)
        if not n:
            return _Chunk(close, diff, None, False)
        peak = int(np.argmax(diff))  # the first NaN when there is one
        if np.isfinite(diff[peak]):
            return _Chunk(close, diff, peak, False)
        close &= np.isfinite(right)
        close |= left == right
        close |= np.isnan(left) & np.isnan(right)
        numeric = not np.isnan(diff).all()
        return _Chunk(close, diff, int(np.nanargmax(diff)) if numeric else None, True)


def close_mask(
    left: np.ndarray, right: np.ndarray, atol: float = DEFAULT_ATOL, rtol: float = DEFAULT_RTOL
) -> np.ndarray:
    """Which pairs are close, per ``numpy.isclose(..., equal_nan=True)``, for float64 arrays."""
    return _compare_chunk(left, right, atol, rtol).close.copy()


def cosine_from_sums(dot: float, left_sq: float, right_sq: float) -> float:
    """``dot / sqrt(left_sq * right_sq)``; NaN when a norm is zero or a sum is not finite."""
    if not all(math.isfinite(v) for v in (dot, left_sq, right_sq)) or left_sq <= 0 or right_sq <= 0:
        return float("nan")
    return dot / math.sqrt(left_sq) / math.sqrt(right_sq)


@dataclass
class _Accumulator:
    """Running totals over the chunks."""

    limit: int
    mismatches: int = 0
    sums: Stats = field(default_factory=Stats)  # the cosine's three sums
    nonfinite: bool = False  # a NaN or Inf among the values
    max_abs: float = float("nan")
    max_index: int | None = None
    nan_left: int = 0
    nan_right: int = 0
    first: list[ElementPair] = field(default_factory=list)

    def add(self, start: int, left: np.ndarray, right: np.ndarray, atol: float, rtol: float, scratch: _Scratch) -> None:
        left, right = scratch.upcast(left, right)
        chunk = _compare_chunk(left, right, atol, rtol, scratch)
        bad = chunk.close.size - int(np.count_nonzero(chunk.close))
        if bad and len(self.first) < self.limit:
            wanted = np.flatnonzero(~chunk.close)[: self.limit - len(self.first)]
            self.first.extend(ElementPair(start + int(i), float(left[i]), float(right[i])) for i in wanted)
        self.mismatches += bad
        if chunk.peak is not None and (self.max_index is None or chunk.diff[chunk.peak] > self.max_abs):
            self.max_abs, self.max_index = float(chunk.diff[chunk.peak]), start + chunk.peak
        with np.errstate(invalid="ignore", over="ignore"):
            for group in _COSINE_SUMS:  # in place: one Stats for the whole tensor
                group.fold(self.sums, left, right)
        if chunk.special:
            self.nonfinite = self.nonfinite or not (np.isfinite(left).all() and np.isfinite(right).all())
            self.nan_left += int(np.count_nonzero(np.isnan(left)))
            self.nan_right += int(np.count_nonzero(np.isnan(right)))


def _flat(array: np.ndarray) -> np.ndarray:
    return np.asarray(array).reshape(-1)


def compare_elementwise(
    left: np.ndarray,
    right: np.ndarray,
    *,
    atol: float = DEFAULT_ATOL,
    rtol: float = DEFAULT_RTOL,
    limit: int = DEFAULT_LIMIT,
    chunk_size: int = DEFAULT_CHUNK,
) -> ElementwiseResult:
    """Compare two tensors of equal size element by element, in flat (C) order.

    Args:
        left, right: the tensors; shapes may differ, sizes may not. ``right`` is the reference
            the relative tolerance scales with.
        atol, rtol: absolute and relative tolerance. Default to 1e-5 and 1e-3.
        limit: how many of the first mismatching pairs to keep. Defaults to 20.
        chunk_size: elements per step (tests use tiny ones). Defaults to 64 Ki.

    Raises:
        PrecisionToolError: the sizes differ, or a tensor does not hold real numbers.
    """
    a, b = _flat(left), _flat(right)
    for values, name in ((a, "the left tensor"), (b, "the right tensor")):
        check_numbers(values, name)
    if a.size != b.size:
        raise PrecisionToolError(f"the tensors have different sizes ({a.size} and {b.size} elements)")
    if atol < 0 or rtol < 0 or chunk_size < 1 or limit < 0:
        raise ValueError("atol, rtol and limit must be >= 0 and chunk_size >= 1")
    acc = _Accumulator(limit)
    scratch = _Scratch(min(chunk_size, a.size))
    for start in range(0, a.size, chunk_size):
        stop = start + chunk_size
        acc.add(start, a[start:stop], b[start:stop], atol, rtol, scratch)
    return ElementwiseResult(
        total=int(a.size),
        mismatches=acc.mismatches,
        cosine=_cosine(a, b, acc),
        max_abs_error=acc.max_abs,
        max_abs_index=acc.max_index,
        first_mismatches=tuple(acc.first),
        nan_left=acc.nan_left,
        nan_right=acc.nan_right,
        atol=float(atol),
        rtol=float(rtol),
    )


def _cosine(left: np.ndarray, right: np.ndarray, acc: _Accumulator) -> float:
    """The cosine of the sums ``acc`` folded; when finite values overflowed them, of the sums
    folded again, scaled (a ratio: the same at any scale)."""
    sums = acc.sums
    if not acc.nonfinite and not sums_finite(sums):
        sums = fold_first(Stats(), left, right, _COSINE_SUMS)
    return cosine_from_sums(sums.sum_xy, sums.sum_xx, sums.sum_yy)


def first_elements(left: np.ndarray, right: np.ndarray, count: int = DEFAULT_LIMIT) -> tuple[ElementPair, ...]:
    """The first ``count`` elements of both tensors, in flat (C) order."""
    a = as_float64(_flat(left)[:count])
    b = as_float64(_flat(right)[:count])
    return tuple(ElementPair(i, float(x), float(y)) for i, (x, y) in enumerate(zip(a, b)))
