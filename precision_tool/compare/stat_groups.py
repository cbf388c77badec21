"""The statistic groups the metrics read: each registered by name with its fold and merge.

A metric names the groups it reads (:attr:`.metric_data.Metric.needs`); each group is a
:class:`~.metric_data.StatGroup` registered here. The built-in groups:

=========  ========================================================================
xy xx yy   sum x*y, sum x*x, sum y*y (cosine, RelativeEuclideanDistance)
diff       max |x-y|, sum |x-y|, sum (x-y)^2
rel        sum and max of |x/y - 1| where |y| > float64 eps (msaccucmp's mask), else 0
moments    sums and squared deviations of each side (StandardDeviation)
range      min and max of each side, NaN and Inf counts
kl         sum P, sum Q, sum P ln(P/Q): a second pass, once the ranges are known
=========  ========================================================================

Their fold functions here are the numpy implementation (float64 blocks); :mod:`.kernels` folds
all built-in groups at once with numba when it can. Partial statistics merge (:func:`combine`),
so a tensor may be folded in ranges, in any number of calls or processes, and combined.

Scaled sums: float64 sums of squares overflow for elements beyond about 1e154, though every
element is finite. A part whose sums overflowed is folded again over its values times a power
of two (:func:`.kernels.fold_first`; powers of two scale exactly), and says so in its
``scale_x``/``scale_y``; :data:`SCALED_FIELDS` lists the fields that scale, :func:`at_scale`
moves a part to other scales, :func:`combine` merges parts of different scales (and scales
again when two finite parts overflow only together), and the metrics take the scales out
(:func:`unscaled`). Ratios (cosine, the relative errors, KL) need no unscaling.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .metric_data import BUILTIN_GROUP_NAMES, Range, StatGroup, Stats, register_group, stat_group
from .metric_table import COSINE_GROUPS

__all__ = [
    "BUILTIN",
    "BUILTIN_GROUPS",
    "SCALED_FIELDS",
    "at_scale",
    "combine",
    "copied",
    "merge_kl",
    "register_group",
    "stat_group",
    "sums_finite",
    "unscaled",
]

EPS = float(np.finfo(np.float64).eps)
F32_EPS = float(np.finfo(np.float32).eps)
DISTANCE_GROUPS = COSINE_GROUPS | {"diff"}  # what the distance kernel folds (kernels)


# --- helpers shared by the folds and the merges -----------------------------------------------


def _max(a: float, b: float) -> float:
    """max propagating NaN, as numpy's maximum does."""
    return a if a != a or a >= b else b


def _min(a: float, b: float) -> float:
    return a if a != a or a <= b else b


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    # einsum, not np.dot: a multi-threaded BLAS dot stalls on short vectors when the cores are
    # busy (e.g. with the engine's worker processes), at many times the single-thread cost
    # (docs/performance.md).
    return float(np.einsum("i,i->", a, b))


def _chan(n_a: int, sum_a: float, m2_a: float, n_b: int, sum_b: float, m2_b: float) -> float:
    """Squared deviations from the mean of two merged parts (Chan, Golub and LeVeque)."""
    if not n_b:
        return m2_a
    if not n_a:
        return m2_b
    delta = sum_b / n_b - sum_a / n_a
    return m2_a + m2_b + delta * delta * (n_a * n_b / (n_a + n_b))


# --- the built-in groups: numpy folds (float64 blocks) and merges -----------------------------
# A first-pass fold runs before stats.count is advanced past the block (moments use it).


def _fold_xy(s: Stats, x: np.ndarray, y: np.ndarray) -> None:
    s.sum_xy += _dot(x, y)


def _fold_xx(s: Stats, x: np.ndarray, y: np.ndarray) -> None:
    s.sum_xx += _dot(x, x)


def _fold_yy(s: Stats, x: np.ndarray, y: np.ndarray) -> None:
    s.sum_yy += _dot(y, y)


def _merge_sums(s: Stats, o: Stats) -> None:
    s.sum_xy, s.sum_xx, s.sum_yy = s.sum_xy + o.sum_xy, s.sum_xx + o.sum_xx, s.sum_yy + o.sum_yy


def _fold_diff(s: Stats, x: np.ndarray, y: np.ndarray) -> None:
    d = np.subtract(x, y)
    s.sum_sq += _dot(d, d)
    np.abs(d, out=d)
    s.sum_abs += float(d.sum())
    s.max_abs = _max(s.max_abs, float(d.max()))


def _merge_diff(s: Stats, o: Stats) -> None:
    s.sum_abs, s.sum_sq, s.max_abs = s.sum_abs + o.sum_abs, s.sum_sq + o.sum_sq, _max(s.max_abs, o.max_abs)


def _fold_rel(s: Stats, x: np.ndarray, y: np.ndarray) -> None:
    """Fold ``|x/y - 1|`` (as written: ``(x - y)/y`` differs when y is infinite)."""
    r = np.divide(x, y)
    np.subtract(r, 1.0, out=r)
    np.abs(r, out=r)
    r[~(np.abs(y) > EPS)] = 0.0  # |y| <= eps, or NaN: msaccucmp's mask makes the term 0
    s.rel_sum += float(r.sum())
    s.rel_max = _max(s.rel_max, float(r.max()))


