"""msprobe's ``Result`` and ``Err_message`` columns: judged per API (or module), from its rows.

``msprobe compare`` (mindstudio-probe 26.2.0) decides these last, for every dump.json call key
at once: each row of the call starts ``pass`` with no message, then a fixed list of checkers
may raise it to ``warning`` or ``error`` (never lower) and add a message; ``Err_message`` is the
list of messages written as JSON (``[]`` when there is none: the messages the comparison wrote
before are replaced). A row is an output when its NPU name holds ``.output.``, else an input
(parameters included). Checkers, in msprobe's order:

statistics mode
    * NaN/Inf: a row whose NPU max or min is NaN/inf/-inf while the bench's are not: error.
    * NormRelativeErr: when the largest input NormRelativeErr (texts ending in ``%``; others
      skipped; 0 when none) is below 0.1, each output whose NormRelativeErr is above 0.5 (a
      text that is not a percentage reads 0, but ``inf`` reads inf): error.
    * requires_grad differing on a matched row; a non-tensor input (dtype ``<class ...>``,
      shape ``[]``) whose values differ; dtypes differing; shapes differing: error.
    * the largest output NormRelativeErr over 10 times the largest input one (or above 0.1 when
      that is 0): warning, on the first output row only.

tensor mode
    * NaN/Inf, requires_grad, non-tensor inputs, dtypes and shapes as in statistics mode;
    * the smallest input One Thousandth Err Ratio above 0.9 while the smallest output one is
      below 0.1: error, on the first output row (msprobe's message says 0.6);
    * the smallest input Cosine above 0.9 and more than 0.1 above the smallest output one:
      warning, on the first output row. (Smallest from 1, texts such as ``unsupported`` skipped.)

md5 mode
    * CRC-32 texts differing: error; when one side is missing (``N/A``): warning.

Calls named ``*.empty.*``, ``*.to.*``, ``*.numpy.*`` and a few more are not judged at all;
``_all_gather_base``, ``_reduce_scatter_base``, ``all_to_all_single`` and ``batch_isend_irecv``
only on their outputs (msprobe's ignore sets). Which call a row belongs to is the caller's
grouping (the dump.json key); the names' second field decides the ignore set.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .msprobe_stats import NA, Value

PASS, WARNING, ERROR = "pass", "warning", "error"
TENSOR, STATISTICS, MD5 = "tensor", "statistics", "md5"
_LEVELS = (PASS, WARNING, ERROR)
IGNORE_ALL = frozenset(
    {
        "empty",
        "empty_like",
        "numpy",
        "to",
        "__setitem__",
        "empty_with_format",
        "new_empty_strided",
        "new_empty",
        "empty_strided",
    }
)
IGNORE_INPUTS = frozenset({"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"})

NAN_INF_TEXT = "error: There is nan/inf/-inf in the maximum or minimum value of NPU."
NORM_TEXT = "error: The NormRelativeErr of output is greater than 0.5."
REQUIRES_GRAD_TEXT = "error: The Required_Grad of NPU and Bench are inconsistent"
PARAMETER_TEXT = "error: The scalar parameters of NPU and Bench are inconsistent."
DTYPE_TEXT = "error: The dtype of NPU and Bench are inconsistent."
SHAPE_TEXT = "error: The shape of NPU and Bench are inconsistent."
NORM_WARN_TEXT = "warning: The norm relative error of output is 10 times that of input."
THOUSANDTH_TEXT = "error: The input/parameters of One Thousandth Err Ratio > 0.9 while the output < 0.6."
COSINE_WARN_TEXT = "warning: The input/parameters of Cosine > 0.9, and input/parameters - output > 0.1"
CRC_TEXT = "error: The CRC-32 value of NPU differs from that of the bench."
CRC_MISSING_TEXT = "warning: The parameter of NPU does not match the bench."
NAN_CELL = "Nan"


@dataclass(frozen=True)
class ApiRow:
    """One row of a call, as msprobe's table holds it (``N/A`` where the bench has none).

    ``npu_max``... are the cells of :meth:`.msprobe_stats.Summary.cells`; ``norm_relative``
    the NormRelativeErr cell (statistics mode), ``cosine`` and ``one_thousandth`` the Cosine and
    One Thousandth Err Ratio cells (tensor mode, :mod:`.msprobe_metrics`); shapes are msprobe's
    texts (``[2, 3]``, :func:`shape_text`); ``*_requires_grad`` as read (a bool, None when
    absent).
    """

    npu_name: str
    bench_name: str = NA
    npu_dtype: str = NA
    bench_dtype: str = NA
    npu_shape: str = NA
    bench_shape: str = NA
    npu_requires_grad: Value = None
    bench_requires_grad: Value = None
    npu_max: Value = NA
    npu_min: Value = NA
    bench_max: Value = NA
    bench_min: Value = NA
    norm_relative: Value = NA
    cosine: Value = NA
    one_thousandth: Value = NA
    npu_md5: str = NA
    bench_md5: str = NA

    @property
    def is_output(self) -> bool:
        return ".output." in self.npu_name


@dataclass(frozen=True)
class RowVerdict:
    """A row's ``Result`` and the messages of its ``Err_message``."""

    result: str = PASS
    messages: tuple[str, ...] = ()

    @property
    def err_message(self) -> str:
        """The Err_message cell: the messages as a JSON list."""
        return json.dumps(list(self.messages)) if self.messages else "[]"  # most rows: the encoder's setup saved


