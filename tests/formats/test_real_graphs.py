"""Every graph dump in tests/data/real loads, with the ops and types its raw text or JSON holds."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_names import parse_graph_file_name

GE_PROTO = ["ge_proto_00000001_Build.txt", "ge_proto_00056_Build.txt"]


def _raw_graphs(text: str) -> list[tuple[str, list[str]]]:
    """(graph name, op types in order) per top-level graph block, by regex on the layout."""
    out = []
    for block in re.split(r"^graph \{\n", text, flags=re.M)[1:]:
        name = re.search(r'^  name: "(.*)"$', block, re.M).group(1)
        ops = re.findall(r"^  op \{\n(.*?)^  \}\n", block, re.M | re.S)
        out.append((name, [re.search(r'^    type: "(.*)"$', op, re.M).group(1) for op in ops]))
    return out


@pytest.mark.parametrize("name", GE_PROTO)
def test_real_ge_proto_graphs_have_the_ops_of_their_text(real_dir, name):
    path = real_dir / name
    raw = _raw_graphs(path.read_text(encoding="utf-8"))
    model = read_graph(path)
    assert [g.name for g in model.graphs] == [name for name, _ in raw]
    assert [len(g.ops) for g in model.graphs] == [len(types) for _, types in raw]
    for graph, (_, types) in zip(model.graphs, raw):
        assert Counter(op.type for op in graph.ops) == Counter(types)
        assert [op.type for op in graph.ops] == types
    assert parse_graph_file_name(name).stage == "Build"


def test_real_ge_proto_counts(real_dir):
    model = read_graph(real_dir / "ge_proto_00000001_Build.txt")
    assert len(model.graphs) == 5 and sum(len(g.ops) for g in model.graphs) == 18
    assert len(read_graph(real_dir / "ge_proto_00056_Build.txt").graphs[0].ops) == 5


def test_real_atc_json_has_the_ops_of_its_json(real_dir):
    data = json.loads((real_dir / "atc_model.json").read_text(encoding="utf-8"))
    model = read_graph(real_dir / "atc_model.json")
    assert [len(g.ops) for g in model.graphs] == [len(g["op"]) for g in data["graph"]]
    assert Counter(op.type for g in model.graphs for op in g.ops) == Counter(
        op["type"] for g in data["graph"] for op in g["op"]
    )


def test_every_real_graph_file_loads(real_dir):
    files = [p for p in real_dir.iterdir() if p.suffix in (".txt", ".pbtxt", ".json") and p.name != "SOURCES.md"]
    assert len(files) == 4
    for path in files:
        model = read_graph(path)
        assert model.graphs and all(g.ops for g in model.graphs), path
