"""golden.npy_header: the checked header of a .npy file, read without mapping the data.

The reference is the file's own bytes: headers are built by hand with struct, or written by
np.save and checked against the file size and the shape and dtype that were saved, never against
the reader under test.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.golden import npy_header

DTYPES = ("<f4", "<f2", "<f8", ">f8", "|i1", "<i8", "|u1", "|b1", "<c8")


def _npy(path: Path, header: str, data: bytes, version: int = 1) -> Path:
    """A .npy file of ``header`` (padded as numpy pads it) and ``data``, built by hand."""
    prefix = 10 if version == 1 else 12
    text = header.encode("latin1")
    pad = -(prefix + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    size = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    path.write_bytes(b"\x93NUMPY" + bytes([version, 0]) + size + text + data)
    return path


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(DTYPES), shape=st.lists(st.integers(0, 5), max_size=4).map(tuple), fortran=st.booleans())
def test_header_of_what_numpy_saves(tmp_path_factory, dtype, shape, fortran):
    path = tmp_path_factory.mktemp("npy") / "t.npy"
    np.save(path, np.zeros(shape, dtype, order="F" if fortran else "C"))
    header = npy_header(path)
    data_bytes = math.prod(shape) * np.dtype(dtype).itemsize
    assert header.shape == shape and header.dtype == np.dtype(dtype)
    assert header.fortran_order == (
        fortran and len(shape) > 1 and math.prod(shape) > 0 and sum(d > 1 for d in shape) > 1
    )
    assert header.offset == path.stat().st_size - data_bytes and header.offset % 64 == 0
    assert header.file_size == path.stat().st_size


def test_header_in_another_spelling_is_read_by_numpy(tmp_path):
    data = np.arange(6, dtype="<f4").tobytes()
    plain = _npy(tmp_path / "a.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data)
    other = _npy(tmp_path / "b.npy", "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", data)
    two = _npy(tmp_path / "c.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 2)
    found = [npy_header(p) for p in (plain, other, two)]
    for header, path in zip(found, (plain, other, two)):
        assert (header.shape, header.dtype, header.fortran_order) == ((2, 3), np.dtype("<f4"), False)
        assert header.offset == path.stat().st_size - len(data)


def test_sub_array_element_type_is_folded_into_the_shape(tmp_path):
    data = np.arange(6, dtype="<f4").tobytes()
    path = _npy(tmp_path / "s.npy", "{'descr': ('<f4', (2,)), 'fortran_order': False, 'shape': (3,), }", data)
    header = npy_header(path)
    assert header.shape == (3, 2) and header.dtype == np.dtype("<f4")


@pytest.mark.parametrize(
    "header, data, words",
    [
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4), }", b"\0" * 8, "truncated"),
        ("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8, "Python objects"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", b"", "golden file"),
        ("{'descr': '<f4', 'shape': (1,)", b"\0" * 4, "golden file"),
    ],
)
def test_bad_headers_are_one_line_errors_naming_the_file(tmp_path, header, data, words):
    path = _npy(tmp_path / "bad.npy", header, data)
    with pytest.raises(PrecisionToolError) as caught:
        npy_header(path)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.path == str(path)


def test_not_a_npy_file(tmp_path):
    path = tmp_path / "x.npy"
    path.write_bytes(b"PK\x03\x04 not numpy")
    with pytest.raises(PrecisionToolError, match="bad magic"):
        npy_header(path)


def test_a_header_padded_past_what_is_kept_is_read_and_not_kept(tmp_path):
    """numpy's spelling padded with 5,000 spaces (allowed: the header ends at its newline):
    parsed as any plain header, but not kept by the memo of header texts."""
    from precision_tool.formats.golden import _plain_fields

    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }" + " " * 5000
    path = _npy(tmp_path / "long.npy", header, np.arange(6, dtype="<f4").tobytes(), version=2)
    kept = _plain_fields.cache_info().currsize
    found = npy_header(path)
    assert (found.shape, found.dtype, found.fortran_order) == ((3, 2), np.dtype("<f4"), False)
    assert found.offset == path.stat().st_size - 24
    assert _plain_fields.cache_info().currsize == kept
    short = _npy(tmp_path / "short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", b"\0" * 24)
    assert npy_header(short).shape == (3, 2)
    assert _plain_fields.cache_info().currsize <= kept + 1
