"""The statistic groups the metrics read, their registry, and the fused passes that fold them.

A metric names the statistic groups it reads (:attr:`.metric_types.Metric.needs`); each group is
a :class:`~.metric_types.StatGroup` registered here by name with its fold and merge functions.
The built-in groups:

=========  ========================================================================
xy xx yy   sum x*y, sum x*x, sum y*y (cosine, RelativeEuclideanDistance)
diff       max |x-y|, sum |x-y|, sum (x-y)^2
rel        sum and max of |x/y - 1| where |y| > float64 eps (msaccucmp's mask), else 0
moments    sums and squared deviations of each side (StandardDeviation)
range      min and max of each side, NaN and Inf counts
kl         sum P, sum Q, sum P (ln P - ln Q): a second pass, once the ranges are known
=========  ========================================================================

Two implementations fold the built-in groups; both read each side in its stored dtype:

* **numba** (:mod:`.kernels_numba`): one fused pass over the two flat blocks computes every
  first-pass statistic at once (cosine alone has its own three-sum kernel), float16 and bfloat16
  read in their stored bits and widened by the CPU; the KL pass is a second kernel. Used for tensors of
  at least :data:`NUMBA_MIN_SIZE` elements when numba imports and compiles; compiled kernels are
  cached on disk (:func:`numba_cache_dir`), never inside the user's data.
* **numpy**: each group's own fold over float64 blocks of :data:`BLOCK` elements. Used when
  numba is missing, fails, is switched off (``PRECISION_TOOL_KERNELS=numpy``) or the tensor is
  small (importing numba would cost more than it saves), and for groups registered from outside.

Partial statistics merge (:func:`combine`), so a tensor may be folded in ranges, in any number of
calls or processes, and combined afterwards.

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
values differ at all it is msaccucmp's last digit (the tests allow for that).
"""

from __future__ import annotations

import importlib
import math
import os
import tempfile
import warnings
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .metric_types import Range, StatGroup, Stats

EPS = float(np.finfo(np.float64).eps)
F32_EPS = float(np.finfo(np.float32).eps)
BLOCK = 1 << 15  # numpy path: elements per step, so the float64 temporaries stay in the cache
NUMBA_MIN_SIZE = 1 << 18  # smaller tensors take the numpy path: no numba import for them
_PIECE = 1 << 16  # elements converted at a time for dtypes the numba kernels do not read
_CHOICE_ENV = "PRECISION_TOOL_KERNELS"  # "numpy" switches numba off
FUSED_FIELDS = ("count", "sum_xy", "sum_xx", "sum_yy", "sum_x", "sum_y", "m2_x", "m2_y", "max_abs",
                "sum_abs", "sum_sq", "rel_sum", "rel_max", "x_lo", "x_hi", "y_lo", "y_hi",
                "nan_x", "nan_y", "inf_x", "inf_y")
_COUNTS = frozenset({"count", "nan_x", "nan_y", "inf_x", "inf_y"})


# --- helpers shared by the folds and the merges -----------------------------------------------

def _max(a: float, b: float) -> float:
    """max propagating NaN, as numpy's maximum does."""
    return a if a != a or a >= b else b


def _min(a: float, b: float) -> float:
    return a if a != a or a <= b else b


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    # einsum, not np.dot: a multi-threaded BLAS dot stalls on short vectors when the cores are
    # busy (e.g. with the engine's worker processes), at 20-50x the single-thread cost.
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


def _fold_range(s: Stats, x: np.ndarray, y: np.ndarray) -> None:
    s.x_lo, s.x_hi = _min(s.x_lo, float(x.min())), _max(s.x_hi, float(x.max()))
    s.y_lo, s.y_hi = _min(s.y_lo, float(y.min())), _max(s.y_hi, float(y.max()))
    s.nan_x += int(np.count_nonzero(np.isnan(x)))
    s.nan_y += int(np.count_nonzero(np.isnan(y)))
    s.inf_x += int(np.count_nonzero(np.isinf(x)))
    s.inf_y += int(np.count_nonzero(np.isinf(y)))


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


def _merge_kl(s: Stats, o: Stats) -> None:
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
    StatGroup("kl", _fold_kl, _merge_kl, needs_ranges=True),
)
_BUILTIN = {g.name: g for g in BUILTIN_GROUPS}
_COSINE_GROUPS = frozenset({"xy", "xx", "yy"})
_REGISTERED: dict[str, StatGroup] = dict(_BUILTIN)


def register_group(group: StatGroup) -> StatGroup:
    """Make ``group`` available to metrics by its name; returns it (usable as a decorator result).

    Registering the same group again is harmless; another group under a taken name is an error.
    A worker process registers it again when it imports the module that defines it (which
    unpickling a metric using it does).
    """
    known = _REGISTERED.get(group.name)
    if known is not None and known != group:
        raise ValueError(f"a statistic group named {group.name!r} is already registered")
    _REGISTERED[group.name] = group
    return group


