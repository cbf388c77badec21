"""The training dump tree: step directories, their labels, step specs and selection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump_names import list_dump_files
from precision_tool.formats.tree import DumpTree, parse_step_spec
from tests.conftest import FIXTURES

SMALL_DUMP = FIXTURES / "small" / "precision_data" / "npu" / "debug_0" / "dump"
TS = 1718170000000000


@pytest.fixture
def small_dump() -> Path:
    return SMALL_DUMP


def _touch(directory: Path, *names: str, content: bytes = b"x") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(content)


# --- the small fixture ----------------------------------------------------------------------


def test_fixture_tree_labels(small_dump):
    tree = DumpTree(small_dump)
    assert tree.runs() == ["20240612103000"]
    assert tree.devices() == [0]
    assert tree.models() == ["ge_default_20240612103000_1"]
    assert tree.model_ids() == [1]
    assert tree.steps() == [0]
    (step,) = tree.select(steps="0")
    assert (step.run, step.device, step.model_name, step.model_id, step.step) == (
        "20240612103000",
        0,
        "ge_default_20240612103000_1",
        1,
        0,
    )
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
        "20240612103000",
        0,
        "ge_default_20240612103000_1",
        1,
        0,
    )
    assert step.path == step_path


# --- steps and trees ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, expected",
    [
        (None, None),
        ("", None),
        ("  ", None),
        ("0", {0}),
        ("0|5|10", {0, 5, 10}),
        (" 0 | 5 ", {0, 5}),
        ("3-5|9", {3, 4, 5, 9}),
        (7, {7}),
        ([1, 2], {1, 2}),
    ],
)
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
    for run, devices, steps in [("20240101000000", [0, 1], [0, 1, 5]), ("20240612103000", [0, 1], [0, 5, 10])]:
        for device in devices:
            for step in steps:
                model = f"ge_default_{run}_1"
                _touch(root / run / str(device) / model / "1" / str(step), f"Add.model_add.5.0.{TS + step}")
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
        ("20240612103000", d, s) for d in (0, 1) for s in (0, 5, 10)
    }
    picked = tree.select(steps="0|5", device="1")
    assert [(s.run, s.device, s.step) for s in picked] == [("20240612103000", 1, 0), ("20240612103000", 1, 5)]
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
    assert (step.run, step.device, step.model_name, step.model_id, step.step) == (None, None, None, None, None)
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
