"""The ten msaccucmp metrics (FORMATS.md section 6), computed by streaming each pair once or twice.

x is the NPU tensor, y the golden one. The caller converts both to host layout and feeds them
chunk by chunk, flat, in their stored dtypes, to an :class:`Accumulator`, which folds the
statistic groups its metrics need (:mod:`.kernels`: one fused pass with numba, or numpy's
per-group folds) into partial :class:`~.metric_data.Stats`. A :class:`Metric` is a name, the
groups it reads and a function of the accumulated statistics; an eleventh metric is one more
``Metric`` (and, when it needs a statistic no group folds, a group registered with
:func:`~.stat_groups.register_group`). Selecting fewer metrics (msaccucmp's ``-alg``,
:func:`select_metrics`) skips what no selected metric reads: cosine alone is three sums.

KullbackLeiblerDivergence min-max normalises each side, so it needs both sides' min and max
before it can start: the first pass folds the ranges with everything else, and a second pass
(:meth:`Accumulator.update_second`) folds KL. With ``P = max((x - xmin)/(xmax - xmin), float32
eps)`` (``x`` itself when the range is 0), ``SP = sum P``, ``p = P/SP`` and Q, SQ, q likewise::

    sum p ln(p/q) = sum (P/SP) (ln P - ln SP - ln Q + ln SQ)
                  = (1/SP) sum P (ln P - ln Q) - ln SP + ln SQ      (since sum P/SP = 1)

so the second pass accumulates SP, SQ and ``sum P (ln P - ln Q)``.

Decisions:

* msaccucmp casts both sides to float32 before its formulas; we compute in float64 (FORMATS.md;
  :mod:`.kernels` says why the printed digits are right). Visible differences: KL values that are
  rounding noise, which msaccucmp's reference CSV prints as ``-0.000000`` where float64 gives a
  tiny positive value (both parse to zero; we print what we compute), and the 8th significant
  digit of the relative-error sums. All within tolerance.
* A metric not compared is absent from :attr:`MetricResult.values` (the CSV's ``NaN``); a
  computed nan/inf is present. Empty tensors and shape mismatches compare nothing, with a reason.
* Scalar tensors (every dim 1, the caller says so): cosine is 1 with "This tensor is scalar.";
  the other nine metrics are computed normally (msaccucmp special-cases only the cosine; the
  reference fixture holds no scalar).
* StandardDeviation is the population std (ddof 0); means come from ``sum x``.
* NaN and Inf in the inputs propagate as numpy would: a NaN anywhere gives ``nan`` for sums, max,
  cosine and KL; an Inf gives ``inf`` or ``nan`` as the arithmetic says. Relative terms keep
  msaccucmp's mask ``|y| > eps``, which a NaN golden value fails (it adds 0).
* Bool tensors (both sides bool, fed as 0/1): only cosine and RelativeEuclideanDistance.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from precision_tool.errors import PrecisionToolError

from ..formats.shapes import element_problem
from ..formats.text import shape_text
from . import kernels, stat_groups
from .metric_data import Metric, MetricResult, Outcome, Range, StatGroup, Stats
from .metric_table import BUILTIN_METRIC_GROUPS, builtin_name
from .metric_table import METRIC_NAMES as METRIC_NAMES  # its home is the table; long imported from here
from .stat_groups import unscaled

EPS = float(np.finfo(np.float64).eps)


# --- the formulas (module-level functions: metrics are sent to worker processes) --------------


def _cosine(s: Stats) -> Outcome | float:
    nx, ny = math.sqrt(s.sum_xx), math.sqrt(s.sum_yy)  # the ratio is the same at any scale
    zero_x, zero_y = unscaled(nx, s.scale_x) <= EPS, unscaled(ny, s.scale_y) <= EPS
    if zero_x and zero_y:
        return Outcome(1.0)
    if zero_x or zero_y:
        side = "NPU" if zero_x else "golden"
        return Outcome(None, f"Cannot compare by CosineSimilarity: all data is zero in the {side} tensor.")
    return min(float(s.sum_xy / (nx * ny)), 1.0)  # a NaN stays NaN: min keeps its first argument then


def _max_abs(s: Stats) -> float:
    return unscaled(s.max_abs, s.scale_d)


def _accumulated_relative(s: Stats) -> float:
    return s.rel_sum


def _relative_euclidean(s: Stats) -> float:
    norm_y = math.sqrt(s.sum_yy)
    if unscaled(norm_y, s.scale_y) <= EPS:
        return 0.0
    # a ratio of norms, not the root of a ratio: that ratio can underflow where the norms do not
    return unscaled(math.sqrt(s.sum_sq) / norm_y, s.scale_d - s.scale_y)


def _kl(s: Stats) -> float:
    with np.errstate(all="ignore"):
        result = float(s.kl_cross / s.kl_sp - np.log(s.kl_sp) + np.log(s.kl_sq))
    return 0.0 if abs(result) < EPS else result


def _std_text(s: Stats) -> str:
    n = s.count
    parts = []
    for total, m2, scale in ((s.sum_x, s.m2_x, s.scale_x), (s.sum_y, s.m2_y, s.scale_y)):
        mean, std = unscaled(total / n, scale), unscaled(_sqrt(m2 / n), scale)
        parts.append("(%.3f;%.3f)" % (_zero_small(mean), _zero_small(std)))
    return ",".join(parts)


def _sqrt(value: float) -> float:
    """numpy's square root of one number without its ufunc call: NaN below 0 (a variance that
    rounding took under 0), the same number otherwise (IEEE square roots are exactly rounded)."""
    return math.sqrt(value) if value >= 0 else math.nan


def _zero_small(value: float) -> float:
    return 0.0 if abs(value) < 0.001 else value


def _mean_abs(s: Stats) -> float:
    return unscaled(s.sum_abs / s.count, s.scale_d)


def _root_mean_square(s: Stats) -> float:
    return unscaled(math.sqrt(s.sum_sq / s.count), s.scale_d)


def _max_relative(s: Stats) -> float:
    return s.rel_max


def _mean_relative(s: Stats) -> float:
    return s.rel_sum / s.count


# each built-in metric's formula and how it treats bools and text (the names and groups, in
# -alg order: .metric_table)
_FORMULAS: dict[str, tuple] = {
    "CosineSimilarity": (_cosine, {"bool_ok": True}),
    "MaxAbsoluteError": (_max_abs, {}),
    "AccumulatedRelativeError": (_accumulated_relative, {}),
    "RelativeEuclideanDistance": (_relative_euclidean, {"bool_ok": True}),
    "KullbackLeiblerDivergence": (_kl, {}),
    "StandardDeviation": (_std_text, {"text": True}),
    "MeanAbsoluteError": (_mean_abs, {}),
    "RootMeanSquareError": (_root_mean_square, {}),
    "MaxRelativeError": (_max_relative, {}),
    "MeanRelativeError": (_mean_relative, {}),
}
METRICS: tuple[Metric, ...] = tuple(
    Metric(name, groups, _FORMULAS[name][0], **_FORMULAS[name][1]) for name, groups in BUILTIN_METRIC_GROUPS
)


def select_metrics(spec: str | Iterable[str | int | Metric] | None = None) -> tuple[Metric, ...]:
    """The metrics named by ``spec``, in the order given (msaccucmp's ``-alg`` keeps it too).

    ``spec`` is None or ``"all"`` (the ten, in CSV order), or names and/or msaccucmp ``-alg``
    indexes (0 = CosineSimilarity ... 9 = MeanRelativeError) as a comma-separated string or an
    iterable, which may also hold :class:`Metric` objects (custom metrics); names are
    case-insensitive and a metric given twice counts once. Raises PrecisionToolError for an
    unknown name or index.
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "all"):
        return METRICS
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    by_name = {m.name: m for m in METRICS}
    chosen: dict[str, Metric] = {}
    for item in items:
        metric = item if isinstance(item, Metric) else by_name.get(builtin_name(str(item)))
        if metric is not None:
            chosen.setdefault(metric.name, metric)
    if not chosen:
        raise PrecisionToolError("no metric selected")
    return tuple(chosen.values())


