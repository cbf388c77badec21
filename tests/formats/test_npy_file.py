"""msprobe .npy tensor files: mapped, never unpickled, and narrowed back to dump.json's dtype
where msprobe widened them (MindSpore bfloat16 and float8 saved as float32)."""

from __future__ import annotations

import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.npy_file import dump_dtype, read_npy


def _save(path: Path, array: np.ndarray, allow_pickle: bool = False) -> Path:
    with open(path, "wb") as handle:
        np.save(handle, array, allow_pickle=allow_pickle)
    return path


def _problem(path: Path, dtype_name: str | None = None) -> str:
    with pytest.raises(PrecisionToolError) as exc:
        read_npy(path, dtype_name)
    text = str(exc.value)
    assert "\n" not in text and text.startswith(f"{path}: ")
    return text[len(f"{path}: ") :]


def test_a_tensor_is_mapped_read_only(tmp_path):
    path = _save(tmp_path / "Functional.add.0.forward.output.0.npy", np.arange(6, dtype=np.int64))
    array = read_npy(path)
    assert isinstance(array, np.memmap) and not array.flags.writeable
    assert array.tolist() == [0, 1, 2, 3, 4, 5]
    assert read_npy(path, "Int64") is not None and read_npy(path, "int64").dtype == np.int64


@pytest.mark.parametrize(
    "name, widened",
    [
        ("BFloat16", ml_dtypes.bfloat16),
        ("Float8E4M3FN", ml_dtypes.float8_e4m3fn),
        ("Float8E5M2", ml_dtypes.float8_e5m2),
    ],
)
def test_a_widened_tensor_is_narrowed_back_exactly(tmp_path, name, widened):
    values = np.array([0.5, -1.25, 3.0, np.nan], dtype=widened)
    path = _save(tmp_path / "t.npy", values.astype(np.float32))  # what msprobe saves
    array = read_npy(path, name)
    assert array.dtype == np.dtype(widened) and not array.flags.writeable
    assert array.tobytes()[:-1] == values.tobytes()[:-1]  # NaN's payload bits may differ
    assert np.isnan(array[-1].astype(np.float32))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 0xFFFF), max_size=40))
def test_every_bfloat16_survives_the_widening(tmp_path_factory, bits):
    values = np.array(bits, dtype=np.uint16).view(ml_dtypes.bfloat16)
    path = _save(tmp_path_factory.mktemp("b") / "t.npy", values.astype(np.float32))
    array = read_npy(path, "BFloat16")
    finite = ~np.isnan(values.astype(np.float32))
    assert np.array_equal(array.view(np.uint16)[finite], values.view(np.uint16)[finite])


def test_a_signalling_nan_narrows_without_a_warning(tmp_path):
    """bfloat16 0x7f81 (a signalling NaN) widened to float32 and narrowed back raises numpy's
    'invalid value' flag: a RuntimeWarning printed among the command's output, once a run
    (hypothesis found it in the test above); the value read is a NaN, as the dump's is."""
    values = np.array([0x7F81, 0x3F80], dtype=np.uint16).view(ml_dtypes.bfloat16)
    path = _save(tmp_path / "t.npy", values.astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        array = read_npy(path, "BFloat16")
    assert np.isnan(array[0]) and array[1] == 1.0


def test_float32_values_no_bfloat16_holds_are_an_error(tmp_path):
    path = _save(tmp_path / "t.npy", np.array([0.1], dtype=np.float32))
    assert _problem(path, "BFloat16") == (
        "holds float32 values that are not BFloat16 values, though dump.json says the tensor is one"
    )


def test_hifloat8_stays_float32(tmp_path):
    path = _save(tmp_path / "t.npy", np.array([0.1], dtype=np.float32))
    assert read_npy(path, "HiFloat8").dtype == np.float32


def test_a_dtype_msprobe_never_changes_must_match(tmp_path):
    path = _save(tmp_path / "t.npy", np.array([1, 2], dtype=np.int32))
    assert _problem(path, "Float32") == "holds int32, but dump.json says Float32"
    assert _problem(path, "Quaternion") == "dump.json dtype 'Quaternion' is not one numpy holds"


def test_a_pickled_object_npy_is_refused_and_never_loaded(tmp_path):
    path = _save(tmp_path / "t.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    assert _problem(path) == ("cannot load tensor file: it holds pickled Python objects, which are never loaded")


def test_a_string_npy_is_no_tensor(tmp_path):
    path = _save(tmp_path / "t.npy", np.array(["mean", "sum"]))  # msprobe's PyTorch string arrays
    assert _problem(path) == "holds strings (<U4), not numbers"


def test_missing_and_truncated_files_are_one_line(tmp_path):
    assert _problem(tmp_path / "none.npy") == "tensor file not found"
    whole = _save(tmp_path / "t.npy", np.arange(10, dtype=np.float32)).read_bytes()
    (tmp_path / "cut.npy").write_bytes(whole[:-8])
    assert _problem(tmp_path / "cut.npy").startswith("cannot load tensor file: truncated")


@pytest.mark.parametrize(
    "name, dtype",
    [
        ("torch.bfloat16", ml_dtypes.bfloat16),
        ("torch.float32", np.float32),
        ("Float16", np.float16),
        ("BFloat16", ml_dtypes.bfloat16),
        ("Bool", np.bool_),
        ("UInt8", np.uint8),
        ("float64", np.float64),
        ("int8", np.int8),
        ("Complex64", np.complex64),
        ("torch.float8_e4m3fn", ml_dtypes.float8_e4m3fn),
    ],
)
def test_dump_json_dtype_names(name, dtype):
    assert dump_dtype(name) == np.dtype(dtype)


@pytest.mark.parametrize("name", ["HiFloat8", "torch.complex32", "object", "U5", "Nope", "", "V8"])
def test_dump_json_dtype_names_numpy_cannot_hold(name):
    assert dump_dtype(name) is None
