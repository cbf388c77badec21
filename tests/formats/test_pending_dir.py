"""PendingDirectory: a directory that appears whole under its name or not at all; the output
root's tree removal and renames that never follow a link; a dead writer's directory swept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool import PrecisionToolError
from precision_tool.formats import output_root
from precision_tool.formats.held_dir import temp_name
from precision_tool.formats.output_root import OutputRoot
from precision_tool.formats.pending_dir import PendingDirectory


@pytest.fixture(params=["openat", "lstat"])
def walk(request, monkeypatch):
    """Each test with descriptors (openat) and with the path-checking fallback."""
    if request.param == "lstat":
        monkeypatch.setattr(output_root, "_AT", False)
    return request.param


def _names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def test_the_directory_takes_its_name_only_when_committed(tmp_path, walk):
    root = OutputRoot(tmp_path / "temp")
    pending = PendingDirectory(root, "report/explorer")
    root.write_text(pending.path / "run" / "a.json", "{}")
    assert not (tmp_path / "temp/report/explorer").exists()
    (hidden,) = _names(tmp_path / "temp" / "report")
    assert hidden.startswith(".explorer.") and hidden.endswith(".part")
    assert pending.final(pending.path / "run" / "a.json") == root.path / "report/explorer/run/a.json"
    assert pending.commit() == root.path / "report" / "explorer"
    assert _names(tmp_path / "temp" / "report") == ["explorer"]
    assert (tmp_path / "temp/report/explorer/run/a.json").read_text() == "{}"


def test_a_commit_replaces_an_earlier_directory_whole(tmp_path, walk):
    root = OutputRoot(tmp_path)
    root.write_text("explorer/old/a.json", "old")
    root.write_text("explorer/b.json", "old")
    pending = PendingDirectory(root, "explorer")
    root.write_text(pending.path / "new" / "a.json", "new")
    pending.commit()
    assert _names(tmp_path) == ["explorer"]  # the earlier one moved aside and removed
    assert [str(p.relative_to(tmp_path)) for p in sorted(tmp_path.rglob("*"))] == [
        "explorer",
        "explorer/new",
        "explorer/new/a.json",
    ]


def test_a_discard_leaves_nothing_and_keeps_the_earlier_directory(tmp_path, walk):
    root = OutputRoot(tmp_path)
    root.write_text("explorer/a.json", "old")
    pending = PendingDirectory(root, "explorer")
    root.write_text(pending.path / "x" / "y" / "a.json", "new")
    pending.discard()
    assert _names(tmp_path) == ["explorer"] and (tmp_path / "explorer/a.json").read_text() == "old"


def test_removing_a_tree_never_follows_a_link(tmp_path, walk):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("precious")
    root = OutputRoot(tmp_path / "temp")
    root.write_text("tree/sub/a.txt", "x")
    (tmp_path / "temp/tree/sub/link").symlink_to(outside, target_is_directory=True)
    (tmp_path / "temp/tree/file-link").symlink_to(outside / "victim")
    root.remove_tree("tree")
    assert _names(tmp_path / "temp") == [] and _names(outside) == ["victim"]
    assert (outside / "victim").read_text() == "precious"
    root.remove_tree("absent")  # nothing, and no error


def test_a_link_planted_at_the_name_is_replaced_not_followed(tmp_path, walk):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = OutputRoot(tmp_path / "temp")
    root.directory()
    (tmp_path / "temp" / "explorer").symlink_to(outside, target_is_directory=True)
    pending = PendingDirectory(root, "explorer")
    root.write_text(pending.path / "a.json", "new")
    pending.commit()
    assert not (tmp_path / "temp/explorer").is_symlink() and _names(tmp_path / "temp/explorer") == ["a.json"]
    assert _names(outside) == []


def test_a_dead_writers_directory_is_swept_and_a_live_ones_is_not(tmp_path):
    root = OutputRoot(tmp_path / "temp")
    dead = int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
        ).stdout
    )
    name = temp_name(tmp_path / "temp" / "report" / "explorer").name
    stale = tmp_path / "temp" / "report" / name.replace(f".{os.getpid()}.", f".{dead}.")
    root.write_text(stale / "run" / "a.json", "{}")
    live = PendingDirectory(root, "report/other")
    root.write_text(live.path / "a.json", "{}")
    assert root.remove_stale_parts() == 1
    assert _names(tmp_path / "temp" / "report") == [live.path.name]


def test_the_hidden_directory_is_made_under_the_root_only(tmp_path):
    with pytest.raises(PrecisionToolError, match="outside the output root"):
        PendingDirectory(OutputRoot(tmp_path / "temp"), tmp_path / "elsewhere")
