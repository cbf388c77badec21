"""msprobe's statistics-mode and md5-mode cells of a tensor pair, against msprobe's CSV.

tests/data/msprobe_metrics/statistics/ holds two MindSpore-style dump.json files and the rows of
the CSV that mindstudio-probe's own ``ms_compare`` wrote for them (bench/msprobe_reference.py):
every pair of a set of values (numbers, ints, null, bools, inf/nan as numbers and as text, a
device text) meets in some statistic. The inputs are read from the dump.json files with plain
json; the expected cells are msprobe's CSV text.
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from precision_tool.compare.msprobe_stats import (
    DIFF_COLUMNS,
    RELATIVE_COLUMNS,
    compare_summaries,
    md5_match,
    stat_diff,
    summary_cell,
    value_md5,
)

from .msprobe_dumps import DATA, dump, expected, records, summary


def test_the_reference_is_msprobes_csv():
    rows = expected("statistics")
    assert len(rows) > 90 and (DATA / "statistics" / "expected.json").read_text().count('"msprobe": "')
    assert sum(row[c] == "Diff" for row in rows for c in DIFF_COLUMNS) > 10


def test_statistics_cells_are_msprobes():
    npu, bench = records(dump("statistics", "npu")), records(dump("statistics", "bench"))
    rows = expected("statistics")
    for row in rows:
        _, record = npu[row["NPU Name"]]
        other = bench[row["NPU Name"]][1] if row["Bench Name"] != "N/A" else None
        got = compare_summaries(summary(record), summary(other) if other else None).columns()
        assert got == {c: row[c] for c in DIFF_COLUMNS + RELATIVE_COLUMNS}, row["NPU Name"]
        shown = [str(cell) for cell in summary(record).cells()]
        assert shown == [row[c].strip() for c in ("NPU max", "NPU min", "NPU mean", "NPU l2norm")]
    assert any(row["Bench Name"] == "N/A" for row in rows)


def test_md5_cells():
    assert md5_match("0a1b2c3d", "0a1b2c3d") == "pass"
    assert md5_match("0a1b2c3d", "feedf00d") == "Different"
    npu = {row["NPU Name"]: row["NPU MD5"] for row in expected("md5")}
    assert value_md5(3) == npu["Functional.param.0.forward.input.1"]


_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.none(),
    st.sampled_from(["inf", "-inf", "nan", "NaN", "N/A", "npu:0", "text"]),
)


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
