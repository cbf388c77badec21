"""Issue 27.7 through the real CLI: ``vc`` gives no number without a reason.

A golden tensor of dates is not compared, and its row says why; a float64 op whose values are
so large that their sums of squares overflow float64 gets its metrics (cosine 1.0 for identical
tensors), not a bare NaN.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from precision_tool.compare.result_read import read_result_csv
from precision_tool.formats.dump_write import TensorSpec, write_dump
from tests.conftest import REPO_ROOT
from tests.netdata import SHAPE, STEP_REL, chain, write_net

OPS = ["model/a/Relu", "model/b/Relu", "model/c/Relu"]


def _vc(root) -> tuple[subprocess.CompletedProcess, dict]:
    """``vc`` on ``root``; (the run, its rows by TensorIndex)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.update(PYTHONPATH=str(REPO_ROOT), COLUMNS="200")
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), "vc"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root.parent,
    )
    (path,) = (root / "temp" / "vector_compare").glob("*/*.csv")
    return done, {row.tensor_index: row for row in read_result_csv(path)}


def _golden(root, tf_name: str):
    (path,) = (root / "tf" / "dump").glob(f"{tf_name.replace('/', '_')}.0.*.npy")
    return path


def test_a_golden_of_dates_is_not_compared_and_its_row_says_why(tmp_path):
    root = write_net(tmp_path / "precision_data", chain(OPS))
    dates = _golden(root, "model/b/Relu")
    np.save(dates, np.arange(np.prod(SHAPE)).reshape(SHAPE).astype("datetime64[s]"))
    done, rows = _vc(root)
    assert done.returncode == 0, done.stderr
    row = rows["model/b/Relu:output:0"]
    assert not row.compared and row.metrics == {}
    assert row.fail_reason == f"{dates}: {dates.name}: datetime64[s] data (dates and times) is not compared"
    assert rows["model/c/Relu:output:0"].cosine == pytest.approx(1.0, abs=1e-3)  # the run goes on


def test_identical_huge_float64_tensors_have_cosine_one(tmp_path):
    root = write_net(tmp_path / "precision_data", chain(OPS))
    huge = np.full(SHAPE, 1e300)
    (dump,) = (root / STEP_REL).glob("Relu.model_b_Relu.*")
    write_dump(dump, "model/b/Relu", [TensorSpec(huge, "DOUBLE")], [TensorSpec(huge, "DOUBLE")])
    np.save(_golden(root, "model/b/Relu"), huge)
    done, rows = _vc(root)
    assert done.returncode == 0, done.stderr
    row = rows["model/b/Relu:output:0"]
    assert row.fail_reason == ""
    assert row.cosine == pytest.approx(1.0, abs=1e-6)
    for name in ("MaxAbsoluteError", "RelativeEuclideanDistance", "RootMeanSquareError", "MeanAbsoluteError"):
        assert row.metric(name) == 0.0, name
