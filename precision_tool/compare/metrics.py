"""The ten msaccucmp metrics (FORMATS.md section 6), computed in one streaming pass per pair.

x is the NPU tensor, y the golden one. The caller converts both to host layout and feeds them
chunk by chunk, flat, to an :class:`Accumulator`; every statistic is accumulated in float64
over blocks of :data:`BLOCK` elements (a chunk is never copied whole: only one block at a time
is upcast, and each temporary is block-sized). A :class:`Metric` is a name plus a function of the
accumulated :class:`Stats`; adding an eleventh metric means one more entry in :data:`METRICS`
(and, if it needs a new sum, a ``Stats`` field in :mod:`.metric_types` and a group in
``Accumulator._update_block``).
Selecting fewer metrics (msaccucmp's ``-alg``, :func:`select_metrics`) skips the sums, and the
KL range pass, that no selected metric reads: cosine alone costs three dot products a block.

KullbackLeiblerDivergence min-max normalises each side, so it needs both sides' min and max
before the main pass: :class:`RangeScan` is that cheap first pass, skipped when KL is not
selected. With ``P = max((x - xmin)/(xmax - xmin), float32 eps)`` (``x`` itself when the range is
0), ``SP = sum P``, ``p = P/SP`` and Q, SQ, q likewise::

    sum p ln(p/q) = sum (P/SP) (ln P - ln SP - ln Q + ln SQ)
                  = (1/SP) sum P (ln P - ln Q) - ln SP + ln SQ      (since sum P/SP = 1)

so the main pass accumulates SP, SQ and ``sum P (ln P - ln Q)``.

Decisions:

* msaccucmp casts both sides to float32 before its formulas; we compute in float64 (FORMATS.md).
  Visible differences: KL values that are rounding noise, which msaccucmp's reference CSV prints
  as ``-0.000000`` where float64 gives a tiny positive value (both parse to zero; we print what
  we compute), and the 8th significant digit of the relative-error sums. All within tolerance.
* KL's ``ln(P/Q)`` is taken in float32 (the sums stay float64): the log is the costliest step
  of all ten metrics and float32 halves it. The error is about 3e-8 of ``|ln(P/Q)|`` per
  element, so KL is not float64-exact (tests allow 1e-6), far inside the 1e-5 agreement asked for.
* A metric not compared is absent from :attr:`MetricResult.values` (the CSV's ``NaN``); a
  computed nan/inf is present. Empty tensors and shape mismatches compare nothing, with a reason.
* Scalar tensors (every dim 1, the caller says so): cosine is 1 with "This tensor is scalar.";
  the other nine metrics are computed normally (msaccucmp special-cases only the cosine; the
  reference fixture holds no scalar).
* StandardDeviation is the population std (ddof 0). Means come from ``sum x``; the spread is
  combined block by block (Chan et al.) from per-block squared deviations, so a large mean does
  not cancel the variance away.
* NaN and Inf in the inputs propagate as numpy would: a NaN anywhere gives ``nan`` for sums, max,
  cosine and KL; an Inf gives ``inf`` or ``nan`` as the arithmetic says. Relative terms keep
  msaccucmp's mask ``|y| > eps``, which a NaN golden value fails (it adds 0).
* Bool tensors (both sides bool, fed as 0/1): only cosine and RelativeEuclideanDistance.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from precision_tool.errors import PrecisionToolError

from .metric_types import Metric, MetricResult, Outcome, Range, Stats

EPS = float(np.finfo(np.float64).eps)
F32_EPS = float(np.finfo(np.float32).eps)
BLOCK = 1 << 15  # elements per inner step: the block-sized scratch buffers stay in the CPU cache


# --- the formulas ---------------------------------------------------------------------------


def _cosine(s: Stats) -> Outcome:
    nx, ny = math.sqrt(s.sum_xx), math.sqrt(s.sum_yy)
    if nx <= EPS and ny <= EPS:
        return Outcome(1.0)
    if nx <= EPS or ny <= EPS:
        side = "NPU" if nx <= EPS else "golden"
        return Outcome(None, f"Cannot compare by CosineSimilarity: all data is zero in the {side} tensor.")
    return Outcome(float(np.minimum(s.sum_xy / (nx * ny), 1.0)))


def _relative_euclidean(s: Stats) -> float:
    if math.sqrt(s.sum_yy) <= EPS:
        return 0.0
    return math.sqrt(s.sum_sq / s.sum_yy)


def _kl(s: Stats) -> float:
    with np.errstate(all="ignore"):
        result = float(s.kl_cross / s.kl_sp - np.log(s.kl_sp) + np.log(s.kl_sq))
    return 0.0 if abs(result) < EPS else result


def _std_text(s: Stats) -> str:
    n = s.count
    parts = []
    for total, m2 in ((s.sum_x, s.m2_x), (s.sum_y, s.m2_y)):
        mean, std = total / n, float(np.sqrt(m2 / n))
        parts.append("(%.3f;%.3f)" % (_zero_small(mean), _zero_small(std)))
    return ",".join(parts)


def _zero_small(value: float) -> float:
    return 0.0 if abs(value) < 0.001 else value


METRICS: tuple[Metric, ...] = (
    Metric("CosineSimilarity", frozenset({"xy", "xx", "yy"}), _cosine, bool_ok=True),
    Metric("MaxAbsoluteError", frozenset({"diff"}), lambda s: s.max_abs),
    Metric("AccumulatedRelativeError", frozenset({"rel"}), lambda s: s.rel_sum),
    Metric("RelativeEuclideanDistance", frozenset({"diff", "yy"}), _relative_euclidean, bool_ok=True),
    Metric("KullbackLeiblerDivergence", frozenset({"kl"}), _kl),
    Metric("StandardDeviation", frozenset({"moments"}), _std_text, text=True),
    Metric("MeanAbsoluteError", frozenset({"diff"}), lambda s: s.sum_abs / s.count),
    Metric("RootMeanSquareError", frozenset({"diff"}), lambda s: math.sqrt(s.sum_sq / s.count)),
    Metric("MaxRelativeError", frozenset({"rel"}), lambda s: s.rel_max),
    Metric("MeanRelativeError", frozenset({"rel"}), lambda s: s.rel_sum / s.count),
)
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)


def select_metrics(spec: str | Iterable[str | int] | None = None) -> tuple[Metric, ...]:
    """The metrics named by ``spec``, in CSV order.

    ``spec`` is None or ``"all"`` (every metric), or names and/or msaccucmp ``-alg`` indexes
    (0 = CosineSimilarity ... 9 = MeanRelativeError) as a comma-separated string or an iterable;
    names are case-insensitive. Raises PrecisionToolError for an unknown name or index.
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "all"):
        return METRICS
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    by_name = {m.name.lower(): m for m in METRICS}
    chosen = set()
    for item in (str(i).strip() for i in items):
        if item.isdigit() and int(item) < len(METRICS):
            chosen.add(METRICS[int(item)].name)
        elif item.lower() in by_name:
            chosen.add(by_name[item.lower()].name)
        elif item:
            raise PrecisionToolError(f"unknown metric {item!r}: choose from 0-{len(METRICS) - 1} "
                                     f"or {', '.join(METRIC_NAMES)}")
    if not chosen:
        raise PrecisionToolError("no metric selected")
    return tuple(m for m in METRICS if m.name in chosen)


