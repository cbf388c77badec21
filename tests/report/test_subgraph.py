"""The subgraph around the first introducer: op_graph's neighbourhood, each op filled by its
verdict (an introducer with a double border), drawn by dot (made inert) or by the layered
fallback, names escaped either way."""

from __future__ import annotations

import math
import shutil
import xml.etree.ElementTree as ET

import pytest

from precision_tool.compare.result_view import read_view
from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_query import neighbourhood
from precision_tool.render.palette import swatch
from precision_tool.report import subgraph
from tests.report.synthetic import HOSTILE_NAMES, csv_ops, write_chain

NS = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")


def hostile_case(root, drop: int = 7, depth: int = 3):
    """The ops within ``depth`` of op ``drop`` (the first introducer): with the defaults ops 4..10,
    holding three hostile names (op4, op7, op10; HOSTILE_NAMES go to ops 1, 4, 7, 10...)."""
    csv_path = write_chain(root, 24, drop, hostile=True)
    model = read_graph(root / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt")
    view = read_view(csv_path, 0.98)
    graph = model.graphs[0]
    root_op = graph.op(view.focus.op.name)
    return csv_path, graph, neighbourhood(graph, root_op, depth), view


def nodes(svg_text: str) -> dict[str, ET.Element]:
    tree = ET.fromstring(svg_text)
    return {g.get("data-op"): g for g in tree.iter(f"{NS}g") if g.get("data-op") is not None}


def assert_inert(svg_text: str) -> None:
    tree = ET.fromstring(svg_text)
    for element in tree.iter():
        assert element.tag.rsplit("}", 1)[-1] not in ("script", "foreignObject", "image", "style")
        for key, _value in element.attrib.items():
            assert not key.rsplit("}", 1)[-1].lower().startswith("on"), key
            assert "href" not in key.lower()
        for text in (element.text, element.tail, *element.attrib.values()):
            assert "\u202e" not in (text or "") and "\x1b" not in (text or "")
    assert "<script" not in svg_text.lower()


def expected_state(path, name: str) -> str:
    """The verdict from the CSV text: a chain without replays, so the first op at or below the
    threshold introduces and the later ones inherit; clean above it; not compared when the CSV
    lacks the op or its cosine."""
    ops = sorted(csv_ops(path).items())
    flagged = [op_name for (_, op_name), t in ops if t["output"].get("CosineSimilarity", 2.0) <= 0.98]
    for (_, op_name), tensors in ops:
        if op_name == name:
            cos = tensors["output"].get("CosineSimilarity", math.nan)
            if math.isnan(cos):
                return "not compared"
            return "clean" if cos > 0.98 else "introduces" if name == flagged[0] else "inherits"
    return "not compared"


@pytest.mark.parametrize("use_dot", [pytest.param(True, marks=needs_dot), False])
def test_every_op_is_filled_by_its_verdict_and_names_stay_text(data_root, use_dot):
    csv_path, graph, hood, view = hostile_case(data_root)
    drawn = subgraph.subgraph_svg(graph, hood, view, 0, use_dot=use_dot)
    svg, how = drawn.svg, drawn.how
    assert how == ("dot" if use_dot else "layered"), drawn.note
    assert_inert(svg)
    drawn = nodes(svg)
    visible_names = {subgraph.visible(n): n for n in hood.nodes}
    assert set(drawn) == set(visible_names)
    for shown, node in drawn.items():
        state = expected_state(csv_path, visible_names[shown])
        assert node.get("data-state") == state, shown
        fills = {e.get("fill").lower() for e in node.iter() if e.get("fill")}
        assert swatch(state).colour.lower() in fills
        borders = [e for e in node.iter() if e.tag in (f"{NS}polygon", f"{NS}rect")]
        assert len(borders) == (2 if state == "introduces" else 1), shown  # an introducer's double border
    assert any("\\u202e" in name for name in drawn)  # the bidi control is shown, not obeyed


@needs_dot
def test_without_dot_the_layered_drawing_is_used(data_root, monkeypatch):
    _, graph, hood, view = hostile_case(data_root)
    monkeypatch.setattr(subgraph.shutil, "which", lambda name: None)
    drawn = subgraph.subgraph_svg(graph, hood, view, 0)
    assert drawn.how == "layered" and drawn.note == "graphviz 'dot' is not installed"
    assert set(nodes(drawn.svg)) == {subgraph.visible(n) for n in hood.nodes}


@needs_dot
def test_when_dot_fails_the_layered_drawing_is_used_and_says_why(data_root, monkeypatch):
    import subprocess

    import graphviz

    _, graph, hood, view = hostile_case(data_root)

    def failing(*args, **kwargs):
        raise subprocess.CalledProcessError(1, ["dot"])

    monkeypatch.setattr(graphviz.Digraph, "pipe", failing)
    drawn = subgraph.subgraph_svg(graph, hood, view, 0)
    assert drawn.how == "layered" and drawn.note == "dot could not draw it (CalledProcessError)"
    assert_inert(drawn.svg)


@needs_dot
def test_an_op_named_like_an_html_string_still_renders_with_dot(data_root):
    _, graph, hood, view = hostile_case(data_root, drop=4, depth=6)
    assert HOSTILE_NAMES[0] in hood.nodes
    assert subgraph.subgraph_svg(graph, hood, view, 0).how == "dot"


def test_layered_rows_follow_the_distance_from_the_op(data_root):
    _, graph, hood, view = hostile_case(data_root, drop=10)
    svg = ET.fromstring(subgraph.layered_svg(hood, subgraph.colours(hood, view), 0))
    rows = {}
    for g in svg.iter(f"{NS}g"):
        if g.get("data-op"):
            y = float(g.find(f"{NS}rect").get("y"))
            rows[g.get("data-op")] = y
    by_level = sorted(hood.nodes, key=lambda n: hood.levels[n])
    ys = [rows[subgraph.visible(n)] for n in by_level]
    assert ys == sorted(ys) and len(set(ys)) == 7  # depth 3 up, the op, depth 3 down
    assert len(list(svg.iter(f"{NS}path"))) == len(hood.edges) + 1  # + the arrow head


def test_sanitise_drops_scripts_links_and_handlers(data_root):
    _, graph, hood, view = hostile_case(data_root)
    evil = (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
        '<script>alert(1)</script><g class="node" onclick="alert(2)"><title>n0</title>'
        '<a xlink:href="https://example.invalid/" href="javascript:alert(3)"><text>x\u202ey</text></a>'
        "<foreignObject><div/></foreignObject></g></svg>"
    )
    clean = subgraph.sanitise_svg(evil, hood, subgraph.colours(hood, view))
    assert_inert(clean)
    assert "x\\u202ey" in clean
    assert nodes(clean)[subgraph.visible(hood.root.name)].get("data-state") == "introduces"


@needs_dot
def test_every_hostile_name_survives_dot_as_text(data_root):
    """op_graph's record escaping keeps the DOT source whole: each name is drawn, verbatim but
    for the characters that do not show as themselves, which are shown as their escapes."""
    _, graph, hood, view = hostile_case(data_root)
    text, why = subgraph.dot_svg(hood, "t", subgraph.colours(hood, view))
    assert text is not None, why
    shown = " ".join(ET.fromstring(text).itertext())
    names = [n for n in HOSTILE_NAMES if n in hood.nodes]
    assert len(names) == 3
    for name in names:
        assert subgraph.visible(name) in shown, name


def _matmul_graph(root):
    """x -> MatMul(x, kernel) -> BiasAdd(., bias) -> Relu: the kernel and the bias are the
    consumers' other producers of x's neighbourhood."""
    from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text

    desc = tensor_desc("DT_FLOAT16", "ND", (4, 8))
    specs = [
        OpSpec("x", "Data", [], output_descs=[desc]),
        OpSpec("kernel", "Const", [], output_descs=[desc]),
        OpSpec("bias", "Const", [], output_descs=[desc]),
        OpSpec("mm", "MatMul", ["x:0", "kernel:0"], input_descs=[desc, desc], output_descs=[desc]),
        OpSpec("add", "BiasAdd", ["mm:0", "bias:0"], input_descs=[desc, desc], output_descs=[desc]),
        OpSpec("relu", "Relu", ["add:0"], input_descs=[desc], output_descs=[desc]),
    ]
    path = root / "g.txt"
    write_graph_text(build_model(specs, name="g"), path)
    return read_graph(path).graphs[0]


def test_without_dot_a_consumers_other_inputs_sit_above_it(data_root):
    graph = _matmul_graph(data_root)
    hood = neighbourhood(graph, graph.op("x"), 3)
    assert {"kernel", "bias"} <= hood.side  # the premise: both feed a consumer of the walk
    paint = {name: subgraph.NodeCosine("not compared") for name in hood.nodes}
    svg = ET.fromstring(subgraph.layered_svg(hood, paint, 0))
    y = {g.get("data-op"): float(g.find(f"{NS}rect").get("y")) for g in svg.iter(f"{NS}g") if g.get("data-op")}
    assert y["x"] < y["mm"] < y["add"] < y["relu"]
    assert y["kernel"] < y["mm"] and y["bias"] < y["add"]  # above the op they feed, not beside it


@needs_dot
def test_dot_nodes_are_compact_with_ports_and_shapes_on_hover(data_root):
    graph = _matmul_graph(data_root)
    hood = neighbourhood(graph, graph.op("mm"), 2)
    paint = {name: subgraph.NodeCosine("clean", 1.0) for name in hood.nodes}
    svg_text, why = subgraph.dot_svg(hood, "t", paint)
    assert svg_text is not None, why
    tree = ET.fromstring(svg_text)
    width = float(tree.get("width").removesuffix("pt"))
    assert width < 80 * len(hood.nodes)  # boxes, not port records
    titles = {g.get("data-op"): g.find(f"{NS}title").text for g in tree.iter(f"{NS}g") if g.get("data-op")}
    assert titles["mm"].splitlines()[0] == "mm [MatMul]"
    assert [line.split()[0] for line in titles["mm"].splitlines()[1:]] == ["in0", "in1", "out0"]
    assert "FLOAT16" in titles["mm"] and "[4,8]" in titles["mm"].replace(" ", "")


@needs_dot
def test_compact_dot_keeps_the_module_calls_around_their_ops(data_root, monkeypatch):
    """msprobe calls sit inside their module calls: the clusters of op_graph.module_tree."""
    graph = _matmul_graph(data_root)
    hood = neighbourhood(graph, graph.op("mm"), 2)
    tree = {"Module.block.Linear.forward.0": {"ops": ["mm", "add"], "inner": {}}}
    monkeypatch.setattr(subgraph, "module_tree", lambda h: tree)
    paint = {name: subgraph.NodeCosine("clean", 1.0) for name in hood.nodes}
    svg_text, why = subgraph.dot_svg(hood, "t", paint)
    assert svg_text is not None, why
    clusters = [g for g in ET.fromstring(svg_text).iter(f"{NS}g") if g.get("class") == "cluster"]
    assert ["".join(t.itertext()) for c in clusters for t in c.iter(f"{NS}text")] == ["Module.block.Linear.forward.0"]
