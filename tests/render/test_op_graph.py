"""The op neighbourhood: breadth-first walk, the graphviz digraph, writing it, the tree fallback."""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import pytest
from rich.console import Console

from precision_tool.formats import digraph_files
from precision_tool.formats.graph_query import Edge, neighbourhood
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc
from precision_tool.formats.output_root import OutputRoot
from precision_tool.render import op_graph, op_tree

ODD = 'odd{a}|<b>"c\\d'  # every record-label special character


def _desc(shape=(2, 3)):
    return tensor_desc("DT_FLOAT16", "ND", shape)


def _op(name, op_type, inputs=(), outputs=1):
    data = [entry for entry in inputs if not entry.endswith(":-1")]
    return OpSpec(
        name,
        op_type,
        inputs=inputs,
        input_descs=[_desc() for _ in data],
        output_descs=[_desc() for _ in range(outputs)],
    )


def _graph():
    """a -> b -> c -> d -> e (a chain), x -> c (side input), b -> y (a sibling consumer of b),
    ctl -.-> c (control), c's output 1 -> ODD, and a producer with ':' in its name."""
    ops = [
        _op("a", "Data"),
        _op("x", "Const"),
        _op("ctl", "NoOp", outputs=0),
        _op("onnx::w:0", "Const"),
        _op("b", "Relu", ["a:0"]),
        _op("y", "Relu", ["b:0"]),
        _op("c", "Add", ["b:0", "x:0", "onnx::w:0:0", "ctl:-1"], outputs=2),
        _op("d", "Relu", ["c:0"]),
        _op("e", "Relu", ["d:0"]),
        _op(ODD, "Relu", ["c:1"]),
    ]
    return build_model(ops, name="g").graphs[0]


def test_neighbourhood_follows_each_direction_separately():
    graph = _graph()
    hood = neighbourhood(graph, graph.op("c"), 1)
    assert set(hood.nodes) == {"c", "b", "x", "onnx::w:0", "d", ODD}
    assert hood.levels["b"] == -1 and hood.levels["d"] == 1
    hood = neighbourhood(graph, graph.op("c"), 2)
    # a is two steps up, e two steps down; y only shares a producer with c, ctl is control-only
    assert set(hood.nodes) == {"c", "b", "x", "onnx::w:0", "d", ODD, "a", "e"}
    assert set(hood.edges) == {
        Edge("a", 0, "b", 0),
        Edge("b", 0, "c", 0),
        Edge("x", 0, "c", 1),
        Edge("onnx::w:0", 0, "c", 2),
        Edge("c", 0, "d", 0),
        Edge("c", 1, ODD, 0),
        Edge("d", 0, "e", 0),
    }
    assert list(hood.nodes)[0] == "c"


def test_control_edges_between_neighbours_are_kept():
    graph = _graph()
    hood = neighbourhood(graph, graph.op("ctl"), 1)
    assert set(hood.nodes) == {"ctl"}  # the walk follows data edges only
    graph2 = build_model([_op("p", "Const"), _op("q", "Relu", ["p:0", "p:-1"])], name="g").graphs[0]
    hood = neighbourhood(graph2, graph2.op("q"), 1)
    assert set(hood.edges) == {Edge("p", 0, "q", 0), Edge("p", -1, "q", -1, control=True)}
    source = op_graph.build_digraph(hood, "t").source
    assert re.search(r"^\s*n1 -> n0 \[[^\]]*style=dashed", source, re.M)


def test_depth_zero_is_the_op_alone():
    graph = _graph()
    hood = neighbourhood(graph, graph.op("c"), 0)
    assert list(hood.nodes) == ["c"] and hood.edges == []


def test_missing_producer_is_drawn_as_such():
    graph = build_model([_op("q", "Relu", ["gone:0"])], name="g").graphs[0]
    hood = neighbourhood(graph, graph.op("q"), 1)
    assert hood.nodes == {"q": graph.op("q"), "gone": None}
    source = op_graph.build_digraph(hood, "t").source
    assert "(not in this graph)" in source
    assert re.search(r"^\s*n1 -> n0:in0:n", source, re.M)


def test_record_escape():
    assert op_graph.record_escape('a{b}|<c>"d\\e') == 'a\\{b\\}\\|\\<c\\>\\"d\\\\e'
    # hidden characters are shown as their escapes (whose backslash is then escaped for DOT)
    assert op_graph.record_escape("line\nbreak\x00\u202e") == "line\\\\nbreak\\\\x00\\\\u202e"
    assert op_graph.string_escape('say "hi" \\') == 'say \\"hi\\" \\\\'


def test_digraph_has_ports_root_and_escaped_names():
    graph = _graph()
    hood = neighbourhood(graph, graph.op("c"), 1)
    source = op_graph.build_digraph(hood, "title").source
    root_line = next(line for line in source.splitlines() if line.strip().startswith("n0 "))
    assert "penwidth=3" in root_line and "<in2> in2 FLOAT16 ND [2,3]" in root_line
    assert "<out1> out1 FLOAT16 ND [2,3]" in root_line
    assert sum("penwidth=3" in line for line in source.splitlines()) == 1  # the op itself only
    # without a result every op is grey
    assert {line.split('fillcolor="')[1][:7] for line in source.splitlines() if "fillcolor" in line} == {"#eeeeee"}
    assert op_graph.record_escape(ODD) in source
    ids = op_graph.node_ids(hood)
    assert f"{ids['x']}:out0:s -> n0:in1:n" in source
    assert f"n0:out1:s -> {ids[ODD]}:in0:n" in source


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
def test_dot_accepts_the_source_with_odd_names(tmp_path):
    graph = _graph()
    hood = neighbourhood(graph, graph.op("c"), 2)
    written = digraph_files.write_digraph(
        OutputRoot(tmp_path), op_graph.build_digraph(hood, ODD).source, tmp_path / "g.gv", 8
    )
    assert written.svg == tmp_path / "g.svg" and written.note is None
    svg = written.svg.read_text()
    assert svg.count('class="node"') == 8
    assert svg.count('class="edge"') == 7
    # dot itself finds no syntax problem (a bad escape would be a warning or an error)
    check = subprocess.run(["dot", "-Tcanon", str(tmp_path / "g.gv")], capture_output=True, text=True)
    assert check.returncode == 0 and check.stderr == ""


