"""The dtype tolerance table: 4 units in the last place of the lower-precision side, at least
1e-5, integers exact. The epsilons are written out here from the formats' mantissa widths
(float16 10 bits, bfloat16 7, float8_e4m3fn 3, float8_e5m2 2, float32 23), independently of
ml_dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from precision_tool.compare.tolerance import dtype_tolerance, pair_tolerance, tolerance_table

MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float8_e4m3fn": 3, "float8_e5m2": 2, "float32": 23, "float64": 52}


@pytest.mark.parametrize("name", sorted(MANTISSA_BITS))
def test_each_float_dtype_allows_four_ulps_and_at_least_1e_5(name):
    dtype = getattr(ml_dtypes, name, None) or np.dtype(name)
    tolerance = dtype_tolerance(dtype)
    expected = max(4 * 2.0 ** -MANTISSA_BITS[name], 1e-5)
    assert tolerance.dtype == name and not tolerance.exact
    assert tolerance.rtol == pytest.approx(expected) and tolerance.atol == pytest.approx(expected)
    assert tolerance.what == f"{name} rounding"


def test_names_and_dtypes_give_the_same_tolerance():
    assert dtype_tolerance("float16") == dtype_tolerance(np.float16)
    assert dtype_tolerance(np.dtype(ml_dtypes.bfloat16)) == dtype_tolerance(ml_dtypes.bfloat16)


@pytest.mark.parametrize("kind", [np.int32, np.uint8, np.bool_, np.int64])
def test_integers_and_booleans_compare_exactly(kind):
    tolerance = dtype_tolerance(kind)
    assert tolerance.exact and tolerance.atol == tolerance.rtol == 0


@pytest.mark.parametrize(
    "left, right, winner",
    [
        (np.float16, np.float32, "float16"),
        (np.float32, np.float16, "float16"),
        (ml_dtypes.bfloat16, np.float16, "bfloat16"),
        (np.float32, ml_dtypes.float8_e4m3fn, "float8_e4m3fn"),
        (np.float64, np.float32, "float32"),
        (np.int32, np.float16, "float16"),
        (np.int8, np.int32, "int32"),
    ],
)
def test_the_lower_precision_side_decides(left, right, winner):
    assert pair_tolerance(left, right).dtype == winner


def test_the_table_lists_the_documented_dtypes_lowest_precision_first():
    table = tolerance_table()
    assert [t.dtype for t in table] == ["float8_e5m2", "float8_e4m3fn", "bfloat16", "float16", "float32", "float64"]
    assert "4 x eps 0.000976562" in table[3].describe()
    assert table[4].describe().endswith("at least 1e-05)")


def test_float16_rounding_of_a_float32_tensor_is_within_the_float16_tolerance():
    """What the tolerance is for: a float32 tensor rounded to float16 twice (input and output)
    stays within it, element by element, at every magnitude."""
    rng = np.random.default_rng(3)
    golden = rng.standard_normal(100_000).astype(np.float32) * np.float32(10.0) ** rng.integers(-3, 3, 100_000)
    npu = (golden.astype(np.float16).astype(np.float32) * np.float32(1.0001)).astype(np.float16)
    t = dtype_tolerance(np.float16)
    diff = np.abs(npu.astype(np.float64) - golden)
    assert np.all(diff <= t.atol + t.rtol * np.abs(golden.astype(np.float64)))
    doubled = golden * np.float32(1 + 8 * 2.0**-10)  # 8 ulps off: beyond rounding
    assert not np.all(np.abs(doubled.astype(np.float64) - golden) <= t.atol + t.rtol * np.abs(golden))
