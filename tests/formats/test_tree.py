"""NPU dump names, mapping.csv aliases, step listings and the training dump tree."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.tree import (
    DumpTree,
    list_dump_files,
    normalise_op_name,
    parse_dump_name,
    parse_step_spec,
    read_mapping,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
SMALL_DUMP = SHARED / "fixtures" / "small" / "precision_data" / "npu" / "debug_0" / "dump"
TS = 1718170000000000


@pytest.fixture
def small_dump() -> Path:
    if not SMALL_DUMP.is_dir():
        pytest.skip("../shared/fixtures not present beside this clone")
    return SMALL_DUMP


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


# --- the shared fixture ---------------------------------------------------------------------

def test_fixture_tree_labels(small_dump):
    tree = DumpTree(small_dump)
    assert tree.runs() == ["20240612103000"]
    assert tree.devices() == [0]
    assert tree.models() == ["ge_default_20240612103000_1"]
    assert tree.model_ids() == [1]
    assert tree.steps() == [0]
    (step,) = tree.select(steps="0")
    assert (step.run, step.device, step.model_name, step.model_id, step.step) == (
        "20240612103000", 0, "ge_default_20240612103000_1", 1, 0)
    assert step.path == small_dump / "20240612103000/0/ge_default_20240612103000_1/1/0"
    assert tree.skipped == []


def test_fixture_listing(small_dump):
    tree = DumpTree(small_dump)
    listing = tree.listing(tree.select()[0])
    assert len(listing.files) == 13
    assert listing.skipped == []
    stamps = [ref.name.timestamp for ref in listing.files]
    assert stamps == sorted(stamps)
    assert listing.files[0].name.op_type == "Cast"
    assert len(listing.by_op()) == 13
    (conv,) = listing.launches("model/conv1/Conv2D")
    assert conv.name.file_name == "Conv2D.model_conv1_Conv2D.12.0.1718170000000074"
    assert (conv.name.task_id, conv.name.stream_id) == (12, 0)


def test_fixture_root_that_is_a_step_dir_keeps_labels(small_dump):
    step_path = small_dump / "20240612103000/0/ge_default_20240612103000_1/1/0"
    (step,) = DumpTree(step_path).select(steps="0")
    assert (step.run, step.device, step.model_name, step.model_id, step.step) == (
        "20240612103000", 0, "ge_default_20240612103000_1", 1, 0)
    assert step.path == step_path


# --- names ----------------------------------------------------------------------------------

def test_parse_current_form():
    name = parse_dump_name(f"Conv2D.model_conv1_Conv2D.12.3.{TS}")
    assert (name.op_type, name.op_name, name.task_id, name.stream_id) == (
        "Conv2D", "model_conv1_Conv2D", 12, 3)
    assert (name.timestamp, name.extra) == (TS, ())
    assert name.file_name == f"Conv2D.model_conv1_Conv2D.12.3.{TS}"
    assert not name.is_opdebug


def test_parse_old_form_without_stream():
    name = parse_dump_name(f"Relu.model_relu.7.{TS}")
    assert (name.op_name, name.task_id, name.stream_id, name.timestamp) == (
        "model_relu", 7, None, TS)


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


@pytest.mark.parametrize("name", [
    "mapping.csv", "foo", "", "a.b", "a.b.c.d", f"Conv2D.x.{TS}", "Conv2D.x.1.0.171817000000",
    f"Conv2D.x.1.0.{TS}.npy", f".x.1.0.{TS}", f"Conv2D..1.0.{TS}", f"Con v.x.1.0.{TS}",
    "1234567890", "ge_proto_00001_Build.txt",
])
def test_parse_rejects_non_dump_names(name):
    assert parse_dump_name(name) is None


_IDENT = st.from_regex(r"[A-Za-z0-9_]{1,30}", fullmatch=True)


@given(op_type=_IDENT, op_name=_IDENT, task=st.integers(0, 10**6),
       stream=st.none() | st.integers(0, 10**6), stamp=st.integers(10**15, 10**16 - 1),
       extra=st.lists(st.integers(0, 10**6), max_size=4))
def test_parse_round_trip(op_type, op_name, task, stream, stamp, extra):
    ids = [task] if stream is None else [task, stream]
    file_name = ".".join(map(str, [op_type, op_name, *ids, stamp, *extra]))
    name = parse_dump_name(file_name)
    assert (name.op_type, name.op_name, name.task_id, name.stream_id) == (
        op_type, op_name, task, stream)
    assert (name.timestamp, name.extra, name.file_name) == (stamp, tuple(extra), file_name)


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
        "1005,..\n")
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
    names = [f"Add.model_add.5.0.{TS + 300}", f"Add.model_add.9.0.{TS + 100}",
             f"Relu.model_relu.6.0.{TS + 150}", f"Add.model_add.7.0.{TS + 200}"]
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


# --- steps and trees ------------------------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    (None, None), ("", None), ("  ", None), ("0", {0}), ("0|5|10", {0, 5, 10}),
    (" 0 | 5 ", {0, 5}), ("3-5|9", {3, 4, 5, 9}), (7, {7}), ([1, 2], {1, 2}),
])
def test_parse_step_spec(spec, expected):
    result = parse_step_spec(spec)
    assert result == (None if expected is None else frozenset(expected))


@pytest.mark.parametrize("spec", ["a", "0|", "-1", "5-3", "1,2", True, "0-99999999"])
def test_parse_step_spec_rejects(spec):
    with pytest.raises(PrecisionToolError, match="TF_DUMP_STEP"):
        parse_step_spec(spec)


@given(st.sets(st.integers(0, 10**9), min_size=1, max_size=10))
def test_parse_step_spec_round_trip(steps):
    assert parse_step_spec("|".join(map(str, steps))) == frozenset(steps)


def _layout(root: Path) -> None:
    for run, devices, steps in [("20240101000000", [0, 1], [0, 1, 5]),
                                ("20240612103000", [0, 1], [0, 5, 10])]:
        for device in devices:
            for step in steps:
                model = f"ge_default_{run}_1"
                _touch(root / run / str(device) / model / "1" / str(step),
                       f"Add.model_add.5.0.{TS + step}")
    _touch(root / "backup" / "0" / "m" / "1" / "0", f"Add.model_add.5.0.{TS}")


def test_tree_lists_and_selects(tmp_path):
    _layout(tmp_path)
    tree = DumpTree(tmp_path)
    assert tree.runs() == ["20240101000000", "20240612103000", "backup"]
    assert tree.newest_run() == "20240612103000"
    assert tree.devices() == [0, 1]
    assert tree.steps(run="20240101000000") == [0, 1, 5]
    assert tree.models(run="backup") == ["m"]
    default = tree.select()
    assert {(s.run, s.device, s.step) for s in default} == {
        ("20240612103000", d, s) for d in (0, 1) for s in (0, 5, 10)}
    picked = tree.select(steps="0|5", device="1")
    assert [(s.run, s.device, s.step) for s in picked] == [
        ("20240612103000", 1, 0), ("20240612103000", 1, 5)]
    old = tree.select(run="20240101000000", steps=1)
    assert [(s.device, s.step) for s in old] == [(0, 1), (1, 1)]
    assert [s.model_name for s in tree.select(run="backup")] == ["m"]
    assert tree.select(steps="42") == []
    assert tree.select(run="19990101000000") == []


def test_two_devices_with_identical_file_names_are_both_kept(tmp_path):
    name = f"Add.model_add.5.0.{TS}"
    for device in ("0", "1"):
        _touch(tmp_path / "20240612103000" / device / "g" / "1" / "0", name)
    tree = DumpTree(tmp_path)
    listings = tree.listings(tree.select(steps="0"))
    assert [s.device for s in listings] == [0, 1]
    paths = [ref.path for listing in listings.values() for ref in listing.files]
    assert len(paths) == 2 and len(set(paths)) == 2
    assert {p.name for p in paths} == {name}


def test_flat_directory_is_one_step(tmp_path):
    flat = tmp_path / "flat"
    _touch(flat, f"Add.model_add.5.0.{TS}", f"Relu.model_relu.6.0.{TS + 1}")
    tree = DumpTree(flat)
    (step,) = tree.select(steps="0")  # an unknown step passes any step filter
    assert (step.run, step.device, step.model_name, step.model_id, step.step) == (
        None, None, None, None, None)
    assert step.path == flat
    assert len(tree.listing(step).files) == 2


def test_partial_tree_labels_are_right_aligned(tmp_path):
    _touch(tmp_path / "dump" / "3" / "7", f"Add.model_add.5.0.{TS}")
    (step,) = DumpTree(tmp_path / "dump").select()
    assert (step.model_id, step.step) == (3, 7)
    assert step.device is None and step.run is None


def test_empty_fifth_level_dir_is_still_a_step(tmp_path):
    (tmp_path / "20240612103000" / "0" / "g" / "1" / "0").mkdir(parents=True)
    (step,) = DumpTree(tmp_path).select()
    assert step.step == 0
    assert DumpTree(tmp_path).listing(step).files == []


def _deny(monkeypatch, locked: Path) -> None:
    """Make listing ``locked`` fail as an unreadable directory does (works even as root)."""
    real = os.scandir

    def scandir(path="."):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_unreadable_subdir_is_skipped(tmp_path, monkeypatch):
    _touch(tmp_path / "20240612103000" / "0" / "g" / "1" / "0", f"Add.a.5.0.{TS}")
    locked = tmp_path / "20240612103000" / "1"
    locked.mkdir()
    _deny(monkeypatch, locked)
    tree = DumpTree(tmp_path)
    assert [s.device for s in tree.select()] == [0]
    assert tree.skipped == [(locked, "cannot list directory: Permission denied")]


def test_unreadable_root_or_step_is_a_clear_error(tmp_path, monkeypatch):
    _touch(tmp_path, f"Add.a.5.0.{TS}")
    _deny(monkeypatch, tmp_path)
    with pytest.raises(PrecisionToolError, match="Permission denied") as err:
        DumpTree(tmp_path)
    assert err.value.path == str(tmp_path)
    with pytest.raises(PrecisionToolError, match="Permission denied"):
        list_dump_files(tmp_path)
