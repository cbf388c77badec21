"""Opening the user's files: regular files only, never blocking, read with a bound
(:mod:`precision_tool.formats.files`). The command-line cases are in tests/test_side_files.py."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats import files
from precision_tool.formats.files import (
    bytes_under,
    open_regular,
    open_regular_descriptor,
    read_regular,
    read_whole,
    size_text,
)
from tests.blocking import without_blocking


class _Descriptor:
    """open_regular_descriptor's descriptor, closed as a file object is."""

    def __init__(self, path) -> None:
        self.descriptor, self.info = open_regular_descriptor(path, "side file")

    def close(self) -> None:
        os.close(self.descriptor)


OPENERS = pytest.mark.parametrize(
    "opener", [lambda p: open_regular(p, "side file"), _Descriptor], ids=["file object", "descriptor"]
)


def _refusal(path: Path, call=lambda p: open_regular(p, "side file")) -> str:
    """The problem ``call(path)`` raises, naming ``path``; the test fails, rather than hangs,
    should it wait in ``open``."""
    with pytest.raises(PrecisionToolError) as caught:
        without_blocking(path, lambda: call(path).close())
    assert caught.value.path == str(path)
    return caught.value.problem


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@OPENERS
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, opener):
    fifo = tmp_path / "mapping.csv"
    os.mkfifo(fifo)
    assert _refusal(fifo, opener) == "side file is a FIFO (named pipe), not a regular file: not read"
    reading = lambda p: read_regular(p, "mapping.csv", 100)  # noqa: E731
    assert _refusal(fifo, reading) == "mapping.csv is a FIFO (named pipe), not a regular file: not read"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
@OPENERS
def test_a_device_and_a_link_to_one_are_refused(tmp_path, opener):
    link = tmp_path / "mapping.csv"
    link.symlink_to("/dev/zero")
    for path in (Path("/dev/zero"), link):
        assert _refusal(path, opener) == "side file is a character device, not a regular file: not read"


@OPENERS
def test_a_directory_is_refused(tmp_path, opener):
    assert _refusal(tmp_path, opener) == "side file is a directory, not a regular file: not read"


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets here")
@OPENERS
def test_a_socket_is_refused(tmp_path, opener):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert _refusal(path, opener) == "side file is a socket, not a regular file: not read"


@OPENERS
def test_missing_and_dangling_link_are_not_found(tmp_path, opener):
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("nowhere", "dangling"):
        assert _refusal(tmp_path / name, opener) == "side file not found"


def test_a_link_to_a_regular_file_is_read_and_the_file_is_blocking_again(tmp_path):
    (tmp_path / "real.csv").write_bytes(b"1,a\n")
    (tmp_path / "mapping.csv").symlink_to(tmp_path / "real.csv")
    with open_regular(tmp_path / "mapping.csv", "mapping.csv") as handle:
        if sys.platform != "win32":
            assert os.get_blocking(handle.fileno())
        assert handle.read() == b"1,a\n"
    assert read_regular(tmp_path / "mapping.csv", "mapping.csv", 4) == b"1,a\n"


def test_a_descriptor_is_of_the_file_linked_to_blocking_again_with_its_fstat(tmp_path):
    (tmp_path / "real.pt").write_bytes(b"x" * 300)
    (tmp_path / "link.pt").symlink_to(tmp_path / "real.pt")
    descriptor, info = open_regular_descriptor(tmp_path / "link.pt", "tensor file")
    try:
        if sys.platform != "win32":
            assert os.get_blocking(descriptor)
        assert (info.st_ino, info.st_size) == (os.stat(tmp_path / "real.pt").st_ino, 300)
        assert read_whole(descriptor, info.st_size) == b"x" * 300
    finally:
        os.close(descriptor)


def test_read_whole_gathers_short_reads_and_stops_where_the_file_ends(tmp_path, monkeypatch):
    data = bytes(range(256)) * 40
    (tmp_path / "t.bin").write_bytes(data)
    real = os.read
    monkeypatch.setattr(files.os, "read", lambda fd, n: real(fd, min(n, 1000)))  # a system giving 1000 at a time
    descriptor = os.open(tmp_path / "t.bin", os.O_RDONLY)
    try:
        assert read_whole(descriptor, len(data)) == data
        os.lseek(descriptor, 0, os.SEEK_SET)
        assert read_whole(descriptor, len(data) + 5000) == data  # it shrank since fstat: what is there
    finally:
        os.close(descriptor)


def test_a_file_past_the_limit_is_refused_unread_and_one_at_it_is_read(tmp_path):
    path = tmp_path / "mapping.csv"
    path.write_bytes(b"x" * 1024)
    assert read_regular(path, "mapping.csv", 1024) == b"x" * 1024
    with pytest.raises(PrecisionToolError) as caught:
        read_regular(path, "mapping.csv", 1023)
    assert str(caught.value) == f"{path}: mapping.csv is larger than 1023 bytes (1,024 bytes): not read"
    os.truncate(path, 1 << 40)  # a terabyte of hole: refused before a byte is read
    with pytest.raises(PrecisionToolError, match=r"larger than 64 MiB \(1,099,511,627,776 bytes\)"):
        read_regular(path, "mapping.csv", 64 << 20)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc here")
