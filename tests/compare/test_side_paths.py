"""A task's sides name their files by the path's text, whatever pairing made them: the tasks
travel to the workers pickled, and a ``pathlib`` path is rebuilt there part by part (about
15 us a task on the 4 GB GE bench network, against 2.5 us with text: docs/performance.md)."""

from __future__ import annotations

import os
import pickle
import shutil

import pytest

from precision_tool.compare.golden_pairing import FileSide, PairTask
from precision_tool.compare.plan import plan_comparisons
from precision_tool.sample.msprobe import write_msprobe_sample
from tests.conftest import make_context


def _sides(tasks: list[PairTask]) -> list:
    return [side for task in tasks for side in (task.left, task.right) if isinstance(side, FileSide)]


def _planned(root, **where) -> list[PairTask]:
    context, _ = make_context(root)
    return [task for comparison in plan_comparisons(context, **where) for task in comparison.tasks]


def _assert_text_paths(tasks: list[PairTask]) -> None:
    sides = _sides(tasks)
    assert sides, "the pairing named no file"
    assert {type(side.path) for side in sides} == {str}
    assert all(os.path.isfile(side.path) for side in sides)  # the files the dumps hold
    assert b"pathlib" not in pickle.dumps(tasks)  # nothing for a worker to rebuild part by part


def test_graph_pairing_names_dump_files_and_goldens_by_text(sample_data):
    _assert_text_paths(_planned(sample_data))


@pytest.mark.parametrize("kind", ["npu", "npy"])
def test_directory_pairings_name_their_files_by_text(sample_data, tmp_path, kind):
    source = sample_data / ("npu/debug_0" if kind == "npu" else "tf/dump")
    other = tmp_path / "other"
    shutil.copytree(source, other)
    _assert_text_paths(_planned(sample_data, left=str(source), right=str(other)))


@pytest.mark.parametrize("framework", ["pytorch", "mindspore"])
def test_msprobe_pairing_names_tensor_files_by_text(tmp_path, framework):
    root = write_msprobe_sample(tmp_path / framework, framework)
    _assert_text_paths(_planned(root))
