"""The sample network: reproducible byte for byte, readable by every reader, and carrying
exactly one planted defect whose error propagates downstream."""

from __future__ import annotations

import filecmp

import numpy as np
import pytest

from precision_tool import read_dump, read_golden, read_graph
from precision_tool.formats.tree import DumpTree
from precision_tool.sample import write_sample
from precision_tool.sample.network import DEFECTIVE_OP
from tests.conftest import REPO_ROOT

SHIPPED = REPO_ROOT / "precision_data"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return write_sample(tmp_path_factory.mktemp("sample") / "precision_data")


def _files(root):
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and "temp" not in p.parts)


def test_shipped_sample_is_what_the_generator_writes(sample):
    assert _files(SHIPPED) == _files(sample)
    match, mismatch, errors = filecmp.cmpfiles(SHIPPED, sample, [str(p) for p in _files(sample)], shallow=False)
    assert mismatch == [] and errors == []
    assert len(match) == len(_files(sample))


def _cosine(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _output_cosines(root):
    """Cosine of each dumped op's output 0 and worst input against golden, via the graph."""
    graph = read_graph(root / "npu/debug_0/graph/ge_proto_00000001_Build.txt").graphs[0]
    golden = read_golden(root / "tf/dump")
    (step,) = DumpTree(root / "npu/debug_0/dump").select()
    listing = DumpTree(root / "npu/debug_0/dump").listing(step)
    result = {}
    for op in graph.ops:
        ref = listing.latest(op.name)
        if ref is None:
            continue
        dump = read_dump(ref.path)
        out_desc = op.output_descs[0]
        out = _cosine(dump.outputs[0].host(), golden.lookup(out_desc.origin_name, out_desc.origin_output_index))
        ins = []
        for tensor, src in zip(dump.inputs, op.data_inputs):
            desc = graph.op(src.src).output_descs[src.index]
            ins.append(
                _cosine(tensor.host(desc.origin_format), golden.lookup(desc.origin_name, desc.origin_output_index))
            )
        result[op.name] = (min(ins, default=1.0), out)
    return result


def test_the_defect_is_introduced_by_the_planted_op_and_inherited_after(sample):
    cosines = _output_cosines(sample)
    assert len(cosines) == 15
    names = list(cosines)
    first_bad = next(n for n in names if cosines[n][1] <= 0.98)
    assert first_bad == DEFECTIVE_OP
    assert cosines[DEFECTIVE_OP][0] > 0.999  # its inputs are fine: it introduces the error
    before = names[: names.index(DEFECTIVE_OP)]
    assert all(cosines[n][1] > 0.999 for n in before)
    after = names[names.index(DEFECTIVE_OP) + 1 :]
    assert cosines["resnet/add/add"][0] <= 0.98  # downstream ops inherit it
    assert any(cosines[n][1] <= 0.98 for n in after)


def test_sample_has_the_device_layouts_and_fusions_it_promises(sample):
    graph = read_graph(sample / "npu/debug_0/graph/ge_proto_00000001_Build.txt").graphs[0]
    layouts = {d.layout for op in graph.ops for d in op.output_descs}
    assert {"NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ", "ND", "NHWC"} <= layouts
    conv1 = graph.op("resnet/conv1/Conv2D")
    assert conv1.original_op_names == ["resnet/conv1/Conv2D", "resnet/conv1/BiasAdd", "resnet/conv1/Relu"]
    assert graph.op("trans_Cast_0").original_op_names == []
    assert graph.op("resnet/dense/MatMul").output_descs[0].origin_name == "resnet/dense/BiasAdd"
    assert {op.type for op in graph.ops} >= {"Cast", "TransData", "BNInfer", "Add", "MaxPool", "SoftmaxV2"}
