"""Pairing: every NPU tensor gets its golden counterpart (or a reason), in execution order."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from precision_tool import read_golden, read_graph
from precision_tool.compare.golden_pairing import NpySide, ground_truth_text, pair_by_name, pair_with_graph
from precision_tool.formats.tree import DumpTree
from tests.conftest import FIXTURES

GRAPH = "npu/debug_0/graph/ge_proto_00000001_Build.txt"


def _pair(root):
    graph = read_graph(root / GRAPH).graphs[0]
    tree = DumpTree(root / "npu/debug_0/dump")
    (step,) = tree.select()
    return graph, pair_with_graph(graph, tree.listing(step), read_golden(root / "tf/dump"))


def test_fixture_pairs_match_the_reference_and_the_truth(fixture_data):
    _, tasks = _pair(fixture_data)
    reference = list(csv.DictReader(open(_reference())))
    ref_tensors = {r["TensorIndex"] for r in reference if r["TensorIndex"] != "NaN"}
    assert {t.tensor_index for t in tasks if t.tensor_index} == ref_tensors
    assert [t.index for t in tasks] == sorted(int(r["Index"]) for r in reference)
    truth = {t["tensor_id"]: t["golden_file"] for t in json.loads(_case().read_text())["tensors"]}
    for task in tasks:
        if task.tensor_index:
            assert isinstance(task.right, NpySide)
            assert Path(task.right.path).name == truth[task.tensor_index], task.tensor_index


def _reference():
    return FIXTURES / "small" / "reference_result.csv"


def _case():
    return FIXTURES / "small" / "case.json"


def test_ground_truth_column_matches_the_reference(fixture_data):
    graph, _ = _pair(fixture_data)
    reference = {int(r["Index"]): r["GroundTruth"] for r in csv.DictReader(open(_reference()))}
    for position, op in enumerate(graph.ops):
        assert ground_truth_text(op) == reference[position], op.name


def test_no_dump_ops_get_one_row_with_the_reason(sample_data):
    graph, tasks = _pair(sample_data)
    rows = [t for t in tasks if t.tensor_index is None]
    assert {t.npu_name for t in rows} == {op.name for op in graph.ops if op.type in ("Data", "Const", "NetOutput")}
    assert all("no dump file" in t.reason and not t.comparable for t in rows)


def test_inputs_step_over_inserted_cast_and_transdata(sample_data):
    _, tasks = _pair(sample_data)
    by_index = {t.tensor_index: t for t in tasks if t.tensor_index}
    assert Path(by_index["resnet/conv1/Conv2D:input:0"].right.path).name.startswith("input.0.")
    assert Path(by_index["trans_TransData_1:output:0"].right.path).name.startswith("input.0.")
    assert Path(by_index["resnet/dense/MatMul:input:0"].right.path).name.startswith("resnet_pool_Mean.0.")
    assert Path(by_index["resnet/conv1/Conv2D:output:0"].right.path).name.startswith("resnet_conv1_Relu.0.")
    assert by_index["resnet/conv1/Conv2D:input:1"].left.origin_format == "HWCN"


def test_missing_golden_gives_the_reason_and_star(sample_data):
    for path in (sample_data / "tf/dump").glob("resnet_add_add.*"):
        path.unlink()
    _, tasks = _pair(sample_data)
    row = next(t for t in tasks if t.tensor_index == "resnet/add/add:output:0")
    assert row.ground_truth == "*" and row.right is None
    assert "no ground truth dump file for resnet/add/add:output:0" in row.reason


def test_corrupt_dump_is_one_row_with_its_problem(sample_data):
    step = next((sample_data / "npu/debug_0/dump").rglob("Add.resnet_add_add.*"))
    step.write_bytes(step.read_bytes()[:100])
    _, tasks = _pair(sample_data)
    rows = [t for t in tasks if t.npu_name == "resnet/add/add"]
    assert len(rows) == 1 and rows[0].tensor_index is None
    assert "sizes do not add up" in rows[0].reason or "header length" in rows[0].reason


def test_dump_files_the_graph_lacks_are_paired_by_name_after_the_graph(sample_data):
    step = next((sample_data / "npu/debug_0/dump").rglob("Relu.resnet_relu2_Relu.*"))
    step.with_name("Relu.extra_Relu.99.0.1764417600009999").write_bytes(step.read_bytes())
    graph, tasks = _pair(sample_data)
    extra = [t for t in tasks if t.op_type == "Relu" and t.index >= len(graph.ops)]
    assert extra and all(t.index == len(graph.ops) for t in extra)


def test_pairing_without_a_graph_uses_names(sample_data):
    tree = DumpTree(sample_data / "npu/debug_0/dump")
    (step,) = tree.select()
    tasks = pair_by_name(tree.listing(step), read_golden(sample_data / "tf/dump"))
    outputs = {t.tensor_index: t for t in tasks if ":output:" in t.tensor_index}
    assert outputs["resnet/add/add:output:0"].comparable
    fused = outputs["resnet/conv1/Conv2D:output:0"]  # the dump's OriginalOp names the fused result
    assert Path(fused.right.path).name.startswith("resnet_conv1_Relu.0.")
    inputs = [t for t in tasks if ":input:" in t.tensor_index]
    assert inputs and all("no graph" in t.reason for t in inputs)
    assert [t.index for t in tasks] == sorted(t.index for t in tasks)