def test_without_dot_only_the_gv_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(digraph_files.shutil, "which", lambda *args, **kwargs: None)
    graph = _graph()
    hood = neighbourhood(graph, graph.op("c"), 1)
    written = digraph_files.write_digraph(
        OutputRoot(tmp_path), op_graph.build_digraph(hood, "t").source, tmp_path / "g.gv", 6
    )
    assert written.files == [tmp_path / "g.gv"] and "not installed" in written.note
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.gv"]


def test_too_many_nodes_are_not_rendered(tmp_path, monkeypatch):
    monkeypatch.setattr(digraph_files.shutil, "which", lambda *args, **kwargs: "/usr/bin/dot")
    monkeypatch.setattr(digraph_files, "MAX_RENDER_NODES", 3)
    graph = _graph()
    hood = neighbourhood(graph, graph.op("c"), 1)
    written = digraph_files.write_digraph(
        OutputRoot(tmp_path), op_graph.build_digraph(hood, "t").source, tmp_path / "g.gv", 6
    )
    assert written.svg is None and "too many" in written.note


def _tree_text(tree) -> str:
    console = Console(width=120, file=io.StringIO())
    console.print(tree)
    return console.file.getvalue()


def test_tree_lists_producers_and_consumers():
    graph = _graph()
    text = _tree_text(op_tree.neighbourhood_tree(neighbourhood(graph, graph.op("c"), 2)))
    lines = text.splitlines()
    assert lines[0] == "c [Add]"
    up = next(i for i, line in enumerate(lines) if "upstream" in line)
    down = next(i for i, line in enumerate(lines) if "downstream" in line)
    upstream, downstream = "\n".join(lines[up:down]), "\n".join(lines[down:])
    assert "in0 <- b:0 [Relu]" in upstream and "in0 <- a:0 [Data]" in upstream
    assert "in2 <- onnx::w:0:0 [Const]" in upstream
    assert "out0 -> d:in0 [Relu]" in downstream and "out0 -> e:in0 [Relu]" in downstream
    assert f"out1 -> {ODD}:in0 [Relu]" in downstream
    assert "y:" not in text  # a sibling is not in the neighbourhood
    assert "control inputs: ctl" not in text  # ctl is not a neighbour (data walk only)


def test_tree_does_not_repeat_a_diamond():
    ops = [
        _op("s", "Data"),
        _op("l", "Relu", ["s:0"]),
        _op("r", "Relu", ["s:0"]),
        _op("m", "Add", ["l:0", "r:0"]),
        _op("t", "Relu", ["m:0"]),
    ]
    graph = build_model(ops, name="g").graphs[0]
    hood = neighbourhood(graph, graph.op("s"), 3)
    text = _tree_text(op_tree.neighbourhood_tree(hood))
    assert text.count("-> m:in") == 2 and text.count("-> t:in0") == 1
    assert "(expanded above)" in text


def _dense_graph():
    """x -> relu -> matmul(relu, w, b) -> softmax; w = Cast(wraw); x -> sibling."""
    ops = [
        _op("x", "Data"),
        _op("wraw", "Const"),
        _op("w", "Cast", ["wraw:0"]),
        _op("b", "Const"),
        _op("relu", "Relu", ["x:0"]),
        _op("matmul", "MatMulV2", ["relu:0", "w:0", "b:0"]),
        _op("softmax", "SoftmaxV2", ["matmul:0"]),
        _op("sibling", "Relu", ["x:0"]),
    ]
    return build_model(ops, name="g").graphs[0]


def test_consumers_other_producers_are_drawn_as_the_original_did():
    graph = _dense_graph()
    hood = neighbourhood(graph, graph.op("relu"), 1)
    # the next MatMul's weight and bias, but not the weight's own producer, nor x's other consumer
    assert set(hood.nodes) == {"relu", "x", "matmul", "w", "b"}
    assert hood.side == {"w", "b"} and hood.levels["w"] == hood.levels["matmul"] == 1
    assert {Edge("w", 0, "matmul", 1), Edge("b", 0, "matmul", 2)} <= set(hood.edges)
    hood = neighbourhood(graph, graph.op("relu"), 2)
    assert set(hood.nodes) == {"relu", "x", "matmul", "w", "b", "softmax"}
    hood = neighbourhood(graph, graph.op("x"), 1)
    assert set(hood.nodes) == {"x", "relu", "sibling"}  # consumers of x, whose only input is x


def test_tree_shows_the_consumers_other_inputs():
    graph = _dense_graph()
    text = _tree_text(op_tree.neighbourhood_tree(neighbourhood(graph, graph.op("relu"), 1)))
    down = text[text.index("downstream") :]
    assert "out0 -> matmul:in0 [MatMulV2]" in down
    assert "in1 <- w:0 [Cast]" in down and "in2 <- b:0 [Const]" in down
    assert "in0 <- relu" not in down  # the op itself is not repeated as its consumer's input
