"""The streamed pass: pieces cover every element once, and its sums and tallies equal what a
plain loop over the elements finds."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare.pair_stats import coarsest, compare, count_nonfinite, dtype_facts, pieces

shapes = st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple)


@settings(max_examples=80, deadline=None)
@given(shapes, st.integers(1, 40))
def test_pieces_cut_an_array_into_c_order_runs(shape, chunk):
    values = np.arange(math.prod(shape)).reshape(shape)
    seen = [v for index in pieces(shape, chunk) for v in np.asarray(values[index]).ravel().tolist()]
    assert seen == list(range(values.size))
    for index in pieces(shape, chunk):
        piece = np.asarray(values[index])
        last = shape[-1] if shape else 1
        assert piece.size <= max(chunk, last)


def _loop_stats(npu, golden):
    """What the pass must find, one element at a time."""
    finite = [
        (float(n), float(g))
        for n, g in zip(npu.ravel(), golden.ravel())
        if math.isfinite(float(n)) and math.isfinite(float(g))
    ]
    dot = sum(n * g for n, g in finite)
    nn, gg = sum(n * n for n, _ in finite), sum(g * g for _, g in finite)
    dd = sum((n - g) ** 2 for n, g in finite)
    return dot / math.sqrt(nn * gg), math.sqrt(dd / gg), len(finite)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 700), st.integers(0, 2**31))
def test_cosine_and_red_equal_a_loop_whatever_the_pieces(size, chunk, seed):
    rng = np.random.default_rng(seed)
    golden = rng.standard_normal(size).astype(np.float32)
    npu = (golden + rng.standard_normal(size) * 0.1).astype(np.float16)
    stats = compare(npu, golden, chunk=chunk)
    cosine, red, finite = _loop_stats(npu, golden)
    assert stats.finite == finite == size
    assert math.isclose(stats.cosine, cosine, rel_tol=1e-9)
    assert math.isclose(stats.red, red, rel_tol=1e-9)


def _exact(npu, golden):
    """Cosine, RED, ``||n - g||`` and the golden's RMS from exact rational sums (floats are
    rationals: nothing overflows or rounds until the last step)."""
    n, g = [Fraction(float(v)) for v in npu.ravel()], [Fraction(float(v)) for v in golden.ravel()]
    nn, gg = sum(a * a for a in n), sum(b * b for b in g)
    ng, dd = sum(a * b for a, b in zip(n, g)), sum((a - b) ** 2 for a, b in zip(n, g))
    cosine = math.sqrt(ng * ng / (nn * gg)) * (1 if ng >= 0 else -1)
    return cosine, math.sqrt(dd / gg), _root(dd), _root(gg / len(g))


def _root(q: Fraction) -> float:
    """sqrt(q) of a rational beyond float64's range: q / 4**k near 1, its root times 2**k."""
    k = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    return math.ldexp(math.sqrt(q / Fraction(4) ** k), k)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 60),
    st.integers(1, 25),
    st.integers(-1000, 1000),
    st.integers(0, 2**31),
    st.sampled_from(["alone", "after ones", "before ones"]),
)
def test_values_near_float64s_limits_compare_in_a_scale(size, chunk, power, seed, spread):
    """Values of 2**power: their sums of squares overflow float64 from about 2**512 (cosine and
    RED were NaN) and lose their digits in subnormals below about 2**-512 (cosine divided by
    zero). Against exact rational sums; ``spread``: with a piece of ones, so the totals taken
    before the large or small values, or before the ones, must be brought to another scale. Exact within 1e-9, or
    within 2**-500 of the largest value (a difference of 2**-516 beside ones squares to a
    subnormal in any one scale)."""
    rng = np.random.default_rng(seed)
    golden = np.ldexp(rng.uniform(0.5, 1.0, size) * rng.choice([-1.0, 1.0], size), power)
    npu = golden * (1.0 + rng.standard_normal(size) * 0.01)
    if spread != "alone":
        ones = np.ones(chunk)
        order = (lambda v: [ones, v]) if spread == "after ones" else (lambda v: [v, ones])
        golden, npu = np.concatenate(order(golden)), np.concatenate(order(npu))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = compare(npu, golden, chunk=chunk)
    cosine, red, diff_norm, rms = _exact(npu, golden)
    floor = 2.0**-500 * float(np.max(np.abs(golden)))
    assert math.isclose(stats.cosine, cosine, rel_tol=1e-9, abs_tol=2.0**-500)
    assert math.isclose(stats.red, red, rel_tol=1e-9, abs_tol=2.0**-500)
    assert math.isclose(stats.diff_norm, diff_norm, rel_tol=1e-9, abs_tol=floor)
    assert math.isclose(stats.rms_golden, rms, rel_tol=1e-9, abs_tol=floor)
    assert stats.max_abs_diff == float(np.max(np.abs(npu - golden)))


