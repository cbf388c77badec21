"""msprobe's six tensor-mode columns as metrics, streamed through the engine like the ten.

``msprobe compare`` (Ascend's mindstudio-probe, checked against 26.2.0) writes ``Cosine``,
``EucDist``, ``MaxAbsErr``, ``MaxRelativeErr``, ``One Thousandth Err Ratio`` and ``Five
Thousandths Err Ratio`` for each tensor pair. :data:`MSPROBE_METRICS` are those columns as
:class:`~.metric_data.Metric` objects: pass them to the engine (``compare_tasks(tasks,
MSPROBE_METRICS)``) and a row's :attr:`~.metric_data.MetricResult.values` holds msprobe's
cells, numbers or msprobe's texts (``unsupported``, ``N/A``, ``Nan``), with msprobe's message
as the reason. They read one statistic group, ``msprobe`` (:func:`_fold`), which folds the
blocks in their stored dtypes (:attr:`~.metric_data.StatGroup.stored`), so ranges of a tensor
fold on several workers and merge (:func:`_merge`).

What msprobe computes (after its reader squeezes every size-1 dim away), reproduced here:

* NaN/Inf: when both sides hold NaN at the same positions and Inf at the same positions (the
  sign of an Inf is not looked at), those elements are zeroed on both sides; otherwise every
  column is ``N/A`` with "The position of inf or nan in NPU and bench Tensor do not match.".
* Cosine: ``x.y / (|x| |y|)`` in float64; both norms <= float64 eps gives 1.0, one of them
  ``Nan`` with msprobe's message; rounded to 12 decimals, and to 6 when above 0.9999.
  EucDist: ``|x - y|`` in float64, not rounded. MaxAbsErr: ``max |x - y|`` in float64.
* MaxRelativeErr and the two ratios: ``|(n - b) / b|`` in ``result_type(n, b, float32)``:
  float32 for float16/float32 pairs (and bfloat16, which msprobe's reader makes float32),
  float64 when a side is float64, an integer or bool; where ``b == 0`` both get that type's eps
  added. The ratios are the share of elements whose error is below 0.001 and 0.005 (compared
  in that type). MaxRelativeErr and the ratios are rounded to 12 decimals.
* A tensor of one element (0-d after the squeeze): Cosine, EucDist and the ratios are
  ``unsupported`` ("This is type of 0-d tensor, ..."); MaxAbsErr and MaxRelativeErr are taken
  on the raw values (no NaN zeroing: NaN gives ``Nan`` and msprobe's message), MaxAbsErr in
  the pair's own dtype (float16 rounds, integers wrap), not float64.
* Dtypes differing (as msprobe reads them: bfloat16 is float32) are computed, with msprobe's
  note. Empty tensors and squeezed shapes that differ are decided from the shapes alone,
  before any data: :func:`precheck`.

msprobe's float64 norms overflow for elements beyond about 1e154 (a float64 dump): we sum the
same way, so such a cosine is ``Nan`` as msprobe's is (the ten metrics scale instead).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..errors import PrecisionToolError
from .metric_data import Metric, MetricResult, Outcome, StatGroup, Stats
from .msprobe_fold import block_part, relative_errors
from .stat_groups import register_group

GROUP = "msprobe"
COSINE, EUC_DIST, MAX_ABS, MAX_REL = "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr"
ONE_THOUSANDTH, FIVE_THOUSANDTHS = "One Thousandth Err Ratio", "Five Thousandths Err Ratio"
UNSUPPORTED, NOT_AVAILABLE, NAN_TEXT, SHAPE_UNMATCHED = "unsupported", "N/A", "Nan", "shape unmatched"
COSINE_ROUND_ABOVE = 0.9999
FLOAT64_EPS = float(np.finfo(np.float64).eps)

# msprobe's messages (its trailing spaces and newlines left off)
EMPTY_TEXT = "This is empty data, can not compare."
SHAPE_TEXT = "Shape of NPU and bench tensor do not match. Skipped."
ZERO_D_TEXT = (
    f"This is type of 0-d tensor, can not calculate '{COSINE}', '{EUC_DIST}', "
    f"'{ONE_THOUSANDTH}' and '{FIVE_THOUSANDTHS}'."
)
POSITIONS_TEXT = "The position of inf or nan in NPU and bench Tensor do not match."
DTYPE_TEXT = "Dtype of NPU and bench tensor do not match."
COSINE_ZERO_TEXT = "Cannot compare by Cosine Similarity, All the data is Zero in {side} dump data."
COSINE_NAN_TEXT = "Cannot compare by Cosine Similarity, the dump data has NaN."
MAX_ABS_NAN_TEXT = "Cannot compare by MaxAbsError, the data contains nan/inf/-inf in dump data."
MAX_REL_NAN_TEXT = "Cannot compare by MaxRelativeError, the data contains nan/inf/-inf in dump data."

_NARROW = frozenset({"float16", "float32"})  # kept by msprobe's relative error: float32 arithmetic
_AS_FLOAT32 = ("bfloat16", "float8")  # msprobe's .pt reader makes these float32


def format_value(value: float) -> float:
    """msprobe's rounding of a cell: to 12 decimals (``float('{:.12f}'.format(v))``)."""
    return float(f"{float(value):.12f}")


