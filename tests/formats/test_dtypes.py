"""Tests for precision_tool.formats.dtypes: element widths and data type names.

The expected widths are the packed widths FORMATS.md gives (INT4 two per byte, ...) and the
element sizes of the types, written out by hand.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dtypes import dump_dtype, element_bits, named_dtype, nonfinite_bits
from precision_tool.formats.proto.dump_enums import DATA_TYPE_VALUES

BITS = {
    "FLOAT16": 16,
    "BF16": 16,
    "FLOAT": 32,
    "DOUBLE": 64,
    "INT8": 8,
    "UINT8": 8,
    "BOOL": 8,
    "INT16": 16,
    "INT32": 32,
    "INT64": 64,
    "FLOAT8_E4M3FN": 8,
    "FLOAT8_E5M2": 8,
    "INT4": 4,
    "FLOAT4_E2M1": 4,
    "INT2": 2,
    "UINT2": 2,
    "UINT1": 1,
    "COMPLEX64": 64,
}


@pytest.mark.parametrize("name, bits", sorted(BITS.items()))
def test_every_spelling_of_a_dump_type_has_its_width(name, bits):
    assert element_bits(name) == bits
    assert element_bits("DT_" + name) == bits  # the graph's spelling
    assert element_bits(name.lower()) == bits
    assert element_bits(dump_dtype(DATA_TYPE_VALUES[name])) == bits


def test_int4_is_four_bits_though_numpy_unpacks_it_to_a_byte():
    assert named_dtype("int4").dtype == np.int8
    assert element_bits("int4") == 4
    assert element_bits(ml_dtypes.int4) == 4
    assert element_bits(ml_dtypes.float4_e2m1fn) == 4
    assert element_bits(np.int8) == 8


@pytest.mark.parametrize(
    "dtype, bits",
    [
        (np.float16, 16),
        (ml_dtypes.bfloat16, 16),
        (np.dtype("float32"), 32),
        ("float32", 32),
        ("bfloat16", 16),
        (np.bool_, 8),
        (np.uint8, 8),
        (ml_dtypes.float8_e4m3fn, 8),
        (np.float64, 64),
    ],
)
def test_numpy_dtypes_and_their_names(dtype, bits):
    assert element_bits(dtype) == bits


def test_named_dtype_knows_the_dump_names_only():
    assert named_dtype("DT_FLOAT").name == "FLOAT"
    assert named_dtype("bfloat16").name == "BF16"
    assert named_dtype("float32").name == "FLOAT"
    assert named_dtype("no_such_type") is None


def test_an_unknown_name_is_a_one_line_error():
    with pytest.raises(PrecisionToolError) as error:
        element_bits("DT_NO_SUCH")
    assert str(error.value) == "unknown data type 'DT_NO_SUCH'"
    assert element_bits("DT_INT8") == 8  # and the next call goes on


# --- which values are Inf or NaN, by their bits -------------------------------------------------

_SMALL_FLOATS = [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn]


@pytest.mark.parametrize("kind", _SMALL_FLOATS, ids=lambda t: np.dtype(t).name)
def test_the_nonfinite_bits_of_a_small_float_are_exactly_its_inf_and_nan(kind):
    """Every bit pattern of the 8- and 16-bit floats, against numpy's isfinite of its float32."""
    dtype = np.dtype(kind)
    view, mask = nonfinite_bits(dtype)
    patterns = np.arange(1 << (8 * dtype.itemsize), dtype=np.uint64).astype(view)
    with np.errstate(invalid="ignore"):
        expected = ~np.isfinite(patterns.view(dtype).astype(np.float32))
    assert np.array_equal((patterns & view.type(mask)) == mask, expected)
    assert expected.any() and not expected.all()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, (1 << 32) - 1), st.integers(0, (1 << 64) - 1))
def test_the_nonfinite_bits_of_float32_and_float64_are_their_inf_and_nan(bits32, bits64):
    for kind, bits in ((np.float32, bits32), (np.float64, bits64)):
        view, mask = nonfinite_bits(np.dtype(kind))
        pattern = np.array([bits], view)
        assert bool((pattern & view.type(mask))[0] == mask) == (not np.isfinite(pattern.view(kind)[0]))


def test_types_whose_nan_is_another_pattern_have_no_nonfinite_bits():
    for kind in (np.int32, np.uint8, np.bool_, np.complex64, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e8m0fnu):
        assert nonfinite_bits(np.dtype(kind)) is None
