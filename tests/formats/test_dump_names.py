"""NPU dump names, mapping.csv aliases and the listing of one step directory."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump_names import (
    MAX_MAPPING_BYTES,
    list_dump_files,
    normalise_op_name,
    parse_dump_name,
    read_mapping,
)
from precision_tool.formats.tree import DumpTree
from tests.blocking import without_blocking

TS = 1718170000000000


def _touch(directory: Path, *names: str, content: bytes = b"x") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(content)


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every path under root with size, mtime and content hash."""
    state = {}
    for path in sorted(root.rglob("*")):
        st_ = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        state[str(path.relative_to(root))] = (st_.st_size, st_.st_mtime_ns, digest)
    return state


# --- names ----------------------------------------------------------------------------------


def test_parse_current_form():
    name = parse_dump_name(f"Conv2D.model_conv1_Conv2D.12.3.{TS}")
    assert (name.op_type, name.op_name, name.task_id, name.stream_id) == ("Conv2D", "model_conv1_Conv2D", 12, 3)
    assert (name.timestamp, name.extra) == (TS, ())
    assert name.file_name == f"Conv2D.model_conv1_Conv2D.12.3.{TS}"
    assert not name.is_opdebug


def test_parse_old_form_without_stream():
    name = parse_dump_name(f"Relu.model_relu.7.{TS}")
    assert (name.op_name, name.task_id, name.stream_id, name.timestamp) == ("model_relu", 7, None, TS)


def test_parse_ffts_long_form():
    name = parse_dump_name("Conv2D.net_conv_lxslice0.2.9.1670205071724946.4.487.0.0")
    assert (name.op_name, name.task_id, name.stream_id) == ("net_conv_lxslice0", 2, 9)
    assert name.timestamp == 1670205071724946
    assert name.extra == (4, 487, 0, 0)


def test_parse_opdebug():
    name = parse_dump_name(f"Opdebug.Node_OpDebug.5.1.{TS}")
    assert name.is_opdebug
    assert (name.op_name, name.task_id, name.stream_id) == ("Node_OpDebug", 5, 1)


def test_parse_tolerates_13_digit_timestamp_and_dotted_name():
    assert parse_dump_name("Add.x.1.2.1718170000000").timestamp == 1718170000000
    name = parse_dump_name(f"Add.blk.3.1.2.{TS}")
    assert (name.op_name, name.task_id, name.stream_id) == ("blk.3", 1, 2)


@pytest.mark.parametrize(
    "name, fields",
    [
        # msprobe's nano dump sample: a 9-digit timestamp
        ("ConcatV2D.concatv2.0.0.550288648", ("concatv2", 0, 0, 550288648, ())),
        ("Conv2D.x.1.0.171817000000", ("x", 1, 0, 171817000000, ())),
        ("Relu.r.7.550288648", ("r", 7, None, 550288648, ())),
        ("Conv2D.n_lxslice0.2.9.550288648.4.487.0.0", ("n_lxslice0", 2, 9, 550288648, (4, 487, 0, 0))),
        ("Add.blk.3.1.2.550288648", ("blk.3", 1, 2, 550288648, ())),
        ("Add.x.1.2.3", ("x", 1, 2, 3, ())),  # a tie of lengths: the last is the timestamp
        ("Add.x.12.3", ("x", 12, None, 3, ())),  # never the first field: an id comes before it
    ],
)
def test_parse_short_timestamps(name, fields):
    parsed = parse_dump_name(name)
    assert (parsed.op_name, parsed.task_id, parsed.stream_id, parsed.timestamp, parsed.extra) == fields


@pytest.mark.parametrize(
    "name",
    [
        "mapping.csv",
        "foo",
        "",
        "a.b",
        "a.b.c.d",
        f"Conv2D.x.{TS}",
        "Conv2D.x.550288648",
        f"Conv2D.x.1.0.{TS}.npy",
        f".x.1.0.{TS}",
        f"Conv2D..1.0.{TS}",
        f"Con v.x.1.0.{TS}",
        "1234567890",
        "ge_proto_00001_Build.txt",
    ],
)
def test_parse_rejects_non_dump_names(name):
    assert parse_dump_name(name) is None


_IDENT = st.from_regex(r"[A-Za-z0-9_]{1,30}", fullmatch=True)
# an all-digit op name would join the tail of ids (``T.5.1.TS``: name 5, or task 5 stream 1?)
_OP_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,29}", fullmatch=True)


