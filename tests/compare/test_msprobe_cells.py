"""msprobe's compare-result cells as its table writes them (compare/msprobe_files.py): a float
as Python prints it, NaN as ``nan``, infinities with a leading space (so a spreadsheet reads
text, not a #NAME? formula), None as ``None``; numpy's floats the same as Python's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from precision_tool.compare.msprobe_files import _cell, _rendered
from precision_tool.compare.msprobe_stats import NA


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
    assert _cell(value) == text


def test_a_statistics_column_of_numbers_is_floats_one_with_text_keeps_its_values():
    # tensor mode: 8 basic columns, 6 metric columns, then the 8 statistics columns
    numbers = ["n", "b", "float32", "float32", "[2]", "[2]", True, True] + ["0.1"] * 6
    first = numbers + [3, 1, 2.5, 4.0, 3, 1, 2.5, 4.0] + ["tail"]
    second = numbers + [3, NA, 2.5, 4.0, 3, 1, math.inf, 4.0] + ["tail"]
    lines = _rendered("tensor", [first, second])
    assert lines[0][14:22] == ["3.0", "1", "2.5", "4.0", "3.0", "1.0", "2.5", "4.0"]
    assert lines[1][14:22] == ["3.0", NA, "2.5", "4.0", "3.0", "1.0", " inf", "4.0"]
    assert first[14] == 3 and lines[0][22] == "tail"  # the lines given are left as they were
