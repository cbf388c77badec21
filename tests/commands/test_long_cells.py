"""Issue 27.6 through the real CLI: whatever ``vc`` writes, the commands that read it read.

A fused op with 3,000 TF ops fused into it gets a GroundTruth cell of some 150 KiB, over the
csv module's default field limit (131072 characters); ``vcs``, ``report``, ``ac`` and ``why``
read that CSV as they read any other.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.netdata import NetOp, write_net

FUSED = "model/big/Fused"
FUSED_NAMES = [f"model/block/fused_part_{i:05d}/some_long_op_name" for i in range(3000)] + ["model/big/last"]


def _tool(root, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.update(PYTHONPATH=str(REPO_ROOT), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root.parent,
    )


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """A data root whose broken fused op has 3,001 original op names, compared by ``vc``."""
    root = write_net(
        tmp_path_factory.mktemp("long_cells") / "precision_data",
        [
            NetOp("model/a/Relu"),
            NetOp(FUSED, "Gelu", tf_name="model/big/last", original_op_names=FUSED_NAMES, broken=True),
            NetOp("model/c/Relu"),
        ],
    )
    done = _tool(root, "vc")
    assert done.returncode == 1, done.stderr  # the fused op is flagged
    return root


def test_vc_writes_a_ground_truth_cell_over_the_csv_field_limit(compared):
    """The premise: the cell really is longer than the csv module's default limit."""
    (path,) = (compared / "temp" / "vector_compare").glob("*/*.csv")
    text = path.read_text(encoding="utf-8")
    assert ",".join(FUSED_NAMES) in text
    assert len(",".join(FUSED_NAMES)) > 131072 == csv.field_size_limit()


def test_vcs_reads_it(compared):
    done = _tool(compared, "vcs")
    assert done.returncode == 1, done.stderr  # flagged
    assert f"first operator that introduces the error: {FUSED} (Gelu)" in done.stdout
    assert FUSED_NAMES[-2] in done.stdout  # the cell is read whole


def test_report_reads_it(compared):
    done = _tool(compared, "report")
    assert done.returncode == 0, done.stderr
    (page,) = (compared / "temp" / "report").glob("*/index.html")
    assert FUSED in page.read_text(encoding="utf-8")


def test_ac_reads_it(compared):
    done = _tool(compared, "ac")
    assert done.returncode == 1, done.stderr  # flagged
    assert "cannot read" not in done.stdout + done.stderr
    assert f"first operator that introduces the error: {FUSED} (Gelu)" in done.stdout


def test_why_reads_it(compared):
    done = _tool(compared, "why", "--json")
    assert done.returncode in (0, 1), done.stderr
    diagnoses = json.loads(done.stdout)
    assert [d["op"] for d in diagnoses][:1] == [FUSED]
