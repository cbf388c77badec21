"""GE's ONNX graph dumps: the real one, round trips through the writer, sub-graphs, bad input."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.graph import read_graph, read_graph_proto
from precision_tool.formats.graph_model import InputRef
from precision_tool.formats.graph_names import looks_like_onnx
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from precision_tool.formats.onnx_write import model_to_onnx, write_graph_onnx
from tests.conftest import REPO_ROOT

REAL_ONNX = "ge_onnx_00000000_graph_1_Build.pbtxt"
SAMPLE_GRAPH = REPO_ROOT / "precision_data" / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt"


# --- the real dump, against its raw text ------------------------------------------------------


def _raw_nodes(text: str) -> list[dict]:
    """The top-level nodes of a GE ONNX dump, by regex on protobuf's two-space layout."""
    nodes = []
    for block in re.findall(r"^  node \{\n(.*?)^  \}\n", text, re.M | re.S):
        head = block.split("    attribute {", 1)[0]
        dtypes = dict(re.findall(r'name: "output_desc_dtype:(\d+)"\n\s+s: "(\w+)"', block))
        nodes.append(
            {
                "name": re.search(r'^    name: "(.*)"$', head, re.M).group(1),
                "type": re.search(r'^    op_type: "ge:(.*)"$', head, re.M).group(1),
                "inputs": re.findall(r'^    input: "(.*)"$', head, re.M),
                "output_dtypes": [dtypes[k] for k in sorted(dtypes, key=int)],
                "id": int((re.search(r'name: "id"\n\s+i: (\d+)', block) or [0, 0])[1]),
            }
        )
    return nodes


def test_real_onnx_dump_has_the_ops_types_edges_and_descs_of_its_text(real_dir):
    path = real_dir / REAL_ONNX
    text = path.read_text(encoding="utf-8")
    raw = _raw_nodes(text)
    model = read_graph(path)
    (graph,) = model.graphs
    assert graph.name == re.findall(r'^  name: "(.*)"$', text, re.M)[-1]
    assert len(graph.ops) == len(raw) == text.count('op_type: "ge:')
    assert Counter(op.type for op in graph.ops) == Counter(n["type"] for n in raw)
    assert [op.name for op in graph.ops] == [n["name"] for n in raw]
    assert [op.id for op in graph.ops] == [n["id"] for n in raw]
    for op, node in zip(graph.ops, raw):
        assert [str(r) for r in op.inputs] == [entry for entry in node["inputs"] if entry]
        assert [d.dtype for d in op.output_descs] == node["output_dtypes"]
    assign = graph.op("Variable/Assign")
    assert assign.inputs == [InputRef("Variable", 0, False), InputRef("Variable/initial_value", 0, False)]
    assert graph.op("Variable").consumers == [[("Variable/Assign", 0)]]
    assert graph.op("init").control_inputs == [InputRef("Variable/Assign", -1, True)]
    desc = assign.input_descs[1]
    assert (desc.dtype, desc.layout, desc.shape, desc.origin_format, desc.origin_shape) == (
        "DT_FLOAT",
        "ND",
        (64,),
        "ND",
        (64,),
    )
    assert desc.attrs["_data_visit_distance"] == [0, -1]  # input_desc_attr__data_visit_distance:1
    assert assign.attrs["_tbeKernelSize"] == 8272 and assign.attrs["INPUT_IS_VAR"] == [1, 1]
    assert "id" not in assign.attrs and "input_desc_nums" not in assign.attrs
    step = graph.op("ge_global_step").output_descs[0]
    assert step.dtype == "DT_UINT64" and step.origin_shape is None  # GE wrote origin_shape []


def test_real_onnx_is_read_as_onnx_by_content_whatever_its_name(real_dir, tmp_path):
    copy = tmp_path / "graph.txt"
    copy.write_bytes((real_dir / REAL_ONNX).read_bytes())
    assert len(read_graph(copy).graphs[0].ops) == 6
    assert looks_like_onnx(copy.read_text()) is True


# --- written by the project's writer ------------------------------------------------------------


