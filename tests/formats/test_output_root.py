"""The one door for writes: files appear complete or not at all, under the output root only,
and never through a symbolic link at the root or below it."""

from __future__ import annotations

import errno
import os
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precision_tool.formats import held_dir, output_root
from precision_tool.formats.held_dir import NAME_MAX, OutputError, temp_name
from precision_tool.formats.output_root import STAMP, OutputRoot, stamp_time, stamps


@pytest.fixture(params=["openat", "lstat"])
def walk(request, monkeypatch):
    """Run each test with descriptors (openat) and with the path-checking fallback."""
    if request.param == "lstat":
        monkeypatch.setattr(output_root, "_AT", False)
    return request.param


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("precious")
    return outside


def _untouched(outside: Path) -> bool:
    return sorted(os.listdir(outside)) == ["victim"] and (outside / "victim").read_text() == "precious"


def test_the_file_appears_when_the_block_ends(tmp_path, walk):
    root = OutputRoot(tmp_path / "temp")
    with root.create(root.path / "a" / "out.txt") as handle:
        handle.write("partial")
        names = os.listdir(tmp_path / "temp" / "a")
        assert len(names) == 1 and names[0].startswith(".out.txt.") and names[0].endswith(".part")
    assert (tmp_path / "temp/a/out.txt").read_text() == "partial"
    assert os.listdir(tmp_path / "temp" / "a") == ["out.txt"]


@pytest.mark.parametrize("error", [KeyboardInterrupt, ValueError])
def test_an_interrupted_write_leaves_nothing_and_keeps_the_old_file(tmp_path, walk, error):
    root = OutputRoot(tmp_path)
    root.write_bytes("out.bin", b"old")
    with pytest.raises(error):
        with root.create("out.bin", binary=True) as handle:
            handle.write(b"new, half")
            raise error()
    assert (tmp_path / "out.bin").read_bytes() == b"old" and os.listdir(tmp_path) == ["out.bin"]


def test_temporary_names_stay_within_the_name_limit(tmp_path, walk):
    target = tmp_path / ("é" * 120 + ".npy")  # 243 bytes of UTF-8
    name = temp_name(target).name
    assert len(name.encode()) <= NAME_MAX and name.startswith(".") and name.endswith(".part")
    OutputRoot(tmp_path).write_bytes(target, b"x")
    assert target.read_bytes() == b"x"


# --- links ----------------------------------------------------------------------------------------


def test_a_link_at_the_file_name_is_replaced_not_followed(tmp_path, walk):
    outside = _outside(tmp_path)
    (tmp_path / "temp").mkdir()
    (tmp_path / "temp" / "g.gv").symlink_to(outside / "victim")
    OutputRoot(tmp_path / "temp").write_text("g.gv", "digraph {}")
    assert _untouched(outside)
    assert not (tmp_path / "temp" / "g.gv").is_symlink()
    assert (tmp_path / "temp" / "g.gv").read_text() == "digraph {}"


@pytest.mark.parametrize("link", ["temp", "temp/op_graph", "temp/op_graph/deeper"])
def test_a_linked_directory_at_or_below_the_root_is_refused(tmp_path, walk, link):
    outside = _outside(tmp_path)
    where = tmp_path / link
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(outside, target_is_directory=True)
    root = OutputRoot(tmp_path / "temp")
    with pytest.raises(OutputError, match="is a symbolic link") as info:
        root.write_text(root.path / "op_graph" / "deeper" / "g.gv", "x")
    assert info.value.path == str(where)
    with pytest.raises(OutputError, match="is a symbolic link"):
        root.directory("op_graph", "deeper")
    assert _untouched(outside)


def test_directories_above_the_root_are_the_users_and_are_followed(tmp_path, walk):
    real = tmp_path / "real_data"
    real.mkdir()
    (tmp_path / "data").symlink_to(real, target_is_directory=True)
    OutputRoot(tmp_path / "data" / "temp").write_text("x/y.txt", "ok")
    assert (real / "temp" / "x" / "y.txt").read_text() == "ok"


def test_a_file_where_a_directory_should_be_is_refused(tmp_path, walk):
    (tmp_path / "temp").mkdir()
    (tmp_path / "temp" / "pt").write_text("a file")
    with pytest.raises(OutputError, match="is not a directory"):
        OutputRoot(tmp_path / "temp").write_text("pt/x.txt", "x")


@pytest.mark.parametrize("bad", ["../x.txt", "a/../../x.txt", "/elsewhere/x.txt"])
def test_paths_outside_the_root_are_refused(tmp_path, bad):
    with pytest.raises(OutputError):
        OutputRoot(tmp_path / "temp").write_text(bad, "x")
    assert not (tmp_path / "x.txt").exists()


