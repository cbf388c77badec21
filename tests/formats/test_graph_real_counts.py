"""Every real graph file reads with the graphs, ops, edges, descriptors and attributes its raw
text or JSON holds, counted here without the reader: by regex over the layout protobuf's
printer writes (ge_proto, ge_onnx), and by walking the JSON atc writes. The answer key for the
graph reading paths that remain (issue 25, item 5: what was deleted must not change a count).
"""

from __future__ import annotations

import json
import re

import pytest

from precision_tool.formats.graph import read_graph

_ATTR = r"^{0}attr \{{\n{0}  key: \"([^\n]*)\"\n{0}  value \{{\n(.*?)^{0}  \}}\n{0}\}}\n"


def _attr_keys(block: str, indent: int) -> set[str]:
    """The keys of the ``attr`` entries at ``indent`` whose value holds something (an empty
    ``value { }`` is an unset attribute, which the model leaves out)."""
    found = re.findall(_ATTR.format(" " * indent), block, re.M | re.S)
    return {key for key, body in found if body.strip()}


def _text_counts(text: str) -> dict[str, int]:
    counts = dict.fromkeys(("graphs", "ops", "edges", "descs", "op_attrs", "desc_attrs", "graph_attrs"), 0)
    for graph in re.split(r"^graph \{\n", text, flags=re.M)[1:]:
        counts["graphs"] += 1
        ops = re.findall(r"^  op \{\n(.*?)^  \}\n", graph, re.M | re.S)
        counts["graph_attrs"] += len(_attr_keys(re.sub(r"^  op \{\n.*?^  \}\n", "", graph, flags=re.M | re.S), 2))
        for op in ops:
            counts["ops"] += 1
            counts["edges"] += len(re.findall(r'^    input: "(.+)"$', op, re.M))
            counts["op_attrs"] += len(_attr_keys(op, 4))
            descs = re.findall(r"^    (?:input|output)_desc \{\n(.*?)^    \}\n", op, re.M | re.S)
            counts["descs"] += len(descs)
            counts["desc_attrs"] += sum(len(_attr_keys(desc, 6)) for desc in descs)
    return counts


def _model_counts(model) -> dict[str, int]:
    ops = [op for graph in model.graphs for op in graph.ops]
    descs = [d for op in ops for d in (*op.input_descs, *op.output_descs)]
    return {
        "graphs": len(model.graphs),
        "ops": len(ops),
        "edges": sum(len(op.inputs) for op in ops),
        "descs": len(descs),
        "op_attrs": sum(len(op.attrs) for op in ops),
        "desc_attrs": sum(len(d.attrs) for d in descs),
        "graph_attrs": sum(len(graph.attrs) for graph in model.graphs),
    }


def _set(entries) -> set[str]:
    return {entry["key"] for entry in entries or () if entry.get("value")}


def _json_counts(data: dict) -> dict[str, int]:
    ops = [op for graph in data["graph"] for op in graph.get("op") or ()]
    descs = [d for op in ops for d in (op.get("input_desc") or []) + (op.get("output_desc") or [])]
    return {
        "graphs": len(data["graph"]),
        "ops": len(ops),
        "edges": sum(1 for op in ops for entry in op.get("input") or () if entry),
        "descs": len(descs),
        "op_attrs": sum(len(_set(op.get("attr"))) for op in ops),
        "desc_attrs": sum(len(_set((d or {}).get("attr"))) for d in descs),
        "graph_attrs": sum(len(_set(graph.get("attr"))) for graph in data["graph"]),
    }


# What the raw text holds, written down once from the counts above (so that a change of this
# test's regexes shows too): graphs, ops, edges, descriptors, op, descriptor and graph attributes.
EXPECTED = {
    "ge_proto_00000001_Build.txt": (5, 18, 14, 30, 440, 261, 28),
    "ge_proto_00056_Build.txt": (1, 5, 4, 9, 78, 31, 2),
    "atc_model.json": (1, 19, 21, 46, 628, 251, 8),
}


@pytest.mark.parametrize("name", ["ge_proto_00000001_Build.txt", "ge_proto_00056_Build.txt"])
def test_real_ge_proto_text_counts(real_dir, name):
    path = real_dir / name
    raw = _text_counts(path.read_text(encoding="utf-8"))
    assert _model_counts(read_graph(path)) == raw
    assert tuple(raw.values()) == EXPECTED[name]


def test_real_atc_json_counts(real_dir):
    path = real_dir / "atc_model.json"
    raw = _json_counts(json.loads(path.read_text(encoding="utf-8")))
    assert _model_counts(read_graph(path)) == raw
    assert tuple(raw.values()) == EXPECTED["atc_model.json"]


def test_real_ge_onnx_counts(real_dir):
    path = real_dir / "ge_onnx_00000000_graph_1_Build.pbtxt"
    text = path.read_text(encoding="utf-8")
    nodes = re.findall(r"^  node \{\n(.*?)^  \}\n", text, re.M | re.S)
    model = read_graph(path)
    assert sum(len(graph.ops) for graph in model.graphs) == len(nodes)
    edges = sum(len(re.findall(r'^    input: "(.+)"$', node, re.M)) for node in nodes)
    assert sum(len(op.inputs) for graph in model.graphs for op in graph.ops) == edges
