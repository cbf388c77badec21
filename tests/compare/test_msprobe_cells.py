"""msprobe's compare-result table as text (compare/msprobe_table.py): a cell as msprobe's table
writes it (a float as Python prints it, NaN as ``nan``, infinities with a leading space, None
as ``None``), and the statistics columns by msprobe's rule over a whole column (numbers alone:
floats; any text: each value as it is), though the table is rendered a call at a time.

The reference for the rule is written here from its statement, over the whole table at once."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare.msprobe_stats import NA
from precision_tool.compare.msprobe_table import TableText, cell_text
from precision_tool.compare.result_csv import line_text


@pytest.mark.parametrize(
    "value, text",
    [
        ("Functional.linear.0.forward.output.0", "Functional.linear.0.forward.output.0"),
        (0.25, "0.25"),
        (1e-17, "1e-17"),
        (math.nan, "nan"),
        (math.inf, " inf"),
        (-math.inf, " -inf"),
        (np.float64(-np.inf), " -inf"),
        (np.float64("nan"), "nan"),
        (np.float32(0.5), "0.5"),
        (None, "None"),
        (3, "3"),
        (True, "True"),
    ],
)
def test_a_cell_is_written_as_msprobe_writes_it(value, text):
    assert cell_text(value) == text


HEAD = ["NPU Name", "NPU max", "NPU min", "Result"]
STATISTICS = (1, 2)


def _reference(calls: list[list[list]]) -> str:
    """The whole table by the rule: a column of numbers alone as floats, else as it is."""
    lines = [line for call in calls for line in call]
    floats = [all(isinstance(line[i], (int, float)) for line in lines) for i in STATISTICS]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(HEAD)
    for line in lines:
        line = list(line)
        line[0] = "'" + line[0] if line[0][:1] in "=+-@" else line[0]  # a name from the data: no formula
        for i, wide in zip(STATISTICS, floats):
            line[i] = cell_text(float(line[i]) if wide else line[i])
        writer.writerow(line)
    return out.getvalue()


def _table(calls: list[list[list]], added: int) -> str:
    """The table rendered with the first ``added`` calls given as they came, the rest at the end."""
    table = TableText(HEAD, STATISTICS, frozenset({"NPU Name"}))
    for key, lines in enumerate(calls[:added]):
        table.add(key, [list(line) for line in lines])
    return table.text((key, [list(line) for line in lines]) for key, lines in enumerate(calls))


def test_an_int_is_a_float_in_a_column_of_numbers_and_itself_beside_a_text():
    numbers = [[["a", 3, 2.5, "pass"]], [["b", 1.0, math.inf, "pass"]]]
    assert _table(numbers, 2).splitlines()[1:] == ["a,3.0,2.5,pass", "b,1.0, inf,pass"]
    with_text = [[["a", 3, 2.5, "pass"]], [["b", NA, True, "pass"]]]  # the text comes after the int
    assert _table(with_text, 2).splitlines()[1:] == ["a,3,2.5,pass", "b,N/A,1.0,pass"]


_CELLS = st.one_of(
    st.integers(-5, 5),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([NA, "Nan", "None", "=cmd()"]),
    st.none(),
)
_LINES = st.lists(st.tuples(st.sampled_from(["x", "+y", "z,1"]), _CELLS, _CELLS), min_size=0, max_size=3)


@settings(max_examples=150, deadline=None)
@given(calls=st.lists(_LINES, min_size=1, max_size=5), added=st.integers(0, 5))
def test_a_table_rendered_call_by_call_is_the_table_the_rule_writes(calls, added):
    calls = [[[name, a, b, "pass"] for name, a, b in call] for call in calls]
    assert _table(calls, added) == _reference(calls)


def _writer_text(cells: list) -> str:
    out = io.StringIO()
    csv.writer(out).writerow(cells)
    return out.getvalue()


_TEXTS = st.text(alphabet=st.sampled_from(["a", " ", ",", '"', "\r", "\n", "'", "=", "\t", "é"]), max_size=6)


@settings(max_examples=300, deadline=None)
@given(cells=st.lists(_TEXTS, min_size=2, max_size=6))
def test_a_line_is_the_text_the_csv_writer_writes(cells):
    assert line_text(cells) == _writer_text(cells)


@pytest.mark.parametrize("cells", [[""], ["a"], [], ["a", 1.5], ["a", None]])
def test_a_line_the_join_cannot_write_is_left_to_the_writer(cells):
    assert line_text(cells) is None
    table = TableText(["NPU Name", "x"][: max(len(cells), 1)], (), frozenset())
    table.add(0, [list(cells)])  # through the writer: as it writes the line
    assert table.text([(0, [list(cells)])]).endswith(_writer_text(cells))
