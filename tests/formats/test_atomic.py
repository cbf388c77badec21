"""Files appear under their final name complete, or not at all."""

from __future__ import annotations

import os

import pytest

from precision_tool.formats.atomic import NAME_MAX, atomic_write, temp_name


def test_the_file_appears_when_the_block_ends(tmp_path):
    target = tmp_path / "out.txt"
    with atomic_write(target) as handle:
        handle.write("partial")
        assert not target.exists()
        assert [p.name for p in tmp_path.iterdir()][0].endswith(".part")
    assert target.read_text() == "partial"
    assert os.listdir(tmp_path) == ["out.txt"]


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError, ValueError])
def test_an_interrupted_write_leaves_nothing_and_keeps_the_old_file(tmp_path, error):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(error):
        with atomic_write(target, binary=True) as handle:
            handle.write(b"new, half")
            raise error()
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["out.bin"]


def test_temporary_names_stay_within_the_name_limit(tmp_path):
    target = tmp_path / ("é" * 120 + ".npy")  # 243 bytes of UTF-8
    name = temp_name(target).name
    assert len(name.encode()) <= NAME_MAX and name.startswith(".") and name.endswith(".part")
    with atomic_write(target, binary=True) as handle:
        handle.write(b"x")
    assert target.read_bytes() == b"x"