def _merge_rel(s: Stats, o: Stats) -> None:
    s.rel_sum, s.rel_max = s.rel_sum + o.rel_sum, _max(s.rel_max, o.rel_max)


def _moments(block: np.ndarray) -> tuple[float, float]:
    """(sum, squared deviations from the block's mean), the deviations taken exactly."""
    total = float(block.sum())
    dev = block - total / block.size
    return total, _dot(dev, dev)


def _fold_moments(s: Stats, x: np.ndarray, y: np.ndarray) -> None:
    (sx, qx), (sy, qy) = _moments(x), _moments(y)
    s.m2_x = _chan(s.count, s.sum_x, s.m2_x, x.size, sx, qx)
    s.m2_y = _chan(s.count, s.sum_y, s.m2_y, y.size, sy, qy)
    s.sum_x, s.sum_y = s.sum_x + sx, s.sum_y + sy


def _merge_moments(s: Stats, o: Stats) -> None:
    s.m2_x = _chan(s.count, s.sum_x, s.m2_x, o.count, o.sum_x, o.m2_x)
    s.m2_y = _chan(s.count, s.sum_y, s.m2_y, o.count, o.sum_y, o.m2_y)
    s.sum_x, s.sum_y = s.sum_x + o.sum_x, s.sum_y + o.sum_y


def _nonfinite(block: np.ndarray, lo: float, hi: float) -> tuple[int, int]:
    """(NaN count, Inf count) of ``block`` whose minimum and maximum are ``lo`` and ``hi``.

    Both finite is none of either: numpy's min and max propagate a NaN, and an Inf is one of
    them. So the four passes that count are made only for a block that has one (the numba
    kernels' rule too: :func:`.kernels._count_nonfinite`).
    """
    if math.isfinite(lo) and math.isfinite(hi):
        return 0, 0
    return int(np.count_nonzero(np.isnan(block))), int(np.count_nonzero(np.isinf(block)))


def _fold_range(s: Stats, x: np.ndarray, y: np.ndarray) -> None:
    (x_lo, x_hi), (y_lo, y_hi) = (float(x.min()), float(x.max())), (float(y.min()), float(y.max()))
    s.x_lo, s.x_hi = _min(s.x_lo, x_lo), _max(s.x_hi, x_hi)
    s.y_lo, s.y_hi = _min(s.y_lo, y_lo), _max(s.y_hi, y_hi)
    (nan_x, inf_x), (nan_y, inf_y) = _nonfinite(x, x_lo, x_hi), _nonfinite(y, y_lo, y_hi)
    s.nan_x, s.inf_x = s.nan_x + nan_x, s.inf_x + inf_x
    s.nan_y, s.inf_y = s.nan_y + nan_y, s.inf_y + inf_y


def _merge_range(s: Stats, o: Stats) -> None:
    s.x_lo, s.x_hi = _min(s.x_lo, o.x_lo), _max(s.x_hi, o.x_hi)
    s.y_lo, s.y_hi = _min(s.y_lo, o.y_lo), _max(s.y_hi, o.y_hi)
    s.nan_x, s.nan_y = s.nan_x + o.nan_x, s.nan_y + o.nan_y
    s.inf_x, s.inf_y = s.inf_x + o.inf_x, s.inf_y + o.inf_y


def normalised(block: np.ndarray, rng: Range) -> np.ndarray:
    """KL's ``max((v - lo)/(hi - lo), float32 eps)``; ``max(v, eps)`` for a 0 range."""
    span = rng.hi - rng.lo
    with np.errstate(all="ignore"):
        # NaN spans divide too, as in numpy: everything becomes NaN
        scaled = np.divide(np.subtract(block, rng.lo), span) if span != 0 else np.array(block, np.float64)
        return np.maximum(scaled, F32_EPS, out=scaled)


def _fold_kl(s: Stats, x: np.ndarray, y: np.ndarray, ranges: tuple[Range, Range]) -> None:
    p, q = normalised(x, ranges[0]), normalised(y, ranges[1])
    s.kl_sp += float(p.sum())
    s.kl_sq += float(q.sum())
    ratio = np.log(np.divide(p, q, out=q), out=q)  # one log of P/Q: the log is most of the cost
    s.kl_cross += _dot(p, ratio)


def merge_kl(s: Stats, o: Stats) -> None:
    s.kl_sp, s.kl_sq, s.kl_cross = s.kl_sp + o.kl_sp, s.kl_sq + o.kl_sq, s.kl_cross + o.kl_cross


def _merge_nothing(s: Stats, o: Stats) -> None:
    """xx and yy merge with xy (one function for the three sums)."""