@lru_cache(maxsize=64)  # asked twice a pair, and numpy's dtype.name is made in Python each time
def msprobe_dtype(dtype) -> str:
    """The dtype as msprobe's readers hand it to the comparison: bfloat16 and fp8 as float32."""
    name = np.dtype(dtype).name
    return "float32" if name.startswith(_AS_FLOAT32) else name


def relative_type(npu_dtype, bench_dtype) -> type:
    """msprobe's ``result_type(n, b, float32)`` for its relative error: float32 when both sides
    are float16/float32 (as msprobe reads them), else float64 (integers and bool become float64)."""
    narrow = msprobe_dtype(npu_dtype) in _NARROW and msprobe_dtype(bench_dtype) in _NARROW
    return np.float32 if narrow else np.float64


# --- the statistic group ----------------------------------------------------------------------


@dataclass(frozen=True)
class MsprobeSums:
    """The ``msprobe`` group's partial statistics (in ``stats.extra["msprobe"]``).

    Sums are over the values as msprobe compares them (same-position NaN/Inf zeroed);
    ``first`` is the first element of each side, raw (a one-element tensor is taken raw);
    ``mismatch``: NaN or Inf positions differ somewhere (every column is then ``N/A``).
    """

    dtypes: tuple[str, str]
    first: tuple[float, float] | None = None
    sum_xy: float = 0.0
    sum_xx: float = 0.0
    sum_yy: float = 0.0
    sum_sq: float = 0.0
    max_abs: float = -math.inf
    rel_max: float = -math.inf
    below: tuple[int, int] = (0, 0)  # elements with relative error < each of THRESHOLDS
    mismatch: bool = False
    relative: type = np.float64  # the type msprobe computes the relative error in (relative_type)


def _max(a: float, b: float) -> float:
    return a if a != a or a >= b else b  # NaN propagates, as numpy's maximum


def _fold(stats: Stats, x: np.ndarray, y: np.ndarray) -> None:
    """Fold one pair of blocks, in their stored dtypes, into ``stats.extra["msprobe"]``."""
    state = stats.extra.get(GROUP)
    if state is None:
        first = (float(x[0]), float(y[0])) if x.size else None
        dtypes = (msprobe_dtype(x.dtype), msprobe_dtype(y.dtype))
        state = MsprobeSums(dtypes, first, relative=relative_type(*dtypes))
        stats.extra[GROUP] = state
    if state.mismatch or not x.size:
        return
    part = block_part(state.relative, x, y)
    if part is None:
        stats.extra[GROUP] = replace(state, mismatch=True)
        return
    sum_xy, sum_xx, sum_yy, sum_sq, max_abs, rel_max, below = part
    # every field spelt out: dataclasses.replace looks the fields up anew each block
    stats.extra[GROUP] = MsprobeSums(
        dtypes=state.dtypes,
        first=state.first,
        sum_xy=state.sum_xy + sum_xy,
        sum_xx=state.sum_xx + sum_xx,
        sum_yy=state.sum_yy + sum_yy,
        sum_sq=state.sum_sq + sum_sq,
        max_abs=_max(state.max_abs, max_abs),
        rel_max=_max(state.rel_max, rel_max),
        below=(state.below[0] + below[0], state.below[1] + below[1]),
        mismatch=state.mismatch,
        relative=state.relative,
    )


def _merge(into: Stats, other: Stats) -> None:
    """``other``'s partial sums added to ``into``'s (a new state: ``into`` may share its
    ``extra`` entries with the part it was copied from)."""
    a, b = into.extra.get(GROUP), other.extra.get(GROUP)
    if b is None:
        return
    if a is None:
        into.extra[GROUP] = b
        return
    into.extra[GROUP] = replace(
        a,
        first=a.first if a.first is not None else b.first,
        sum_xy=a.sum_xy + b.sum_xy,
        sum_xx=a.sum_xx + b.sum_xx,
        sum_yy=a.sum_yy + b.sum_yy,
        sum_sq=a.sum_sq + b.sum_sq,
        max_abs=_max(a.max_abs, b.max_abs),
        rel_max=_max(a.rel_max, b.rel_max),
        below=(a.below[0] + b.below[0], a.below[1] + b.below[1]),
        mismatch=a.mismatch or b.mismatch,
    )


