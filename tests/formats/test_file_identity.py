"""What a file is: its place, inode, size, times and sampled bytes, whatever the path's spelling."""

from __future__ import annotations

import hashlib
import os
import random
import shutil

import pytest

from precision_tool.formats import files
from precision_tool.formats.file_identity import SAMPLE_BLOCK, FileIdentities


def _identity(path):
    return FileIdentities().of(path)


def _write_in_place(path, offset: int, data: bytes) -> None:
    """Overwrite bytes at ``offset`` (same inode, same size), then put atime and mtime back."""
    before = os.stat(path)
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_the_same_file_by_any_spelling_is_one_identity(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "t.npy"
    target.write_bytes(b"x" * 100)
    (tmp_path / "link").symlink_to(tmp_path / "data")
    first = _identity(target)
    monkeypatch.chdir(tmp_path)
    assert _identity(target.relative_to(tmp_path)) == first
    assert _identity(tmp_path / "link" / "t.npy") == first  # the directory's link resolved
    assert first[0] == str(target.resolve()) and first[3] == 100


def test_a_rewrite_with_the_same_bytes_and_mtime_is_seen_by_its_ctime(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(bytes(range(256)) * 4)
    first = os.stat(path)
    before = _identity(path)
    _write_in_place(path, 0, path.read_bytes()[:10])
    after = _identity(path)
    assert os.stat(path).st_mtime_ns == first.st_mtime_ns and os.stat(path).st_ino == first.st_ino
    assert after[5] != before[5]  # ctime moved
    assert after[:5] == before[:5] and after[6] == before[6]  # all else as it was


def test_a_copy_in_its_place_is_another_inode(tmp_path):
    path, copy = tmp_path / "t.bin", tmp_path / "copy.bin"
    path.write_bytes(b"y" * 5000)
    before = _identity(path)
    shutil.copy2(path, copy)  # same bytes, same mtime
    os.replace(copy, path)
    after = _identity(path)
    assert after[2] != before[2] and after[3:5] == before[3:5] and after[6] == before[6]


def test_the_sample_covers_a_small_file_whole_and_a_large_one_at_five_blocks(tmp_path):
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(b"\0" * (5 * SAMPLE_BLOCK))
    large.write_bytes(b"\0" * (64 * SAMPLE_BLOCK))
    small_before, large_before = _identity(small)[6], _identity(large)[6]
    _write_in_place(small, 3 * SAMPLE_BLOCK + 7, b"\1")  # anywhere in a small file
    assert _identity(small)[6] != small_before
    middle = 32 * SAMPLE_BLOCK - SAMPLE_BLOCK // 2  # inside the block sampled at half
    _write_in_place(large, middle, b"\1")
    changed = _identity(large)[6]
    assert changed != large_before
    _write_in_place(large, 8 * SAMPLE_BLOCK, b"\1")  # between samples: only ctime tells (documented)
    assert _identity(large)[6] == changed


def test_what_is_not_a_readable_regular_file_has_no_identity(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    identities = FileIdentities()
    assert identities.of(fifo) is None  # and no hang: a FIFO is never opened
    assert identities.of(tmp_path / "gone.npy") is None
    assert identities.of(tmp_path) is None  # a directory


def _expected_sample(data: bytes) -> str:
    """The documented sample, from the bytes: the whole file up to five blocks, else the first
    block, blocks at a quarter, half and three quarters, and the last."""
    if len(data) <= 5 * SAMPLE_BLOCK:
        return hashlib.sha256(data).hexdigest()
    last = len(data) - SAMPLE_BLOCK
    starts = [last * k // 4 for k in range(5)]
    return hashlib.sha256(b"".join(data[s : s + SAMPLE_BLOCK] for s in starts)).hexdigest()


@pytest.mark.parametrize("pread", [True, False], ids=["pread", "seek and read (Windows)"])
@pytest.mark.parametrize("size", [0, 1, 5 * SAMPLE_BLOCK, 5 * SAMPLE_BLOCK + 1, 64 * SAMPLE_BLOCK + 123])
def test_the_sample_is_the_documented_blocks_read_either_way(tmp_path, monkeypatch, pread, size):
    if not pread:
        monkeypatch.setattr(files, "_PREAD", None)
    data = bytes(random.Random(size).getrandbits(8) for _ in range(size))
    path = tmp_path / "t.bin"
    path.write_bytes(data)
    assert _identity(path).sample == _expected_sample(data)


@pytest.mark.parametrize("size", [0, 1, 5 * SAMPLE_BLOCK, 5 * SAMPLE_BLOCK + 1, 64 * SAMPLE_BLOCK + 123])
@pytest.mark.parametrize("held", ["whole", "first block", "nothing"])
def test_a_reader_records_the_documented_sample_from_views_of_the_bytes_it_holds(tmp_path, size, held):
    data = bytes(random.Random(size + 1).getrandbits(8) for _ in range(size))
    path = tmp_path / "t.bin"
    path.write_bytes(data)
    kept = {"whole": data, "first block": data[:SAMPLE_BLOCK], "nothing": b""}[held]
    descriptor = os.open(path, os.O_RDONLY)
    try:
        info = os.fstat(descriptor)
        recorded = FileIdentities().record(path, info, files.held_fetch(kept, descriptor, copy=False))
    finally:
        os.close(descriptor)
    assert recorded.sample == _expected_sample(data)
    assert recorded == _identity(path)  # as one found on its own open
