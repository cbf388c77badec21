"""Graph similarity of debug_0 and debug_1: pairing, differences, skipped types, ratio, absent."""

from __future__ import annotations

import shutil

import pytest

from precision_tool.checks.graph_diff import (
    TensorDiff,
    TypeDiff,
    check_graph_diff,
    diff_graphs,
    pair_graphs,
    session_graph_id,
)
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from precision_tool.render.checks import render_graph_diff
from tests.checks.rendering import flat, render_text
from tests.conftest import make_context


def d(dtype: str, layout: str):
    return tensor_desc(dtype, layout, (1, 4))


def op(name, type_, ins=(), outs=(), inputs=(), sid="7_1"):
    attrs = {"_session_graph_id": sid} if sid else {}
    return OpSpec(name, type_, list(inputs), list(ins), list(outs), attrs=attrs)


def ops(side: int, sid="7_1"):
    """debug_0 (side 0) and debug_1 (side 1) of one network, with known differences."""
    conv_out = ("DT_FLOAT16", "DT_FLOAT")[side]
    trans_out = ("NHWC", "NCHW")[side]
    relu_in = ("NHWC", "NCHW")[side]
    specs = [
        op("input", "Data", [d("DT_FLOAT", "NHWC")], [d("DT_FLOAT", "NHWC")], sid=sid),
        op("conv", "Conv2D", [d("DT_FLOAT", "NHWC")], [d(conv_out, "NC1HWC0")], ["input:0"], sid),
        op("trans", "TransData", [d(conv_out, "NC1HWC0")], [d(conv_out, trans_out)], ["conv:0"], sid),
        op("relu", "Relu", [d("DT_FLOAT16", relu_in)], [d("DT_FLOAT16", "NHWC")], ["trans:0"], sid),
        op("pool", "MaxPool", [d("DT_FLOAT16", "NHWC")], [d("DT_FLOAT16", "NHWC")], ["relu:0"], sid),
    ]
    if side:
        specs += [
            op("extra_trans", "TransData", [d("DT_FLOAT16", "NHWC")], [d("DT_FLOAT16", "ND")], ["pool:0"], sid),
            op("add", "Add", [d("DT_FLOAT16", "ND")], [d("DT_FLOAT16", "ND")], ["extra_trans:0"], sid),
        ]
    return specs + [op("out", "NetOutput", [d("DT_FLOAT16", "NHWC")], inputs=["pool:0"], sid=sid)]


def write(root, debug: str, specs, number: int = 1, graph_name: str = "g", **kwargs):
    graph_dir = root / "npu" / debug / "graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    model = build_model(specs, name=graph_name, **kwargs)
    return write_graph_text(model, graph_dir / f"ge_proto_{number:08d}_Build.txt")


def graph(specs, name="g", **kwargs):
    return build_model(specs, name=name, **kwargs).graphs[0]


def rendered(result) -> str:
    return render_text(render_graph_diff(result))


@pytest.fixture
def root(tmp_path):
    path = tmp_path / "precision_data"
    path.mkdir()
    return path


def test_known_differences_are_each_reported(root):
    write(root, "debug_0", ops(0), graph_name="train_a")
    write(root, "debug_1", ops(1), graph_name="train_b")
    context, _ = make_context(root)
    result = check_graph_diff(context)
    assert result.present and result.found
    assert not result.unpaired_left and not result.unpaired_right
    (pair,) = result.pairs
    assert (pair.left_graph, pair.right_graph, pair.paired_by) == ("train_a", "train_b", "session graph id 7_1")
    assert pair.tensor_diffs == (
        TensorDiff("conv", "output", 0, "DT_FLOAT16", "DT_FLOAT", "NC1HWC0", "NC1HWC0"),
        TensorDiff("relu", "input", 0, "DT_FLOAT16", "DT_FLOAT16", "NHWC", "NCHW"),
    )
    assert [t.changed for t in pair.tensor_diffs] == [("dtype",), ("format",)]
    assert pair.type_diffs == ()
    assert pair.only_left == () and pair.only_right == ("add",)
    # compared: input, conv, relu, pool, add; identical: input, pool
    assert (pair.compared, pair.same, pair.ratio) == (5, 2, 0.4)
    text = rendered(result)
    line = flat(text)
    assert "similarity 40.0% (2/5 ops identical)" in line
    assert "paired by session graph id 7_1" in line
    rows = [[c.strip() for c in r.split("│") if c.strip()] for r in text.splitlines() if r.count("│") >= 6]
    assert rows == [
        ["conv", "output 0", "DT_FLOAT16 -> DT_FLOAT", "NC1HWC0"],
        ["relu", "input 0", "DT_FLOAT16", "NHWC -> NCHW"],
    ]
    assert "only in debug_1: add" in line
    assert "trans" not in line.replace("TransData", "") and "only in debug_0" not in line


def test_identical_graphs_are_nothing_found(root):
    write(root, "debug_0", ops(0))
    write(root, "debug_1", ops(0))
    context, _ = make_context(root)
    result = check_graph_diff(context)
    assert result.present and not result.found
    assert result.pairs[0].ratio == 1.0 and result.pairs[0].compared == 4
    line = flat(rendered(result))
    assert "graph similarity" in line
    assert "nothing found: the 1 graph pair(s) of debug_0 and debug_1 are identical" in line


