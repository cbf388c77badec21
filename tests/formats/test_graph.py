"""GE graph dumps: TextFormat and atc JSON into one model, writers, errors, a 100k-op graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump_names import normalise_op_name
from precision_tool.formats.graph import (
    find_graph_files,
    model_from_proto,
    parse_input,
    read_graph,
)
from precision_tool.formats.graph_model import InputRef, TensorName
from precision_tool.formats.graph_write import (
    OpSpec,
    build_model,
    message_to_atc_json,
    model_to_proto,
    tensor_desc,
    write_graph_json,
    write_graph_text,
)
from precision_tool.formats.proto import ge_ir
from tests.conftest import FIXTURES, REAL

SMALL = FIXTURES / "small"
GRAPH_TXT = SMALL / "precision_data" / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt"
REAL_JSON = REAL / "atc_model.json"


@pytest.fixture(scope="module")
def small_pair():
    text = read_graph(GRAPH_TXT)
    return text, read_graph(GRAPH_TXT.with_name(GRAPH_TXT.name + ".json"))


@pytest.fixture(scope="module")
def real():
    return read_graph(REAL_JSON)


# --- the fixture pair -------------------------------------------------------------------------


def test_text_and_json_of_one_graph_give_equal_models(small_pair):
    text, from_json = small_pair
    assert text == from_json
    assert text.source_path != from_json.source_path  # equal despite different files
    assert [len(g.ops) for g in text.graphs] == [25]
    assert text.attrs == {"framework_type": "TensorFlow", "soc_version": "Ascend910B"}
    assert text.graphs[0].attrs == {"_session_graph_id": "0_1"}
    assert text.graphs[0].inputs == ["input:0"]


def test_fixture_ops_match_case_json(small_pair):
    case = json.loads((SMALL / "case.json").read_text())
    graph = small_pair[0].graphs[0]
    assert [op.name for op in graph.ops] == [op["name"] for op in case["ops"]]
    for op, want in zip(graph.ops, case["ops"]):
        assert (op.id, op.type) == (want["id"], want["type"])
        assert [str(ref) for ref in op.data_inputs] == want["inputs"]
        assert op.original_op_names == want["tf_ops"], op.name
        assert len(op.output_descs) == len(want["outputs"])
        for index, (desc, out) in enumerate(zip(op.output_descs, want["outputs"])):
            assert desc.dtype == out["dtype"]
            assert desc.layout == out["format"]
            assert desc.shape == tuple(out["device_shape"])
            assert desc.origin_shape == tuple(out["host_shape"])
            assert desc.origin_format == out["origin_format"]
            golden = f"{desc.origin_name}:{desc.origin_output_index}" if desc.origin_name else f"{op.name}:{index}"
            assert golden == out["golden"], op.name


def test_fixture_fusion_attributes_and_edges(small_pair):
    graph = small_pair[0].graphs[0]
    conv = graph.op("model/conv1/Conv2D")
    assert conv.original_op_names == ["model/conv1/Conv2D", "model/conv1/BiasAdd", "model/conv1/Relu"]
    assert conv.pass_name == ["BiasaddConvFusionPass", "TbeConvReluFusionPass"]
    assert conv.kernel_lib == "AIcoreEngine"
    assert conv.attrs["strides"] == [1, 1, 1, 1]
    out = conv.output_descs[0]
    assert (out.origin_name, out.origin_output_index, out.origin_data_type) == ("model/conv1/Relu", 0, "DT_FLOAT")
    assert conv.input_descs[1].layout == "FRACTAL_Z"
    assert graph.op("trans_Cast_0").original_op_names == []
    assert graph.op("model/conv1/kernel").original_op_names is None
    assert graph.op("input").inputs == []  # its `input: ""` is no edge
    assert graph.op("trans_Cast_0").consumers == [[("trans_TransData_1", 0)]]
    assert graph.op("model/bn1/FusedBatchNormV3").consumers == [[("model/conv2/Conv2D", 0), ("model/add/add", 0)]]
    assert graph.op("model/conv1/bias").consumers == [[("model/conv1/Conv2D", 2)]]
    assert graph.op("Node_Output").consumers == []
    assert graph.op("model/bn1/FusedBatchNormV3").attrs["epsilon"] == 0.001


def test_lookup_by_dump_file_form(small_pair):
    model = small_pair[0]
    graph = model.graphs[0]
    assert graph.find_op("model/conv1/Conv2D") is graph.op("model/conv1/Conv2D")
    assert graph.find_op("model_conv1_Conv2D") is graph.op("model/conv1/Conv2D")
    assert graph.find_op("model_conv1_Conv2D_nope") is None
    assert "trans_Cast_0" in graph
    with pytest.raises(KeyError):
        graph.op("model_conv1_Conv2D")
    assert model.find_op("model_dense_MatMul") == (graph, graph.op("model/dense/MatMul"))
    assert model.graph(graph.name) is graph and model.graph("other") is None
    assert normalise_op_name("a/b.c\\d e") == "a_b_c_d_e"


# --- the real atc JSON ------------------------------------------------------------------------


def test_real_atc_json_loads_all_ops(real):
    (graph,) = real.graphs
    assert graph.name == "sub_model_NPU_0" and len(graph.ops) == 19
    assert [op.id for op in graph.ops] == list(range(19))  # op 0's id is left out of the JSON
    assert real.name == "sub_model" and real.version == 2
    assert "tasks" not in real.attrs  # "value": null
    assert real.attrs["om_info_list"] == [2560, 50217, 0, 7013]
    assert real.attrs["needCheckTf"] == []
    assert real.attrs["task_index_op_name"][:2] == ["trans_Cast_0", "trans_Cast_0"]
    assert real.attrs["_enable_l1_fusion"] is False


def test_real_atc_json_attribute_kinds(real):
    graph = real.graphs[0]
    nms = graph.op("BatchMultiClassNMS_1203")
    assert nms.attrs["iou_threshold"] == 0.5 and nms.attrs["score_threshold"] == 0.05  # quoted
    assert nms.attrs["max_size_per_class"] == 200 and nms.attrs["fusion_scope"] == -3
    assert nms.attrs["OUTPUT_IS_VAR"] == [False] * 4
    assert nms.attrs["_input_name_key"] == ["boxes", "clip_window", "num_valid_boxes", "scores"]
    assert nms.attrs["image_size"] == []  # VT_LIST_INT with no items
    assert nms.kernel_name.startswith("te_batchmulticlassnonmaxsuppression_")
    assert (nms.kernel_lib, nms.session_graph_id) == ("AIcoreEngine", "-1_0")
    # two optional inputs absent: "" entries are no edges, their descs stay in place
    assert [(r.src, r.slot) for r in nms.inputs] == [
        ("BatchMultiClassNMS_1203_Input0_TransposeBefore", 0),
        ("BatchMultiClassNMS_1203_Input1_TransposeBefore", 1),
    ]
    assert [d.layout for d in nms.input_descs][2:] == ["FORMAT_RESERVED"] * 2
    assert nms.input_descs[0].origin_data_type == "DT_FLOAT16"
    assert [len(c) for c in nms.consumers] == [1, 1, 1, 0]
    const = graph.op("onnx::Gather_1764_0").attrs["value"]
    assert const["data"] == b"" and const["desc"].dtype == "DT_INT64"
    assert "shape_range" not in const["desc"].attrs  # null
    gather = graph.op("PartitionedCall_Gather_1221_gatherv2_3")
    assert InputRef("onnx::Gather_1764_0", 0, False) in gather.inputs
    assert gather.output_descs[0].attrs["shape_range"] == [[100, 100]]
    assert gather.original_op_names == ["Gather_1221"]
    assert graph.op("Concat_1211").consumers == [[("Slice_1218", 0), ("PartitionedCall_Gather_1221_gatherv2_3", 0)]]


# --- writers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["txt", "json", "real"])
def test_writer_round_trips(source, small_pair, real, tmp_path):
    model = {"txt": small_pair[0], "json": small_pair[1], "real": real}[source]
    assert read_graph(write_graph_text(model, tmp_path / "g.txt")) == model
    assert read_graph(write_graph_json(model, tmp_path / "g.txt.json")) == model


def test_json_writer_uses_atc_shape(small_pair):
    data = message_to_atc_json(model_to_proto(small_pair[0]))
    ops = data["graph"][0]["op"]
    assert ops[0]["input"] == [""] and ops[0]["type"] == "Data"
    assert ops[0]["output_desc"][0]["dtype"] == "DT_FLOAT"
    assert {"key": "origin_format", "value": {"s": "NHWC"}} in ops[0]["output_desc"][0]["attr"]
    assert "id" not in ops[0] and ops[1]["id"] == 1  # proto3 defaults are left out, as atc does
    assert list(data) == sorted(data)


def test_builder_gives_what_the_reader_gives(tmp_path):
    model = build_model(
        [
            OpSpec("x", "Data", output_descs=[tensor_desc("DT_FLOAT", "NHWC", (1, 2, 2, 3), origin_format="NHWC")]),
            OpSpec(
                "y",
                "Relu",
                ["x:0", "z:-1"],
                original_op_names=[],
                pass_name=["P"],
                kernel_name="k",
                kernel_lib="AIcoreEngine",
                output_descs=[tensor_desc(origin_name="tf/y", origin_output_index=0)],
            ),
        ],
        graph_outputs=["y:0"],
    )
    data, relu = model.graphs[0].ops
    assert data.inputs == [] and data.consumers == [[("y", 0)]]
    assert relu.inputs == [InputRef("x", 0, False), InputRef("z", -1, True)]
    assert relu.control_inputs == [InputRef("z", -1, True)]
    assert (relu.original_op_names, relu.pass_name, relu.kernel_name) == ([], ["P"], "k")
    assert relu.output_descs[0].origin_name == "tf/y"
    path = write_graph_json(model, tmp_path / "g.json")
    assert json.loads(path.read_text())["graph"][0]["op"][0]["input"] == [""]
    assert read_graph(path) == model


@pytest.mark.parametrize(
    "attrs, origin",
    [
        ({"_datadump_origin_name": "tf/a", "_datadump_origin_output_index": 0}, TensorName("tf/a", 0)),
        ({"_datadump_origin_name": "tf/a"}, TensorName("tf/a", 2)),  # no index: the output's own
        ({"_datadump_origin_name": "tf/a", "_datadump_origin_output_index": -1}, TensorName("tf/a", 2)),
        ({"_datadump_origin_name": "tf/a", "_datadump_origin_output_index": True}, TensorName("tf/a", 2)),
        ({"_datadump_origin_output_index": 1}, None),  # no name: no origin
        ({"_datadump_origin_name": ""}, None),
    ],
)
def test_an_outputs_origin_is_one_tensor_name(attrs, origin):
    """Output 2's origin, read from the attributes as GE writes them; ``name:index`` as text."""
    desc = tensor_desc(attrs=attrs)
    assert desc.origin(2) == origin
    if origin is not None:
        assert str(desc.origin(2)) == f"tf/a:{origin.index}" and desc.origin(2) == ("tf/a", origin.index)