@given(
    op_type=_IDENT,
    op_name=_OP_NAME,
    task=st.integers(0, 10**6),
    stream=st.none() | st.integers(0, 10**6),
    stamp=st.integers(10**15, 10**16 - 1),
    extra=st.lists(st.integers(0, 10**6), max_size=4),
)
def test_parse_round_trip(op_type, op_name, task, stream, stamp, extra):
    ids = [task] if stream is None else [task, stream]
    file_name = ".".join(map(str, [op_type, op_name, *ids, stamp, *extra]))
    name = parse_dump_name(file_name)
    assert (name.op_type, name.op_name, name.task_id, name.stream_id) == (op_type, op_name, task, stream)
    assert (name.timestamp, name.extra, name.file_name) == (stamp, tuple(extra), file_name)


@given(
    op_type=_IDENT,
    op_name=_OP_NAME,
    task=st.integers(0, 999),
    stream=st.none() | st.integers(0, 999),
    stamp=st.integers(10**3, 10**12 - 1),
    extra=st.lists(st.integers(0, 999), max_size=4),
)
def test_parse_round_trip_of_short_timestamps(op_type, op_name, task, stream, stamp, extra):
    """A timestamp of 4 to 12 digits, longer than every id and extra, is found wherever it is."""
    ids = [task] if stream is None else [task, stream]
    file_name = ".".join(map(str, [op_type, op_name, *ids, stamp, *extra]))
    name = parse_dump_name(file_name)
    assert (name.op_type, name.op_name, name.task_id, name.stream_id) == (op_type, op_name, task, stream)
    assert (name.timestamp, name.extra) == (stamp, tuple(extra))


@given(st.text(max_size=40))
def test_normalise_op_name_property(text):
    key = normalise_op_name(text)
    assert not any(ch in key for ch in "/.\\ ")
    assert len(key) == len(text)
    assert normalise_op_name(key) == key


def test_normalise_op_name_examples():
    assert normalise_op_name("model/conv1/Conv2D") == "model_conv1_Conv2D"
    assert normalise_op_name("a.b\\c d") == "a_b_c_d"


# --- mapping.csv and listings ---------------------------------------------------------------

LONG = f"Conv2D.{'very_long_' * 30}name.3.0.{TS + 100}"


def _aliased_dir(tmp_path: Path) -> Path:
    step = tmp_path / "step"
    _touch(step, "1001", "1002", "1004", f"Add.model_add.5.0.{TS}", "notes.txt")
    (step / "sub").mkdir()
    (step / "mapping.csv").write_text(
        f"1001,{LONG}\n"
        "garbage line\n"
        f"1003,Relu.r.1.0.{TS}\n"
        f"1004,../Relu.evil.1.0.{TS}\n"
        "\n"
        f"1001,Relu.other.1.0.{TS}\n"
        "1005,..\n"
    )
    return step


def test_read_mapping_collects_problems(tmp_path):
    mapping = read_mapping(_aliased_dir(tmp_path))
    assert mapping.aliases == {"1001": LONG, "1003": f"Relu.r.1.0.{TS}"}
    assert [line for line, _ in mapping.problems] == [2, 4, 6, 7]
    assert "separator" in mapping.problems[1][1]
    assert "duplicate" in mapping.problems[2][1]
    assert "'..'" in mapping.problems[3][1]


def test_read_mapping_missing_file_is_empty(tmp_path):
    mapping = read_mapping(tmp_path)
    assert (mapping.aliases, mapping.problems) == ({}, [])


def test_read_mapping_rejects_separators(tmp_path):
    (tmp_path / "mapping.csv").write_text(f"1,a/b.x.1.0.{TS}\n2,c\\d\n3/4,x\n")
    mapping = read_mapping(tmp_path)
    assert mapping.aliases == {}
    assert all("separator" in why for _, why in mapping.problems)


def test_read_mapping_ignores_a_byte_order_mark(tmp_path):
    # written by a Windows editor: the BOM must not become part of the first short name
    (tmp_path / "mapping.csv").write_bytes(f"\ufeff1,Relu.r.1.0.{TS}\r\n2,Add.a.2.0.{TS}\r\n".encode())
    mapping = read_mapping(tmp_path)
    assert mapping.aliases == {"1": f"Relu.r.1.0.{TS}", "2": f"Add.a.2.0.{TS}"}
    assert mapping.problems == []


