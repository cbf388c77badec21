"""The element-wise comparison behind ``cp``: isclose semantics, chunking, and a naive oracle."""

from __future__ import annotations

import math
import time

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from precision_tool.compare.elementwise import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    close_mask,
    compare_elementwise,
    cosine_from_sums,
    first_elements,
)
from precision_tool.errors import PrecisionToolError


def test_known_values_and_summary():
    left = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    right = np.array([1.0, 2.5, 3.0, 3.0], np.float32)
    r = compare_elementwise(left, right)
    assert (r.total, r.mismatches, r.allclose) == (4, 2, False)
    assert r.error_ratio == 0.5
    assert [p.index for p in r.first_mismatches] == [1, 3]
    assert (r.first_mismatches[0].left, r.first_mismatches[0].right) == (2.0, 2.5)
    assert r.max_abs_error == 1.0 and r.max_abs_index == 3
    expected = np.dot(left, right) / (np.linalg.norm(left) * np.linalg.norm(right))
    assert r.cosine == pytest.approx(expected, abs=1e-12)
    assert (r.atol, r.rtol) == (DEFAULT_ATOL, DEFAULT_RTOL) == (1e-5, 1e-3)


def test_tolerances_follow_isclose_with_right_as_reference():
    left, right = np.array([1000.0, 0.0]), np.array([1000.5, 1e-6])
    assert compare_elementwise(left, right, atol=1e-5, rtol=4.999e-4).mismatches == 0  # 0.5 <= 0.50016
    assert compare_elementwise(right, left, atol=1e-5, rtol=4.999e-4).mismatches == 1  # 0.5 > 0.49991
    assert compare_elementwise(left, right, atol=0, rtol=4.999e-4).mismatches == 1  # 1e-6 > 5e-10
    assert compare_elementwise(left, right, atol=1.0, rtol=0).mismatches == 0
    assert compare_elementwise(left, right, atol=0.1, rtol=0).mismatches == 1


def test_first_mismatch_in_the_second_chunk():
    left = np.zeros(10)
    right = np.zeros(10)
    right[[5, 6, 9]] = 1.0
    right[9] = 7.0
    r = compare_elementwise(left, right, chunk_size=4, limit=2)
    assert [p.index for p in r.first_mismatches] == [5, 6]
    assert r.mismatches == 3
    assert (r.max_abs_error, r.max_abs_index) == (7.0, 9)


def test_first_mismatches_span_chunks_in_order():
    right = np.arange(12, dtype=np.float64)
    left = right.copy()
    left[[2, 3, 7, 11]] += 5
    r = compare_elementwise(left, right, chunk_size=3, limit=3)
    assert [p.index for p in r.first_mismatches] == [2, 3, 7]
    assert r.mismatches == 4
    assert compare_elementwise(left, right, chunk_size=3, limit=0).first_mismatches == ()


def test_nan_equals_nan_and_nan_against_a_number_mismatches():
    left = np.array([np.nan, np.nan, 1.0, np.inf, np.inf, 2.0])
    right = np.array([np.nan, 1.0, np.nan, np.inf, -np.inf, np.inf])
    r = compare_elementwise(left, right, chunk_size=2)
    assert [p.index for p in r.first_mismatches] == [1, 2, 4, 5]
    assert (r.nan_left, r.nan_right) == (2, 2)
    assert math.isnan(r.cosine)
    assert r.max_abs_error == math.inf and r.max_abs_index == 4
    np.testing.assert_array_equal(close_mask(left, right), np.isclose(left, right, equal_nan=True))


def test_all_nan_pairs_have_no_max_error():
    r = compare_elementwise(np.full(3, np.nan), np.full(3, np.nan))
    assert r.allclose and r.max_abs_index is None and math.isnan(r.max_abs_error)


def test_a_finite_value_is_never_close_to_infinity():
    r = compare_elementwise(np.array([1e300]), np.array([np.inf]), rtol=1.0, atol=1.0)
    assert r.mismatches == 1


def test_all_zero_tensors_have_an_undefined_cosine():
    r = compare_elementwise(np.zeros(4), np.zeros(4))
    assert r.allclose and math.isnan(r.cosine) and r.max_abs_error == 0
    assert math.isnan(cosine_from_sums(1.0, 0.0, 1.0))
    assert cosine_from_sums(2.0, 4.0, 1.0) == 1.0


def test_sizes_must_match_but_shapes_need_not():
    assert compare_elementwise(np.ones((2, 3)), np.ones(6)).allclose
    with pytest.raises(PrecisionToolError, match="different sizes"):
        compare_elementwise(np.ones(3), np.ones(4))


def test_complex_tensors_are_refused():
    with pytest.raises(PrecisionToolError, match="complex"):
        compare_elementwise(np.ones(2, np.complex64), np.ones(2))


@pytest.mark.parametrize("dtype", ["datetime64[s]", "timedelta64[ns]", "<U3", "|S2", object])
def test_tensors_without_numbers_are_refused(dtype):
    odd = np.array([1, 2], dtype=dtype)
    with pytest.raises(PrecisionToolError, match=r"cannot compare the right tensor: .* is not compared"):
        compare_elementwise(np.ones(2), odd)