MSPROBE_GROUP = register_group(StatGroup(GROUP, _fold, _merge, stored=True))


# --- the columns ------------------------------------------------------------------------------


def _state(s: Stats) -> MsprobeSums:
    return s.extra[GROUP]


def _common(s: Stats, zero_d_computed: bool) -> Outcome | None:
    """The outcome every column shares, or None: the column computes its own value."""
    state = _state(s)
    if s.count == 1 and not zero_d_computed:
        return Outcome(UNSUPPORTED, ZERO_D_TEXT)
    if s.count != 1 and state.mismatch:
        return Outcome(NOT_AVAILABLE, POSITIONS_TEXT)
    return None


def _note(s: Stats) -> str | None:
    """msprobe's dtype note, which it writes only for tensors that passed its other checks."""
    state = _state(s)
    if s.count == 1 or state.mismatch or state.dtypes[0] == state.dtypes[1]:
        return None
    return DTYPE_TEXT


def _value(s: Stats, value: float) -> Outcome:
    return Outcome(value, _note(s))


def _cosine(s: Stats) -> Outcome:
    common = _common(s, zero_d_computed=False)
    if common:
        return common
    state = _state(s)
    # float64 arithmetic as numpy's, in Python floats (each operation rounds alike; a sum of
    # squares is never below -0.0, whose root is -0.0 in both): no numpy scalars, no errstate
    norm_x, norm_y = math.sqrt(state.sum_xx), math.sqrt(state.sum_yy)
    if norm_x <= FLOAT64_EPS and norm_y <= FLOAT64_EPS:
        return _value(s, 1.0)
    if norm_x <= FLOAT64_EPS or norm_y <= FLOAT64_EPS:
        side = "npu" if norm_x <= FLOAT64_EPS else "Bench"
        return Outcome(NAN_TEXT, COSINE_ZERO_TEXT.format(side=side))
    cos = state.sum_xy / (norm_x * norm_y)  # both norms above eps: no division by zero
    if math.isnan(cos):
        return Outcome(NAN_TEXT, COSINE_NAN_TEXT)
    value = format_value(cos)
    return _value(s, round(value, 6) if value > COSINE_ROUND_ABOVE else value)


def _euc_dist(s: Stats) -> Outcome:
    return _common(s, zero_d_computed=False) or _value(s, math.sqrt(_state(s).sum_sq))


def _max_abs(s: Stats) -> Outcome:
    common = _common(s, zero_d_computed=True)
    if common:
        return common
    state = _state(s)
    value = _raw_abs(state) if s.count == 1 else state.max_abs
    if math.isnan(value):
        return Outcome(NAN_TEXT, MAX_ABS_NAN_TEXT)
    return _value(s, format_value(value))


def _raw_abs(state: MsprobeSums) -> float:
    """``|x - y|`` of a one-element pair as msprobe takes it: a 0-d array is not made float64
    first, so the difference is in the pair's own dtype (float16 rounds, integers wrap); only
    a bool NPU side makes both sides float64."""
    widen = state.dtypes[0] == "bool"
    x, y = (np.asarray(v, dtype=np.float64 if widen else name) for v, name in zip(state.first, state.dtypes))
    with np.errstate(all="ignore"):
        return float(np.abs(np.subtract(x, y)))


def _max_relative(s: Stats) -> Outcome:
    common = _common(s, zero_d_computed=True)
    if common:
        return common
    state = _state(s)
    if s.count == 1:
        with np.errstate(all="ignore"):
            x, y = np.array(state.first[:1]), np.array(state.first[1:])
            value = float(relative_errors(x, y, state.relative)[0])
    else:
        value = state.rel_max
    if math.isnan(value):
        return Outcome(NAN_TEXT, MAX_REL_NAN_TEXT)
    return _value(s, format_value(value))


def _ratio(s: Stats, which: int) -> Outcome:
    return _common(s, zero_d_computed=False) or _value(s, format_value(_state(s).below[which] / s.count))


def _one_thousandth(s: Stats) -> Outcome:
    return _ratio(s, 0)


def _five_thousandths(s: Stats) -> Outcome:
    return _ratio(s, 1)


