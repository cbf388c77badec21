"""msprobe's statistics-mode and md5-mode comparison of one tensor pair, from their records.

In statistics mode msprobe dumps no tensor data, only each tensor's ``Max``, ``Min``, ``Mean``
and ``Norm`` (dump.json; a value may be a float, an int, a bool, null, or a text such as
``"inf"``); ``msprobe compare`` then writes, per pair, ``Max diff``, ``Min diff``, ``Mean
diff``, ``L2norm diff`` and ``MaxRelativeErr``, ``MinRelativeErr``, ``MeanRelativeErr``,
``NormRelativeErr``. In md5 mode it compares each tensor's CRC-32 text (dump.json's ``md5``).
These are pure functions of those values (no file is read here); the Result and Err_message
columns, which msprobe decides per API from all of its rows, are :mod:`.msprobe_result`.

msprobe's rules (checked against mindstudio-probe 26.2.0), reproduced here:

* Each value as msprobe shows it (its ``NPU max`` ... cells): a bool becomes its text
  (``"True"``), null becomes ``"None"``, anything whose text is ``nan`` in any case becomes
  ``"Nan"``; other values stay as they are.
* Values whose texts are equal: ``"0"`` and ``"0"`` (so ``3`` and ``3.0`` are not equal and give
  ``"0.0"`` and ``"0.0%"``). Else by kind (NaN, inf, -inf, number, a device text containing
  npu/cpu/cuda, ``N/A``, other): two numbers give ``npu - bench`` and ``|diff / bench * 100|``
  followed by ``%`` (``"inf"``, no ``%``, when bench is 0), both as Python prints a float; NaN
  against a number or an infinity: ``"Nan"``; an infinity against a number or the other
  infinity: ``"inf"``/``"-inf"`` as npu - bench would be; ``N/A`` on either side: ``"N/A"``;
  a device or other text against anything but ``N/A``: ``"Diff"`` (two devices: ``"N/A"``);
  any other pair (two unequal NaN or infinity texts): ``"N/A"``. Every cell is a text.
* A tensor with no bench matched: every column ``"N/A"``.

msprobe computes these over pandas columns: where a column holds only numbers pandas may
store an int as a float (``3`` shown ``3.0``); in a dump's real columns, which mix texts,
``None`` and bools with the numbers, each value keeps its own type, as here.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass, fields

Value = float | int | bool | str | None
STAT_NAMES = ("max", "min", "mean", "norm")
DIFF_COLUMNS = ("Max diff", "Min diff", "Mean diff", "L2norm diff")
RELATIVE_COLUMNS = ("MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")
NA, NAN_TEXT, DIFF_TEXT, SAME = "N/A", "Nan", "Diff", "0"
PASS, DIFFERENT = "pass", "Different"
_DEVICE = re.compile("npu|cpu|cuda", re.IGNORECASE)
_NAN, _INF, _NEG_INF, _NUM, _DEVICE_KIND, _NA, _OTHER = "nan", "inf", "-inf", "num", "device", "na", "other"


@dataclass(frozen=True)
class Summary:
    """One tensor's statistics as its dump.json record holds them (values as read)."""

    max: Value = None
    min: Value = None
    mean: Value = None
    norm: Value = None

    def cells(self) -> tuple[Value, Value, Value, Value]:
        """msprobe's ``max``, ``min``, ``mean``, ``l2norm`` cells of this tensor."""
        return summary_cell(self.max), summary_cell(self.min), summary_cell(self.mean), summary_cell(self.norm)


def summary_cell(value: Value) -> Value:
    """A statistic as msprobe shows it: bools and null as text, every NaN as ``"Nan"``."""
    if type(value) is float:  # the usual cell: only NaN's text is "nan", and it is not itself
        return NAN_TEXT if value != value else value
    if isinstance(value, bool) or value is None:
        value = str(value)
    return NAN_TEXT if str(value).lower() == "nan" else value


@dataclass(frozen=True)
class StatsDiff:
    """msprobe's eight statistics-mode cells of one pair (every one a text)."""

    max_diff: str = NA
    min_diff: str = NA
    mean_diff: str = NA
    norm_diff: str = NA
    max_relative: str = NA
    min_relative: str = NA
    mean_relative: str = NA
    norm_relative: str = NA

    def columns(self) -> dict[str, str]:
        """msprobe's column name -> cell, in msprobe's column order."""
        return dict(zip(DIFF_COLUMNS + RELATIVE_COLUMNS, (getattr(self, f.name) for f in fields(self))))


