"""Compiler-inserted ops (trans_TransData, trans_Cast, an empty original-op list) join the layer of
the op they serve, so the collapsed graph is not a star: checked on the sample's raw text, on
hand-built graphs for each rule, and as a property over random graphs."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_write import OpSpec, build_model
from precision_tool.model_explorer.namespaces import compiler_inserted, op_layer, split_name
from tests.model_explorer.explorer import convert, require_explorer
from tests.model_explorer.test_adapter import SAMPLE_GRAPH, text_ops


def layers_of(specs: list[OpSpec]) -> dict[str, str]:
    (graph,) = build_model(specs, name="g").graphs
    return {op.name: op_layer(graph, op) for op in graph.ops}


def served_from_text(path) -> dict[str, str]:
    """For each ``trans_*`` op of the raw text, the layer of the first non-trans op that reads
    what it converts (forward through trans ops), else of the op it converts, back."""
    ops = text_ops(path)
    readers: dict[str, list[str]] = {}
    for op in ops:
        for entry in op["inputs"]:
            readers.setdefault(entry.rsplit(":", 1)[0], []).append(op["name"])

    def first_readers(name):
        found = []
        for reader in readers.get(name, []):
            found += first_readers(reader) if reader.startswith("trans_") else [reader]
        return found

    producer = {op["name"]: op["inputs"][0].rsplit(":", 1)[0] for op in ops if op["inputs"]}
    expected = {}
    for op in ops:
        name = op["name"]
        if not name.startswith("trans_"):
            continue
        spaces = {n.rpartition("/")[0] for n in first_readers(name)}
        if len(spaces) == 1 and "" not in spaces:
            expected[name] = spaces.pop()
            continue
        source = producer[name]
        while source.startswith("trans_"):
            source = producer[source]
        expected[name] = source.rpartition("/")[0]
    return expected


def test_the_samples_trans_ops_join_the_layer_they_serve():
    (graph,) = read_graph(SAMPLE_GRAPH).graphs
    expected = served_from_text(SAMPLE_GRAPH)
    assert len(expected) == 6  # trans_Cast_0, trans_TransData_1..4, trans_Cast_5
    assert {name: op_layer(graph, graph.op(name)) for name in expected} == expected
    assert expected["trans_TransData_1"] == "resnet/conv1" and expected["trans_Cast_5"] == ""
    for op in graph.ops:  # every other op keeps the path of its name
        if not op.name.startswith("trans_"):
            assert op_layer(graph, op) == op.name.rpartition("/")[0], op.name


def test_the_adapter_puts_them_there_and_the_root_is_no_star():
    require_explorer()
    nodes = convert(SAMPLE_GRAPH)["graphs"][0]["nodes"]
    expected = served_from_text(SAMPLE_GRAPH)
    assert {n["id"]: n["namespace"] for n in nodes if n["id"] in expected} == expected
    roots = sorted({n["namespace"].split("/")[0] or n["id"] for n in nodes})
    assert roots == ["Node_Output", "input", "labels", "resnet", "trans_Cast_5"]
    raw_roots = {op["name"] for op in text_ops(SAMPLE_GRAPH) if "/" not in op["name"]}
    assert len(raw_roots) == 9  # before: the six trans ops sat at the root beside these three


def test_readers_in_two_layers_give_their_common_layer_and_none_gives_the_source():
    layers = layers_of(
        [
            OpSpec("a/x/In", "Data"),
            OpSpec("trans_TransData_0", "TransData", ["a/x/In:0"], original_op_names=[]),
            OpSpec("a/p/Conv", "Conv2D", ["trans_TransData_0:0"]),
            OpSpec("a/q/Add", "Add", ["trans_TransData_0:0"]),
            OpSpec("trans_Cast_1", "Cast", ["a/q/Add:0"], original_op_names=[]),
            OpSpec("p/Relu", "Relu", ["trans_Cast_1:0"]),
            OpSpec("q/Relu", "Relu", ["trans_Cast_1:0"]),
            OpSpec("out", "NetOutput", ["p/Relu:0"]),
        ]
    )
    assert layers["trans_TransData_0"] == "a"  # a/p and a/q share a
    assert layers["trans_Cast_1"] == "a/q"  # p and q share nothing: the layer of what it converts


def test_output_side_chains_identity_and_own_paths():
    layers = layers_of(
        [
            OpSpec("net/mm/MatMul", "MatMulV2"),
            OpSpec("trans_TransData_0", "TransData", ["net/mm/MatMul:0"]),  # no original-op list
            OpSpec("trans_Cast_1", "Cast", ["trans_TransData_0:0"], original_op_names=[]),
            OpSpec("Node_Output", "NetOutput", ["trans_Cast_1:0"]),
            OpSpec("ident_inserted", "Identity", ["net/mm/MatMul:0"], original_op_names=[]),
            OpSpec("net/deep/Sub", "Sub", ["ident_inserted:0"]),
            OpSpec("net/own/trans_Cast_2", "Cast", ["net/mm/MatMul:0"], original_op_names=[]),
            OpSpec("Identity", "Identity", ["net/mm/MatMul:0"]),  # stands for itself: stays
            OpSpec("tf/Reshape", "Reshape", ["Identity:0"]),
        ]
    )
    assert layers["trans_TransData_0"] == layers["trans_Cast_1"] == "net/mm"  # to the output: back
    assert layers["ident_inserted"] == "net/deep"
    assert layers["net/own/trans_Cast_2"] == "net/own"
    assert layers["Identity"] == "" and layers["Node_Output"] == ""


def test_a_loop_of_inserted_ops_ends():
    layers = layers_of(
        [
            OpSpec("trans_Cast_0", "Cast", ["trans_Cast_1:0"], original_op_names=[]),
            OpSpec("trans_Cast_1", "Cast", ["trans_Cast_0:0"], original_op_names=[]),
        ]
    )
    assert layers == {"trans_Cast_0": "", "trans_Cast_1": ""}


NAMES = st.sampled_from(["a/b/", "a/c/", "d/", "", "a/"])
TYPES = st.sampled_from(["Cast", "TransData", "Relu", "Identity"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(NAMES, TYPES, st.sampled_from([None, [], ["tf/x"]]), st.lists(st.integers(0, 30), max_size=3)),
        min_size=1,
        max_size=12,
    )
)
def test_every_op_sits_in_a_layer_of_the_graph(spec):
    specs = []
    for k, (space, op_type, original, inputs) in enumerate(spec):
        sources = sorted({f"op{i}" for i in inputs if i < len(spec)})
        specs.append(
            OpSpec(f"{space}op{k}", op_type, [f"{s}:0" for s in _full(spec, sources)], original_op_names=original)
        )
    (graph,) = build_model(specs, name="g").graphs
    own = {split_name(op.name)[0] for op in graph.ops}
    prefixes = {"/".join(layer.split("/")[:n]) for layer in own for n in range(len(layer.split("/")) + 1)}
    for op in graph.ops:
        layer = op_layer(graph, op)
        if not compiler_inserted(op) or split_name(op.name)[0]:
            assert layer == split_name(op.name)[0]
        assert layer in prefixes, (op.name, layer)


def _full(spec, sources):
    by_short = {f"op{k}": f"{space}op{k}" for k, (space, *_rest) in enumerate(spec)}
    return [by_short[s] for s in sources if re.fullmatch(r"op\d+", s)]