def test_sample_graph_round_trips_but_for_graph_attributes(tmp_path):
    model = read_graph(SAMPLE_GRAPH)
    back = read_graph(write_graph_onnx(model, tmp_path / "ge_onnx_00000001_graph_1_Build.pbtxt"))
    assert back.name == model.name and back.graphs[0].name == model.graphs[0].name
    assert back.graphs[0].ops == model.graphs[0].ops
    assert back.graphs[0].inputs == model.graphs[0].inputs == ["input:0", "labels:0"]
    assert model.graphs[0].attrs and back.graphs[0].attrs == {}  # ONNX has no graph attributes


def test_text_looks_as_ge_writes_it(tmp_path):
    text = write_graph_onnx(read_graph(SAMPLE_GRAPH), tmp_path / "g.pbtxt").read_text()
    assert text.startswith("ir_version: 6\nproducer_name: ")
    assert 'op_type: "ge:Conv2D"' in text and 'name: "output_desc_origin_layout:0"' in text
    assert 'name: "output_desc_attr__datadump_origin_name:0"' in text
    assert "op {" not in text


def test_sub_graphs_are_subgraph_nodes_and_come_back_as_graphs(tmp_path):
    main = build_model(
        [
            OpSpec("x", "Data", output_descs=[tensor_desc()]),
            OpSpec("call", "PartitionedCall", ["x:0"], [tensor_desc()], [tensor_desc()]),
        ],
        name="main",
    )
    sub = build_model(
        [OpSpec("inner", "Relu", ["outer:0", "c:-1"], [tensor_desc()], [tensor_desc()]), OpSpec("c", "NoOp")],
        name="main_sub_0",
    )
    model = type(main)(main.name, main.graphs + sub.graphs, {})
    proto = model_to_onnx(model)
    assert [n.op_type for n in proto.graph.node] == ["ge:Data", "ge:PartitionedCall", "subgraph"]
    back = read_graph(write_graph_onnx(model, tmp_path / "g.pbtxt"))
    assert [g.name for g in back.graphs] == ["main", "main_sub_0"]
    assert back.graphs == model.graphs
    assert back.graphs[1].op("inner").inputs == [InputRef("outer", 0, False), InputRef("c", -1, True)]


_names = st.text("abc/_.:", min_size=1, max_size=6)
_floats = st.floats(allow_nan=False, width=32)
_values = st.one_of(  # what ONNX attributes hold: no bools, bytes, descs or named attributes
    st.text(max_size=5),
    st.integers(-(2**63), 2**63 - 1),
    _floats,
    st.lists(st.integers(-5, 5), max_size=3),
    st.lists(_floats, min_size=1, max_size=3),
    st.lists(st.text(max_size=3), min_size=1, max_size=3),
)
_attrs = st.dictionaries(st.text("xyz_", min_size=1, max_size=4), _values, max_size=4)
_desc_attrs = st.dictionaries(
    st.text("xyz_", min_size=1, max_size=4),
    _values | st.lists(st.lists(st.integers(0, 9), max_size=3), min_size=1, max_size=2),
    max_size=3,
)
_descs = st.lists(
    st.builds(
        lambda dtype, layout, shape, origin, attrs: tensor_desc(
            dtype, layout, shape, origin_format=origin, origin_shape=shape[::-1] or None, attrs=attrs
        ),
        st.sampled_from(["DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_INT32"]),
        st.sampled_from(["ND", "NC1HWC0", "FRACTAL_Z"]),
        st.lists(st.integers(0, 64), max_size=4),
        st.none() | st.sampled_from(["NHWC", "NCHW"]),
        _desc_attrs,
    ),
    max_size=2,
)


@st.composite
def _graphs(draw):
    names = draw(st.lists(_names, min_size=1, max_size=6, unique=True))
    specs = []
    for position, name in enumerate(names):
        sources = [
            f"{src}:{draw(st.integers(-1, 2))}"
            for src in draw(st.lists(st.sampled_from(names[:position] or names), max_size=3))
        ]
        specs.append(
            OpSpec(
                name,
                draw(st.sampled_from(["Data", "Relu", "Cast"])),
                sources,
                draw(_descs),
                draw(_descs),
                draw(_attrs),
                original_op_names=draw(st.none() | st.lists(_names, max_size=2)),
                pass_name=draw(st.none() | st.lists(_names, min_size=1, max_size=2)),
                stream_id=draw(st.integers(0, 3)),
            )
        )
    return build_model(specs, name=draw(_names))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=_graphs())