def _number(text: str) -> float | None:
    """The number msprobe's pandas reads in ``text`` (None when it reads none)."""
    if "_" in text or text.strip().lower() in ("true", "false"):
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return None if math.isnan(number) else number


def _kind(cell: Value) -> str:
    """msprobe's class of a cell, its tests tried in its order."""
    text = str(cell)
    lower = text.lower()
    if lower == "nan" or (isinstance(cell, float) and math.isnan(cell)):
        return _NAN
    if lower == "inf" or cell == math.inf:
        return _INF
    if lower == "-inf" or cell == -math.inf:
        return _NEG_INF
    if _number(text) is not None:
        return _NUM
    if _DEVICE.search(text):
        return _DEVICE_KIND
    return _NA if text == NA else _OTHER


def _infinite(sign: str) -> tuple[str, str]:
    return sign, sign


# (npu kind, bench kind) -> the two cells, for unequal values of kinds other than two numbers
_RULES: dict[tuple[str, str], tuple[str, str]] = {}
for _kind_a in (_NUM, _NAN, _INF, _NEG_INF):
    _RULES[(_NAN, _kind_a)] = _RULES[(_kind_a, _NAN)] = (NAN_TEXT, NAN_TEXT)
_RULES.update(
    {
        (_INF, _NUM): _infinite("inf"),
        (_INF, _NEG_INF): _infinite("inf"),
        (_NEG_INF, _NUM): _infinite("-inf"),
        (_NEG_INF, _INF): _infinite("-inf"),
        (_NUM, _INF): _infinite("-inf"),
        (_NUM, _NEG_INF): _infinite("inf"),
    }
)
for _kind_a in (_NUM, _NAN, _INF, _NEG_INF, _DEVICE_KIND, _NA, _OTHER):
    _RULES[(_NA, _kind_a)] = _RULES[(_kind_a, _NA)] = (NA, NA)
for _kind_a in (_NUM, _NAN, _INF, _NEG_INF, _DEVICE_KIND, _OTHER):
    for _text_kind in (_DEVICE_KIND, _OTHER):
        _RULES[(_text_kind, _kind_a)] = _RULES[(_kind_a, _text_kind)] = (DIFF_TEXT, DIFF_TEXT)
_RULES[(_DEVICE_KIND, _DEVICE_KIND)] = (NA, NA)


def stat_diff(npu: Value, bench: Value) -> tuple[str, str]:
    """msprobe's (diff, relative error) cells of one statistic: see the module docstring.

    ``npu`` and ``bench`` are the cells (:func:`summary_cell`); raw dump values are taken as
    cells first.
    """
    npu, bench = summary_cell(npu), summary_cell(bench)
    if str(npu) == str(bench):
        return SAME, SAME
    kinds = (_kind(npu), _kind(bench))
    if kinds != (_NUM, _NUM):
        return _RULES.get(kinds, (NA, NA))
    a, b = _number(str(npu)), _number(str(bench))
    diff = a - b
    if b == 0:
        return repr(diff), "inf"
    return repr(diff), repr(abs(diff / b * 100)) + "%"


def compare_summaries(npu: Summary, bench: Summary | None) -> StatsDiff:
    """msprobe's statistics-mode cells of a pair; ``bench`` None: no bench matched (all N/A)."""
    if bench is None:
        return StatsDiff()
    pairs = [stat_diff(a, b) for a, b in zip(npu.cells(), bench.cells())]
    return StatsDiff(*(p[0] for p in pairs), *(p[1] for p in pairs))


def md5_match(npu_md5: str | None, bench_md5: str | None) -> str:
    """msprobe's first md5-mode verdict of a matched pair: ``pass`` for equal CRC-32 texts,
    ``Different`` otherwise (msprobe then replaces it by its per-API Result:
    :func:`.msprobe_result.judge_api`)."""
    return PASS if npu_md5 == bench_md5 else DIFFERENT


def value_md5(value: Value) -> str:
    """The md5 cell msprobe gives a non-tensor argument (an int, a float, None...), which
    dump.json records without one: the CRC-32 of the value's text, as 8 hex digits."""
    return f"{zlib.crc32(str(value).encode()):08x}"


__all__ = [
    "DIFF_COLUMNS",
    "RELATIVE_COLUMNS",
    "STAT_NAMES",
    "StatsDiff",
    "Summary",
    "Value",
    "compare_summaries",
    "md5_match",
    "stat_diff",
    "summary_cell",
    "value_md5",
]
