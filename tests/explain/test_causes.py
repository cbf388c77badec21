"""Each hypothesis holds on the defect it describes, with the right numbers, and stays quiet on
a tensor that only float16 rounding separates from its golden."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare.noise import output_noise
from precision_tool.compare.pair_stats import compare, dtype_facts
from precision_tool.compare.verdict import FlagRule
from precision_tool.explain import causes
from precision_tool.explain.affine import affine_fit
from precision_tool.explain.causes import (
    InputCheck,
    ReplayCheck,
    Subject,
    diagnose,
    rank,
)
from precision_tool.explain.criterion import Criterion

RNG = np.random.default_rng(14)
GOLDEN = RNG.standard_normal((2, 5, 5, 4)).astype(np.float32)


def names(subject):
    return [c.name for c in diagnose(subject)]


def half(x):
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(np.float16)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([(7,), (3, 4), (2, 3, 4), (2, 3, 3, 2)]), st.floats(1e-3, 1e3))
def test_float16_rounding_is_precision_and_nothing_else(seed, shape, magnitude):
    golden = (np.random.default_rng(seed).standard_normal(shape) * magnitude).astype(np.float32)
    subject = Subject.build(half(golden), golden)
    result = diagnose(subject)
    assert [c.name for c in result] == ["precision"]
    assert result[0].numbers["ulps"] <= 1.0  # rounding alone is at most half an ulp per value
    assert "expected float16 rounding, not a defect" in result[0].evidence


def test_exact_integers_are_precision():
    labels = np.array([3, 1, 4, 1], np.int32)
    result = diagnose(Subject.build(labels, labels.astype(np.int64)))
    assert [c.name for c in result] == ["precision"] and "int32 tensors agree" in result[0].evidence


def test_overflow_counts_inf_and_saturation_with_the_first_golden_value():
    golden = GOLDEN * 5e4
    npu = half(golden)
    result = diagnose(Subject.build(npu, golden))
    expected_inf = int(np.count_nonzero(np.abs(golden) > 65519))  # what rounds past float16's max
    assert result[0].name == "overflow"
    numbers = result[0].numbers
    assert numbers["inf"] == expected_inf and numbers["count"] == expected_inf
    first = next(i for i, v in enumerate(golden.ravel()) if abs(v) > 65519)
    assert numbers["first_index"] == list(np.unravel_index(first, golden.shape))
    assert numbers["golden_value"] == pytest.approx(float(golden.ravel()[first]))
    saturated = np.clip(npu.astype(np.float32), -65504, 65504).astype(np.float16)
    numbers = diagnose(Subject.build(saturated, golden))[0].numbers
    assert numbers["saturated"] == expected_inf and numbers["inf"] == 0


def test_underflow_needs_flushed_values_to_carry_the_error():
    golden = GOLDEN * 3e-5
    npu = half(golden)
    npu[np.abs(npu) < np.finfo(np.float16).tiny] = 0
    result = diagnose(Subject.build(npu, golden))
    flushed = int(np.count_nonzero((np.abs(golden) < 2.0**-14) & (golden != 0)))
    assert result[0].name == "underflow" and result[0].numbers["count"] == flushed
    one = half(GOLDEN)
    one.ravel()[0] = 0
    tiny_golden = GOLDEN.copy()
    tiny_golden.ravel()[0] = 1e-7  # one lost value in a healthy tensor: rounding, not a cause
    assert names(Subject.build(one, tiny_golden)) == ["precision"]


def test_nan_holds_only_while_the_inputs_are_finite():
    npu = half(GOLDEN)
    npu[0, 1, 2, 3] = np.nan
    facts = dtype_facts(np.float16)
    finite_input = InputCheck(0, "x:0", False, None, 0, facts)
    result = diagnose(Subject.build(npu, GOLDEN, inputs=[finite_input]))
    assert result[0].name == "nan" and result[0].numbers["first_index"] == [0, 1, 2, 3]
    assert result[0].numbers["golden_value"] == pytest.approx(float(GOLDEN[0, 1, 2, 3]))
    broken_input = InputCheck(0, "x:0", False, None, 3, facts)
    assert "nan" not in names(Subject.build(npu, GOLDEN, inputs=[broken_input]))


@pytest.mark.parametrize(
    "k,c,expected",
    [
        (0.5, 0.0, ["scale"]),
        (2.0, 0.0, ["scale"]),
        (1.0, 0.6, ["offset"]),
        (-1.0, 0.0, ["sign"]),
        (-0.5, 0.0, ["sign", "scale"]),
        (0.5, 0.4, ["scale", "offset"]),
    ],
)
def test_affine_causes_report_the_least_squares_factor_and_offset(k, c, expected):
    subject = Subject.build(half(k * GOLDEN + c), GOLDEN)
    result = diagnose(subject)
    assert sorted(x.name for x in result) == sorted(expected)
    g = GOLDEN.astype(np.float64).ravel()
    n = half(k * GOLDEN + c).astype(np.float64).ravel()
    slope, intercept = np.linalg.lstsq(np.stack([g, np.ones_like(g)], 1), n, rcond=None)[0]
    for cause in result:
        assert cause.numbers["factor"] == pytest.approx(slope, rel=1e-6)
        assert cause.numbers["offset"] == pytest.approx(intercept, abs=1e-6)


def test_a_pure_scale_keeps_cosine_one_and_is_still_found():
    subject = Subject.build(half(GOLDEN * 0.5), GOLDEN)
    assert subject.stats.cosine == pytest.approx(1.0, abs=1e-6)
    assert subject.criterion.diverges(subject.stats)  # by RED: the criterion sees what cosine cannot
    assert diagnose(subject)[0].name == "scale"


def test_affine_fit_equals_numpy_least_squares():
    g = RNG.standard_normal(500)
    n = 1.7 * g - 0.3 + RNG.standard_normal(500) * 0.01
    fit = affine_fit(compare(n, g))
    slope, intercept = np.linalg.lstsq(np.stack([g, np.ones_like(g)], 1), n, rcond=None)[0]
    residual = float(np.sum((n - slope * g - intercept) ** 2))
    assert (fit.k, fit.c) == (pytest.approx(slope), pytest.approx(intercept))
    assert fit.share == pytest.approx(1 - residual / float(np.sum((n - g) ** 2)))
    assert fit.r2 == pytest.approx(np.corrcoef(n, g)[0, 1] ** 2)


@pytest.mark.parametrize("power", [-700, 700])
def test_affine_fit_of_values_whose_squares_leave_float64(power):
    """The pass's sums are then in a scale (``PairStats.scale``): the factor and the shares are
    ratios of them, the offset is in the tensors' own units (numpy's least squares of the values
    brought near 1 by the same power of two, which is exact)."""
    g = RNG.standard_normal(500)
    n = 1.7 * g - 0.3 + RNG.standard_normal(500) * 0.01
    fit = affine_fit(compare(np.ldexp(n, power), np.ldexp(g, power)))
    slope, intercept = np.linalg.lstsq(np.stack([g, np.ones_like(g)], 1), n, rcond=None)[0]
    assert fit.k == pytest.approx(slope)
    assert fit.c == pytest.approx(math.ldexp(intercept, power))
    assert fit.r2 == pytest.approx(np.corrcoef(n, g)[0, 1] ** 2)


def test_noise_is_unknown():
    npu = half(GOLDEN + RNG.standard_normal(GOLDEN.shape))
    result = diagnose(Subject.build(npu, GOLDEN))
    assert [c.name for c in result] == ["unknown"] and "no hypothesis explains it" in result[0].evidence


def _input(stats, network=False):
    return InputCheck(0, "input:0", network, stats, 0, dtype_facts(np.float16))


def test_input_and_computation_split_the_error_by_the_replay():
    golden_in = GOLDEN
    npu_in = half(GOLDEN + 0.5)  # the input already differs
    golden_out = np.maximum(golden_in, 0)
    replay = np.maximum(npu_in.astype(np.float64), 0)
    npu_out = half(replay)  # the op computes faithfully from what it got
    check = ReplayCheck(True, "replayed Relu", (), compare(npu_out, replay), compare(golden_out, replay))
    result = diagnose(
        Subject.build(npu_out, golden_out, inputs=[_input(compare(npu_in, golden_in), True)], replay=check)
    )
    assert result[0].name == "input" and "network's input data" in result[0].evidence
    assert "computation" not in [c.name for c in result]
    wrong = half(np.maximum(golden_in, 0) * 0.0 + 1.0)  # inputs fine, output wrong
    replay = np.maximum(golden_in.astype(np.float64), 0)
    check = ReplayCheck(True, "replayed Relu", (), compare(wrong, replay), compare(golden_out, replay))
    result = diagnose(
        Subject.build(wrong, golden_out, inputs=[_input(compare(half(golden_in), golden_in))], replay=check)
    )
    assert [c.name for c in result] == ["computation"]
    assert result[0].numbers["golden_vs_replay_cosine"] == pytest.approx(1.0)


def test_a_replay_that_matches_neither_side_claims_nothing():
    golden_out = np.maximum(GOLDEN, 0)
    npu_out = half(golden_out + RNG.standard_normal(GOLDEN.shape))
    junk = RNG.standard_normal(GOLDEN.shape) * 10
    check = ReplayCheck(True, "replayed Relu", (), compare(npu_out, junk), compare(golden_out, junk))
    assert "computation" not in names(Subject.build(npu_out, golden_out, replay=check))


def _doubled(input_factor: float, own_factor: float):
    """A Mul by 2 fed ``GOLDEN * input_factor`` that scales its own result by ``own_factor``."""
    npu_in = half(GOLDEN * input_factor)
    golden_out, replay = GOLDEN * 2.0, npu_in.astype(np.float64) * 2.0
    npu_out = half(replay * own_factor)
    check = ReplayCheck(True, "replayed Mul", (), compare(npu_out, replay), compare(golden_out, replay))
    return diagnose(Subject.build(npu_out, golden_out, inputs=[_input(compare(npu_in, GOLDEN))], replay=check))


def test_forms_carried_in_from_the_inputs_rank_below_input_or_go_unnamed():
    # all of the halving comes in with the input: the scale it shows explains nothing here
    assert [c.name for c in _doubled(0.5, 1.0)] == ["input"]
    # the op scales by 0.9 on top of an input 0.9 off: it adds under half of the difference
    result = {c.name: c for c in _doubled(0.9, 0.9)}
    assert list(result)[0] == "input" and set(result) == {"input", "scale", "computation"}
    assert 0.1 <= result["scale"].score < 0.5 and "carried in from the inputs" in result["scale"].evidence


def test_rank_orders_by_score_then_specificity():
    made = [
        causes.Cause(name, "", {}, score)
        for name, score in [("computation", 1.0), ("permutation", 0.97), ("input", 0.3), ("precision", 1.0)]
    ]
    assert [c.name for c in rank(made)] == ["permutation", "computation", "precision", "input"]


def test_criterion_thresholds():
    criterion = Criterion(FlagRule(0.98, 0.2))
    g = np.ones(100)
    assert not criterion.diverges(compare(g * 1.1, g))
    assert criterion.diverges(compare(g * 0.5, g))  # cosine 1, RED 0.5
    assert criterion.diverges(compare(np.r_[g[:-1], np.nan], g))
    noise = output_noise("float16", "float32", [None])  # one float16 op of unmeasured history
    assert criterion.within_rounding(compare(g * (1 + 2**-11), g), noise)  # half an ulp
    assert not criterion.within_rounding(compare(g * 1.01, g), noise)  # 10 ulps
    assert not criterion.within_rounding(compare(np.r_[g[:-1], np.nan], g), noise)  # NaN where finite