def test_skipped_types_differences_alone_are_nothing_found(root):
    left = ops(0)
    right = ops(0)
    right[2] = op("trans", "TransData", [d("DT_FLOAT16", "NC1HWC0")], [d("DT_FLOAT", "ND")], ["conv:0"])
    right.append(op("cast_new", "Cast", [d("DT_FLOAT", "ND")], [d("DT_INT32", "ND")], ["trans:0"]))
    write(root, "debug_0", left)
    write(root, "debug_1", right)
    context, _ = make_context(root)
    assert not check_graph_diff(context).found


def test_op_type_change_and_missing_output(root):
    left = [op("x", "Relu", [d("DT_FLOAT", "ND")], [d("DT_FLOAT", "ND")])]
    right = [op("x", "LeakyRelu", [d("DT_FLOAT", "ND")], [d("DT_FLOAT", "ND"), d("DT_FLOAT", "ND")])]
    pair = diff_graphs(graph(left), graph(right), "order")
    assert pair.type_diffs == (TypeDiff("x", "Relu", "LeakyRelu"),)
    assert pair.tensor_diffs == (TensorDiff("x", "output", 1, None, "DT_FLOAT", None, "ND"),)
    assert pair.tensor_diffs[0].changed == ("presence",)
    assert (pair.same, pair.compared) == (0, 1)


def test_op_skipped_on_one_side_is_not_one_sided(root):
    left = [op("w", "Const", outs=[d("DT_FLOAT", "ND")]), op("y", "Relu", [d("DT_FLOAT", "ND")])]
    right = [op("w", "Data", outs=[d("DT_FLOAT16", "ND")]), op("y", "Relu", [d("DT_FLOAT", "ND")])]
    pair = diff_graphs(graph(left), graph(right))
    assert pair.only_left == pair.only_right == () and pair.tensor_diffs == ()
    assert (pair.same, pair.compared) == (1, 1)


def test_pairing_by_session_id_then_name_then_order():
    main0 = graph([op("a", "Relu", sid="9_1")], "main")
    init0 = graph([op("b", "Relu", sid=None)], "init")
    odd0 = graph([op("c", "Relu", sid=None)], "odd0")
    extra0 = graph([op("e", "Relu", sid=None)], "extra0")
    main1 = graph([op("a", "Relu", sid="9_1")], "main_renamed")
    init1 = graph([op("b", "Relu", sid=None)], "init")
    odd1 = graph([op("c", "Relu", sid=None)], "odd1")
    pairs, lonely_left, lonely_right = pair_graphs([main0, init0, odd0, extra0], [odd1, init1, main1])
    assert [(a.name, b.name, how) for a, b, how in pairs] == [
        ("main", "main_renamed", "session graph id 9_1"),
        ("init", "init", "graph name"),
        ("odd0", "odd1", "order"),
    ]
    assert [g.name for g in lonely_left] == ["extra0"] and lonely_right == []


def test_session_id_falls_back_to_the_graph_attribute():
    assert session_graph_id(graph([op("a", "Relu", sid=None)], graph_attrs={"_session_graph_id": "1_1"})) == "1_1"
    assert session_graph_id(graph([op("a", "Relu", sid="2_2")], graph_attrs={"_session_graph_id": "1_1"})) == "2_2"
    assert session_graph_id(graph([op("a", "Relu", sid=None)])) is None


def test_unpaired_graphs_are_listed(root):
    write(root, "debug_0", ops(0, sid="1_1"), 1, graph_name="main")
    write(root, "debug_0", [op("z", "Relu", sid=None)], 2, graph_name="lonely")
    write(root, "debug_1", ops(0, sid="1_1"), 1, graph_name="main")
    context, _ = make_context(root)
    result = check_graph_diff(context)
    assert result.unpaired_left == ("lonely",) and result.unpaired_right == ()
    assert result.found
    assert "graphs only in debug_0: lonely" in flat(rendered(result))


def test_absent_debug_1_says_what_and_where(root):
    write(root, "debug_0", ops(0))
    context, _ = make_context(root)
    result = check_graph_diff(context)
    assert not result.present and not result.found
    assert flat(rendered(result)) == (
        "graph similarity: data absent: looked for Build graphs "
        f"(ge_proto_*_Build.txt, atc JSON or .om) in {root / 'npu' / 'debug_1' / 'graph'}"
    )


def test_absent_both_names_both_dirs(root):
    context, _ = make_context(root)
    result = check_graph_diff(context)
    graphs = root / "npu"
    assert result.missing == (graphs / "debug_0" / "graph", graphs / "debug_1" / "graph")
    assert flat(rendered(result)).endswith(f"in {graphs / 'debug_0' / 'graph'} and {graphs / 'debug_1' / 'graph'}")


def test_sample_debug_1_differences(sample_data):
    context, _ = make_context(sample_data)
    (pair,) = check_graph_diff(context).pairs
    changed = {
        (d.op, d.kind, d.index, d.left_dtype, d.right_dtype, d.left_format, d.right_format)
        for d in pair.tensor_diffs
        if d.changed
    }
    assert changed == {
        ("resnet/dense/MatMul", "output", 0, "DT_FLOAT16", "DT_FLOAT16", "FRACTAL_NZ", "ND"),
        ("resnet/softmax/Softmax", "output", 0, "DT_FLOAT16", "DT_FLOAT", "ND", "ND"),
    }
    assert list(pair.only_right) == ["resnet/softmax/Identity"] and not pair.only_left


def test_sample_without_debug_1(sample_data):
    shutil.rmtree(sample_data / "npu" / "debug_1")
    context, _ = make_context(sample_data)
    result = check_graph_diff(context)
    assert result.missing == (sample_data / "npu" / "debug_1" / "graph",)
