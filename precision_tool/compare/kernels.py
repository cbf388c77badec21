"""The passes that fold the statistic groups (:mod:`.stat_groups`) over a tensor pair.

Two implementations fold the built-in groups; both read each side in its stored dtype:

* **numba** (:mod:`.kernels_numba`): one fused pass over the two flat blocks computes every
  first-pass statistic at once (cosine alone has its own three-sum kernel), float16 and bfloat16
  read in their stored bits and widened by the CPU; the KL pass is a second kernel. Used for tensors of
  at least :data:`NUMBA_MIN_SIZE` elements when numba imports and compiles; compiled kernels are
  cached on disk (:func:`numba_cache_dir`), never inside the user's data.
* **numpy**: each group's own fold over float64 blocks of :data:`BLOCK` elements. Used when
  numba is missing, fails, is switched off (``PRECISION_TOOL_KERNELS=numpy``) or would not pay
  for its loading (:func:`numba_pays_off`, :data:`NUMBA_MIN_SIZE`), and for groups registered
  from outside.

Both return partial statistics that merge (:func:`~.stat_groups.combine`).

Accuracy: why the printed six decimals come out right. Every statistic is accumulated in float64
whatever the inputs (float16/bfloat16/float32 values are exact in float64, and so are their
products). Sums are blocked: each block of 2,048 (numba; 32,768 for numpy) elements is summed
into its own partial, several lanes at a time, and the partials are added to the totals, so a
sum of n terms carries a rounding error of at most about (2048 + n/2048) * 1.1e-16 of the sum of
the terms' magnitudes: 3e-12 for n = 10**8, far below the 5e-7 that the last printed decimal
allows. Sums of non-negative terms (|x-y|, (x-y)^2, the relative terms, x*x) are therefore
accurate to that relative error; sum x*y is accurate to that fraction of sqrt(sum x*x sum y*y),
so the cosine is within 3e-12 absolutely. The squared deviations are taken per block from a
shift that is an element of the block, which bounds the cancellation ((c - mean)^2 <= m var) and
blocks merge by Chan's formula, so a large mean does not cancel the spread. KL's logarithm is a
float64 series within 5e-13 absolutely (numba; KL is a p-weighted mean of such logs, so within
5e-13 too) or numpy's float64 log. The ranges, maxima and
NaN/Inf counts are exact. msaccucmp computes in float32 (FORMATS.md), so where the printed
values differ at all it is msaccucmp's last digit (the tests allow for that). float64 values
beyond about 1e154 overflow the sums of squares; such a chunk (finite values, sums not finite:
one test per chunk) is folded again at scaled magnitudes (:mod:`.scaled_sums`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache, partial

import numpy as np

from .metric_data import Range, StatGroup, Stats
from .metric_table import cosine_sums_only
from .numba_line import claim_process, numba_enabled, numba_min_bytes, numba_pays_off, process_claimed
from .numba_load import DISTANCE_FIELDS, FUSED_FIELDS, kernel_operand, numba_cache_dir, numba_kernels
from .scaled_sums import refold_if_overflowed
from .stat_groups import BUILTIN, COSINE_GROUPS, DISTANCE_GROUPS, combine, merge_kl, sums_finite

BLOCK = 1 << 15  # numpy path: elements per step, so the float64 buffers stay in the cache
NUMBA_MIN_SIZE = 1 << 18  # smaller tensors take the numpy path: no numba import for them
_PIECE = 1 << 16  # elements converted at a time for dtypes the numba kernels do not read
COUNTS = frozenset({"count", "nan_x", "nan_y", "inf_x", "inf_y"})


# --- the numba backend ------------------------------------------------------------------------


def numba_for(size: int | None, wanted: bool | None = None):
    """The numba kernels for a tensor of ``size`` elements, or None for numpy.

    ``wanted`` is a caller's decision for a whole run (:func:`numba_pays_off`); None decides by
    the tensor's size (unknown: numba).
    """
    if wanted is False or wanted is None and size is not None and size < NUMBA_MIN_SIZE:
        return None
    return numba_kernels()


def needs_cosine_sums_only(metrics) -> bool:
    """Whether the metrics need cosine's three sums alone (:func:`numba_pays_off`'s
    ``cosine_only``)."""
    return _cosine_only([group for metric in metrics for group in metric.groups])


def _float64_pieces(x: np.ndarray, y: np.ndarray, step: int) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """float64 pieces of ``step`` elements, converted into two buffers reused piece after piece.

    (A fresh float64 array per piece costs page faults: with float16 data the system time of a
    run was as large as its compute.) A consumer must be done with a piece before the next.
    """
    if x.dtype == np.float64 and y.dtype == np.float64:
        for start in range(0, x.size, step):
            yield x[start : start + step], y[start : start + step]
        return
    size = min(step, x.size)
    buffers = np.empty(size), np.empty(size)
    for start in range(0, x.size, step):
        xs, ys = x[start : start + step], y[start : start + step]
        n = xs.size
        for block, out in ((xs, buffers[0][:n]), (ys, buffers[1][:n])):
            np.copyto(out, block.view(np.uint8) if block.dtype == np.bool_ else block, casting="unsafe")
        yield buffers[0][:n], buffers[1][:n]


def as_float64(block: np.ndarray) -> np.ndarray:
    """``block`` as float64 (bool as 0/1); the block itself when it already is."""
    if block.dtype == np.bool_:
        block = block.view(np.uint8)
    return block.astype(np.float64, copy=False)


def _kernel_operands(x: np.ndarray, y: np.ndarray) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """The chunks as the kernels read them (:func:`kernel_operand`) when they read both dtypes,
    else float64 pieces of them (which they read as they are)."""
    xv, yv = kernel_operand(x), kernel_operand(y)
    if xv is not None and yv is not None:
        yield xv, yv
    else:
        yield from _float64_pieces(x, y, _PIECE)


def _fused_stats(kernels, x: np.ndarray, y: np.ndarray, groups: Sequence[StatGroup]) -> Stats:
    """The built-in ``groups``' statistics of a chunk from the kernel that folds the fewest
    fields holding them: the cosine's sums, those and the difference's, or every field."""
    kernel = kernel_for(tuple(groups))
    total = None
    for xv, yv in _kernel_operands(x, y):
        part = _kernel_part(kernels, kernel, xv, yv)
        # a kernel's sums start at +0.0, so merging a first part into empty statistics would
        # give it back unchanged: it is taken as it is
        total = part if total is None else combine(total, part)
    return Stats() if total is None else total


@lru_cache(maxsize=64)
def kernel_for(groups: tuple[StatGroup, ...]) -> str:
    """The kernel that folds the fewest fields holding the built-in ``groups``' statistics:
    ``cosine`` (its three sums), ``distance`` (those and the difference's) or ``fused``."""
    names = {g.name for g in groups}
    return "cosine" if names <= COSINE_GROUPS else "distance" if names <= DISTANCE_GROUPS else "fused"


def _kernel_part(kernels, kernel: str, xv: np.ndarray, yv: np.ndarray) -> Stats:
    """The statistics ``kernel`` (:func:`kernel_for`) folds over two operands it reads."""
    out = np.zeros(len(FUSED_FIELDS))
    if kernel == "cosine":
        kernels.cosine(xv, yv, out)
        return Stats(count=xv.size, sum_xy=out[0], sum_xx=out[1], sum_yy=out[2])
    if kernel == "distance":
        kernels.distance(xv, yv, out)
        part = Stats(count=xv.size, **dict(zip(DISTANCE_FIELDS, out.tolist())))
    else:
        kernels.fused(xv, yv, out)
        part = Stats(**{name: int(v) if name in COUNTS else v for name, v in zip(FUSED_FIELDS, out.tolist())})
    _count_nonfinite(kernels, part, xv, yv)
    _nan_maxima(part)
    return part


@lru_cache(maxsize=64)
def builtin_kernel(groups: tuple[StatGroup, ...]) -> str | None:
    """:func:`kernel_for` of first-pass ``groups`` that are all built-in (what
    :func:`first_chunk` folds), else None."""
    builtin, custom, stored = _by_kind(groups)
    return kernel_for(builtin) if builtin and not custom and not stored else None


@lru_cache(maxsize=64)
def _by_kind(groups: tuple[StatGroup, ...]) -> tuple[tuple[StatGroup, ...], ...]:
    """``groups`` as (built-in, registered outside on float64 blocks, registered outside on
    blocks in the stored dtypes), in their order: worked out once per choice of groups."""
    builtin = tuple(g for g in groups if g.name in BUILTIN)
    custom = tuple(g for g in groups if g.name not in BUILTIN and not g.stored)
    return builtin, custom, tuple(g for g in groups if g.name not in BUILTIN and g.stored)


def first_chunk(kernels, kernel: str, x: np.ndarray, y: np.ndarray) -> Stats | None:
    """``fold_first(Stats(), x, y, groups, kernels)`` for built-in ``groups`` alone whose
    kernel is ``kernel`` (:func:`kernel_for`), without working out again what it works out
    for any chunk: the kernel's statistics when it reads both dtypes and the sums are finite,
    else None (then :func:`fold_first`, which converts, counts and refolds, is what applies)."""
    xv, yv = kernel_operand(x), kernel_operand(y)
    if xv is None or yv is None:
        return None
    part = _kernel_part(kernels, kernel, xv, yv)
    return part if sums_finite(part) else None


def _count_nonfinite(kernels, s: Stats, xv: np.ndarray, yv: np.ndarray) -> None:
    """The NaN and Inf counts of a side whose sum of squares is not finite (else there are none)."""
    counts = np.zeros(2, np.int64)
    if not math.isfinite(s.sum_xx):
        kernels.count_nonfinite(xv, counts)
        s.nan_x, s.inf_x = int(counts[0]), int(counts[1])
    if not math.isfinite(s.sum_yy):
        kernels.count_nonfinite(yv, counts)
        s.nan_y, s.inf_y = int(counts[0]), int(counts[1])


def _nan_maxima(s: Stats) -> None:
    """numpy semantics for the kernel's integer-key maxima and minima (which skip NaN)."""
    if math.isnan(s.sum_abs):
        s.max_abs = math.nan
    if math.isnan(s.rel_sum):
        s.rel_max = math.nan
    if s.nan_x:
        s.x_lo = s.x_hi = math.nan
    if s.nan_y:
        s.y_lo = s.y_hi = math.nan


# --- the passes -------------------------------------------------------------------------------


def fold_first(stats: Stats, x: np.ndarray, y: np.ndarray, groups: Sequence[StatGroup], kernels=None) -> Stats:
    """Fold a pair of equal-length flat chunks into ``stats`` for the first-pass ``groups``.

    ``kernels`` (from :func:`numba_for`) folds every built-in group in one fused pass; groups
    registered from outside, and everything when it is None, fold float64 blocks with numpy
    (a ``stored`` group: blocks in the stored dtypes, :attr:`~.metric_data.StatGroup.stored`).
    A chunk of finite values whose sums overflow float64 is folded again, scaled
    (:mod:`.scaled_sums`). Returns the updated statistics (``stats`` itself, or a combined copy).
    """
    builtin, custom, stored = _by_kind(tuple(groups))
    fused = kernels is not None and bool(builtin)
    in_place = not fused and not stats.count  # a first chunk folds into stats: no combine
    part = _fused_stats(kernels, x, y, builtin) if fused else stats if in_place else Stats()
    folds = custom if fused else builtin + custom
    if stored or folds:  # numpy folds (the fused kernel alone needs no errstate: 2 us a pair)
        with np.errstate(all="ignore"):
            if stored:  # first: the float64 folds advance part.count block by block
                _fold_stored(stats if fused else part, x, y, stored)
            if folds:
                for xb, yb in _float64_pieces(x, y, BLOCK):
                    for group in folds:
                        group.fold(stats if fused else part, xb, yb)
                    if not fused:  # the fused kernel counted them
                        part.count += xb.size
    if not folds and not fused:
        part.count += x.size
    if not sums_finite(part):  # a NaN or Inf, or an overflow
        counted = (fused and not _cosine_only(builtin)) or any(g.name == "range" for g in builtin)
        part = refold_if_overflowed(part, x, y, builtin, partial(fresh_fold, kernels=kernels), counted)
    if in_place:
        return part
    if fused and not stats.count:  # the first chunk: its built-in fields are part's (as above)
        part.extra = dict(stats.extra)
        return part
    return combine(stats, part, () if fused else custom + stored)


def _fold_stored(stats: Stats, x: np.ndarray, y: np.ndarray, groups: Sequence[StatGroup]) -> None:
    """Fold the ``stored`` groups over views of :data:`BLOCK` elements in the stored dtypes."""
    for start in range(0, x.size, BLOCK):
        xb, yb = x[start : start + BLOCK], y[start : start + BLOCK]
        for group in groups:
            group.fold(stats, xb, yb)


def _cosine_only(groups: Sequence[StatGroup]) -> bool:
    return cosine_sums_only(g.name for g in groups)


def fresh_fold(x: np.ndarray, y: np.ndarray, groups: Sequence[StatGroup], kernels) -> Stats:
    """The statistics of built-in ``groups`` over one chunk, in a new Stats (with ``kernels``
    from :func:`numba_for`, or numpy when None)."""
    if kernels is not None:
        return _fused_stats(kernels, x, y, groups)
    stats = Stats()
    with np.errstate(all="ignore"):
        for xb, yb in _float64_pieces(x, y, BLOCK):
            for group in groups:
                group.fold(stats, xb, yb)
            stats.count += xb.size
    return stats


def kl_scaling(rng: Range) -> tuple[float, float] | None:
    """(lo, inv) with ``(v - lo) * inv`` = KL's ``(v - lo)/(hi - lo)`` to 1 ulp; None if none does.

    A 0 span gives (0, 1): P is v itself; NaN and infinite spans keep numpy's NaN and 0
    results. A span so small that 1/span overflows (subnormal) gives None: the caller divides.
    """
    span = rng.hi - rng.lo
    if span == 0:
        return 0.0, 1.0
    if span != span or span == math.inf:
        return rng.lo, 0.0 if span == math.inf else math.nan
    inv = 1.0 / span
    return (rng.lo, inv) if math.isfinite(inv) else None


def _kl_side(values: np.ndarray, rng: Range) -> tuple[np.ndarray, Range]:
    """The values and range KL normalises, ``(v - lo)/(hi - lo)``: as they are, or halved, values
    and range, when the span of finite ``lo`` and ``hi`` overflows float64 (the ratio is the same;
    only then is the chunk copied)."""
    if math.isinf(rng.hi - rng.lo) and math.isfinite(rng.lo) and math.isfinite(rng.hi):
        return as_float64(values) * 0.5, Range(rng.lo * 0.5, rng.hi * 0.5)
    return values, rng


def fold_second(
    stats: Stats, x: np.ndarray, y: np.ndarray, groups: Sequence[StatGroup], ranges: tuple[Range, Range], kernels=None
) -> None:
    """Fold a pair of chunks into ``stats`` for the groups that need the ``ranges`` (KL...)."""
    (x, x_range), (y, y_range) = _kl_side(x, ranges[0]), _kl_side(y, ranges[1])
    ranges = (x_range, y_range)
    scaling = [kl_scaling(rng) for rng in ranges]
    for group in groups:
        if group.name == "kl" and kernels is not None and None not in scaling:
            for xv, yv in _kernel_operands(x, y):
                out = np.zeros(3)
                kernels.kl(xv, *scaling[0], yv, *scaling[1], out)
                # Python floats: pieces' sums that overflow give inf as numpy's would, without its warning
                kl_sp, kl_sq, kl_cross = out.tolist()
                merge_kl(stats, Stats(kl_sp=kl_sp, kl_sq=kl_sq, kl_cross=kl_cross))
            continue
        with np.errstate(all="ignore"):
            for xb, yb in _float64_pieces(x, y, BLOCK):
                group.fold(stats, xb, yb, ranges)


__all__ = [
    "BLOCK",
    "FUSED_FIELDS",
    "NUMBA_MIN_SIZE",
    "as_float64",
    "builtin_kernel",
    "claim_process",
    "first_chunk",
    "fold_first",
    "fold_second",
    "fresh_fold",
    "kernel_for",
    "kernel_operand",
    "kl_scaling",
    "numba_cache_dir",
    "numba_enabled",
    "numba_for",
    "numba_kernels",
    "needs_cosine_sums_only",
    "numba_min_bytes",
    "numba_pays_off",
    "process_claimed",
]