# --- accumulation ---------------------------------------------------------------------------


def _groups(metrics: Sequence[Metric]) -> tuple[StatGroup, ...]:
    seen: dict[str, StatGroup] = {}
    for metric in metrics:
        for group in metric.groups:
            seen.setdefault(group.name, group)
    return tuple(seen.values())


@lru_cache(maxsize=64)
def _group_plan(
    metrics: tuple[Metric, ...], scalar: bool, boolean: bool
) -> tuple[frozenset[str], tuple[StatGroup, ...], tuple[StatGroup, ...]]:
    """(the group names, the first pass's groups, the second's) of an Accumulator. Worked out
    once per choice of metrics: every tensor pair makes an Accumulator, and a group, once
    registered, never changes."""
    # a scalar's cosine is not computed; a bool pair computes only the bool-capable metrics
    active = [m for m in metrics if (m.bool_ok or not boolean) and not (scalar and m.name == "CosineSimilarity")]
    groups = _groups(active)
    first = tuple(g for g in groups if not g.needs_ranges)
    if any(g.needs_ranges for g in groups) and not any(g.name == "range" for g in first):
        first += (stat_groups.stat_group("range"),)
    return frozenset(g.name for g in groups), first, tuple(g for g in groups if g.needs_ranges)


class Accumulator:
    """Accumulates the selected metrics' statistics over flat chunks of a tensor pair.

    Feed every chunk to :meth:`update` (the first pass); when :attr:`needs_second_pass`, feed
    them all again to :meth:`update_second` (KL, which needs the ranges the first pass found).

    Args:
        metrics: the metrics to compute. Defaults to all ten.
        scalar: the tensor's dims are all 1: cosine is reported as 1 ("This tensor is scalar.").
        boolean: both sides are bool (fed as 0/1): only cosine and RelativeEuclideanDistance.
        size: elements of the whole tensor, when known: small tensors skip the numba kernels
            (:func:`~.kernels.numba_for`).
        numba: a decision for the whole run (True: the numba kernels when they load; False:
            numpy); None decides by ``size``.
    """

    def __init__(
        self,
        metrics: Sequence[Metric] = METRICS,
        *,
        scalar: bool = False,
        boolean: bool = False,
        size: int | None = None,
        numba: bool | None = None,
    ) -> None:
        self.metrics = tuple(metrics)
        self.scalar, self.boolean = scalar, boolean
        self.groups, self.first, self.second = _group_plan(self.metrics, scalar, boolean)
        self.kernels = kernels.numba_for(size, numba)
        # the kernel a first chunk goes to straight (kernels.first_chunk), or None: fold_first
        self._first_kernel = kernels.builtin_kernel(self.first) if self.kernels is not None else None
        self.stats = Stats()

    @property
    def cosine_only(self) -> bool:
        """Whether only the three sums of the cosine are folded."""
        return self.groups <= {"xy", "xx", "yy"}

    @property
    def needs_second_pass(self) -> bool:
        """Whether a selected metric needs the ranges (KL): then feed the chunks again."""
        return bool(self.second)

    @property
    def ranges(self) -> tuple[Range, Range]:
        """(x range, y range) after the first pass."""
        return self.stats.ranges

    @property
    def nonfinite_counts(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """((NPU NaN, NPU Inf), (golden NaN, golden Inf)) when the first pass counted them."""
        if not any(g.name == "range" for g in self.first):
            return None
        s = self.stats
        return (s.nan_x, s.inf_x), (s.nan_y, s.inf_y)

    def update(self, x: np.ndarray, y: np.ndarray) -> None:
        """Fold one pair of flat chunks of the same length (first pass)."""
        x, y = self._flat(x, y)
        if self._first_kernel is not None and not self.stats.count:  # most pairs: one chunk
            first = kernels.first_chunk(self.kernels, self._first_kernel, x, y)
            if first is not None:
                self.stats = first
                return
        self.stats = kernels.fold_first(self.stats, x, y, self.first, self.kernels)

    def update_second(self, x: np.ndarray, y: np.ndarray) -> None:
        """Fold one pair of flat chunks again (second pass), after every :meth:`update`."""
        x, y = self._flat(x, y)
        kernels.fold_second(self.stats, x, y, self.second, self.stats.ranges, self.kernels)

    @staticmethod
    def _flat(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if x.shape != y.shape:
            raise ValueError(f"chunk shapes differ: {x.shape} vs {y.shape}")
        return np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(y).reshape(-1)

    def result(self) -> MetricResult:
        """The metric values from what has been accumulated (call after the last chunk)."""
        if self.stats.count == 0:
            return not_compared("The tensor is empty (0 elements): nothing to compare.")
        values: dict[str, float | str] = {}
        reasons: list[str] = []
        with np.errstate(all="ignore"):  # once for all metrics: entering it costs microseconds
            outcomes = [self._evaluate(metric) for metric in self.metrics]
        for metric, outcome in zip(self.metrics, outcomes):
            if not isinstance(outcome, Outcome):  # a plain value, the usual case
                values[metric.name] = outcome
                continue
            if outcome.value is not None:
                values[metric.name] = outcome.value
            if outcome.reason and outcome.reason not in reasons:
                reasons.append(outcome.reason)
        return MetricResult(values, tuple(reasons))

    def _evaluate(self, metric: Metric) -> Outcome | float | str:
        """The metric's Outcome, or its value when there is nothing more to say (a float, or the
        text of a text metric): a pair's ten metrics make no Outcome as a rule."""
        if self.boolean and not metric.bool_ok:
            return Outcome(None, "Only CosineSimilarity and RelativeEuclideanDistance support bool tensors.")
        if self.scalar and metric.name == "CosineSimilarity":
            return Outcome(1.0, "This tensor is scalar.")
        value = metric.compute(self.stats)  # under result()'s errstate
        return value if isinstance(value, Outcome) or metric.text else float(value)


_NOT_NUMBERS = {"M": "dates and times", "m": "durations", "U": "text", "S": "bytes", "O": "Python objects"}


def dtype_problem(dtype) -> str | None:
    """What elements of ``dtype`` are when they are not real numbers the metrics can take
    (``"datetime64[s] data (dates and times)"``), or None when they are.

    bool, integers and real floats are numbers, ml_dtypes' bfloat16, fp8 and int4 included.
    Dates and durations would convert to float64 (a date to its count of units since 1970) and
    compare as numbers they are not; complex values would lose their imaginary part; text, bytes
    and Python objects, and numpy's void types (structured records, raw bytes), hold no numbers.
    """
    dtype = np.dtype(dtype)
    kind = dtype.kind
    if kind in "biuf":
        return None
    if kind == "c":
        return f"complex data ({dtype.name})"
    if kind == "V":
        return element_problem(dtype)  # None for ml_dtypes' types (kind V, not numpy's void)
    return f"{dtype} data ({_NOT_NUMBERS.get(kind, 'not numbers')})"


def not_compared(reason: str) -> MetricResult:
    """A result with no metric compared (all ``NaN``) and ``reason``."""
    return MetricResult({}, (reason,))


def shape_mismatch(npu_shape: Sequence[int], golden_shape: Sequence[int]) -> MetricResult:
    """The all-NaN result for two tensors whose host shapes differ, naming both shapes."""
    return not_compared(f"Shape mismatch: NPU {shape_text(npu_shape)} vs golden {shape_text(golden_shape)}.")


def is_scalar_shape(shape: Sequence[int]) -> bool:
    """True when every dim is 1 (a 0-d shape included): msaccucmp's "scalar"."""
    shape = tuple(shape)
    return shape.count(1) == len(shape)


def compare_arrays(
    x: np.ndarray, y: np.ndarray, metrics: Sequence[Metric] = METRICS, chunk: int = 1 << 22
) -> MetricResult:
    """Every selected metric of two whole arrays (host layout), streamed in chunks.

    Decides non-numeric data (:func:`dtype_problem`), scalar (x's dims all 1), bool (both bool)
    and shape mismatch itself; runs the second pass only when KL is selected. Defaults to all ten metrics and 4 Mi-element chunks.
    """
    x, y = np.asarray(x), np.asarray(y)
    for side, values in (("NPU", x), ("golden", y)):
        problem = dtype_problem(values.dtype)
        if problem:
            return not_compared(f"The {side} tensor: {problem} is not compared.")
    if x.shape != y.shape:
        return shape_mismatch(x.shape, y.shape)
    boolean = x.dtype == np.bool_ and y.dtype == np.bool_
    xf, yf = x.reshape(-1), y.reshape(-1)
    pairs = [(xf[i : i + chunk], yf[i : i + chunk]) for i in range(0, xf.size, chunk)]
    acc = Accumulator(metrics, scalar=x.size > 0 and is_scalar_shape(x.shape), boolean=boolean, size=x.size)
    for a, b in pairs:
        acc.update(a, b)
    if acc.needs_second_pass:
        for a, b in pairs:
            acc.update_second(a, b)
    return acc.result()
