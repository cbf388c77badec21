"""TF golden .npy index: names, timestamps, aliases, lazy memory-mapped loading, bad files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.golden import (
    golden_name_problem,
    load_npy,
    parse_golden_name,
    read_golden,
    write_golden,
)
from tests.blocking import without_blocking
from tests.conftest import FIXTURES

SMALL_GOLDEN = FIXTURES / "small" / "precision_data" / "tf" / "dump"
TS = 1718160000000000


@pytest.fixture
def small_golden() -> Path:
    return SMALL_GOLDEN


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    return {
        p.name: (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(root.iterdir())
    }


# --- the small fixture ----------------------------------------------------------------------


def test_fixture_index(small_golden):
    index = read_golden(small_golden)
    assert len(index) == 26
    assert index.invalid == []
    assert ("model/conv1/Relu", 0) in index
    assert ("model_conv1_Relu", 0) in index
    assert ("model/conv1/Relu", 1) not in index
    assert "model/bn1/FusedBatchNormV3" in index
    assert [i for n, i in index.keys() if n == "model_bn1_FusedBatchNormV3"] == [0, 1, 2]
    assert len(index.entries()) == 26


def test_fixture_lookup_is_a_memmap(small_golden):
    index = read_golden(small_golden)
    array = index.lookup("model/conv1/Relu", 0)
    assert isinstance(array, np.memmap)
    assert array.shape == (2, 8, 8, 8)
    assert array.dtype == np.float32
    assert not array.flags.writeable
    assert index.path_for("model/conv1/Relu", 0) == (small_golden / "model_conv1_Relu.0.1718160000000500.npy")
    assert float(array.min()) >= 0.0  # it is a Relu output


# --- names ----------------------------------------------------------------------------------


def test_parse_golden_name_fields():
    entry = parse_golden_name(f"conv1_Conv2D.0.{TS}.npy")
    assert (entry.name, entry.output_index, entry.timestamp, entry.extra) == ("conv1_Conv2D", 0, TS, None)
    entry = parse_golden_name(f"a-b_c.12.7.{TS}.npy")
    assert (entry.name, entry.output_index, entry.extra, entry.timestamp) == ("a-b_c", 12, 7, TS)


@pytest.mark.parametrize(
    "name",
    [
        f"bad name.0.{TS}.npy",
        f"x.y.0.{TS}.npy",
        "model_a.0.npy",
        f"a.0.{TS}.npz",
        f"a/b.0.{TS}.npy",
        f"a.x.{TS}.npy",
        f".0.{TS}.npy",
    ],
)
def test_parse_golden_name_rejects(name):
    assert parse_golden_name(name) is None
    assert golden_name_problem(name) is not None


def test_golden_name_problem_long_and_alias():
    long = "a" * 240 + f".0.{TS}.npy"
    assert len(long) > 255
    assert "255" in golden_name_problem(long)
    assert parse_golden_name(long) is not None  # fine when it arrives through mapping.csv
    assert "mapping.csv" in golden_name_problem("123456")
    assert golden_name_problem(f"ok.0.{TS}.npy") is None


@given(
    name=st.from_regex(r"[A-Za-z0-9_-]{1,60}", fullmatch=True),
    index=st.integers(0, 10**4),
    extra=st.none() | st.integers(0, 10**6),
    stamp=st.integers(0, 10**20),
)
def test_golden_name_round_trip(name, index, extra, stamp):
    middle = "" if extra is None else f".{extra}"
    file_name = f"{name}.{index}{middle}.{stamp}.npy"
    entry = parse_golden_name(file_name)
    assert (entry.name, entry.output_index, entry.extra, entry.timestamp) == (name, index, extra, stamp)
    assert entry.file_name == file_name


# --- index behaviour ------------------------------------------------------------------------


def test_latest_timestamp_wins_and_explicit_timestamp(tmp_path):
    for stamp, value in [(TS + 20, 2.0), (TS, 0.0), (TS + 10, 1.0)]:
        write_golden(tmp_path, "model/conv1/Relu", 0, stamp, np.full((2, 3), value, np.float32))
    index = read_golden(tmp_path)
    assert len(index) == 1
    assert index.timestamps("model/conv1/Relu", 0) == [TS, TS + 10, TS + 20]
    assert float(index.lookup("model/conv1/Relu", 0)[0, 0]) == 2.0
    assert float(index.lookup("model/conv1/Relu", 0, timestamp=TS + 10)[1, 2]) == 1.0
    assert index.entry("model_conv1_Relu", 0, TS).path.name == f"model_conv1_Relu.0.{TS}.npy"
    with pytest.raises(PrecisionToolError, match="no timestamp 5"):
        index.lookup("model/conv1/Relu", 0, timestamp=5)
    with pytest.raises(PrecisionToolError, match="no golden tensor model_nope.0"):
        index.lookup("model/nope", 0)
    assert index.latest_path("model/conv1/Relu", 0) == tmp_path / f"model_conv1_Relu.0.{TS + 20}.npy"
    assert index.latest_path("model/conv1/Relu", 1) is None and index.latest_path("model/nope", 0) is None


def test_extra_field_is_same_tensor(tmp_path):
    write_golden(tmp_path, "t", 0, TS, np.zeros(2, np.float32))
    write_golden(tmp_path, "t", 0, TS, np.ones(2, np.float32), extra=3)
    index = read_golden(tmp_path)
    assert len(index) == 1
    assert [e.extra for e in index.entries()] == [None, 3]
    assert float(index.lookup("t", 0)[0]) == 1.0


def test_invalid_names_are_reported_and_skipped(tmp_path):
    write_golden(tmp_path, "good", 0, TS, np.zeros(2, np.float32))
    for name in [f"bad name.0.{TS}.npy", "nots.0.npy", "README.txt", "999"]:
        (tmp_path / name).write_bytes(b"junk")
    (tmp_path / "sub.0.1.npy").mkdir()  # a directory is not a tensor, and is not reported
    index = read_golden(tmp_path)
    assert index.keys() == [("good", 0)]
    reasons = {path.name: why for path, why in index.invalid}
    assert set(reasons) == {f"bad name.0.{TS}.npy", "nots.0.npy", "README.txt", "999"}
    assert "not comparable" in reasons["nots.0.npy"]
    assert "not a .npy" in reasons["README.txt"]
    assert "mapping.csv" in reasons["999"]


def test_entries_name_their_files_by_text(tmp_path):
    """An entry holds its file's path as text, what the pairing gives a worker as it is; the
    alias's own file for an alias; ``path`` and ``latest_path`` are the same file as a Path."""
    written = write_golden(tmp_path, "conv", 0, TS, np.zeros(2, np.float32))
    (tmp_path / "7").write_bytes(written.read_bytes())
    (tmp_path / "mapping.csv").write_text(f"7,{'w' * 300}.1.{TS}.npy\n")
    for directory in (tmp_path, os.fspath(tmp_path) + os.sep):
        index = read_golden(directory)
        entries = index.entries()
        assert [type(e.location) for e in entries] == [str, str]
        assert sorted(e.location for e in entries) == sorted([os.fspath(written), os.path.join(tmp_path, "7")])
        assert all(e.path == Path(e.location) for e in entries)
        assert index.latest_location("conv", 0) == os.fspath(written)
        assert index.latest_path("conv", 0) == written
        assert index.latest_location("conv", 1) is None and index.latest_path("conv", 1) is None
        assert index.latest_location("w" * 300, 1) == os.path.join(tmp_path, "7")