_names = st.text("abc/_.:", min_size=1, max_size=6)
_floats = st.floats(allow_nan=False, width=32)
# bytes that are UTF-8: atc's JSON writes bytes as plain strings, so no other bytes survive it
_scalars = st.one_of(
    st.text(max_size=5), st.integers(-(2**63), 2**63 - 1), _floats, st.booleans(), st.text(max_size=2).map(str.encode)
)
_values = st.one_of(
    _scalars,
    st.lists(st.integers(-5, 5), max_size=3),
    st.lists(_floats, min_size=1, max_size=3),
    st.lists(st.text(max_size=3), max_size=3),
    st.lists(st.booleans(), max_size=3),
    st.lists(st.lists(st.integers(0, 9), max_size=3), min_size=1, max_size=2),
    st.builds(lambda v: {"name": "fn", "attrs": {"k": v}}, _scalars),
)
_attrs = st.dictionaries(st.text("xyz_", min_size=1, max_size=4), _values, max_size=4)
_descs = st.lists(
    st.builds(
        lambda dtype, shape, attrs: tensor_desc(dtype, "ND", shape, attrs=attrs),
        st.sampled_from(["DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_INT32"]),
        st.lists(st.integers(0, 64), max_size=4),
        _attrs,
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
            )
        )
    return build_model(specs, attrs=draw(_attrs))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=_graphs())