# --- accumulation ---------------------------------------------------------------------------

def _dot(a: np.ndarray, b: np.ndarray) -> float:
    # einsum, not np.dot: a multi-threaded BLAS dot stalls on short vectors when the cores are
    # busy (e.g. with the engine's worker processes), at 20-50x the single-thread cost.
    return float(np.einsum("i,i->", a, b))


def _nanmax(a: float, b: float) -> float:
    return float(np.maximum(a, b))  # propagates NaN, as numpy's max does


def _fold_range(rng: Range, flat: np.ndarray) -> Range:
    lo, hi = rng.lo, rng.hi
    for start in range(0, flat.size, BLOCK):
        block = flat[start:start + BLOCK]
        if block.dtype.kind != "f" or block.dtype.itemsize < 4:  # numpy's float16 min is slow
            block = block.astype(np.float32 if block.dtype.kind == "f" else np.float64)
        lo, hi = float(np.minimum(lo, block.min())), _nanmax(hi, block.max())
    return Range(lo, hi)


class RangeScan:
    """The first pass for KL: min and max of each side, fed chunk by chunk."""

    def __init__(self) -> None:
        self.x = Range(math.inf, -math.inf)
        self.y = Range(math.inf, -math.inf)

    def update(self, x: np.ndarray, y: np.ndarray) -> None:
        """Fold one pair of flat chunks into the ranges."""
        self.x = _fold_range(self.x, x.reshape(-1))
        self.y = _fold_range(self.y, y.reshape(-1))

    @property
    def ranges(self) -> tuple[Range, Range]:
        """(x range, y range), for :class:`Accumulator`."""
        return self.x, self.y


def _normalise_into(out: np.ndarray, block: np.ndarray, rng: Range) -> np.ndarray:
    """``max((block - lo) / (hi - lo), float32 eps)`` (``block`` itself for a 0 range) into ``out``."""
    span = rng.hi - rng.lo
    if span != 0:  # NaN spans take this branch too, as in numpy: everything becomes NaN
        np.subtract(block, rng.lo, out=out)
        np.multiply(out, 1.0 / span, out=out)  # one division per block, not per element
        return np.maximum(out, F32_EPS, out=out)
    return np.maximum(block, F32_EPS, out=out)