def test_index_is_lazy_and_bad_files_fail_at_lookup(tmp_path):
    (tmp_path / f"garbage.0.{TS}.npy").write_bytes(b"hello, not numpy")
    (tmp_path / f"empty.0.{TS}.npy").write_bytes(b"")
    good = write_golden(tmp_path, "trunc", 0, TS, np.arange(100, dtype=np.float32))
    good.write_bytes(good.read_bytes()[:-8])
    index = read_golden(tmp_path)  # names only: nothing above is opened yet
    assert len(index) == 3
    for name, words in [("garbage", "bad magic"), ("empty", "bad magic"), ("trunc", "truncated")]:
        with pytest.raises(PrecisionToolError, match=words) as err:
            index.lookup(name, 0)
        assert err.value.path == str(index.path_for(name, 0))


def test_pickled_object_array_is_refused(tmp_path):
    path = tmp_path / f"obj.0.{TS}.npy"
    np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(PrecisionToolError, match="pickled") as err:
        read_golden(tmp_path).lookup("obj", 0)
    assert err.value.path == str(path)


def test_npz_archive_is_refused(tmp_path):
    path = tmp_path / f"zip.0.{TS}.npy"
    with open(path, "wb") as handle:
        np.savez(handle, a=np.zeros(3))
    with pytest.raises(PrecisionToolError):
        load_npy(path)


