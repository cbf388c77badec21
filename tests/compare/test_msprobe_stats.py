"""msprobe's statistics-mode and md5-mode cells, Result and Err_message, against msprobe's CSV.

tests/data/msprobe_metrics/{statistics,md5}/ hold two MindSpore-style dump.json files each and
the rows of the CSV that mindstudio-probe's own ``ms_compare`` wrote for them
(bench/msprobe_reference.py). The inputs here are read from the dump.json files with plain
json; the expected cells are msprobe's CSV text.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precision_tool.compare.msprobe_result import ApiRow, judge_api, shape_text
from precision_tool.compare.msprobe_stats import (DIFF_COLUMNS, RELATIVE_COLUMNS, Summary, compare_summaries,
                                                  md5_match, stat_diff, summary_cell, value_md5)

DATA = Path(__file__).resolve().parent.parent / "data" / "msprobe_metrics"


def _dump(mode: str, side: str) -> dict:
    return json.loads((DATA / mode / side / "dump.json").read_text())["data"]


def _rows(data: dict) -> dict[str, tuple[str, dict]]:
    """NPU-name -> (call key, record) for every tensor or argument of a dump, as msprobe names
    its rows (``{key}.input.{i}``, ``{key}.output.{i}``)."""
    named = {}
    for key, call in data.items():
        for part, kind in (("input_args", "input"), ("output", "output")):
            for i, record in enumerate(call.get(part, [])):
                named[f"{key}.{kind}.{i}"] = (key, record)
    return named


def _summary(record: dict) -> Summary:
    if record["type"].endswith("Tensor"):
        return Summary(record.get("Max"), record.get("Min"), record.get("Mean"), record.get("Norm"))
    return Summary(*[record["value"]] * 4)  # msprobe shows an argument's value as each statistic


def _dtype(record: dict) -> str:
    return record.get("dtype") or str(type(record["value"]))


def _shape(record: dict) -> str:
    return shape_text(record["shape"]) if "shape" in record else "[]"


def _md5(record: dict) -> str:
    return record.get("md5") or value_md5(record.get("value", ""))


def _expected(mode: str) -> list[dict]:
    return json.loads((DATA / mode / "expected.json").read_text())["rows"]


def _api_rows(mode: str) -> tuple[dict[str, list], dict[str, list]]:
    """Our ApiRows and msprobe's CSV rows, grouped by call key, in the CSV's order."""
    npu, bench = _rows(_dump(mode, "npu")), _rows(_dump(mode, "bench"))
    ours: dict[str, list] = {}
    theirs: dict[str, list] = {}
    for expected in _expected(mode):
        key, record = npu[expected["NPU Name"]]
        matched = bench.get(expected["NPU Name"]) if expected["Bench Name"] != "N/A" else None
        other = matched[1] if matched else None
        cells = _summary(record).cells()
        bench_cells = _summary(other).cells() if other else ("N/A",) * 4
        diff = compare_summaries(_summary(record), _summary(other) if other else None)
        ours.setdefault(key, []).append(ApiRow(
            npu_name=expected["NPU Name"], bench_name=expected["Bench Name"], npu_dtype=_dtype(record),
            bench_dtype=_dtype(other) if other else "N/A", npu_shape=_shape(record),
            bench_shape=_shape(other) if other else "N/A", npu_requires_grad=record.get("requires_grad"),
            bench_requires_grad=other.get("requires_grad") if other else None, npu_max=cells[0], npu_min=cells[1],
            bench_max=bench_cells[0], bench_min=bench_cells[1], norm_relative=diff.norm_relative,
            npu_md5=_md5(record), bench_md5=_md5(other) if other else "N/A"))
        theirs.setdefault(key, []).append(expected)
    return ours, theirs


def test_the_reference_covers_every_pair_of_values():
    rows = _expected("statistics")
    assert len(rows) > 90 and json.loads((DATA / "statistics" / "expected.json").read_text())["msprobe"]
    assert {r["Result"] for r in rows} == {"pass", "warning", "error"}


def test_statistics_cells_are_msprobes():
    npu, bench = _rows(_dump("statistics", "npu")), _rows(_dump("statistics", "bench"))
    checked = 0
    for expected in _expected("statistics"):
        _, record = npu[expected["NPU Name"]]
        other = bench[expected["NPU Name"]][1] if expected["Bench Name"] != "N/A" else None
        got = compare_summaries(_summary(record), _summary(other) if other else None).columns()
        assert got == {c: expected[c] for c in DIFF_COLUMNS + RELATIVE_COLUMNS}, expected["NPU Name"]
        shown = [str(cell) for cell in _summary(record).cells()]
        assert shown == [expected[c].strip() for c in ("NPU max", "NPU min", "NPU mean", "NPU l2norm")]
        checked += 1
    assert checked == len(_expected("statistics"))


@pytest.mark.parametrize("mode", ["statistics", "md5"])
def test_result_and_err_message_are_msprobes(mode):
    ours, theirs = _api_rows(mode)
    for key, rows in ours.items():
        verdicts = judge_api(rows, mode)
        assert [(v.result, v.err_message) for v in verdicts] == \
            [(e["Result"], e["Err_message"]) for e in theirs[key]], key


def test_md5_cells():
    assert md5_match("0a1b2c3d", "0a1b2c3d") == "pass"
    assert md5_match("0a1b2c3d", "feedf00d") == "Different"
    npu = {e["NPU Name"]: e["NPU MD5"] for e in _expected("md5")}
    assert value_md5(3) == npu["Functional.param.0.forward.input.1"]


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown msprobe compare mode 'tensor'"):
        judge_api([ApiRow("Functional.a.0.forward.input.0")], "tensor")


_VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6), st.booleans(),
                    st.none(), st.sampled_from(["inf", "-inf", "nan", "NaN", "N/A", "npu:0", "text"]))


@given(_VALUES)
def test_a_value_against_itself_is_zero(value):
    assert stat_diff(value, value) == ("0", "0")


@given(st.floats(-1e300, 1e300), st.floats(-1e300, 1e300))
def test_two_numbers_give_their_difference_and_percentage(a, b):
    diff, relative = stat_diff(a, b)
    if repr(a) == repr(b):
        assert (diff, relative) == ("0", "0")
        return
    assert float(diff) == a - b
    if b == 0:
        assert relative == "inf"
    else:
        assert relative.endswith("%") and float(relative[:-1]) == abs((a - b) / b * 100)


@given(_VALUES)
def test_cells_show_bools_none_and_every_nan_as_text(value):
    cell = summary_cell(value)
    if isinstance(value, float) and math.isnan(value) or str(value).lower() == "nan":
        assert cell == "Nan"
    elif isinstance(value, bool) or value is None:
        assert cell == str(value)
    else:
        assert cell is value