def test_the_cosine_of_huge_values_is_scaled_not_nan():
    """Issue 27.7: sum x*x overflows for values of 1e300 (and of 1e160); every chunk's does."""
    rng = np.random.default_rng(5)
    for magnitude in (1e300, 1e160):
        right = rng.standard_normal(10_000) * magnitude
        left = right * (1 + 1e-6 * rng.standard_normal(right.size))
        exact = (
            np.dot(left / magnitude, right / magnitude)
            / np.linalg.norm(left / magnitude)
            / np.linalg.norm(right / magnitude)
        )
        result = compare_elementwise(left, right, chunk_size=1000)
        assert result.cosine == pytest.approx(exact, abs=1e-12)
    assert compare_elementwise(np.full(5, 1e300), np.full(5, 1e300)).cosine == pytest.approx(1.0, abs=1e-15)


def test_narrow_and_integer_dtypes_are_upcast_exactly():
    half = np.array([0.1, 65504], np.float16)
    bf16 = np.array([0.1, 3.0], ml_dtypes.bfloat16)
    ints = np.array([2**40 + 1, -3], np.int64)
    assert compare_elementwise(half, half.astype(np.float64), atol=0, rtol=0).allclose
    assert compare_elementwise(bf16, bf16.astype(np.float32), atol=0, rtol=0).allclose
    assert compare_elementwise(ints, ints.astype(np.float64), atol=0, rtol=0).allclose
    assert compare_elementwise(np.array([True, False]), np.array([1.0, 0.0])).allclose


def test_empty_tensors():
    r = compare_elementwise(np.zeros(0), np.zeros((0, 3)))
    assert r.total == 0 and r.allclose and r.error_ratio == 0.0 and r.max_abs_index is None


def test_first_elements():
    pairs = first_elements(np.arange(6).reshape(2, 3), np.arange(6) * 2.0, 4)
    assert [(p.index, p.left, p.right, p.abs_diff) for p in pairs] == [
        (0, 0.0, 0.0, 0.0),
        (1, 1.0, 2.0, 1.0),
        (2, 2.0, 4.0, 2.0),
        (3, 3.0, 6.0, 3.0),
    ]
    assert len(first_elements(np.arange(3), np.arange(3), 10)) == 3


def test_reads_in_chunks_without_copying_the_inputs():
    left = np.arange(10, dtype=np.float32)
    left.setflags(write=False)  # a read-only memmap behaves the same
    assert compare_elementwise(left, left.copy(), chunk_size=3).allclose


def test_ten_million_float32_elements_take_seconds_not_minutes():
    rng = np.random.default_rng(0)
    left = rng.random(10_000_000, dtype=np.float32)
    right = left.copy()
    right[::997] += 1
    start = time.perf_counter()
    r = compare_elementwise(left, right)
    assert time.perf_counter() - start < 10
    assert r.mismatches == len(range(0, left.size, 997))
    assert [p.index for p in r.first_mismatches[:3]] == [0, 997, 1994]


# --- the naive oracle -------------------------------------------------------------------------

_VALUES = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False, width=32), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1.0])
)


@st.composite
def _pairs(draw):
    n = draw(st.integers(0, 60))
    left = draw(arrays(np.float64, n, elements=_VALUES))
    noise = draw(arrays(np.float64, n, elements=st.one_of(st.just(0.0), _VALUES)))
    with np.errstate(invalid="ignore"):
        right = np.where(draw(arrays(np.bool_, n)), left + noise * 1e-4, noise)
    return left, right


def _naive(left, right, atol, rtol, limit):
    close = np.isclose(left, right, rtol=rtol, atol=atol, equal_nan=True)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(left - right)
        numeric = diff[~np.isnan(diff)]
        dot, ll, rr = np.dot(left, right), np.dot(left, left), np.dot(right, right)
    max_error = float(numeric.max()) if numeric.size else math.nan
    return int((~close).sum()), list(np.flatnonzero(~close)[:limit]), max_error, cosine_from_sums(dot, ll, rr)


@settings(max_examples=300, deadline=None)
@given(_pairs(), st.integers(1, 9), st.floats(0, 1e-2), st.floats(0, 1e-2), st.integers(0, 5))
def test_chunked_result_equals_a_naive_numpy_computation(pair, chunk, atol, rtol, limit):
    left, right = pair
    r = compare_elementwise(left, right, atol=atol, rtol=rtol, limit=limit, chunk_size=chunk)
    mismatches, first, max_error, cosine = _naive(left, right, atol, rtol, limit)
    assert r.mismatches == mismatches
    assert [p.index for p in r.first_mismatches] == first
    assert all(p.left == left[p.index] or np.isnan(p.left) for p in r.first_mismatches)
    if math.isnan(max_error):
        assert r.max_abs_index is None
    else:
        assert r.max_abs_error == max_error
        assert abs(left[r.max_abs_index] - right[r.max_abs_index]) == max_error
    if math.isnan(cosine):
        assert math.isnan(r.cosine)
    else:
        assert r.cosine == pytest.approx(cosine, rel=1e-9, abs=1e-12)
    assert r.nan_left == int(np.isnan(left).sum()) and r.nan_right == int(np.isnan(right).sum())