def _fold_moments(n_a: int, sum_a: float, m2_a: float, block: np.ndarray, block_sq: float,
                  scratch: np.ndarray) -> tuple[float, float]:
    """(sum, squared deviations) after folding ``block`` in (Chan's pairwise combination)."""
    n_b, sum_b = block.size, float(block.sum())
    mean_b = sum_b / n_b
    m2_b = block_sq - sum_b * mean_b
    # sum x^2 - n mean^2 loses digits when mean^2 >> variance: then take the exact deviations.
    if not m2_b > 1e-6 * block_sq:
        dev = np.subtract(block, mean_b, out=scratch)
        m2_b = _dot(dev, dev)
    if n_a:
        delta = mean_b - sum_a / n_a
        m2_b = m2_a + m2_b + delta * delta * n_a * n_b / (n_a + n_b)
    return sum_a + sum_b, m2_b


class Accumulator:
    """Accumulates the selected metrics' statistics over flat chunks of a tensor pair.

    Args:
        metrics: the metrics to compute. Defaults to all ten.
        ranges: (x range, y range) from a :class:`RangeScan`; required when KL is selected.
        scalar: the tensor's dims are all 1: cosine is reported as 1 ("This tensor is scalar.").
        boolean: both sides are bool (fed as 0/1): only cosine and RelativeEuclideanDistance.
    """

    def __init__(self, metrics: Sequence[Metric] = METRICS, ranges: tuple[Range, Range] | None = None,
                 *, scalar: bool = False, boolean: bool = False) -> None:
        self.metrics = tuple(metrics)
        self.scalar, self.boolean = scalar, boolean
        # a scalar's cosine is not computed; a bool pair computes only the bool-capable metrics
        active = [m for m in self.metrics if (m.bool_ok or not boolean)
                  and not (scalar and m.name == "CosineSimilarity")]
        self.groups = frozenset().union(*(m.needs for m in active))
        if "kl" in self.groups and ranges is None:
            raise ValueError("KullbackLeiblerDivergence needs the ranges of a first pass (RangeScan)")
        self.ranges = ranges
        self.stats = Stats()
        self._scratch: np.ndarray | None = None
        self._mask: np.ndarray | None = None
        self._log32: np.ndarray | None = None

    def update(self, x: np.ndarray, y: np.ndarray) -> None:
        """Fold one pair of flat chunks (same length; upcast to float64 block by block)."""
        if x.shape != y.shape:
            raise ValueError(f"chunk shapes differ: {x.shape} vs {y.shape}")
        x, y = x.reshape(-1), y.reshape(-1)
        for start in range(0, x.size, BLOCK):
            xb, yb = x[start:start + BLOCK], y[start:start + BLOCK]
            with np.errstate(all="ignore"):
                self._update_block(self._float64(xb, 0), self._float64(yb, 1))

    def _float64(self, block: np.ndarray, slot: int) -> np.ndarray:
        # Reused block-sized buffers: fresh large temporaries would cost a page fault per 4 KiB.
        if self._scratch is None or self._scratch.shape[1] < block.size:
            self._scratch = np.empty((5, block.size))
            self._log32 = np.empty(block.size, np.float32)
            self._mask = np.empty(block.size, np.bool_)
        if block.dtype == np.float64:
            return block
        out = self._scratch[2 + slot, :block.size]
        np.copyto(out, block, casting="unsafe")
        return out

    def _update_block(self, x: np.ndarray, y: np.ndarray) -> None:
        s, g = self.stats, self.groups
        t1, t2 = self._scratch[0, :x.size], self._scratch[1, :x.size]
        xx = _dot(x, x) if "xx" in g or "moments" in g else 0.0
        yy = _dot(y, y) if "yy" in g or "moments" in g else 0.0
        if "xy" in g:
            s.sum_xy += _dot(x, y)
        if "xx" in g:
            s.sum_xx += xx
        if "yy" in g:
            s.sum_yy += yy
        if "diff" in g:
            self._diff(np.subtract(x, y, out=t1))
        if "rel" in g:
            self._relative(x, y, t1, self._mask[:x.size])
        if "kl" in g:
            self._kl(x, y, t1, t2)
        if "moments" in g:
            s.sum_x, s.m2_x = _fold_moments(s.count, s.sum_x, s.m2_x, x, xx, t1)
            s.sum_y, s.m2_y = _fold_moments(s.count, s.sum_y, s.m2_y, y, yy, t1)
        s.count += x.size

    def _diff(self, d: np.ndarray) -> None:
        """Fold ``d = x - y`` (overwritten with ``|d|``)."""
        s = self.stats
        s.sum_sq += _dot(d, d)
        np.abs(d, out=d)
        s.sum_abs += float(d.sum())
        s.max_abs = _nanmax(s.max_abs, d.max())

    def _relative(self, x: np.ndarray, y: np.ndarray, r: np.ndarray, mask: np.ndarray) -> None:
        """Fold ``|x/y - 1|`` (as written: ``(x - y)/y`` differs when y is infinite)."""
        s = self.stats
        np.divide(x, y, out=r)
        np.subtract(r, 1.0, out=r)
        np.abs(r, out=r)
        np.greater(np.abs(y, out=self._scratch[4, :y.size]), EPS, out=mask)
        if not mask.all():  # |y| <= eps, or NaN: msaccucmp's mask makes the term 0
            r[~mask] = 0.0
        s.rel_sum += float(r.sum())
        s.rel_max = _nanmax(s.rel_max, r.max())

    def _kl(self, x: np.ndarray, y: np.ndarray, p: np.ndarray, q: np.ndarray) -> None:
        s = self.stats
        _normalise_into(p, x, self.ranges[0])
        _normalise_into(q, y, self.ranges[1])
        s.kl_sp += float(p.sum())
        s.kl_sq += float(q.sum())
        # ln P - ln Q as one log of the ratio, taken in float32: the log is most of KL's cost,
        # and float32's 6e-8 relative error is far below the 1e-5 the results must agree to
        # (msaccucmp itself computes in float32). The sum stays float64.
        np.divide(p, q, out=q)
        ratio = self._log32[:q.size]
        np.copyto(ratio, q, casting="same_kind")
        np.log(ratio, out=ratio)
        np.copyto(q, ratio)
        s.kl_cross += _dot(p, q)

    def result(self) -> MetricResult:
        """The metric values from what has been accumulated (call after the last chunk)."""
        if self.stats.count == 0:
            return not_compared("The tensor is empty (0 elements): nothing to compare.")
        values: dict[str, float | str] = {}
        reasons: list[str] = []
        for metric in self.metrics:
            outcome = self._evaluate(metric)
            if outcome.value is not None:
                values[metric.name] = outcome.value
            if outcome.reason and outcome.reason not in reasons:
                reasons.append(outcome.reason)
        return MetricResult(values, tuple(reasons))

    def _evaluate(self, metric: Metric) -> Outcome:
        if self.boolean and not metric.bool_ok:
            return Outcome(None, "Only CosineSimilarity and RelativeEuclideanDistance "
                                 "support bool tensors.")
        if self.scalar and metric.name == "CosineSimilarity":
            return Outcome(1.0, "This tensor is scalar.")
        with np.errstate(all="ignore"):
            value = metric.compute(self.stats)
        return value if isinstance(value, Outcome) else Outcome(value if metric.text else float(value))