def test_random_graphs_round_trip(model, tmp_path):
    assert read_graph(write_graph_text(model, tmp_path / "r.txt")) == model
    assert read_graph(write_graph_json(model, tmp_path / "r.json")) == model
    assert model_from_proto(model_to_proto(model)) == model


def _every_attr_kind():
    op = ge_ir.OpDef(name="op", type="T")
    attr = op.attr
    attr["s"].s, attr["bt"].bt, attr["i"].i, attr["dt"].dt = b"x\xff", b"\x01", -3, 9
    attr["f"].f, attr["b"].b = 0.1, True
    attr["td"].td.dtype = 2
    attr["t"].t.desc.layout, attr["t"].t.data = "ND", b"\x00\x01"
    attr["g"].g.name = "sub"
    attr["func"].func.name = "fn"
    attr["func"].func.attr["k"].i = 1
    attr["ints_no_type"].list.i.extend([1, 2])
    attr["mislabelled"].list.s.append(b"a")
    attr["mislabelled"].list.val_type = 2  # VT_LIST_INT, yet holds strings
    attr["floats"].list.f.extend([0.5, 0.25])
    attr["descs"].list.td.add().layout = "NZ"
    attr["tensors"].list.t.add().data = b"d"
    attr["named"].list.na.add().name = "n"
    attr["dts"].list.dt.extend([1, 2])
    attr["llf"].list_list_float.list_list_f.add().list_f.extend([1.5])
    attr["unset"].SetInParent()
    model = ge_ir.ModelDef()
    model.graph.add(name="g").op.append(op)
    return model_from_proto(model)