def stat_group(name: str, metric: str | None = None) -> StatGroup:
    """The registered group ``name``; ValueError naming the known groups when there is none."""
    try:
        return _REGISTERED[name]
    except KeyError:
        owner = f"metric {metric!r} needs " if metric else ""
        raise ValueError(f"{owner}unknown statistic group {name!r}: choose from "
                         f"{', '.join(sorted(_REGISTERED))}") from None


def combine(a: Stats, b: Stats, groups: Iterable[StatGroup] = ()) -> Stats:
    """The statistics of two parts together (``a`` and ``b`` are not changed).

    The built-in fields always merge (a field neither part folded stays at its start value);
    ``groups`` adds the merges of groups registered from outside, which keep their state in
    ``extra``. KL partials merge by addition: fold them with the same, combined, ranges.
    """
    out = replace(a, extra=dict(a.extra))
    merges = [g.merge for g in BUILTIN_GROUPS] + [g.merge for g in groups if g.name not in _BUILTIN]
    for merge in merges:
        merge(out, b)
    out.count += b.count
    return out


# --- the numba backend ------------------------------------------------------------------------

def numba_cache_dir() -> Path | None:
    """A writable directory for numba's compiled kernels, outside any data; None if none is.

    ``$NUMBA_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/precision_tool/numba`` (``~/.cache``
    by default), else one under the system's temporary directory.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    user = os.getuid() if hasattr(os, "getuid") else "user"
    for candidate in (Path(base) / "precision_tool" / "numba",
                      Path(tempfile.gettempdir()) / f"precision_tool-numba-{user}"):
        try:
            candidate.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None


@lru_cache(maxsize=1)
def numba_kernels():
    """The compiled-kernel module, or None when numba is off, missing or broken (once per process)."""
    if os.environ.get(_CHOICE_ENV, "").strip().lower() == "numpy" or os.environ.get("NUMBA_DISABLE_JIT", "0") != "0":
        return None
    cache = numba_cache_dir()
    if cache is not None:
        os.environ.setdefault("NUMBA_CACHE_DIR", str(cache))
    try:
        kernels_numba = importlib.import_module(".kernels_numba", __package__)
        _check(kernels_numba)
    except Exception as exc:  # ImportError, or numba/LLVM failing to compile here
        warnings.warn(f"numba kernels unavailable ({type(exc).__name__}: {exc}); using numpy",
                      RuntimeWarning, stacklevel=2)
        return None
    return kernels_numba


def _check(module) -> None:
    """Run the kernels once on known data, so a broken numba fails here and not mid-run.

    Every float16 and bfloat16 bit pattern must widen exactly as numpy and ml_dtypes widen it.
    """
    import ml_dtypes

    patterns = np.arange(1 << 16, dtype=np.uint16)
    for dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        out = np.empty(patterns.size)
        module.widen(kernel_operand(patterns.view(dtype)), out)
        with np.errstate(invalid="ignore"):
            expected = patterns.view(dtype).astype(np.float64)
        if not np.array_equal(out, expected, equal_nan=True):
            raise RuntimeError(f"the kernels widen {dtype} differently from numpy")
    x = np.array([1.0, -2.0, 3.0], np.float32)
    out = np.zeros(len(FUSED_FIELDS))
    module.fused(x, x, out)
    if out[0] != 3 or out[1] != 14.0:
        raise RuntimeError("the fused kernel gave wrong sums on a check")


def numba_for(size: int | None, wanted: bool | None = None):
    """The numba kernels for a tensor of ``size`` elements, or None for numpy.

    ``wanted`` is a caller's decision for a whole run (:func:`numba_pays_off`); None decides by
    the tensor's size (unknown: numba).
    """
    if wanted is False or wanted is None and size is not None and size < NUMBA_MIN_SIZE:
        return None
    return numba_kernels()


def numba_pays_off(data_bytes: int, cosine_only: bool) -> bool:
    """Whether loading numba (about 0.8 s once: its import and first dispatch) pays for a run.

    Measured on a 2-core machine: the fused kernels save about 30 ns a float16/float32 element
    pair over numpy's folds with all metrics, but only about 1 ns with cosine alone (numpy's
    dot products are fast too), so numba wins from about 300 MB of dump and golden files with
    the KL/relative-error metrics, and only from about 8 GB with cosine alone.
    """
    return data_bytes >= (8e9 if cosine_only else 3e8)


def kernel_operand(block: np.ndarray) -> np.ndarray | None:
    """``block`` as the kernels read it, or None for dtypes they do not read (see kernels_numba).

    float32/float64 as they are; float16 as uint16 bits, bfloat16 as int16 bits (widened by the
    CPU). Everything else (integers, bool, fp8...) is converted to float64 a piece at a time.
    """
    if block.dtype == np.float32 or block.dtype == np.float64:
        return block
    if block.dtype == np.float16:
        return block.view(np.uint16)
    if block.dtype.name == "bfloat16":
        return block.view(np.int16)
    return None


def _float64_pieces(x: np.ndarray, y: np.ndarray, step: int) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    for start in range(0, x.size, step):
        yield as_float64(x[start:start + step]), as_float64(y[start:start + step])


def as_float64(block: np.ndarray) -> np.ndarray:
    """``block`` as float64 (bool as 0/1); the block itself when it already is."""
    if block.dtype == np.bool_:
        block = block.view(np.uint8)
    return block.astype(np.float64, copy=False)


def _readable_pairs(x: np.ndarray, y: np.ndarray) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """The chunks as stored when the kernels read both dtypes, else float64 pieces of them."""
    if kernel_operand(x) is not None and kernel_operand(y) is not None:
        yield x, y
    else:
        yield from _float64_pieces(x, y, _PIECE)


def _fused_stats(kernels, x: np.ndarray, y: np.ndarray, cosine_only: bool) -> Stats:
    total = Stats()
    for xb, yb in _readable_pairs(x, y):
        xv, yv = kernel_operand(xb), kernel_operand(yb)
        out = np.zeros(len(FUSED_FIELDS))
        if cosine_only:
            kernels.cosine(xv, yv, out)
            part = Stats(count=xv.size, sum_xy=out[0], sum_xx=out[1], sum_yy=out[2])
        else:
            kernels.fused(xv, yv, out)
            part = Stats(**{name: int(v) if name in _COUNTS else float(v)
                            for name, v in zip(FUSED_FIELDS, out)})
            _count_nonfinite(kernels, part, xv, yv)
            _nan_maxima(part)
        total = combine(total, part)
    return total


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

def fold_first(stats: Stats, x: np.ndarray, y: np.ndarray, groups: Sequence[StatGroup],
               kernels=None) -> Stats:
    """Fold a pair of equal-length flat chunks into ``stats`` for the first-pass ``groups``.

    ``kernels`` (from :func:`numba_for`) folds every built-in group in one fused pass; groups
    registered from outside, and everything when it is None, fold float64 blocks with numpy.
    Returns the updated statistics (``stats`` itself, or a combined copy).
    """
    builtin = [g for g in groups if g.name in _BUILTIN]
    custom = [g for g in groups if g.name not in _BUILTIN]
    fused = kernels is not None and bool(builtin)
    if fused:
        cosine_only = {g.name for g in builtin} <= _COSINE_GROUPS
        stats = combine(stats, _fused_stats(kernels, x, y, cosine_only), custom)
    folds = custom if fused else builtin + custom
    if not folds:
        stats.count += 0 if fused else x.size
        return stats
    with np.errstate(all="ignore"):
        for xb, yb in _float64_pieces(x, y, BLOCK):
            for group in folds:
                group.fold(stats, xb, yb)
            if not fused:  # the fused kernel counted them
                stats.count += xb.size
    return stats


def kl_scaling(rng: Range) -> tuple[float, float, float]:
    """(lo, pre, inv) with ``(v - lo) * pre * inv`` = KL's ``(v - lo)/(hi - lo)``, to 1 ulp.

    A 0 span gives (0, 1, 1): P is v itself. A span so small that 1/span overflows (subnormal)
    is scaled by a power of two first, which is exact; NaN and infinite spans keep numpy's
    NaN and 0 results.
    """
    span = rng.hi - rng.lo
    if span == 0:
        return 0.0, 1.0, 1.0
    if span != span or span == math.inf:
        return rng.lo, 1.0, 0.0 if span == math.inf else math.nan
    pre = 1.0 if span >= 2.0 ** -1000 else 2.0 ** 600
    return rng.lo, pre, 1.0 / (span * pre)


def fold_second(stats: Stats, x: np.ndarray, y: np.ndarray, groups: Sequence[StatGroup],
                ranges: tuple[Range, Range], kernels=None) -> None:
    """Fold a pair of chunks into ``stats`` for the groups that need the ``ranges`` (KL...)."""
    for group in groups:
        if group.name == "kl" and kernels is not None:
            for xb, yb in _readable_pairs(x, y):
                out = np.zeros(3)
                kernels.kl(kernel_operand(xb), *kl_scaling(ranges[0]), kernel_operand(yb), *kl_scaling(ranges[1]), out)
                _merge_kl(stats, Stats(kl_sp=out[0], kl_sq=out[1], kl_cross=out[2]))
            continue
        with np.errstate(all="ignore"):
            for xb, yb in _float64_pieces(x, y, BLOCK):
                group.fold(stats, xb, yb, ranges)


__all__ = ["BLOCK", "BUILTIN_GROUPS", "FUSED_FIELDS", "NUMBA_MIN_SIZE", "as_float64", "combine", "fold_first", "fold_second", "kernel_operand", "normalised",
           "numba_cache_dir", "numba_for", "numba_kernels", "register_group", "stat_group"]
