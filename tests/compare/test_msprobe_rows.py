"""Rows from msprobe records (statistics task, md5 mode): the RED lower bound the records prove
never exceeds the RED of the tensors (checked on random tensors with numpy), checksums decide
equal or different, and the verdict flags only what the bound proves."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from precision_tool.compare.divergence import TensorCosine
from precision_tool.compare.golden_pairing import StatsSide
from precision_tool.compare.msprobe_rows import MD5_EQUAL, red_floor, stats_metrics
from precision_tool.compare.msprobe_stats import Summary
from precision_tool.compare.verdict import DIVERGES, NOT_COMPARED, RED_FLOOR, ROUNDING, FlagRule


def side(a: np.ndarray) -> StatsSide:
    a64 = a.astype(np.float64)
    return StatsSide(
        Summary(float(a64.max()), float(a64.min()), float(a64.mean()), float(np.sqrt((a64 * a64).sum()))),
        None,
        "float32",
        a.shape,
    )


_floats = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float32, st.integers(2, 40), elements=_floats), st.data())
def test_the_floor_never_exceeds_the_red_of_the_tensors(y, data):
    x = data.draw(arrays(np.float32, y.shape, elements=_floats))
    norm = float(np.linalg.norm(y.astype(np.float64)))
    floor = red_floor(side(x), side(y))
    if norm == 0:
        assert math.isnan(floor)
        return
    red = float(np.linalg.norm(x.astype(np.float64) - y.astype(np.float64))) / norm  # exact differences
    assert floor <= red * (1 + 1e-9) + 1e-12


def test_a_shifted_tensor_is_proved_to_diverge_and_a_close_one_is_not_proved_close():
    y = np.linspace(-1, 1, 400, dtype=np.float32)
    rule = FlagRule(0.98)
    shifted = stats_metrics(side(y + 0.5), side(y))[0][RED_FLOOR]  # sqrt(n) |dmean| / |y| ~ 0.87
    assert shifted > rule.red_threshold
    assert TensorCosine("output", 0, math.nan, red_floor=shifted).state(rule) == DIVERGES
    close = stats_metrics(side(y * 1.001), side(y))[0][RED_FLOOR]
    assert close < 0.01
    assert TensorCosine("output", 0, math.nan, red_floor=close).state(rule) == NOT_COMPARED


def test_checksums_equal_are_clean_and_different_diverge():
    one = StatsSide(Summary(), "1a2b3c4d")
    equal, note = stats_metrics(one, StatsSide(Summary(), "1a2b3c4d"))
    assert equal == {MD5_EQUAL: 1.0, RED_FLOOR: 0.0} and note == ""
    differ, note = stats_metrics(one, StatsSide(Summary(), "ffffffff"))
    assert differ[MD5_EQUAL] == 0.0 and math.isinf(differ[RED_FLOOR]) and "ffffffff" in note
    rule = FlagRule(0.98)
    assert TensorCosine("input", 0, math.nan, red_floor=0.0).state(rule) == ROUNDING
    assert TensorCosine("output", 0, math.nan, red_floor=math.inf).state(rule) == DIVERGES