_NEEDS = frozenset({GROUP})
MSPROBE_METRICS: tuple[Metric, ...] = (
    Metric(COSINE, _NEEDS, _cosine, bool_ok=True),
    Metric(EUC_DIST, _NEEDS, _euc_dist, bool_ok=True),
    Metric(MAX_ABS, _NEEDS, _max_abs, bool_ok=True),
    Metric(MAX_REL, _NEEDS, _max_relative, bool_ok=True),
    Metric(ONE_THOUSANDTH, _NEEDS, _one_thousandth, bool_ok=True),
    Metric(FIVE_THOUSANDTHS, _NEEDS, _five_thousandths, bool_ok=True),
)
MSPROBE_COLUMNS: tuple[str, ...] = tuple(m.name for m in MSPROBE_METRICS)


def select_msprobe(spec: str | Iterable[str] | None = None) -> tuple[Metric, ...]:
    """msprobe's columns named by ``spec`` (comma-separated or an iterable; case-insensitive),
    in the order given; None or ``"all"``: the six in msprobe's order. Raises
    PrecisionToolError for a name msprobe does not write."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "all"):
        return MSPROBE_METRICS
    by_name = {m.name.lower(): m for m in MSPROBE_METRICS}
    chosen: dict[str, Metric] = {}
    for item in spec.split(",") if isinstance(spec, str) else spec:
        text = str(item).strip()
        if not text:
            continue
        if text.lower() not in by_name:
            raise PrecisionToolError(f"unknown msprobe column {text!r}: choose from {', '.join(MSPROBE_COLUMNS)}")
        metric = by_name[text.lower()]
        chosen.setdefault(metric.name, metric)
    if not chosen:
        raise PrecisionToolError("no msprobe column selected")
    return tuple(chosen.values())


def squeezed(shape: Sequence[int]) -> tuple[int, ...]:
    """A shape as msprobe's readers leave it (``np.squeeze``: every dim of 1 dropped)."""
    return tuple(int(d) for d in shape if int(d) != 1)


_TEXT_CELLS = (  # (msprobe's message, the columns it leaves a text in (None: all), that text)
    (EMPTY_TEXT, None, UNSUPPORTED),
    (SHAPE_TEXT, None, SHAPE_UNMATCHED),
    (POSITIONS_TEXT, None, NOT_AVAILABLE),
    (ZERO_D_TEXT, (COSINE, EUC_DIST, ONE_THOUSANDTH, FIVE_THOUSANDTHS), UNSUPPORTED),
    (COSINE_ZERO_TEXT.partition("{side}")[0], (COSINE,), NAN_TEXT),
    (COSINE_NAN_TEXT, (COSINE,), NAN_TEXT),
    (MAX_ABS_NAN_TEXT, (MAX_ABS,), NAN_TEXT),
    (MAX_REL_NAN_TEXT, (MAX_REL,), NAN_TEXT),
)


def text_cell(column: str, reason: str) -> str:
    """msprobe's text in ``column`` of a row that holds no number there, from the row's reason
    (a row keeps numbers only; the messages above say which text each column had): ``N/A``
    when no message names one (no bench, or a pair that was not compared)."""
    for message, columns, text in _TEXT_CELLS:
        if message in reason and (columns is None or column in columns):
            return text
    return NOT_AVAILABLE


def precheck(
    npu_shape: Sequence[int], bench_shape: Sequence[int], metrics: Sequence[Metric] = MSPROBE_METRICS
) -> MetricResult | None:
    """msprobe's verdict on a pair from its shapes alone, or None when the data decides.

    In msprobe's order: an empty NPU tensor is ``unsupported`` in every column ("This is empty
    data, can not compare."); squeezed shapes that differ are ``shape unmatched``. (msprobe
    compares the shapes after squeezing, so ``[1, 3]`` and ``[3]`` are compared.)
    """
    if math.prod(int(d) for d in npu_shape) == 0:
        cell, text = UNSUPPORTED, EMPTY_TEXT
    elif squeezed(npu_shape) != squeezed(bench_shape):
        cell, text = SHAPE_UNMATCHED, SHAPE_TEXT
    else:
        return None
    return MetricResult({m.name: cell for m in metrics}, (text,))


__all__ = [
    "COSINE",
    "EUC_DIST",
    "FIVE_THOUSANDTHS",
    "MAX_ABS",
    "MAX_REL",
    "MSPROBE_COLUMNS",
    "MSPROBE_GROUP",
    "MSPROBE_METRICS",
    "MsprobeSums",
    "ONE_THOUSANDTH",
    "format_value",
    "msprobe_dtype",
    "precheck",
    "text_cell",
    "relative_type",
    "select_msprobe",
    "squeezed",
]