def test_a_directory_swapped_for_a_link_after_the_check_is_not_followed(tmp_path):
    """The descriptor held is what is written through (openat): replacing the directory by a
    link between the check and the write changes nothing."""
    outside = _outside(tmp_path)
    root = OutputRoot(tmp_path / "temp")
    pending = root.begin(root.path / "d" / "f.txt")
    os.rename(tmp_path / "temp" / "d", tmp_path / "moved")
    (tmp_path / "temp" / "d").symlink_to(outside, target_is_directory=True)
    pending.handle.write("x")
    pending.commit()
    assert _untouched(outside)
    assert (tmp_path / "moved" / "f.txt").read_text() == "x"


def test_reads_and_removals_do_not_follow_links(tmp_path, walk):
    outside = _outside(tmp_path)
    (tmp_path / "temp").mkdir()
    (tmp_path / "temp" / "cache.pb").symlink_to(outside / "victim")
    root = OutputRoot(tmp_path / "temp")
    with pytest.raises(OSError):
        root.read_bytes("cache.pb")
    root.remove("cache.pb")
    assert _untouched(outside) and os.listdir(tmp_path / "temp") == []


# --- a full disk --------------------------------------------------------------------------------


class _FullDisk:
    """A file handle whose writes (or only its close) fail as on a full disk."""

    def __init__(self, handle, at: str):
        self._handle, self._at = handle, at

    def write(self, data):
        if self._at == "write":
            raise OSError(errno.ENOSPC, "No space left on device")
        return self._handle.write(data)

    def close(self):
        self._handle.close()
        if self._at == "close":
            raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("at", ["write", "close"])
def test_a_full_disk_is_one_error_and_leaves_no_file_under_any_name(tmp_path, monkeypatch, at):
    real_init = held_dir.PendingFile.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.handle = _FullDisk(self.handle, at)

    monkeypatch.setattr(held_dir.PendingFile, "__init__", init)
    root = OutputRoot(tmp_path / "temp")
    with pytest.raises(OutputError, match="No space left on device") as info:
        root.write_text("op_graph/g.gv", "digraph {}")
    assert info.value.path == str(tmp_path / "temp" / "op_graph" / "g.gv")
    assert os.listdir(tmp_path / "temp" / "op_graph") == []


def test_a_read_only_root_names_the_directory_and_the_way_out(tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(output_root.os, "mkdir", read_only)
    with pytest.raises(OutputError) as info:
        OutputRoot(tmp_path / "temp").write_text("pt/x.txt", "x")
    assert info.value.path == str(tmp_path / "temp")
    assert "Read-only file system" in str(info.value) and "--out DIR" in str(info.value)


# --- new directories ------------------------------------------------------------------------------


def test_new_directories_are_never_shared(tmp_path, walk):
    root = OutputRoot(tmp_path / "temp")
    when = datetime(2026, 1, 1, 12, 0, 0)
    made = [root.new_directory(["vector_compare"], stamps(when)) for _ in range(3)]
    assert [d.name for d in made] == ["20260101120000", "20260101120001", "20260101120002"]
    assert all(d.is_dir() for d in made)


@given(st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)))
def test_a_stamp_reads_back_as_the_time_it_was_made_of(when):
    when = when.replace(microsecond=0)
    (first,) = stamps(when, count=1)
    assert stamp_time(first) == when == datetime.strptime(first, STAMP)


@given(st.text(alphabet="0123456789", min_size=14, max_size=14))
def test_a_stamp_of_14_digits_reads_as_strptime_reads_it(text):
    try:
        expected = datetime.strptime(text, STAMP)
    except ValueError:
        with pytest.raises(ValueError):
            stamp_time(text)
    else:
        assert stamp_time(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "2026010112000", "202601011200000", "2026-1-1120000", "２０２６０１０１１２００００", " 20260101120000"],
)
def test_anything_but_14_ascii_digits_is_not_a_stamp(text):
    with pytest.raises(ValueError):
        stamp_time(text)


def test_a_link_planted_at_a_new_directory_name_is_skipped(tmp_path, walk):
    outside = _outside(tmp_path)
    (tmp_path / "temp" / "vector_compare").mkdir(parents=True)
    (tmp_path / "temp" / "vector_compare" / "20260101120000").symlink_to(outside)
    made = OutputRoot(tmp_path / "temp").new_directory(["vector_compare"], stamps(datetime(2026, 1, 1, 12)))
    assert made.name == "20260101120001" and _untouched(outside)