def test_opposite_values_near_float64s_largest():
    """1e300 against -1e300: every difference (2e300) is finite, though ``n - g`` in float64
    arithmetic at 1.7e308 is not; the relative error is 2, not inf/inf."""
    stats = compare(np.full(8, 1e300), np.full(8, -1e300))
    assert (stats.cosine, stats.red) == (-1.0, 2.0)
    assert math.isclose(stats.diff_norm, 2e300 * math.sqrt(8), rel_tol=1e-12)
    assert stats.max_abs_diff == 2e300 and stats.rms_golden == 1e300
    huge = compare(np.full(4, 1.7e308), np.full(4, -1.7e308))
    assert huge.red == 2.0 and huge.max_abs_diff == math.inf  # 3.4e308 is beyond float64


def test_strided_views_and_other_shapes_compare_in_c_order():
    golden = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    npu = np.asfortranarray(golden.astype(np.float16))  # same values, other memory order
    stats = compare(npu, golden.reshape(6, 4), chunk=5)
    assert stats.red == 0 and stats.cosine == 1.0


def test_overflow_underflow_and_nan_tallies_with_first_positions():
    golden = np.array([[1.0, 70000.0, 2.0, 1e-6], [3e-8, 4.0, 5.0, -80000.0]], np.float32)
    npu = np.array([[1.0, np.inf, np.nan, 0.0], [0.0, 4.0, 65504.0, -65504.0]], np.float16)
    stats = compare(npu, golden, chunk=3)
    assert (stats.inf.count, stats.inf.flat_index, stats.inf.golden) == (1, 1, 70000.0)
    assert (stats.nan.count, stats.position(stats.nan.flat_index)) == (1, [0, 2])
    assert stats.saturated.count == 2 and stats.position(stats.saturated.flat_index) == [1, 2]
    assert stats.underflow.count == 2 and stats.below_subnormal == 1  # 3e-8 < 5.96e-8 <= 1e-6
    assert stats.position(stats.underflow.flat_index) == [0, 3]
    assert stats.nonfinite_mismatch == 2
    assert stats.finite == 6


def test_equal_infinities_and_both_nan_are_no_mismatch():
    values = np.array([np.inf, -np.inf, np.nan, 1.0])
    assert compare(values, values).nonfinite_mismatch == 0
    assert compare(np.array([np.inf, 1.0]), np.array([-np.inf, 1.0])).nonfinite_mismatch == 1


def test_both_infinities_in_one_piece_warn_of_nothing():
    """+inf and -inf on one side sum to NaN: numpy's 'invalid value' is the pass's business, not
    the user's (it printed as a raw RuntimeWarning under ``why``)."""
    npu = np.array([np.inf, -np.inf, 1.0, np.nan], np.float16)
    golden = np.array([1.0, 2.0, 1.0, 3.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = compare(npu, golden)
    assert (stats.inf.count, stats.nan.count, stats.nonfinite_mismatch, stats.finite) == (2, 1, 3, 1)


def test_all_zero_sides():
    zeros, ones = np.zeros(4), np.ones(4)
    assert compare(zeros, zeros).cosine == 1.0 and compare(zeros, zeros).red == 0
    assert math.isnan(compare(zeros, ones).cosine) and compare(zeros, ones).red == 1.0
    assert compare(ones, zeros).red == math.inf


def test_dtype_facts_and_the_coarsest_float():
    half = dtype_facts(np.float16)
    assert (half.eps, half.max, half.tiny) == (2.0**-10, 65504.0, 2.0**-14)
    assert half.smallest_subnormal == 2.0**-24
    assert dtype_facts(ml_dtypes.bfloat16).eps == 2.0**-7
    assert not dtype_facts(np.int32).is_float
    assert coarsest([np.float32, np.float16, np.int64]).name == "float16"
    assert coarsest([np.int32]).name == "int32"


def test_count_nonfinite():
    assert count_nonfinite(np.array([1.0, np.nan, np.inf, -np.inf], np.float16)) == 3
    assert count_nonfinite(np.arange(5)) == 0
