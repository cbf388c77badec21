"""An msprobe data root through the Workspace: its sides as debug dirs, its rank directories as
models, tensor names as pt/cp take them, and each call's bench counterpart. The trees are
written here (tests/compare/msprobe_trees.py), so every array and name is the test's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision_tool.compare.manifest import MANIFEST_NAME, CsvInfo
from precision_tool.compare.msprobe_calls import bench_counterpart, call_tensors
from precision_tool.compare.msprobe_tensors import find_msprobe_tensor
from precision_tool.compare.tensor_names import resolve_tensor
from precision_tool.compare.workspace import MSPROBE_BENCH, MSPROBE_NPU
from precision_tool.errors import PrecisionToolError
from tests.compare.msprobe_trees import write_rank
from tests.conftest import make_context

X = np.arange(8, dtype=np.float32).reshape(2, 4)
W = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
Y = X @ W
MATMUL, RELU = "Functional.matmul.0.forward", "Functional.relu.0.forward"


def _calls(out=Y):
    return [(MATMUL, [X, W], [out]), (RELU, [out], [np.maximum(out, 0)])]


@pytest.fixture
def root(tmp_path) -> Path:
    data = tmp_path / "precision_data"
    write_rank(data / "npu" / "step0" / "rank0", _calls(Y * 2))
    write_rank(data / "bench" / "step0" / "rank0", _calls())
    return data


def test_the_sides_are_debug_dirs_and_the_ranks_models(root):
    context, _ = make_context(root)
    assert context.is_msprobe and context.debug_names() == [MSPROBE_NPU]
    (model,) = context.models(MSPROBE_NPU)
    assert model.name == "step0/rank0" and [op.name for op in model.graphs[0].ops] == [MATMUL, RELU]
    assert context.models("debug_0") == []  # no GE graph here
    (bench,) = context.models(MSPROBE_BENCH)
    assert bench.source_path == root / "bench" / "step0" / "rank0" / "dump.json"
    ref = context.find_op(RELU)
    assert ref.debug == MSPROBE_NPU and ref.model is model  # loaded once
    assert [(r.src, r.index) for r in ref.op.inputs] == [(MATMUL, 0)]


def test_a_ge_data_root_is_not_msprobe(sample_data):
    context, _ = make_context(sample_data)
    assert not context.is_msprobe and context.debug_names() == ["debug_0", "debug_1"]


def test_call_tensors_name_their_files(root):
    context, _ = make_context(root)
    ref = context.find_op(MATMUL)
    items = call_tensors(ref.model, ref.op)
    assert [(t.index_name, t.name) for t in items] == [
        ("input:0", f"{MATMUL}.input.0"),
        ("input:1", f"{MATMUL}.input.1"),
        ("output:0", f"{MATMUL}.output.0"),
    ]
    assert items[1].path == root / "npu/step0/rank0/dump_tensor_data" / f"{MATMUL}.input.1.npy"


@pytest.mark.parametrize(
    "name, kind_slot",
    [
        (f"{MATMUL}.input.1", "input:1"),
        (f"{MATMUL}:input:1", "input:1"),
        (MATMUL, "output:0"),
        (f"{MATMUL}.output.0.npy", "output:0"),
        (f"npu:step0/rank0:{MATMUL}.input.1", "input:1"),
    ],
)
def test_tensor_names_in_every_form(root, name, kind_slot):
    context, _ = make_context(root)
    found, _ = find_msprobe_tensor(context, name)
    assert found.ref.op.name == MATMUL and found.tensor.index_name == kind_slot
    array = resolve_tensor(context, name).load()
    expected = {"input:1": W, "output:0": Y * 2}[kind_slot]
    np.testing.assert_array_equal(array, expected)


def test_bench_names_and_their_labels(root):
    context, _ = make_context(root)
    tensor = resolve_tensor(context, f"bench:{RELU}.input.0")
    assert tensor.label == f"bench:{RELU}.input.0"
    np.testing.assert_array_equal(tensor.load(), Y)


def test_a_name_in_several_ranks_is_ambiguous_and_lists_them(root):
    write_rank(root / "npu" / "step0" / "rank1", _calls())
    context, _ = make_context(root)
    with pytest.raises(
        PrecisionToolError, match=f"in several rank directories; give one: step0/rank0:{RELU}, step0/rank1:{RELU}"
    ):
        resolve_tensor(context, RELU)
    tensor = resolve_tensor(context, f"step0/rank1:{RELU}")
    assert tensor.label == f"step0/rank1:{RELU}.output.0"
    np.testing.assert_array_equal(tensor.load(), np.maximum(Y, 0))


def test_unknown_names_and_slots_are_one_line_each(root):
    context, _ = make_context(root)
    with pytest.raises(PrecisionToolError, match=f"matches 'Functional.matmul.1.forward'.*did you mean {MATMUL}"):
        resolve_tensor(context, "Functional.matmul.1.forward")
    with pytest.raises(PrecisionToolError, match="has no input:5 \\(it has: input:0, input:1, output:0\\)"):
        resolve_tensor(context, f"{MATMUL}:input:5")
    with pytest.raises(PrecisionToolError, match="no rank directory 'step3/rank0' in npu/"):
        resolve_tensor(context, f"step3/rank0:{MATMUL}")


def test_a_statistics_dump_has_no_tensor_file_and_says_where_the_statistics_are(root):
    path = root / "npu" / "step0" / "rank0" / "dump.json"
    doc = json.loads(path.read_text())
    for entry in doc["data"].values():
        for record in (*entry["input_args"], *entry["output"]):
            del record["data_name"]
    path.write_text(json.dumps(doc))
    context, _ = make_context(root)
    with pytest.raises(
        PrecisionToolError, match=f"has no tensor file: the dump holds statistics only \\(ni {RELU} shows them\\)"
    ):
        resolve_tensor(context, RELU)


def test_the_bench_counterpart_is_the_same_key_without_a_result(root):
    context, _ = make_context(root)
    found = bench_counterpart(context, context.find_op(RELU))
    assert found.ref.debug == MSPROBE_BENCH and found.ref.op.name == RELU
    assert "same key" in found.how


def test_the_bench_counterpart_is_the_newest_results_ground_truth(root):
    result = root / "temp" / "vector_compare" / "20260101000000"
    result.mkdir(parents=True)
    header = (
        "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
        "CosineSimilarity,CompareFailReason\n"
    )
    rows = f'1,Functional.relu,{RELU},float32,NaN,{MATMUL},float32,{RELU}:input:0,"[2,3]",1.0,\n'
    (result / "result_20260101000000.csv").write_text(header + rows)
    info = CsvInfo(
        "result_20260101000000.csv",
        "step 0, rank 0",
        npu_vs_npu=True,
        npu_dump=str(root / "npu/step0/rank0"),
        bench_dump=str(root / "bench/step0/rank0"),
    )
    (result / MANIFEST_NAME).write_text(json.dumps({"schema": 1, "comparisons": [info.__dict__]}))
    context, _ = make_context(root)
    found = bench_counterpart(context, context.find_op(RELU))
    assert found.ref.op.name == MATMUL and "GroundTruth of the newest result" in found.how
    assert context.result_op(RELU, result / "result_20260101000000.csv").op is context.find_op(RELU).op


def test_no_bench_dump_says_so(root):
    import shutil

    shutil.rmtree(root / "bench")
    context, _ = make_context(root)
    found = bench_counterpart(context, context.find_op(RELU))
    assert found.ref is None and "no msprobe dump in" in found.note


def test_a_results_calls_are_those_of_the_rank_it_compared(root):
    write_rank(root / "npu" / "step0" / "rank1", _calls())
    result = root / "temp" / "vector_compare" / "20260101000000"
    result.mkdir(parents=True)
    (result / "result_rank1.csv").write_text("Index,OpType,NPUDump,TensorIndex,CosineSimilarity\n")
    info = CsvInfo(
        "result_rank1.csv",
        "step 0, rank 1",
        device=1,
        npu_vs_npu=True,
        npu_dump=str(root / "npu/step0/rank1"),
        bench_dump=str(root / "bench/step0/rank0"),
    )
    (result / MANIFEST_NAME).write_text(json.dumps({"schema": 1, "comparisons": [info.__dict__]}))
    context, _ = make_context(root)
    ranks = context.models(MSPROBE_NPU)
    assert [m.name for m in ranks] == ["step0/rank0", "step0/rank1"]
    assert context.result_model(result / "result_rank1.csv") is ranks[1]
    assert context.result_op(RELU, result / "result_rank1.csv").model is ranks[1]
    assert context.find_op(RELU).model is ranks[0]  # without a result: the first rank