def shape_text(shape: Sequence[int] | None) -> str:
    """A tensor shape as msprobe's table writes it (``[2, 3]``; ``[]`` for a 0-d tensor)."""
    return NA if shape is None else str([int(d) for d in shape])


class _Judged:
    """The rows of one call and their verdicts being raised by the checkers."""

    def __init__(self, rows: Sequence[ApiRow]) -> None:
        self.rows = list(rows)
        self.results = [PASS] * len(self.rows)
        self.messages: list[list[str]] = [[] for _ in self.rows]
        self.inputs = [i for i, row in enumerate(self.rows) if not row.is_output]
        self.outputs = [i for i, row in enumerate(self.rows) if row.is_output]
        self.ignore = _ignore(self.rows, self.inputs)

    def raise_to(self, index: int, level: str, message: str) -> None:
        if _LEVELS.index(level) > _LEVELS.index(self.results[index]):
            self.results[index] = level
        self.messages[index].append(message)

    def judged(self) -> list[int]:
        """The rows the per-row checkers look at (msprobe's ignore sets)."""
        if self.ignore == "all":
            return []
        return self.outputs if self.ignore == "inputs" else self.inputs + self.outputs


def _ignore(rows: list[ApiRow], inputs: list[int]) -> str:
    if not inputs:
        return ""
    parts = rows[inputs[0]].npu_name.split(".")
    if len(parts) < 2:
        return ""
    return "all" if parts[1] in IGNORE_ALL else "inputs" if parts[1] in IGNORE_INPUTS else ""


def _inf_or_nan(value: Value) -> bool:
    if isinstance(value, float):
        return math.isnan(value) or math.isinf(value)
    return isinstance(value, str) and value.strip().lower() in ("inf", "-inf", "nan")


def _percent(value: Value) -> float:
    """msprobe's ``str2float``: ``"12.5%"`` -> 0.125; what does not read as a number is 0."""
    try:
        return float(value.strip("%")) / 100
    except (ValueError, AttributeError):
        return 0.0


def _extreme(judged: _Judged, indexes: list[int], field: str, smallest: bool) -> float:
    """msprobe's ``get_min_or_max_value``: the smallest (from 1) or largest (from 0) cell of
    some rows, percentages read as numbers, other texts skipped."""
    extreme = 1.0 if smallest else 0.0
    for i in indexes:
        value = getattr(judged.rows[i], field)
        if value is None or value in (NAN_CELL, NA):
            continue
        if isinstance(value, str) and value.endswith("%"):
            value = _percent(value)
        if not isinstance(value, str):
            extreme = min(extreme, value) if smallest else max(extreme, value)
    return extreme


def _largest_norm(judged: _Judged, indexes: list[int]) -> float:
    return _extreme(judged, indexes, "norm_relative", smallest=False)


def _check_nan_inf(j: _Judged) -> None:
    for i in j.judged():
        row = j.rows[i]
        if _inf_or_nan(row.bench_max) or _inf_or_nan(row.bench_min):
            continue
        if _inf_or_nan(row.npu_max) or _inf_or_nan(row.npu_min):
            j.raise_to(i, ERROR, NAN_INF_TEXT)


def _check_norm(j: _Judged) -> None:
    if j.ignore:
        return
    if abs(_largest_norm(j, j.inputs)) < 0.1:
        for i in j.outputs:
            if abs(_percent(j.rows[i].norm_relative)) > 0.5:
                j.raise_to(i, ERROR, NORM_TEXT)


def _grad_text(value: Value) -> str:
    return NA if value is None else str(value)


