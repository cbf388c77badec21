"""Corpus cases: broken forms of what current CANN writes -- fusion_result.json arrays and keyed
objects, GE's ONNX graph text, graph file names with a graph id -- and the intact ONNX form."""

from __future__ import annotations

import json
from pathlib import Path

from precision_tool.formats.graph_write import build_model
from precision_tool.formats.onnx_write import write_graph_onnx

from .base import ERROR, FINE, MODEL, Case, Check, base_ops, graph_path, root_of

ONNX_NAME = "ge_onnx_00000000_graph_1_Build.pbtxt"
BAD_ID_NAME = "ge_proto_00000001_graph_1a_Build.txt"
FUSION_ENTRY = {"graph_fusion": {"ConvBiasAddFusionPass": {"effect_times": "1", "match_times": "1"}}, "ub_fusion": {}}


def _fusion(text: str):
    def build(case_dir: Path) -> None:
        path = root_of(case_dir) / "fusion" / "fusion_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    return build


def _truncated_array() -> str:
    first = dict(FUSION_ENTRY, session_and_graph_id="0_1")
    return "[" + json.dumps(first, indent=4) + ",\n"  # the file ends after the first item


def _onnx(edit=lambda text: text):
    def build(case_dir: Path) -> None:
        proto = graph_path(case_dir)
        proto.unlink()
        path = write_graph_onnx(build_model(base_ops(), name=MODEL), proto.with_name(ONNX_NAME))
        path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")

    return build


def _renamed(name: str):
    def build(case_dir: Path) -> None:
        path = graph_path(case_dir)
        path.rename(path.with_name(name))

    return build


FUSION_FILE = "fusion_result.json"

CASES = [
    Case(
        "fusion_truncated_array",
        "fusion_result.json as one JSON array, cut after its first item",
        _fusion(_truncated_array()),
        (
            Check("ac -c", FINE, f"{FUSION_FILE}: not JSON (Expecting value) at offset"),
            Check("ac -c", FINE, "showing the 1 graph(s) before it"),
        ),
    ),
    Case(
        "fusion_keyed_values_not_objects",
        "the keyed form with a list where a graph's rules go",
        _fusion(
            json.dumps(
                {"session_and_graph_id_0_0": FUSION_ENTRY, "session_and_graph_id_0_1": ["ConvBiasAddFusionPass"]},
                indent=4,
            )
        ),
        (
            Check(
                "ac -c",
                FINE,
                "object 1, key 'session_and_graph_id_0_1': found a JSON array, not an object of fusion rules at offset",
            ),
        ),
    ),
    Case(
        "fusion_keyed_by_graph",
        "current CANN's keyed form, two sessions",
        _fusion(json.dumps({"session_and_graph_id_0_1": FUSION_ENTRY, "session_and_graph_id_1_1": FUSION_ENTRY})),
        (Check("ac -c", FINE, "session 1, graph 1: graph fusion"),),
    ),
    Case(
        "graph_onnx_only",
        "the Build graph only as GE's ONNX text",
        _onnx(),
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check("ls", FINE, ONNX_NAME),
            Check("ni net/relu -s 1", FINE, "subgraph: 3 ops"),
        ),
    ),
    Case(
        "graph_onnx_syntax_error",
        "GE's ONNX text with an unterminated string",
        _onnx(lambda text: text.replace('op_type: "ge:Relu"', 'op_type: "ge:Relu', 1)),
        (
            Check("ls", ERROR, "ONNX TextFormat syntax error at line", ONNX_NAME),
            Check("vc", ERROR, "ONNX TextFormat syntax error", ONNX_NAME),
            Check("ni net/relu", ERROR, "syntax error", ONNX_NAME),
        ),
    ),
    Case(
        "graph_onnx_not_a_graph",
        "a ge_onnx file that is an ONNX model without a graph",
        _onnx(lambda text: 'ir_version: 6\nproducer_name: "GE"\n'),
        (
            Check("ls", ERROR, "not a GE ONNX graph dump: no graph in it", ONNX_NAME),
            Check("vc", ERROR, "no graph in it", ONNX_NAME),
        ),
    ),
    Case(
        "graph_name_non_numeric_id",
        "a Build graph named ..._graph_1a_Build.txt",
        _renamed(BAD_ID_NAME),
        (
            Check("ls", ERROR, "graph id '1a' in the file name is not a number", BAD_ID_NAME),
            Check("vc", ERROR, "is not a number", BAD_ID_NAME),
            Check("ni net/relu", ERROR, "is not a number", BAD_ID_NAME),
        ),
    ),
    Case(
        "graph_name_with_graph_id",
        "the Build graph named ge_proto_00000001_graph_31_Build.txt",
        _renamed("ge_proto_00000001_graph_31_Build.txt"),
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check("ls", FINE, "ge_proto_00000001_graph_31_Build.txt │ 31"),
            Check("ni net/relu", FINE, "graph id 31"),
        ),
    ),
]