def test_random_graphs_round_trip_through_onnx(model, tmp_path):
    assert read_graph(write_graph_onnx(model, tmp_path / "r.pbtxt")) == model


def test_booleans_come_back_as_ints_except_those_the_tool_reads(tmp_path):
    model = build_model([OpSpec("a", "Relu", attrs={"_datadump_is_multiop": True, "flag": True})])
    op = read_graph(write_graph_onnx(model, tmp_path / "b.pbtxt")).graphs[0].op("a")
    assert op.is_multiop is True and op.attrs["_datadump_is_multiop"] is True
    assert op.attrs["flag"] == 1


def test_plain_onnx_tensor_names_are_resolved_through_the_producers_outputs(tmp_path):
    path = tmp_path / "plain.pbtxt"
    path.write_text(
        'ir_version: 8\ngraph {\n name: "g"\n'
        ' node { name: "a" op_type: "Split" input: "x" output: "p" output: "q" }\n'
        ' node { name: "b" op_type: "Add" input: "q" input: "p" input: "" }\n}\n'
    )
    (graph,) = read_graph(path).graphs
    assert graph.op("a").inputs == [InputRef("x", 0, False)]  # a graph input, not an op
    assert graph.op("b").inputs == [InputRef("a", 1, False), InputRef("a", 0, False)]
    assert graph.op("a").consumers == [[("b", 1)], [("b", 0)]]
    assert graph.op("b").type == "Add"  # no "ge:" prefix to take off


# --- what is not a graph -----------------------------------------------------------------------


def _error(path: Path) -> str:
    with pytest.raises(PrecisionToolError) as caught:
        read_graph(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


@pytest.mark.parametrize(
    "text, expect",
    [
        ('ir_version: 6\nproducer_name: "GE"\n', "not a GE ONNX graph dump: no graph in it"),
        ('ir_version: 6\ngraph { name: "g" }\n', "graph 'g' has no nodes"),
        ("ir_version: 6\nfuture_field: 3\n", "no graph in it"),
        ('ir_version: 6\ngraph {\n  node {\n    op_type: "ge:Relu\n  }\n}\n', "ONNX TextFormat syntax error at line 4"),
        (
            'ir_version: 6\ngraph {\n  node {\n    attribute { name: "a" type: NOT_A_TYPE }\n  }\n}\n',
            "ONNX TextFormat syntax error at line 4",
        ),
        ('ir_version: 6\ngraph {\n  node { op_type: "ge:Relu" }\n}\n', "has no name"),
    ],
)
def test_onnx_that_is_no_graph_is_one_error_line(tmp_path, text, expect):
    path = tmp_path / "ge_onnx_00000000_graph_1_Build.pbtxt"
    path.write_text(text)
    assert expect in _error(path)


def test_content_decides_the_form_and_the_name_only_when_it_cannot(tmp_path):
    ge_text = tmp_path / "ge_onnx_00000000_graph_1_Build.pbtxt"
    write_graph_text(build_model([OpSpec("a", "Relu")], name="m"), ge_text)
    assert read_graph(ge_text).graphs[0].op("a").type == "Relu"  # ge_proto text, onnx name
    assert looks_like_onnx('graph {\n  name: "g"\n}\n') is None
    bare = tmp_path / "ge_onnx_00000001_graph_2_Build.pbtxt"
    bare.write_text('graph {\n  name: "g"\n}\n')
    assert "no nodes" in _error(bare)  # read as ONNX, as its name says
    other = tmp_path / "ge_proto_00000001_Build.txt"
    other.write_text('graph {\n  name: "g"\n}\n')
    assert [g.name for g in read_graph(other).graphs] == ["g"]  # ge_proto, as before
    assert read_graph_proto(other).graph[0].name == "g"
