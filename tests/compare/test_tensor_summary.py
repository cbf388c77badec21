"""Whether a tensor holds any Inf or NaN (:func:`~precision_tool.compare.tensor_summary.has_inf_nan`),
against numpy's isfinite of the values widened to float64."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare import tensor_summary
from precision_tool.compare.tensor_summary import has_inf_nan


def test_has_inf_nan():
    assert not has_inf_nan(np.arange(5)) and not has_inf_nan(np.zeros(3, np.float16))
    assert not has_inf_nan(np.zeros(0, np.float16)) and not has_inf_nan(np.zeros((0, 4)))
    assert has_inf_nan(np.array([1.0, np.nan])) and has_inf_nan(np.array([np.inf], np.float16))


_FLOATS = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(_FLOATS),
    st.integers(1, 40),
    st.integers(0, 39),
    st.sampled_from([np.inf, -np.inf, np.nan, None]),
    st.sampled_from([1, 2, 3]),
)
def test_has_inf_nan_finds_one_value_anywhere_as_isfinite_does(kind, size, where, special, step):
    """One Inf or NaN (or none) among finite values of each float type, in chunks of 7 (so it
    may sit in any chunk, at a chunk's edge), contiguous or strided, against numpy's isfinite
    of the values widened to float64."""
    values = np.linspace(-2.0, 2.0, size * step).astype(kind)
    if special is not None:
        with np.errstate(invalid="ignore"):
            values[(where % size) * step] = special  # e4m3fn has no Inf: it becomes its NaN
    strided = values[::step]
    with np.errstate(invalid="ignore"):
        expected = not np.isfinite(strided.astype(np.float64)).all()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tensor_summary, "_CHUNK", 7)
        assert has_inf_nan(strided) == expected


def test_has_inf_nan_reads_a_mapped_tensor_and_other_floats(tmp_path):
    path = tmp_path / "values.bin"
    np.array([1.0, 2.0, np.inf, 4.0], np.float16).tofile(path)
    assert has_inf_nan(np.memmap(path, np.float16, "r"))
    assert has_inf_nan(np.array([1, np.nan], ml_dtypes.float8_e4m3fnuz))  # its NaN is -0: widened
    assert not has_inf_nan(np.array([1, 2], ml_dtypes.float8_e4m3fnuz))
    assert has_inf_nan(np.array([1 + 1j, complex(0, np.inf)])) and not has_inf_nan(np.array([True]))