def not_compared(reason: str) -> MetricResult:
    """A result with no metric compared (all ``NaN``) and ``reason``."""
    return MetricResult({}, (reason,))


def shape_mismatch(npu_shape: Sequence[int], golden_shape: Sequence[int]) -> MetricResult:
    """The all-NaN result for two tensors whose host shapes differ, naming both shapes."""
    return not_compared(f"Shape mismatch: NPU {_shape_text(npu_shape)} vs golden "
                        f"{_shape_text(golden_shape)}.")


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def is_scalar_shape(shape: Sequence[int]) -> bool:
    """True when every dim is 1 (a 0-d shape included): msaccucmp's "scalar"."""
    return all(int(d) == 1 for d in shape)


def needs_range_pass(metrics: Sequence[Metric] = METRICS, *, boolean: bool = False) -> bool:
    """Whether ``metrics`` need the min/max first pass (:class:`RangeScan`): KL on non-bool data."""
    return not boolean and any("kl" in m.needs for m in metrics)


def compare_arrays(x: np.ndarray, y: np.ndarray, metrics: Sequence[Metric] = METRICS,
                   chunk: int = 1 << 22) -> MetricResult:
    """Every selected metric of two whole arrays (host layout), streamed in chunks.

    Decides scalar (x's dims all 1), bool (both bool) and shape mismatch itself; runs the
    range pass only when KL is selected. Defaults to all ten metrics and 4 Mi-element chunks.
    """
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape:
        return shape_mismatch(x.shape, y.shape)
    boolean = x.dtype == np.bool_ and y.dtype == np.bool_
    xf, yf = x.reshape(-1), y.reshape(-1)
    pairs = [(xf[i:i + chunk], yf[i:i + chunk]) for i in range(0, xf.size, chunk)]
    ranges = None
    if needs_range_pass(metrics, boolean=boolean):
        scan = RangeScan()
        for a, b in pairs:
            scan.update(a, b)
        ranges = scan.ranges
    acc = Accumulator(metrics, ranges, scalar=x.size > 0 and is_scalar_shape(x.shape), boolean=boolean)
    for a, b in pairs:
        acc.update(a, b)
    return acc.result()