def _mapping_too_big(directory: Path) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "mapping.csv").touch()
    os.truncate(directory / "mapping.csv", MAX_MAPPING_BYTES + 1)  # a hole: no disk used
    return f"mapping.csv is larger than 64 MiB ({MAX_MAPPING_BYTES + 1:,} bytes): not read"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_mapping_csv_that_is_a_fifo_or_too_big_is_not_read_and_says_so(tmp_path):
    os.mkfifo(tmp_path / "mapping.csv")  # reading it waited for ever for a writer
    fifo = "mapping.csv is a FIFO (named pipe), not a regular file: not read"
    for directory, why in ((tmp_path, fifo), (tmp_path / "big", _mapping_too_big(tmp_path / "big"))):
        _touch(directory, "1001", f"Add.model_add.5.0.{TS}")
        mapping = without_blocking(directory / "mapping.csv", lambda directory=directory: read_mapping(directory))
        assert (mapping.aliases, mapping.problems, mapping.unread) == ({}, [(0, why)], why)
        listing = list_dump_files(directory)
        assert [ref.path.name for ref in listing.files] == [f"Add.model_add.5.0.{TS}"]
        assert listing.unread_mapping == why
        assert (directory / "mapping.csv", why) in listing.skipped  # the file's, not "line 0"'s


def test_a_mapping_csv_read_whole_is_not_unread(tmp_path):
    listing = list_dump_files(_aliased_dir(tmp_path))
    assert listing.unread_mapping is None and read_mapping(tmp_path / "step").unread is None


def test_listing_resolves_aliases_and_reports_the_rest(tmp_path):
    step = _aliased_dir(tmp_path)
    listing = list_dump_files(step)
    assert [ref.path.name for ref in listing.files] == [f"Add.model_add.5.0.{TS}", "1001"]
    alias = listing.files[1]
    assert alias.path == step / "1001"
    assert alias.name.file_name == LONG
    assert listing.launches("very_long_" * 30 + "name") == [alias]
    reasons = {path.name: why for path, why in listing.skipped if path.name != "mapping.csv"}
    assert set(reasons) == {"1002", "1003", "1004", "notes.txt", "sub"}  # not the bad 1005
    assert "no entry" in reasons["1002"] and "no entry" in reasons["1004"]
    assert "no such file" in reasons["1003"]
    assert "not a dump" in reasons["notes.txt"]
    assert sum(path.name == "mapping.csv" for path, _ in listing.skipped) == 4


def test_listing_names_each_file_by_its_text(tmp_path):
    """A ref holds its file's path as text (the pairing and the workers take it as it is): the
    file on disk, the alias's own name for an alias; ``path`` is the same file as a Path."""
    step = _aliased_dir(tmp_path)
    for directory in (step, os.fspath(step) + os.sep):  # a trailing separator gives the same text
        refs = list_dump_files(directory).files
        assert [type(ref.location) for ref in refs] == [str, str]
        assert [ref.location for ref in refs] == [
            os.path.join(step, f"Add.model_add.5.0.{TS}"),
            os.path.join(step, "1001"),
        ]
        assert [ref.path for ref in refs] == [step / f"Add.model_add.5.0.{TS}", step / "1001"]
        assert refs[1].name.file_name == LONG  # the alias resolved; its location is the alias


def test_listing_leaves_the_directory_untouched(tmp_path):
    step = _aliased_dir(tmp_path)
    before = _snapshot(step)
    list_dump_files(step)
    DumpTree(step).select()
    read_mapping(step)
    assert _snapshot(step) == before


def test_mapping_target_that_is_not_a_dump_name(tmp_path):
    _touch(tmp_path, "77")
    (tmp_path / "mapping.csv").write_text("77,readme.txt\n")
    listing = list_dump_files(tmp_path)
    assert listing.files == []
    assert listing.skipped == [(tmp_path / "77", listing.skipped[0][1])]
    assert "not a dump file name" in listing.skipped[0][1]


def test_repeated_launches_sorted_by_timestamp(tmp_path):
    names = [
        f"Add.model_add.5.0.{TS + 300}",
        f"Add.model_add.9.0.{TS + 100}",
        f"Relu.model_relu.6.0.{TS + 150}",
        f"Add.model_add.7.0.{TS + 200}",
    ]
    _touch(tmp_path, *names)
    listing = list_dump_files(tmp_path)
    adds = listing.launches("model/add")
    assert [ref.name.timestamp for ref in adds] == [TS + 100, TS + 200, TS + 300]
    assert listing.latest("model/add").name.task_id == 5
    assert listing.latest("model/missing") is None
    assert listing.launches("model/missing") == []
    assert [ref.name.timestamp for ref in listing.files] == [TS + 100, TS + 150, TS + 200, TS + 300]
    assert list(listing.by_op()) == ["model_add", "model_relu"]


def test_listing_missing_dir_names_it(tmp_path):
    with pytest.raises(PrecisionToolError) as err:
        list_dump_files(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(err.value)
    _touch(tmp_path, "afile")
    with pytest.raises(PrecisionToolError, match="not a directory"):
        list_dump_files(tmp_path / "afile")
    with pytest.raises(PrecisionToolError, match="does not exist"):
        DumpTree(tmp_path / "nope")
