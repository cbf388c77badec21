"""formats.shapes against numpy itself: a shape is refused exactly when numpy refuses it.

The reference is ``np.broadcast_to`` of one element: numpy builds the array's header (and does
every dimension and size check) without allocating its data, so shapes of exabytes cost
nothing to ask about.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.formats.shapes import MAX_DIMS, element_problem, rank_problem, shape_problem

DIM = st.one_of(st.integers(0, 4), st.integers(0, 2**64), st.sampled_from([2**31, 2**61, 2**62]))
ITEMSIZE = st.sampled_from([1, 2, 4, 8, 16, 2**31 - 1])


def _numpy_accepts(shape, itemsize: int) -> bool:
    try:
        np.broadcast_to(np.zeros((), f"V{itemsize}"), shape)
    except (ValueError, OverflowError):
        return False
    return True


@given(st.lists(DIM, max_size=6), ITEMSIZE)
@settings(max_examples=400, deadline=None)
def test_a_shape_is_refused_exactly_when_numpy_refuses_it(shape, itemsize):
    assert (shape_problem(shape, itemsize) is None) == _numpy_accepts(tuple(shape), itemsize)


@pytest.mark.parametrize("rank", [MAX_DIMS, MAX_DIMS + 1, 10**6])
def test_the_rank_limit_is_numpys(rank):
    if rank > 2 * MAX_DIMS:  # do not build a million-entry tuple for numpy to refuse
        assert rank_problem(rank) == f"shape has {rank} dimensions (numpy arrays have at most {MAX_DIMS})"
        return
    assert (rank_problem(rank) is None) == _numpy_accepts((1,) * rank, 1)


def test_negative_dimensions_and_long_shapes_are_named_briefly():
    assert shape_problem((3, -1), 4) == "shape [3,-1] has a negative dimension"
    assert shape_problem((2**40,) * 9, 1).startswith("shape of 9 dimensions of 1-byte elements is too big")


@pytest.mark.parametrize(
    "dtype, kind",
    [
        (np.dtype("V2147483647"), "raw bytes (|V2147483647) of no numeric type"),
        (np.dtype([("a", "<f4"), ("b", "<i4")]), "a structured data type (2 field(s), 8 bytes a record)"),
        (np.dtype(("<f4", (3,))), "a sub-array data type (float32 x [3])"),
    ],
)
def test_void_types_are_named_by_their_kind(dtype, kind):
    assert element_problem(dtype) == kind


@pytest.mark.parametrize(
    "dtype", [np.float32, np.int8, np.bool_, np.complex64, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4]
)
def test_number_types_pass(dtype):
    assert element_problem(np.dtype(dtype)) is None