def test_a_file_whose_size_fstat_does_not_know_is_still_read_within_the_limit():
    """/proc files are regular files of size 0 that hold text: read a block at a time."""
    path = Path("/proc/self/status")
    data = read_regular(path, "status file", 1 << 20)
    assert data.startswith(b"Name:") and len(data) > 100
    with pytest.raises(PrecisionToolError, match=r"status file is larger than 100 bytes: not read"):
        read_regular(path, "status file", 100)


def test_sizes_read_as_people_write_them():
    assert [size_text(n) for n in (300, 1024, 1536, 64 << 20, (1 << 30) + 2, 8 << 30)] == [
        "300 bytes",
        "1 KiB",
        "1.5 KiB",
        "64 MiB",
        "1.0 GiB",
        "8 GiB",
    ]


def _file(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)  # sparse: its size is what counts
    return path


def test_bytes_under_adds_the_regular_files_and_leaves_out_what_it_should(tmp_path):
    root = tmp_path / "data"
    _file(root / "npu/a.bin", 1000)
    _file(root / "npu/deep/b.bin", 234)
    _file(root / "tf/c.npy", 66)
    _file(root / "temp/old_result.csv", 10**6)  # the output root: not data
    outside = _file(tmp_path / "outside/big.bin", 10**7)
    (root / "linked_dir").symlink_to(outside.parent, target_is_directory=True)  # never followed
    (root / "npu/linked_file.bin").symlink_to(root / "tf/c.npy")  # a link to a file: its target's size
    os.mkfifo(root / "npu/fifo")  # neither read nor waited for
    assert (
        without_blocking(root / "npu/fifo", lambda: bytes_under([root], skip=[root / "temp"])) == 1000 + 234 + 66 + 66
    )
    assert bytes_under([root / "npu/a.bin", root / "tf", root / "npu/fifo", tmp_path / "missing"]) == 1000 + 66
    assert bytes_under([root]) == 1000 + 234 + 66 + 66 + 10**6


def test_bytes_under_stops_once_it_has_enough(tmp_path):
    for k in range(50):
        _file(tmp_path / f"d{k}" / "x.bin", 100)
    found = bytes_under([tmp_path], enough=250)
    assert 250 <= found < 50 * 100  # it stopped early, past the line
    assert bytes_under([tmp_path]) == 50 * 100


def test_bytes_under_stops_inside_one_large_directory(tmp_path):
    for k in range(50):  # a dump's tensor directory: many files side by side
        _file(tmp_path / f"x{k}.bin", 100)
    assert bytes_under([tmp_path], enough=250) == 300  # the third file reaches the line


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=3000),
    held=st.integers(0, 3000),
    reads=st.lists(st.tuples(st.integers(0, 3200), st.integers(0, 1200)), max_size=8),
)
def test_a_held_fetch_reads_what_the_file_holds_held_or_not(tmp_path_factory, data, held, reads):
    path = tmp_path_factory.mktemp("held") / "f.bin"
    path.write_bytes(data)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        fetch = files.held_fetch(np.frombuffer(data[:held], np.uint8), descriptor)
        view = files.held_fetch(np.frombuffer(data[:held], np.uint8), descriptor, copy=False)
        for offset, count in reads:
            assert fetch(offset, count) == data[offset : offset + count]
            assert bytes(view(offset, count)) == data[offset : offset + count]  # a view or bytes
    finally:
        os.close(descriptor)


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=3000),
    held=st.integers(0, 3000),
    steps=st.lists(st.one_of(st.integers(0, 1200), st.tuples(st.just("seek"), st.integers(0, 3200))), max_size=10),
)
def test_a_fetch_reader_reads_on_as_a_file_object_does(tmp_path_factory, data, held, steps):
    path = tmp_path_factory.mktemp("reader") / "f.bin"
    path.write_bytes(data)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        with open(path, "rb") as handle:  # the reference: Python's own buffered reader
            reader = files.FetchReader(files.held_fetch(data[:held], descriptor))
            for step in steps:
                if isinstance(step, tuple):
                    assert reader.seek(step[1]) == handle.seek(step[1])
                else:
                    assert reader.read(step) == handle.read(step)
    finally:
        os.close(descriptor)


_PARTS = st.sampled_from(["", ".", "..", "a", "b c", "dir.d", "//", "/"])


_NAMES = st.text(st.characters(blacklist_characters="/\0"), min_size=1).filter(lambda n: n not in (".", ".."))


@given(st.lists(_PARTS, max_size=5), st.booleans(), _NAMES)
def test_a_childs_text_is_spelt_as_pathlib_spells_it(parts, absolute, name):
    """A listing names each file ``child_prefix(directory) + name``: the same text as
    ``str(Path(directory) / name)`` (pathlib is the reference), whatever way the directory
    was spelt: ``.``, doubled or trailing separators, a bare name."""
    directory = ("/" if absolute else "") + "/".join(parts)
    expected = str(Path(directory or ".") / name)
    assert files.child_prefix(directory or ".") + name == expected
    assert files.child_prefix(Path(directory or ".")) + name == expected
