"""load.open_npy_side: a C-order .npy is opened from its header alone, other files are mapped.

Expected offsets come from the file size and the saved array's byte count; expected values from
the array that was saved.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from precision_tool.compare.golden_pairing import NpySide
from precision_tool.compare.load import ArrayBlocks, Buffers, FileRegion, open_npy_side
from precision_tool.errors import PrecisionToolError


def _values(source) -> np.ndarray:
    return np.concatenate([b.copy() for b in source.blocks(5, Buffers(), "x")])


def test_c_order_file_is_a_region_of_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    array = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.save("g.npy", array)
    source = open_npy_side(NpySide(tmp_path.joinpath("g.npy").relative_to(tmp_path)))
    assert isinstance(source, FileRegion)
    assert source.path == tmp_path / "g.npy" and source.path.is_absolute()
    assert source.offset == os.path.getsize("g.npy") - array.nbytes
    assert source.shape == (2, 3, 4) and source.dtype == np.float32 and source.dtype_name == "float32"
    assert source.nbytes == os.path.getsize("g.npy")
    np.testing.assert_array_equal(_values(source), array.ravel())


def test_fortran_order_and_empty_files_are_mapped(tmp_path):
    array = np.asfortranarray(np.arange(12, dtype=np.float16).reshape(3, 4))
    np.save(tmp_path / "f.npy", array)
    np.save(tmp_path / "e.npy", np.zeros((0, 3), np.float32))
    fortran = open_npy_side(NpySide(tmp_path / "f.npy"))
    assert isinstance(fortran, ArrayBlocks)
    np.testing.assert_array_equal(_values(fortran), np.ascontiguousarray(array).ravel())
    empty = open_npy_side(NpySide(tmp_path / "e.npy"))
    assert empty.size == 0 and empty.shape == (0, 3)


def test_truncated_and_text_files_are_one_line_errors(tmp_path):
    np.save(tmp_path / "t.npy", np.zeros(100, np.float32))
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:-8])
    np.save(tmp_path / "u.npy", np.array(["a", "b"]))
    for name, words in (("t.npy", "truncated"), ("u.npy", "is not compared")):
        with pytest.raises(PrecisionToolError) as caught:
            open_npy_side(NpySide(tmp_path / name))
        assert words in str(caught.value) and "\n" not in str(caught.value)
