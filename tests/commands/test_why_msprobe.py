"""msprobe dumps through the real CLI: the replay decides which calls introduce the error and
which carry it in (``vcs``), and ``why`` says whether a call computes the error itself.

The tree (float16, PyTorch keys): a clean relu; a linear whose NPU output is not what its own
inputs give (it introduces); ``x * 2.0`` of that output, computed right (it inherits); a
softmax over the product with ``dim`` as a keyword, wrong itself although its input already
differs (the replay says it introduces, where the input rule would say it inherits).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.compare.msprobe_trees import write_rank
from tests.conftest import REPO_ROOT

RELU, LINEAR, MUL, SOFTMAX = (
    "Functional.relu.0.forward",
    "Functional.linear.0.forward",
    "Tensor.__mul__.0.forward",
    "Functional.softmax.0.forward",
)


def cli(root, *words: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *words],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
    )


def _softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _calls(x, w, b, wrong: bool):
    f16 = np.float16
    relu_in = np.linspace(-1, 1, 12, dtype=f16).reshape(3, 4)
    y = (x.astype(np.float64) @ w.T.astype(np.float64) + b).astype(f16)
    if wrong:
        y[:, 2] = (y[:, 2] * -3 + 1).astype(f16)
    z = (y.astype(np.float64) * 2.0).astype(f16)
    s = _softmax(z.astype(np.float64))
    if wrong:
        s = s[:, ::-1]  # the softmax's own defect: its output reversed
    return [
        (RELU, [relu_in], [np.maximum(relu_in, 0)]),
        (LINEAR, [x, w, b], [y]),
        (MUL, [y, 2.0], [z]),
        (SOFTMAX, [z], [s.astype(f16)], {"dim": -1}),
    ]


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    root = tmp_path_factory.mktemp("msprobe_replay")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 32)).astype(np.float16)
    w = (rng.standard_normal((8, 32)) / 4).astype(np.float16)
    b = rng.standard_normal(8).astype(np.float16)
    write_rank(root / "npu" / "step0" / "rank0", _calls(x, w, b, True), framework="pytorch")
    write_rank(root / "bench" / "step0" / "rank0", _calls(x, w, b, False), framework="pytorch")
    done = cli(root, "vc")
    assert done.returncode in (0, 1), done.stderr
    vcs = cli(root, "vcs", "--json")
    assert vcs.returncode in (0, 1), vcs.stderr
    ops = {op["op"]: op for result in json.loads(vcs.stdout)["results"] for op in result["flagged"]}
    return root, ops


def test_vcs_decides_by_replay(compared):
    _, ops = compared
    assert set(ops) == {LINEAR, MUL, SOFTMAX}  # the relu is clean
    assert {name: (op["state"], op["decided_by"]) for name, op in ops.items()} == {
        LINEAR: ("introduces", "replay"),
        MUL: ("inherits", "replay"),
        SOFTMAX: ("introduces", "replay"),
    }
    assert ops[LINEAR]["replay"]["replayed"] == "Functional.linear" and ops[LINEAR]["replay"]["beyond"]
    assert not ops[MUL]["replay"]["beyond"] and ops[MUL]["replay"]["red"] <= ops[MUL]["replay"]["rounding_limit"]


def test_vcs_text_names_the_replay(compared):
    root, _ = compared
    done = cli(root, "vcs")
    text = " ".join(done.stdout.split())
    assert "introduces the error (replay of Functional.linear: local RED" in text
    assert "no replay: decided by its inputs" not in text


def test_why_the_linear_computes_its_error(compared):
    root, _ = compared
    done = cli(root, "why", LINEAR, "--json")
    assert done.returncode == 1, done.stderr
    (entry,) = json.loads(done.stdout)
    assert entry["op"] == LINEAR and entry["type"] == "Functional.linear" and entry["cause"] == "computation"
    detail = entry["replay"]["detail"]
    assert detail.startswith("computed here: replay of Functional.linear: local RED ")
    assert "it ran in float16" in detail and entry["replay"]["npu_vs_replay_cosine"] < 0.99
    assert entry["replay"]["golden_vs_replay_cosine"] > 0.9999


def test_why_the_product_carries_it_in(compared):
    root, _ = compared
    done = cli(root, "why", "__mul__", "--json")  # a part of one key names it
    (entry,) = json.loads(done.stdout)
    assert entry["op"] == MUL and entry["cause"] == "input"
    assert entry["replay"]["detail"].startswith("carried in")
    assert entry["replay"]["npu_vs_replay_cosine"] > 0.9999


def test_why_without_an_op_explains_the_introducers(compared):
    root, _ = compared
    done = cli(root, "why")
    text = " ".join(done.stdout.split())
    assert "not in the Build graph" not in text
    assert text.count("computed here") == 2 and LINEAR in text and SOFTMAX in text


@pytest.mark.parametrize(
    "name,message",
    [
        ("forward", "is part of 4 calls' keys"),
        ("Functional.gelu.0.forward", "no call of the newest result's msprobe dumps is named"),
    ],
)
def test_names_that_fit_no_one_call_are_one_line(compared, name, message):
    root, _ = compared
    done = cli(root, "why", name)
    assert done.returncode == 2 and message in done.stderr + done.stdout
    assert len((done.stderr + done.stdout).strip().splitlines()) == 1
