"""msprobe calls read for the verdict's replay and ``why``: their tensor sides in the plan's
slot order, their arguments (values and keyword arguments), the replay's local check, and what
happens when something cannot be read. The trees are written by the tests
(:mod:`tests.compare.msprobe_trees`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precision_tool.compare import msprobe_replay
from precision_tool.compare.judged import local_check
from precision_tool.compare.msprobe_plan import read_sides, tensor_names
from precision_tool.compare.msprobe_replay import MsprobeDumps, find_launch, msprobe_dumps
from precision_tool.compare.replay import ReplayError
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.msprobe_tree import find_tree
from tests.compare.msprobe_trees import write_rank
from tests.compare.test_torch_api import ref_conv_nchw
from tests.conftest import make_context

CONV = "Functional.conv2d.0.forward"
LINEAR = "Functional.linear.0.forward"


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float16)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float16)
    b = rng.standard_normal(3).astype(np.float16)
    return x, w, b


def _conv_out(x, w, b):
    return ref_conv_nchw(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), (2, 2), (1, 1, 1, 1))


@pytest.fixture
def tree(tmp_path):
    """NPU and bench ranks of a conv2d with stride and padding as values and the bias as a
    keyword argument (the NPU's output right), then a linear whose NPU output is wrong."""
    x, w, b = _arrays()
    y = _conv_out(x, w, b).astype(np.float16)
    flat = y.reshape(1, -1)[:, :16].astype(np.float16)
    lw = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float16)
    right = (flat.astype(np.float64) @ lw.T.astype(np.float64)).astype(np.float16)
    wrong = right.copy()
    wrong[0, 1] = -wrong[0, 1] + 3
    for side, out in (("npu", wrong), ("bench", right)):
        write_rank(
            tmp_path / side / "step0" / "rank0",
            [
                (CONV, [x, w, None, [2, 2], [1, 1]], [y], {"bias": b}),
                (LINEAR, [flat, lw], [out]),
            ],
            framework="pytorch",
        )
    context, _ = make_context(tmp_path)
    dumps = MsprobeDumps(tmp_path / "npu" / "step0" / "rank0", tmp_path / "bench" / "step0" / "rank0")
    return context, dumps, tmp_path


def test_sides_are_the_rows_slots(tree):
    context, dumps, root = tree
    launch = find_launch(context, dumps, CONV)
    labels = [f"{CONV}:{side.label}" for side in (*launch.inputs, *launch.outputs)]
    rank = lambda side: find_tree(root / side).ranks[0]  # noqa: E731
    rows = [k for k in tensor_names(read_sides(rank("npu"), rank("bench"), None)) if k.startswith(CONV)]
    assert labels == rows == [f"{CONV}:input:0", f"{CONV}:input:1", f"{CONV}:input:2", f"{CONV}:output:0"]
    assert launch.inputs[2].leaf.name == "input_kwargs.bias"
    assert launch.op_type == "Functional.conv2d" and launch.noise_type == "Conv2D"
    assert launch.run_dtype == np.float16


def test_a_call_is_replayed_from_its_values_and_keywords(tree):
    context, dumps, _ = tree
    launch = find_launch(context, dumps, CONV)
    inputs = [side.npu() for side in launch.inputs]
    (replayed,), label, notes = launch.replay(inputs, [side.npu() for side in launch.outputs])
    np.testing.assert_allclose(replayed, _conv_out(*_arrays()), rtol=1e-12, atol=1e-12)
    assert label == "Functional.conv2d" and notes == []


def test_the_local_check_tells_the_wrong_call_from_the_right_one(tree):
    context, dumps, _ = tree
    right = local_check(find_launch(context, dumps, CONV), 0)
    wrong = local_check(find_launch(context, dumps, LINEAR), 0)
    assert not right.beyond and right.red < right.noise.limit
    assert wrong.beyond and wrong.red > 0.05 and wrong.replayed == "Functional.linear"


def test_the_bench_tensors_at_the_same_place_are_the_goldens(tree):
    context, dumps, _ = tree
    launch = find_launch(context, dumps, CONV, CONV)
    side = launch.inputs[2]
    assert side.source_text == f"{CONV}.input.bias"
    np.testing.assert_array_equal(side.golden(), _arrays()[2])
    assert find_launch(context, dumps, CONV).inputs[2].golden() is None  # no bench call named


def test_an_unreadable_input_is_a_reason_and_leaves_the_input_rule(tree):
    context, dumps, _ = tree
    (dumps.npu / "dump_tensor_data" / f"{LINEAR}.input.1.npy").unlink()
    launch = find_launch(context, dumps, LINEAR)
    with pytest.raises(PrecisionToolError, match="input.1.npy"):
        launch.inputs[1].npu()
    with pytest.raises(ReplayError, match="input:1 cannot be read"):
        launch.replay([launch.inputs[0].npu(), None], [None])
    assert local_check(launch, 0) is None


def test_statistics_only_tensors_have_no_file(tree):
    context, dumps, _ = tree
    path = dumps.npu / "dump.json"
    doc = json.loads(path.read_text())
    for leaf in doc["data"][LINEAR]["input_args"]:
        del leaf["data_name"]
    path.write_text(json.dumps(doc))
    context.reload()
    launch = find_launch(context, dumps, LINEAR)
    with pytest.raises(PrecisionToolError, match="has no tensor file"):
        launch.inputs[0].npu()
    assert local_check(launch, 0) is None


def test_a_call_not_in_the_dump_and_a_missing_dump(tree, tmp_path):
    context, dumps, _ = tree
    assert find_launch(context, dumps, "Functional.linear.7.forward") is None
    with pytest.raises(PrecisionToolError, match="dump.json"):
        find_launch(context, MsprobeDumps(tmp_path / "nowhere"), LINEAR)


def test_dump_json_is_read_once_per_session_and_again_once_changed(tree, monkeypatch):
    context, dumps, _ = tree
    reads = []
    real = msprobe_replay.read_dump
    monkeypatch.setattr(msprobe_replay, "read_dump", lambda path: reads.append(path) or real(path))
    find_launch(context, dumps, CONV)
    find_launch(context, dumps, LINEAR)
    assert len(reads) == 1
    path = dumps.npu / "dump.json"
    path.write_text(path.read_text() + "\n")
    assert find_launch(context, dumps, LINEAR) is not None and len(reads) == 2


def test_msprobe_dumps_are_named_by_the_manifest(tmp_path):
    csv = tmp_path / "result_1.csv"
    csv.write_text("")
    assert msprobe_dumps(csv) is None
    entry = {"csv": csv.name, "label": "step 0, rank 0", "npu_dump": "/a/npu/rank0", "bench_dump": "/a/bench/rank0"}
    (tmp_path / "comparisons.json").write_text(json.dumps({"schema": 1, "comparisons": [entry]}))
    found = msprobe_dumps(csv)
    assert (str(found.npu), str(found.bench)) == ("/a/npu/rank0", "/a/bench/rank0")
