"""A data root that does not exist, through the real CLI: every command that reads it says so in
one line (not "no comparison result", "no Build graph", "no such tensor"...), exits 2, and
creates nothing there; a command given its inputs and an output root elsewhere still runs."""

from __future__ import annotations

import numpy as np
import pytest

from precision_tool.status import ExitStatus
from tests.commands.test_why import cli

READERS = [
    "vcs",
    "vcs --json",
    "ls",
    "ls -t Conv2D",
    "ni resnet/conv1/Conv2D",
    "pt resnet/conv1/Conv2D",
    "cp resnet/conv1/Conv2D tf:resnet/conv1/Relu:0",
    "dc resnet/conv1/Conv2D",
    "vc",
    "ac",
    "ac -c",
    "ac --json",
    "why",
    "why resnet/conv1/Conv2D",
    "report",
]


@pytest.mark.parametrize("command", READERS)
def test_every_reader_of_a_missing_data_root_says_so_in_one_line(tmp_path, command):
    missing = tmp_path / "nowhere"
    done = cli("--data", str(missing), *command.split(), cwd=tmp_path)
    assert done.returncode == ExitStatus.ERROR, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        f"error: {missing}: no such data root (give --data DIR or set DATA_ROOT_DIR)"
    ], done.stderr
    assert done.stdout == "" and not missing.exists()


def test_explicit_inputs_with_an_output_root_elsewhere_need_no_data_root(tmp_path):
    left, right = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(left, np.arange(6, dtype=np.float32))
    np.save(right, np.arange(6, dtype=np.float32))
    missing = tmp_path / "nowhere"
    done = cli("--data", str(missing), "--out", str(tmp_path / "out"), "cp", str(left), str(right), cwd=tmp_path)
    assert done.returncode == ExitStatus.OK, done.stderr
    assert "cosine" in done.stdout and not missing.exists()
    done = cli("--data", str(missing), "--out", str(tmp_path / "out"), "pt", str(left), cwd=tmp_path)
    assert done.returncode == ExitStatus.OK, done.stderr
    assert (tmp_path / "out" / "pt").is_dir() and not missing.exists()