def _check_requires_grad(j: _Judged) -> None:
    for i in j.judged():
        row = j.rows[i]
        if not row.bench_name or row.bench_name == NA:
            continue
        npu, bench = _grad_text(row.npu_requires_grad), _grad_text(row.bench_requires_grad)
        if npu and bench and npu != bench:
            j.raise_to(i, ERROR, REQUIRES_GRAD_TEXT)


def _check_parameters(j: _Judged) -> None:
    if j.ignore:
        return
    for i in j.inputs:
        row = j.rows[i]
        if not row.bench_name or row.bench_name == NA or not row.npu_dtype or not row.bench_dtype:
            continue
        if "class" not in row.npu_dtype or "class" not in row.bench_dtype or str(row.npu_shape) != "[]":
            continue
        if row.npu_max != row.bench_max:
            j.raise_to(i, ERROR, PARAMETER_TEXT)


def _check_dtype(j: _Judged) -> None:
    for i in j.judged():
        row = j.rows[i]
        if not row.bench_name or NA in (row.bench_name, row.npu_name):
            continue
        if "qkv" in row.bench_name or "gate_up" in row.bench_name:  # msprobe skips fused ops
            continue
        if row.npu_dtype and row.bench_dtype and row.npu_dtype != row.bench_dtype:
            j.raise_to(i, ERROR, DTYPE_TEXT)


def _check_shape(j: _Judged) -> None:
    for i in j.judged():
        row = j.rows[i]
        if row.bench_name and row.bench_name != NA and row.npu_shape != row.bench_shape:
            j.raise_to(i, ERROR, SHAPE_TEXT)


def _check_norm_growth(j: _Judged) -> None:
    if j.ignore or not j.outputs:
        return
    largest_in, largest_out = abs(_largest_norm(j, j.inputs)), abs(_largest_norm(j, j.outputs))
    grew = largest_out > 0.1 if largest_in == 0 else largest_out / largest_in > 10
    if grew:
        j.raise_to(j.outputs[0], WARNING, NORM_WARN_TEXT)


def _check_thousandth(j: _Judged) -> None:
    if j.ignore or not j.outputs:
        return
    smallest_in = _extreme(j, j.inputs, "one_thousandth", smallest=True)
    if smallest_in > 0.9 and _extreme(j, j.outputs, "one_thousandth", smallest=True) < 0.1:
        j.raise_to(j.outputs[0], ERROR, THOUSANDTH_TEXT)


def _check_cosine_drop(j: _Judged) -> None:
    if j.ignore or not j.outputs:
        return
    smallest_in = _extreme(j, j.inputs, "cosine", smallest=True)
    if smallest_in > 0.9 and smallest_in - _extreme(j, j.outputs, "cosine", smallest=True) > 0.1:
        j.raise_to(j.outputs[0], WARNING, COSINE_WARN_TEXT)


def _check_crc(j: _Judged) -> None:
    missing = (NA, NAN_CELL, "")
    for i in j.judged():
        row = j.rows[i]
        if row.npu_md5 != row.bench_md5:
            if row.npu_md5 in missing or row.bench_md5 in missing:
                j.raise_to(i, WARNING, CRC_MISSING_TEXT)
            else:
                j.raise_to(i, ERROR, CRC_TEXT)


CHECKERS: dict[str, tuple[Callable[[_Judged], None], ...]] = {
    TENSOR: (
        _check_nan_inf,
        _check_thousandth,
        _check_requires_grad,
        _check_parameters,
        _check_dtype,
        _check_shape,
        _check_cosine_drop,
    ),
    STATISTICS: (
        _check_nan_inf,
        _check_norm,
        _check_requires_grad,
        _check_parameters,
        _check_dtype,
        _check_shape,
        _check_norm_growth,
    ),
    MD5: (_check_crc,),
}


def judge_api(rows: Sequence[ApiRow], mode: str) -> list[RowVerdict]:
    """msprobe's Result and Err_message of each row of one call (``mode``: ``tensor``,
    ``statistics`` or ``md5``), in the rows' order."""
    if mode not in CHECKERS:
        raise ValueError(f"unknown msprobe compare mode {mode!r}: choose from {', '.join(CHECKERS)}")
    judged = _Judged(rows)
    for check in CHECKERS[mode]:
        check(judged)
    return [RowVerdict(result, tuple(messages)) for result, messages in zip(judged.results, judged.messages)]


__all__ = [
    "ApiRow",
    "CHECKERS",
    "ERROR",
    "MD5",
    "PASS",
    "RowVerdict",
    "STATISTICS",
    "TENSOR",
    "WARNING",
    "judge_api",
    "shape_text",
]
