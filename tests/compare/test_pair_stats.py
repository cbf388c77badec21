"""The streamed pass: pieces cover every element once, and its sums and tallies equal what a
plain loop over the elements finds."""

from __future__ import annotations

import math
import warnings

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