def test_every_attribute_kind(tmp_path):
    model = _every_attr_kind()
    attrs = model.graphs[0].op("op").attrs
    assert "unset" not in attrs
    assert (attrs["s"], attrs["bt"], attrs["i"], attrs["dt"]) == ("x\ufffd", b"\x01", -3, 9)
    assert (attrs["f"], attrs["b"], attrs["g"]) == (0.1, True, "sub")
    assert attrs["td"].dtype == "DT_FLOAT16"
    assert attrs["t"]["desc"].layout == "ND" and attrs["t"]["data"] == b"\x00\x01"
    assert attrs["func"] == {"name": "fn", "attrs": {"k": 1}}
    assert (attrs["ints_no_type"], attrs["mislabelled"], attrs["floats"]) == ([1, 2], ["a"], [0.5, 0.25])
    assert [d.layout for d in attrs["descs"]] == ["NZ"]
    assert [t["data"] for t in attrs["tensors"]] == [b"d"]
    assert attrs["named"] == [{"name": "n", "attrs": {}}]
    assert (attrs["dts"], attrs["llf"]) == ([1, 2], [[1.5]])
    assert read_graph(write_graph_text(model, tmp_path / "a.txt")) == model
    assert read_graph(write_graph_json(model, tmp_path / "a.json")) == model


# --- odd and bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry, want",
    [
        ("a/b:0", InputRef("a/b", 0, False)),
        ("a/b:3", InputRef("a/b", 3, False)),
        ("a/b:-1", InputRef("a/b", -1, True)),
        ("onnx::Gather_1:2", InputRef("onnx::Gather_1", 2, False)),
        ("bare", InputRef("bare", 0, False)),
        ("a:b", InputRef("a:b", 0, False)),
    ],
)
def test_parse_input(entry, want):
    assert parse_input(entry) == want


def _error(path: Path) -> str:
    with pytest.raises(PrecisionToolError) as caught:
        read_graph(path)
    assert str(path) in str(caught.value)
    return caught.value.problem


def test_missing_empty_and_binary_files(tmp_path):
    assert "not found" in _error(tmp_path / "ge_proto_00000001_Build.txt")
    assert "directory" in _error(tmp_path)
    (tmp_path / "empty.txt").write_text("  \n")
    assert "empty" in _error(tmp_path / "empty.txt")
    (tmp_path / "g.pb").write_bytes(b"\x0a\x03\xff\xfe\x00")
    assert "UTF-8" in _error(tmp_path / "g.pb")


def test_text_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "ge_proto_1_Build.txt"
    path.write_text('name: "m"\ngraph {\n  op {\n    name: "a"\n    type: \n  }\n}\n')
    problem = _error(path)
    assert "line 6" in problem and "TextFormat" in problem
    path.write_text('name: "m"\ngraph {\n  op { name: "a" }\n')
    assert "line" in _error(path)
    path.write_text("graph { op { input_desc { dtype: DT_NOT_A_TYPE } } }\n")
    assert "DT_NOT_A_TYPE" in _error(path)


def test_unknown_fields_are_skipped(tmp_path):
    text = tmp_path / "ge_proto_1_Build.txt"
    text.write_text(
        'name: "m"\nfuture: 3\ngraph {\n  name: "g"\n  op {\n    name: "a"\n'
        '    newer { deep { x: 1 } }\n    type: "Relu"\n  }\n}\n'
    )
    assert read_graph(text).graphs[0].op("a").type == "Relu"
    js = tmp_path / "g.json"
    js.write_text(
        json.dumps(
            {
                "graph": [
                    {
                        "name": "g",
                        "future": [1, {"x": None}],
                        "op": [
                            {
                                "name": "a",
                                "type": "Relu",
                                "newer": {"deep": 1},
                                "attr": [{"key": "k", "value": None}, {"key": "v", "value": {"i": "7", "zz": 1}}],
                            }
                        ],
                    }
                ],
                "name": "m",
            }
        )
    )
    op = read_graph(js).graphs[0].op("a")
    assert op.type == "Relu" and op.attrs == {"v": 7}