BUILTIN_GROUPS: tuple[StatGroup, ...] = (
    StatGroup("xy", _fold_xy, _merge_sums),
    StatGroup("xx", _fold_xx, _merge_nothing),
    StatGroup("yy", _fold_yy, _merge_nothing),
    StatGroup("diff", _fold_diff, _merge_diff),
    StatGroup("rel", _fold_rel, _merge_rel),
    StatGroup("moments", _fold_moments, _merge_moments),
    StatGroup("range", _fold_range, _merge_range),
    StatGroup("kl", _fold_kl, merge_kl, needs_ranges=True),
)
BUILTIN = {g.name: g for g in BUILTIN_GROUPS}
_BUILTIN_MERGES = tuple(g.merge for g in BUILTIN_GROUPS if g.merge is not _merge_nothing)
assert set(BUILTIN) == BUILTIN_GROUP_NAMES  # a bug if the two lists drift apart
for _group in BUILTIN_GROUPS:
    register_group(_group)


# --- scaled sums (see the module docstring) ---------------------------------------------------

# The fields a scaled part holds scaled, and by which power of each scale: (of scale_x, of
# scale_y, of scale_d, the scale of the differences).
SCALED_FIELDS = {
    "sum_xy": (1, 1, 0),
    "sum_xx": (2, 0, 0),
    "sum_yy": (0, 2, 0),
    "sum_x": (1, 0, 0),
    "m2_x": (2, 0, 0),
    "sum_y": (0, 1, 0),
    "m2_y": (0, 2, 0),
    "max_abs": (0, 0, 1),
    "sum_abs": (0, 0, 1),
    "sum_sq": (0, 0, 2),
}
_RESCALE_STEP = 16  # how much smaller two parts get when they overflow only together


def _scales(s: Stats) -> tuple[int, int, int]:
    return s.scale_x, s.scale_y, s.scale_d


def at_scale(s: Stats, scales: tuple[int, int, int]) -> Stats:
    """A copy of ``s`` at ``scales`` (x, y, d), each at least its own: the scaled fields made
    smaller to match (a term that underflows was below 2**-1074 of the largest, nothing to
    its sum)."""
    out = copied(s)
    out.scale_x, out.scale_y, out.scale_d = scales
    moves = [old - new for old, new in zip(_scales(s), scales)]
    for name, powers in SCALED_FIELDS.items():
        shift = sum(power * move for power, move in zip(powers, moves))
        if shift:
            setattr(out, name, math.ldexp(getattr(s, name), shift))
    return out


def sums_finite(s: Stats) -> bool:
    """Whether every scaled field but ``max_abs`` (which starts at -inf) is finite: one test,
    each term taken at 1/16 so that finite terms cannot overflow their sum."""
    return math.isfinite(
        0.0625 * s.sum_xy
        + 0.0625 * s.sum_xx
        + 0.0625 * s.sum_yy
        + 0.0625 * s.sum_x
        + 0.0625 * s.sum_y
        + 0.0625 * s.m2_x
        + 0.0625 * s.m2_y
        + 0.0625 * s.sum_abs
        + 0.0625 * s.sum_sq
    )


def unscaled(value: float, exponent: int) -> float:
    """``value * 2**exponent``; +-inf when that is beyond float64 (then the true value is too)."""
    try:
        return math.ldexp(value, exponent)
    except OverflowError:
        return math.copysign(math.inf, value)


def combine(a: Stats, b: Stats, groups: Iterable[StatGroup] = ()) -> Stats:
    """The statistics of two parts together (``a`` and ``b`` are not changed).

    The built-in fields always merge (a field neither part folded stays at its start value);
    ``groups`` adds the merges of groups registered from outside, which keep their state in
    ``extra``. KL partials merge by addition: fold them with the same, combined, ranges. Parts
    of different scales merge at the larger ones; two finite parts whose sums overflow only
    when added merge at smaller ones.
    """
    groups = tuple(groups)
    if _scales(a) != _scales(b):
        scales = tuple(max(pair) for pair in zip(_scales(a), _scales(b)))
        a, b = at_scale(a, scales), at_scale(b, scales)
    out = _merged(a, b, groups)
    if not sums_finite(out) and sums_finite(a) and sums_finite(b):
        smaller = tuple(scale + _RESCALE_STEP for scale in _scales(a))
        out = _merged(at_scale(a, smaller), at_scale(b, smaller), groups)
    return out


def _merged(a: Stats, b: Stats, groups: tuple[StatGroup, ...]) -> Stats:
    out = copied(a)
    for merge in _BUILTIN_MERGES:
        merge(out, b)
    for group in groups:
        if group.name not in BUILTIN:
            group.merge(out, b)
    out.count += b.count
    return out


def copied(s: Stats) -> Stats:
    """A copy of ``s`` with its own ``extra`` (the other fields are numbers). Not
    ``dataclasses.replace``: that runs ``__init__`` over all 28 fields, and a pair of tensors
    copies its statistics more than once (a tenth of a small pair's cost)."""
    out = object.__new__(Stats)
    out.__dict__.update(s.__dict__)
    out.extra = dict(s.extra)
    return out
