"""``ni -s`` through the real CLI (issues 12.10, 11.9, 11.11): the tree is always printed, the
drawn subgraph carries device and host views and the newest result's colours, every DOT
attribute is quoted and escaped (hostile names parse back to exactly the expected nodes, the SVG
is inert), and a 100k-op chain at depth 100000 is walked without recursion, capped with a note."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from precision_tool.compare.result_csv import latest_result_dir
from precision_tool.formats.graph_model import GraphDesc, InputRef, Op
from precision_tool.formats.graph_query import neighbourhood
from precision_tool.render.lines import visible
from precision_tool.render.op_tree import MAX_TREE_LEVELS, MAX_TREE_NODES, neighbourhood_tree
from precision_tool.render.palette import LEGEND_ORDER, swatch
from precision_tool.render.theme import make_console
from tests import dotparse
from tests.conftest import REPO_ROOT
from tests.netdata import NetOp, write_net

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
FILLS = {state: swatch(state).colour for state in LEGEND_ORDER}


def _tool(root: Path, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.update(PYTHONPATH=str(REPO_ROOT), COLUMNS="160")
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root.parent,
    )


def _gv(root: Path) -> Path:
    (gv,) = sorted((root / "temp" / "op_graph").glob("*.gv"), key=lambda p: p.stat().st_mtime)[-1:]
    return gv


def _nodes_by_name(graph: dotparse.Graph) -> dict[str, dict[str, str]]:
    return {dotparse.unescape(attrs["tooltip"]): attrs for attrs in graph.nodes.values()}


def _csv_verdicts(root: Path, result_dir: Path) -> dict[str, tuple[str, float]]:
    """Each NPU op's state: flagged read from the CSV text (an output with cosine <= 0.98 or
    RED >= 0.2, the RED of cosine 0.98), checked against ``vcs --json``; whether a flagged op
    introduces or inherits, and whether one not flagged is beyond rounding, is the verdict's,
    as ``vcs --json`` tells it (the picture must tell the same)."""
    summary = json.loads(_tool(root, "vcs", "--json", "-l", "0").stdout)
    (result,) = summary["results"]
    states = {op["op"]: op["state"] for op in result["flagged"]}
    near, nonfinite = set(result["near"]), set(result["nonfinite"])
    outputs: dict[str, list[tuple[float, float]]] = {}
    for path in result_dir.glob("*.csv"):
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                if ":output:" in (row["TensorIndex"] or ""):
                    cos = float(row["CosineSimilarity"]) if row["CosineSimilarity"] not in ("", "NaN") else math.nan
                    red = (
                        float(row["RelativeEuclideanDistance"])
                        if row["RelativeEuclideanDistance"] not in ("", "NaN")
                        else math.nan
                    )
                    outputs.setdefault(row["NPUDump"], []).append((cos, red))
    verdicts = {}
    for name, values in outputs.items():
        worst = min(c for c, _ in values)
        if any(c <= 0.98 or r >= math.sqrt(2 * (1 - 0.98)) for c, r in values):
            verdicts[name] = (states.pop(name), worst)  # KeyError: vcs did not flag it
        else:
            verdicts[name] = ("non-finite" if name in nonfinite else "near" if name in near else "clean", worst)
    assert states == {}  # vcs flagged nothing the CSV does not
    return verdicts


def test_without_a_result_every_op_is_grey_and_it_says_so(sample_data):
    done = _tool(sample_data, "ni", "resnet/conv2/Conv2D", "-s", "2")
    assert done.returncode == 0, done.stderr
    assert "colours: no comparison result yet, so every op is grey" in done.stdout
    graph = dotparse.parse(_gv(sample_data).read_text())
    assert {attrs["fillcolor"] for attrs in graph.nodes.values()} == {FILLS["not compared"]}


def test_the_newest_result_colours_every_node_and_the_tree_is_printed(sample_data):
    assert _tool(sample_data, "vc").returncode == 1
    result_dir = latest_result_dir(sample_data / "temp")
    want = _csv_verdicts(sample_data, result_dir)
    seen = set()
    for root_op in ("resnet/conv2/Conv2D", "resnet/pool/Mean"):
        done = _tool(sample_data, "ni", root_op, "-s", "3")
        assert done.returncode == 0, done.stderr
        graph = dotparse.parse(_gv(sample_data).read_text())
        for name, attrs in _nodes_by_name(graph).items():
            verdict, cosine = want.get(name, ("not compared", None))
            assert attrs["fillcolor"] == FILLS[verdict], (name, verdict)
            label = dotparse.unescape(attrs["label"])
            assert (f"cos {cosine:.6f}" if cosine is not None else "not compared") in label, label
            seen.add(verdict)
        lines = done.stdout.splitlines()
        subgraph = next(line for line in lines if line.startswith("subgraph: "))
        assert subgraph.endswith(".svg") and ".gv, " in subgraph  # both paths, one line
        tree_root = lines.index(next(line for line in lines if line.startswith(root_op + " [")))
        assert "upstream (producers, depth 3)" in lines[tree_root + 1]
        assert f"cos={want[root_op][1]:.6f}" in lines[tree_root]
    assert seen >= {"introduces", "inherits", "clean", "not compared"}
    legend = graph.subgraphs["cluster_legend"].nodes.values()
    assert {a["fillcolor"] for a in legend} == set(FILLS.values())  # every colour, named


def test_ports_show_device_format_and_shape_and_the_host_view(sample_data):
    assert _tool(sample_data, "ni", "resnet/conv2/Conv2D", "-s", "0").returncode == 0
    graph = dotparse.parse(_gv(sample_data).read_text())
    (label,) = [dotparse.unescape(a["label"]) for a in graph.nodes.values()]
    assert "<in1> in1 FLOAT16 FRACTAL_Z [18,2,16,16]nhost HWCN [3,3,24,24]" in label  # \n unescaped
    assert "<out0> out0 FLOAT16 NC1HWC0 [4,2,12,12,16]nhost NHWC [4,12,12,24]" in label


HOSTILE = (
    "<script>alert(1)</script>",
    'quote" URL="javascript:alert(2)" tooltip="x',
    "brace}{|<port>",
    "back\\slash\\",
    "new\nline",
    "esc\x1b]0;title\x07",
    "rtl\u202eevil",
    "<b>bold</b>",
)


@pytest.fixture
def hostile_root(tmp_path):
    ops = [NetOp("net/first", "Relu", tf_name="net/first")]
    ops += [NetOp(name, "Relu", tf_name=f"net/op{k}") for k, name in enumerate(HOSTILE)]
    return write_net(tmp_path / "precision_data", ops)


def test_hostile_names_parse_back_to_exactly_the_expected_nodes(hostile_root):
    done = _tool(hostile_root, "ni", "net/first", "-s", str(len(HOSTILE) + 1))
    assert done.returncode == 0, done.stderr
    graph = dotparse.parse(_gv(hostile_root).read_text())
    expected = {"model/input", "net/first", *HOSTILE}
    assert len(graph.nodes) == len(expected)
    assert set(graph.nodes) == {f"n{k}" for k in range(len(expected))}
    assert set(_nodes_by_name(graph)) == {visible(name) for name in expected}
    assert graph.html_values == []  # no attribute was read as an HTML-like label
    assert all(
        set(attrs) <= {"label", "tooltip", "style", "fillcolor", "penwidth", "shape", "color"}
        for attrs in graph.nodes.values()
    )  # nothing injected (no URL, no href)
    assert len(graph.edges) == len(expected) - 1


@needs_dot
def test_graphviz_reads_the_same_nodes_and_the_svg_is_inert(hostile_root):
    done = _tool(hostile_root, "ni", "net/first", "-s", str(len(HOSTILE) + 1))
    assert done.returncode == 0, done.stderr
    gv = _gv(hostile_root)
    parsed = subprocess.run(["dot", "-Tjson", str(gv)], capture_output=True, text=True, timeout=60)
    assert parsed.returncode == 0 and parsed.stderr == "", parsed.stderr
    objects = [
        o for o in json.loads(parsed.stdout)["objects"] if not o["name"].startswith(("legend", "cluster_legend"))
    ]
    tooltips = {o["tooltip"].replace("\\\\", "\\") for o in objects}
    assert len(objects) == len(HOSTILE) + 2
    assert tooltips == {visible(n) for n in ("model/input", "net/first", *HOSTILE)}
    svg_text = gv.with_suffix(".svg").read_text()
    assert "<script" not in svg_text.lower()
    for element in ET.fromstring(svg_text).iter():
        assert element.tag.rsplit("}", 1)[-1] not in ("script", "foreignObject")
        for key, value in element.attrib.items():
            local = key.rsplit("}", 1)[-1].lower()
            assert not local.startswith("on") and local != "href", (key, value)
            if "javascript:" in value:
                assert local == "title", (key, value)  # shown as the name's text, nowhere active
        assert "\x1b" not in (element.text or "") and "\u202e" not in (element.text or "")


def _chain(count: int) -> GraphDesc:
    """A chain of ``count`` Relu ops built in memory (a 100k-op graph file takes a minute)."""
    names = [f"chain/op{k}" for k in range(count)]
    ops = [
        Op(
            name,
            "Relu",
            k,
            [InputRef(names[k - 1], 0, False, 0)] if k else [],
            [],
            [],
            [[(names[k + 1], 0)]] if k + 1 < count else [[]],
            {},
            None,
            [],
            [],
            False,
            None,
            None,
            None,
            0,
        )
        for k, name in enumerate(names)
    ]
    return GraphDesc("chain", ops, {}, [], [])


def test_a_100k_chain_at_depth_100000_needs_no_recursion():
    graph = _chain(100_000)
    middle = graph.op("chain/op50000")
    whole = neighbourhood(graph, middle, 100_000)
    assert len(whole.nodes) == 100_000 and not whole.capped
    capped = neighbourhood(graph, middle, 100_000, max_nodes=1500)
    assert capped.capped and capped.depth == 749 and len(capped.nodes) == 1499
    out = make_console(width=120)
    out.file = __import__("io").StringIO()
    out.print(neighbourhood_tree(whole), crop=False)
    text = out.file.getvalue()
    assert f"the tree is cut at {MAX_TREE_NODES} lines" in text or f"at {MAX_TREE_LEVELS} levels" in text
    assert len(text.splitlines()) <= MAX_TREE_NODES + 6


def test_ni_on_a_long_chain_caps_what_it_draws_and_prints(tmp_path):
    ops = [NetOp(f"chain/op{k}", "Relu") for k in range(1600)]
    root = write_net(tmp_path / "precision_data", ops)
    done = _tool(root, "ni", "chain/op800", "-s", "100000")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert "Error" not in done.stdout + done.stderr
    assert "depth 100000 reaches more than 1500 ops: drawn to depth 749 (1499 ops)" in done.stdout
    graph = dotparse.parse(_gv(root).read_text())
    assert len(graph.nodes) == 1499 and len(graph.edges) == 1498  # op51 .. op1549
    assert set(_nodes_by_name(graph)) == {f"chain/op{k}" for k in range(51, 1550)}
    assert f"the tree is cut at {MAX_TREE_LEVELS} levels" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines() if "──" in line) < 4 * MAX_TREE_LEVELS + 110
