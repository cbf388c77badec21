"""Issues 12.7 and 12.9 through the real CLI: ops are found by the TensorFlow names fused into
them, an unknown name gets close names, and ``ni NAME -d -s 2`` (the original tool's syntax)
explains what ``-d`` means here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.netdata import NetOp, write_net

GELU_PARTS = [
    "model/mlp/gelu/mul",
    "model/mlp/gelu/Pow",
    "model/mlp/gelu/mul_1",
    "model/mlp/gelu/add",
    "model/mlp/gelu/mul_2",
    "model/mlp/gelu/Tanh",
    "model/mlp/gelu/add_1",
    "model/mlp/gelu/mul_3",
]


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlp") / "precision_data"
    return write_net(
        root,
        [
            NetOp(
                "model/mlp/fc1/BiasAdd", "MatMulV2", original_op_names=["model/mlp/fc1/MatMul", "model/mlp/fc1/BiasAdd"]
            ),
            NetOp("model/mlp/gelu/Gelu", "Gelu", tf_name="model/mlp/gelu/mul_3", original_op_names=GELU_PARTS),
            NetOp(
                "model/mlp/fc2/BiasAdd", "MatMulV2", original_op_names=["model/mlp/fc2/MatMul", "model/mlp/fc2/BiasAdd"]
            ),
        ],
    )


def _tool(root, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.update(PYTHONPATH=str(REPO_ROOT), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=root.parent,
    )


def test_ni_finds_the_fused_npu_op_by_its_tf_name(mlp):
    done = _tool(mlp, "ni", "model/mlp/gelu/mul_3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "model/mlp/gelu/mul_3 is fused into model/mlp/gelu/Gelu"
    assert lines[1].split() == ["op", "model/mlp/gelu/Gelu"]
    assert any(line.split()[:2] == ["type", "Gelu"] for line in lines)


def test_ni_takes_the_file_spelling_of_a_tf_name_too(mlp):
    done = _tool(mlp, "ni", "model_mlp_gelu_Tanh")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "model/mlp/gelu/Tanh is fused into model/mlp/gelu/Gelu"


def test_an_npu_name_wins_over_a_tf_name(mlp):
    done = _tool(mlp, "ni", "model/mlp/fc1/BiasAdd")  # the NPU op's own name, and a TF op fused in it
    assert done.returncode == 0
    assert "is fused into" not in done.stdout


def test_ls_n_finds_the_fused_op_and_says_which_tf_op_matched(mlp):
    done = _tool(mlp, "ls", "-n", "mul_3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "1 op(s)"
    assert "model/mlp/gelu/Gelu" in lines[0]
    assert lines[0].endswith("model/mlp/gelu/mul_3 is fused into model/mlp/gelu/Gelu")


def test_a_tf_name_fused_into_two_ops_is_ambiguous(tmp_path):
    root = write_net(
        tmp_path / "precision_data",
        [
            NetOp("a/Relu", "Relu", tf_name="a/relu", original_op_names=["shared/x", "a/relu"]),
            NetOp("b/Relu", "Relu", tf_name="b/relu", original_op_names=["shared/x", "b/relu"]),
        ],
    )
    done = _tool(root, "ni", "shared/x")
    assert done.returncode == 2
    assert "'shared/x' is fused into several operators; possible operators: a/Relu, b/Relu" in done.stderr


def test_an_unknown_name_gets_close_names(mlp):
    done = _tool(mlp, "ni", "model/mlp/gelu/mull_3")
    assert done.returncode == 2
    error = done.stderr.strip()
    assert error.startswith("error: no operator matches 'model/mlp/gelu/mull_3'; did you mean ")
    assert "model/mlp/gelu/mul_3 (fused into model/mlp/gelu/Gelu)" in error
    typo = _tool(mlp, "ni", "model/mlp/fc2/BiasAd")  # a substring: found, not suggested
    assert typo.returncode == 0
    wrong_scope = _tool(mlp, "ni", "model/mlp/fc3/BiasAdd")
    assert wrong_scope.returncode == 2 and "model/mlp/fc2/BiasAdd" in wrong_scope.stderr


def test_nothing_close_gives_no_suggestion(mlp):
    done = _tool(mlp, "ni", "zzzzqqqq")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: no operator matches 'zzzzqqqq'"


def test_the_original_tools_d_flag_is_explained(mlp):
    done = _tool(mlp, "ni", "model/mlp/gelu/Gelu", "-d", "-s", "2")
    assert done.returncode == 2
    error, usage = done.stderr.strip().splitlines()
    assert error.startswith(
        "error: ni: argument -d/--debug: expected one argument; here -d names an "
        "NPU debug dir (ni NAME -d debug_1); the original precision_tool's 'ni -d'"
    )
    assert "[-d DEBUG_DIR]" in usage
    assert "DEBUG_DIR" in _tool(mlp, "ni", "-h").stdout
    shown = _tool(mlp, "ni", "model/mlp/gelu/Gelu", "-d", "debug_0")
    assert shown.returncode == 0 and "model/mlp/gelu/Gelu" in shown.stdout