@pytest.mark.parametrize(
    "content, expect",
    [
        ("{ not json", "not valid JSON"),
        ("[1, 2]", '"graph"'),
        ('{"name": "m"}', '"graph"'),
        ('{"graph": {"op": []}}', "graph: expected a list"),
        ('{"graph": [{"op": [{"type": "Relu"}]}]}', "has no name"),
        ('{"graph": [{"op": [{"name": "a"}, {"name": "a"}]}]}', "two ops named 'a'"),
        ('{"graph": [{"op": [{"name": "a", "id": "x"}]}]}', "graph[0].op[0].id: expected an integer"),
        ('{"graph": [{"op": [{"name": "a", "input": "b:0"}]}]}', "op[0].input: expected a list"),
        ('{"graph": [{"op": [{"name": "a", "attr": [{"value": {"i": 1}}]}]}]}', 'string "key"'),
        (
            '{"graph": [{"op": [{"name": "a", "attr": [{"key": "k", "value": {"b": 1}}]}]}]}',
            "graph[0].op[0].attr['k'].b: expected a boolean",
        ),
        (
            '{"graph": [{"op": [{"name": "a", "output_desc": [{"dtype": "DT_NOPE"}]}]}]}',
            "unknown DataType value 'DT_NOPE'",
        ),
    ],
)
def test_bad_json(tmp_path, content, expect):
    path = tmp_path / "ge_proto_1_Build.txt.json"
    path.write_text(content)
    assert expect in _error(path)


def test_find_graph_files(tmp_path):
    for name in (
        "ge_proto_00000002_Build.txt",
        "ge_proto_00000002_Build.txt.json",
        "ge_proto_00000001_Build.txt.json",
        "ge_proto_00000010_Build.txt",
        "ge_proto_00000003_PreRunAfterBuild.txt",
        "ge_proto_x_Build.txt",
        "notes.txt",
    ):
        (tmp_path / name).write_text("")
    assert [p.name for p in find_graph_files(tmp_path)] == [
        "ge_proto_00000001_Build.txt.json",
        "ge_proto_00000002_Build.txt",
        "ge_proto_00000010_Build.txt",
    ]
    assert len(find_graph_files(tmp_path, suffix=None)) == 4
    with pytest.raises(PrecisionToolError, match="not found"):
        find_graph_files(tmp_path / "missing")


# --- large graphs -----------------------------------------------------------------------------


def test_protobuf_parse_of_two_graphs_and_its_errors_line():
    whole = text_format.Parse(GRAPH_TXT.read_text(), ge_ir.ModelDef())
    whole.graph.add().CopyFrom(whole.graph[0])
    whole.graph[1].name = "second"
    two_graphs = text_format.MessageToString(whole)
    assert ge_ir.parse_text(two_graphs) == whole
    assert ge_ir.parse_text(text_format.MessageToString(whole, as_one_line=True)) == whole
    broken = two_graphs.replace('type: "Cast"', "type: ", 1)
    with pytest.raises(text_format.ParseError) as caught:
        ge_ir.parse_text(broken)
    assert caught.value.GetLine() == broken[: broken.index("type: \n")].count("\n") + 2


def test_a_100k_op_graph_loads(tmp_path):
    count = 100_000
    lines = ['name: "big"', "graph {", '  name: "big"']
    for i in range(count):  # protobuf's own TextFormat layout, as GE prints it
        lines += ["  op {", f'    name: "n/{i}"', '    type: "Relu"']
        lines += [f'    input: "n/{i - 1}:0"'] if i else []
        lines.append("  }")
    path = tmp_path / "ge_proto_00000001_Build.txt"
    path.write_text("\n".join(lines + ["}", ""]))
    graph = read_graph(path).graphs[0]
    assert len(graph.ops) == count
    assert graph.op("n/500").consumers == [[("n/501", 0)]]
    assert graph.find_op("n_99999").inputs == [InputRef("n/99998", 0, False)]
