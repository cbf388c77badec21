"""The GE adapter, loaded through Model Explorer's own extension manager: ops as nodes,
namespaces from '/', edges from the inputs, descriptors and attributes as node info."""

from __future__ import annotations

import re

import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from tests.conftest import REPO_ROOT
from tests.model_explorer.explorer import convert, extension_manager, require_explorer
from tests.report.synthetic import HOSTILE_NAMES

SAMPLE_GRAPH = REPO_ROOT / "precision_data" / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt"


def text_ops(path) -> list[dict]:
    """name, type and input entries of each op, from the TextFormat lines (4-space fields of
    each ``  op {`` block) -- not through the tool's reader."""
    ops: list[dict] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line == "  op {":
            ops.append({"inputs": []})
        match = re.fullmatch(r'    (name|type|input): "(.*)"', line)
        if match and ops:
            key, value = match.groups()
            if key == "input":
                ops[-1]["inputs"].append(value)
            else:
                ops[-1].setdefault(key, value)
    return ops


def attrs(node: dict) -> dict:
    return {kv["key"]: kv["value"] for kv in node["attrs"]}


def test_the_extension_registers_as_a_txt_and_json_adapter():
    require_explorer()
    meta = next(e for e in extension_manager().get_extensions_metadata() if e["id"] == "precision_tool_ge_graph")
    assert meta["type"] == "adapter" and meta["fileExts"] == ["txt", "json"]  # json: dump.json


def test_every_op_is_a_node_with_its_edges_and_namespace():
    require_explorer()
    graphs = convert(SAMPLE_GRAPH)["graphs"]
    assert [g["id"] for g in graphs] == ["ge_default_20261129120000_1"]
    nodes = {n["id"]: n for n in graphs[0]["nodes"]}
    expected = text_ops(SAMPLE_GRAPH)
    from tests.model_explorer.test_namespaces import served_from_text

    served = served_from_text(SAMPLE_GRAPH)
    assert list(nodes) == [op["name"] for op in expected]
    for op in expected:
        node = nodes[op["name"]]
        assert attrs(node)["type"] == op["type"]
        *space, label = op["name"].split("/")
        layer = served.get(op["name"], "/".join(space))  # trans_*: test_namespaces.py
        assert (node["namespace"], node["label"]) == (layer, label)
        data = [entry.rsplit(":", 1) for entry in op["inputs"] if entry and not entry.endswith(":-1")]
        assert [
            (e["sourceNodeId"], e["sourceNodeOutputId"], e["targetNodeInputId"]) for e in node["incomingEdges"]
        ] == [(src, idx, str(port)) for port, (src, idx) in enumerate(data)]


def test_descriptors_and_attributes_are_node_info():
    require_explorer()
    nodes = {n["id"]: n for n in convert(SAMPLE_GRAPH)["graphs"][0]["nodes"]}
    conv = nodes["resnet/conv1/Conv2D"]
    out = {kv["key"]: kv["value"] for kv in conv["outputsMetadata"][0]["attrs"]}
    assert out == {
        "__tensor_tag": "resnet/conv1/Conv2D:0",
        "dtype": "DT_FLOAT16",
        "format": "NC1HWC0",
        "shape": "[4,2,12,12,16]",
        "origin_format": "NHWC",
        "origin_shape": "[4,12,12,24]",
        "origin_name": "resnet/conv1/Relu:0",
    }
    first_input = {kv["key"]: kv["value"] for kv in conv["inputsMetadata"][0]["attrs"]}
    assert first_input["__tensor_tag"] == "trans_TransData_1:0" and first_input["format"] == "NC1HWC0"
    info = attrs(conv)
    assert info["original_op_names"] == "resnet/conv1/Conv2D, resnet/conv1/BiasAdd, resnet/conv1/Relu"
    assert "attr _datadump_original_op_names" in info
    assert attrs(nodes["trans_Cast_0"])["original_op_names"] == "(inserted by the compiler)"


def test_control_inputs_link_to_their_nodes_and_missing_producers_are_listed(tmp_path):
    require_explorer()
    desc = tensor_desc("DT_FLOAT", "ND", (2,))
    model = build_model(
        [
            OpSpec("a", "Data", output_descs=[desc]),
            OpSpec("b", "Relu", ["a:0", "ghost:1", "a:-1"], input_descs=[desc, desc], output_descs=[desc]),
        ],
        name="g",
    )
    path = write_graph_text(model, tmp_path / "ge_proto_00000002_Build.txt")
    b = next(n for n in convert(path)["graphs"][0]["nodes"] if n["id"] == "b")
    assert [e["sourceNodeId"] for e in b["incomingEdges"]] == ["a"]
    info = {kv["key"]: kv["value"] for kv in b["attrs"]}
    assert info["inputs not in this graph"] == "ghost:1"
    assert info["control inputs"] == {"type": "node_ids", "nodeIds": ["a"]}


def test_hostile_names_are_kept_exactly_as_node_ids(tmp_path):
    require_explorer()
    desc = tensor_desc("DT_FLOAT", "ND", (2,))
    specs = [OpSpec(HOSTILE_NAMES[0], "Data", output_descs=[desc])]
    specs += [
        OpSpec(name, "Relu", [f"{HOSTILE_NAMES[k]}:0"], input_descs=[desc], output_descs=[desc])
        for k, name in enumerate(HOSTILE_NAMES[1:])
    ]
    path = write_graph_text(build_model(specs, name="evil"), tmp_path / "ge_proto_00000003_Build.txt")
    nodes = convert(path)["graphs"][0]["nodes"]
    assert [n["id"] for n in nodes] == list(HOSTILE_NAMES)
    assert [n["incomingEdges"][0]["sourceNodeId"] for n in nodes[1:]] == list(HOSTILE_NAMES[:-1])


def test_an_unreadable_graph_is_the_one_line_error(tmp_path):
    require_explorer()
    broken = tmp_path / "ge_proto_00000004_Build.txt"
    broken.write_text("graph { op { name: \n", encoding="utf-8")
    with pytest.raises(PrecisionToolError, match=r"ge_proto_00000004_Build\.txt: .*line"):
        convert(broken)