def test_fortran_ordered_array_loads_correctly(tmp_path):
    array = np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    write_golden(tmp_path, "f", 1, TS, array)
    loaded = read_golden(tmp_path).lookup("f", 1)
    assert loaded.flags.f_contiguous
    np.testing.assert_array_equal(loaded, np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert float(loaded[1, 2, 3]) == 23.0


def test_bfloat16_bits_labelled_f2_are_returned_unchanged(tmp_path):
    bits = np.array([0x3F80, 0xC000], dtype=np.uint16)  # bfloat16 1.0 and -2.0
    write_golden(tmp_path, "bf", 0, TS, bits.view("<f2"))
    loaded = read_golden(tmp_path).lookup("bf", 0)
    assert loaded.dtype == np.dtype("<f2")
    np.testing.assert_array_equal(np.asarray(loaded).view(np.uint16), bits)


def test_zero_size_and_scalar_arrays(tmp_path):
    write_golden(tmp_path, "empty", 0, TS, np.zeros((0, 3), np.float32))
    write_golden(tmp_path, "scalar", 0, TS, np.float32(4.5))
    index = read_golden(tmp_path)
    assert index.lookup("empty", 0).shape == (0, 3)
    assert float(index.lookup("scalar", 0)) == 4.5


# --- aliases --------------------------------------------------------------------------------


def test_mapping_aliases_resolved_in_memory(tmp_path):
    long_name = "model_" + "very_long_scope_" * 20 + "Relu"
    real = write_golden(tmp_path, "short", 0, TS, np.arange(4, dtype=np.float32))
    real.rename(tmp_path / "8812345")  # how the dumper stores a name too long for the disk
    (tmp_path / "4455").write_bytes(real.name.encode())  # any content: never opened
    (tmp_path / "mapping.csv").write_text(
        f"8812345,{long_name}.0.{TS}.npy\n4455,../escape.0.{TS}.npy\n7777,ghost.0.{TS}.npy\nno comma here\n"
    )
    before = _snapshot(tmp_path)
    index = read_golden(tmp_path)
    assert index.keys() == [(long_name, 0)]
    np.testing.assert_array_equal(index.lookup(long_name, 0), np.arange(4, dtype=np.float32))
    assert index.path_for(long_name, 0) == tmp_path / "8812345"
    assert index.entries()[0].file_name == f"{long_name}.0.{TS}.npy"
    reasons = {(p.name, why) for p, why in index.invalid}
    assert ("4455", "alias with no entry in mapping.csv") in reasons
    assert ("7777", "mapping.csv names it but there is no such file") in reasons
    assert sum(p.name == "mapping.csv" for p, _ in index.invalid) == 2
    assert _snapshot(tmp_path) == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_golden_mapping_csv_that_is_a_fifo_is_not_read_and_says_so(tmp_path):
    write_golden(tmp_path, "short", 0, TS, np.arange(4, dtype=np.float32))
    os.mkfifo(tmp_path / "mapping.csv")  # reading it waited for ever for a writer
    index = without_blocking(tmp_path / "mapping.csv", lambda: read_golden(tmp_path))
    why = "mapping.csv is a FIFO (named pipe), not a regular file: not read"
    assert index.keys() == [("short", 0)] and index.unread_mapping == why
    assert index.invalid == [(tmp_path / "mapping.csv", why)]
    assert read_golden(tmp_path / "..").unread_mapping is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_golden_file_that_is_a_fifo_is_refused_at_lookup(tmp_path):
    path = write_golden(tmp_path, "short", 0, TS, np.arange(4, dtype=np.float32))
    index = read_golden(tmp_path)
    path.unlink()
    os.mkfifo(path)  # swapped after the listing: the open must not wait for a writer
    with pytest.raises(PrecisionToolError, match="golden file is a FIFO"):
        without_blocking(path, lambda: index.lookup("short", 0))


def test_alias_to_a_name_that_breaks_the_rule(tmp_path):
    (tmp_path / "42").write_bytes(b"x")
    (tmp_path / "mapping.csv").write_text(f"42,bad name.0.{TS}.npy\n")
    index = read_golden(tmp_path)
    assert len(index) == 0
    assert [p.name for p, _ in index.invalid] == ["42"]
    assert "breaks the naming rule" in index.invalid[0][1]


# --- writer and errors ----------------------------------------------------------------------


def test_write_golden_names_and_round_trips(tmp_path):
    array = np.arange(6, dtype=np.int64).reshape(2, 3)
    path = write_golden(tmp_path / "new", "scope/op", 2, TS, array)
    assert path == tmp_path / "new" / f"scope_op.2.{TS}.npy"
    np.testing.assert_array_equal(np.load(path, allow_pickle=False), array)


@pytest.mark.parametrize("name, index", [("bad name", 0), ("a.b", 0), ("ok", -1), ("x" * 260, 0)])
def test_write_golden_rejects_bad_names(tmp_path, name, index):
    with pytest.raises(PrecisionToolError, match="naming rule"):
        write_golden(tmp_path, name, index, TS, np.zeros(1))
    assert list(tmp_path.iterdir()) == []


def test_write_golden_rejects_object_arrays(tmp_path):
    with pytest.raises(PrecisionToolError, match="object array"):
        write_golden(tmp_path, "o", 0, TS, np.array([None, 1], dtype=object))


def test_missing_directory_is_an_error(tmp_path):
    with pytest.raises(PrecisionToolError, match="does not exist") as err:
        read_golden(tmp_path / "absent")
    assert err.value.path == str(tmp_path / "absent")
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(PrecisionToolError, match="not a directory"):
        read_golden(tmp_path / "file")
