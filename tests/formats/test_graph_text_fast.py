"""The fast TextFormat reader against protobuf's: the same model, or it declines.

The reference is protobuf's own parser (``text_format.Parse`` into ``ge.proto.ModelDef``, unknown
fields allowed) with :func:`model_from_proto`; models are compared through
:func:`tests.formats.model_compare.canonical`, which sees every field, type and float bit.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from google.protobuf import text_format

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.graph import model_from_proto, read_graph
from precision_tool.formats.graph_text_fast import model_from_fields, model_from_text, model_schema
from precision_tool.formats.graph_write import OpSpec, build_model, model_to_proto, tensor_desc
from precision_tool.formats.proto import fast_text, ge_ir
from precision_tool.formats.proto.fast_text import parse
from precision_tool.formats.proto.text_scalars import tokens
from tests.conftest import FIXTURES, REAL

from .model_compare import canonical

REPO = Path(__file__).resolve().parents[2]
FIXTURE_GRAPHS = sorted(FIXTURES.glob("*/precision_data/npu/*/graph/*.txt"))
REAL_GRAPHS = sorted(p for p in REAL.glob("ge_*") if p.suffix in (".txt", ".pbtxt"))
SAMPLE_GRAPHS = sorted((REPO / "precision_data" / "npu").glob("*/graph/*.txt"))


def protobuf_reading(text: str):
    """What protobuf's parser and model_from_proto make of ``text``: a canonical model, or
    ("error", kind) when protobuf refuses it, or ("model error", problem)."""
    try:
        proto = text_format.Parse(text, ge_ir.ModelDef(), allow_unknown_field=True)
    except (text_format.ParseError, ValueError, RecursionError) as err:
        return ("error", type(err).__name__)
    try:
        return canonical(model_from_proto(proto))
    except PrecisionToolError as err:
        return ("model error", err.problem)


def fast_reading(text: str):
    """The fast reader's: a canonical model, None when it declines, or ("model error", ...)."""
    try:
        model = model_from_text(text)
    except PrecisionToolError as err:
        return ("model error", err.problem)
    return None if model is None else canonical(model)


def assert_same(text: str) -> None:
    """The fast reader takes ``text`` and gives what protobuf's parser gives."""
    fast = fast_reading(text)
    assert fast is not None, "the fast reader declined"
    assert fast == protobuf_reading(text)


# --- every real graph -------------------------------------------------------------------------


def _graph_files(paths: list[Path], where: str) -> list[Path]:
    assert paths, f"no {where} graph files under tests/data"
    return paths


@pytest.mark.parametrize("kind", ["fixtures", "real"])
def test_data_graphs_read_as_protobuf_reads_them(kind):
    paths = _graph_files(FIXTURE_GRAPHS if kind == "fixtures" else REAL_GRAPHS, kind)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert_same(text)  # the ONNX text too: a ModelDef of unknown fields to both
        if path.name.startswith("ge_proto_"):  # what the tool reads (ONNX goes its own way)
            assert canonical(read_graph(path)) == protobuf_reading(text)


def test_the_sample_graphs_read_as_protobuf_reads_them():
    assert SAMPLE_GRAPHS
    for path in SAMPLE_GRAPHS:
        assert_same(path.read_text(encoding="utf-8"))


def test_the_comparison_sees_what_matters():
    desc = tensor_desc("DT_FLOAT16", "NC1HWC0", (1, 2, 3, 4, 16), origin_shape=(1, 2, 3))
    model = build_model(
        [OpSpec("a", "Data", [], [], [desc]), OpSpec("b", "Relu", ["a:0"], [desc], [desc], attrs={"k": 1})]
    )
    op = model.graphs[0].ops[1]
    ref = op.inputs[0]
    # == takes these for equal; the comparison of the tests does not
    for change in ({"inputs": [dataclasses.replace(ref, slot=5)]}, {"attrs": {"k": True}}, {"attrs": {"k": 1.0}}):
        other = dataclasses.replace(op, **change)
        assert other == op and canonical(other) != canonical(op)
    other = dataclasses.replace(op, input_descs=[dataclasses.replace(desc, shape=[1, 2, 3, 4, 16])])
    assert canonical(other) != canonical(op)
    assert canonical({"f": -0.0}) != canonical({"f": 0.0})
    assert canonical({"a": 1, "b": 2}) != canonical({"b": 2, "a": 1})
    assert canonical({"f": math.nan}) == canonical({"f": math.nan})
    assert canonical(model) == canonical(model_from_proto(model_to_proto(model)))


# --- what TextFormat allows -------------------------------------------------------------------

FEATURES = {
    "angle brackets": 'graph < name: "g" op < name: "a" type: "T" > >',
    "colon before a message": 'graph: { name: "g" op: { name: "a" } }',
    "escapes": r'name: "o\101\x41\n\t\"\\\'\u00e9\U0001F600 \342\202\254" graph { }',
    "single quotes and joined literals": "name: 'it' \"s\" 'a \"quote\"' graph { name: 'g' }",
    "comments": '# a graph\nname: "m"  # trailing\n#\ngraph { # open\n name: "g" }\n# end',
    "separators": 'name: "m", version: 3; custom_version: "x" graph { name: "g"; }',
    "enums by name and number": (
        'graph { op { name: "a" input_desc { dtype: DT_FLOAT16 } input_desc { dtype: 2 }'
        " input_desc { dtype: 99 } input_desc { dtype: -1 } input_desc { } } }"
    ),
    "repeated fields and lists": (
        'graph { input: "x" input: ["y", "z"] op { name: "a" input: "p:0" input: ["q:1", '
        '"r:-1"] input_desc { shape { dim: [1, 2] dim: 3 dim: [] } } } }'
    ),
    "lists of messages": 'graph [ { name: "g" op [{ name: "a" }, < name: "b" >] }, {} ]',
    "map entries, later ones winning": (
        'attr { key: "x" value { i: 3 } } attr { key: "x" value { s: "y" } }'
        ' attr { key: "z" } attr { key: "w" value { i: 1 } } attr { key: "w" value { } }'
        " attr { value { b: true } } graph { }"
    ),
    "floats": (
        'attr { key: "a" value { list { f: [1e-05, inf, -inf, nan, -0, 1.0f, 1f, .5, -.5, +2,'
        " 3.4028236e38, 1e-50, 0.1, 16777217, infinity, -Infinity, 5., 1E3, 1_0]"
        ' val_type: VT_LIST_FLOAT } } } attr { key: "b" value { f: -0.0 } }'
        ' attr { key: "c" value { f: 3.4028235e38 } } graph { }'
    ),
    "integer extremes and forms": (
        'version: 4294967295 graph { op { name: "a" id: 9223372036854775807 stream_id:'
        ' -9223372036854775808 attr { key: "h" value { i: 0x7fffffffffffffff } }'
        ' attr { key: "o" value { i: 010 } } attr { key: "n" value { i: -0 } }'
        ' attr { key: "l" value { list { i: [-1, 0, +1, 0X1F] } } } } }'
    ),
    "bools": (
        'attr { key: "a" value { list { b: [true, false, True, False, t, f, 1, 0] } } }'
        ' graph { op { name: "x" has_out_attr: True input_desc { reuse_input: 1 } } }'
    ),
    "unknown fields": (
        'future: 3 future2: "x" "y" future3: -inf future4 { deep < x: 1, y: [1, "a"] > }\n'
        'future5: [1, 2.5, "s", {a: 1}, <b: [c]>] future6: [] graph { newer: WORD name: "g" }'
    ),
    "every attribute kind": (
        'graph { op { name: "a" attr { key: "bt" value { bt: "\\000\\377" } }'
        ' attr { key: "td" value { td { dtype: DT_INT8 layout: "ND" shape { dim: 2 } } } }'
        ' attr { key: "t" value { t { desc { layout: "NZ" } data: "\\001" } } }'
        ' attr { key: "tempty" value { t { } } }'
        ' attr { key: "g" value { g { name: "sub" op { name: "x" } op { name: "x" } } } }'
        ' attr { key: "func" value { func { name: "fn" attr { key: "k" value { i: 1 } } } } }'
        ' attr { key: "na" value { list { na { name: "n" } val_type: VT_LIST_NAMED_ATTRS } } }'
        ' attr { key: "lg" value { list { g { name: "a" } g { name: "b" } } } }'
        ' attr { key: "ltd" value { list { td { layout: "X" } t { } } } }'
        ' attr { key: "mis" value { list { s: "a" val_type: VT_LIST_INT } } }'
        ' attr { key: "vt" value { list { i: 1 val_type: 77 } } }'
        ' attr { key: "lli" value { list_list_int { list_list_i { list_i: [1, 2] }'
        " list_list_i { } } } }"
        ' attr { key: "llf" value { list_list_float { list_list_f { list_f: 0.1 } } } }'
        ' attr { key: "e" value { list { } } } attr { key: "dt" value { dt: 3 } }'
        ' attr { key: "ldt" value { list { dt: [1, 2] } } }'
        ' attr { key: "sbad" value { s: "\\377ok" } } } }'
    ),
    "origin fields": (
        'graph { op { name: "a" output_desc { attr { key: "origin_shape" value { list {'
        ' i: [1, 2] } } } attr { key: "origin_format" value { s: "NCHW" } }'
        ' attr { key: "_datadump_origin_format" value { s: "" } }'
        ' attr { key: "_datadump_origin_output_index" value { b: true } }'
        ' attr { key: "_datadump_origin_name" value { s: "src" } } } } }'
    ),
    "ops and their edges": (
        'graph { name: "g" op { name: "a" type: "Data" input: "" }'
        ' op { name: "b" input: "a:0" input: "a:-1" input: "" input: "a:2" attr { key:'
        ' "_datadump_original_op_names" value { list { s: ["x", "y"] } } } attr { key:'
        ' "b_kernelname" value { s: "k" } } attr { key: "_datadump_is_multiop" value { b: 1'
        ' } } } op { name: "onnx::c:1" input: "b" input: "onnx::x:bad" } }'
    ),
    "whitespace": 'name:"m"\r\ngraph\t{\r\n\tname :\t"g"\x0b}\x0c\r\n',
    "empty": "",
    "two graphs, one empty op list": 'graph { name: "a" op { name: "x" } } graph { name: "b" }',
}


_JOINS_ACROSS_LINES = {"single quotes and joined literals", "unknown fields", "separators"}


@pytest.mark.parametrize("name", FEATURES)
def test_what_textformat_allows(name):
    text = FEATURES[name]
    assert_same(text)
    # One token a line: a field's value or its message on the next line, all learnt line by
    # line. A literal joined to one, or a separator, on the next line is left to protobuf.
    spread = "\n".join(tokens(text))
    if name in _JOINS_ACROSS_LINES:
        assert fast_reading(spread) in (None, protobuf_reading(spread))
    else:
        assert_same(spread)


# --- what it leaves to protobuf ---------------------------------------------------------------

DECLINED = {
    "a string continued on the next line": 'name: "a"\n "b" graph { }',
    "a separator on the next line": 'name: "a"\n, version: 1',
    "a default value given again": 'name: "" name: "x"',
    "an enum number in hex": 'graph { op { name: "a" input_desc { dtype: 0x1 } } }',
    "a field number as name": "1: 5 graph { }",
    "a value of a field given twice": "version: 1 version: 2",
    "a oneof given twice": 'attr { key: "k" value { i: 1 s: "x" } }',
    "a message given twice": "graph { op { input_desc { shape { } shape { } } } }",
    "an extension": "[ext.field]: 1",
    "very deep nesting": "future " + "{ x " * 150 + "}" * 150,
}
SYNTAX_ERRORS = {
    "an open string": 'name: "m\ngraph { }',
    "an extra close": 'name: "m" }',
    "an open message": "graph { op {",
    "no such enum": "graph { op { input_desc { dtype: DT_NOPE } } }",
    "a float for an int": "graph { op { id: 1.5 } }",
    "an int out of range": "version: 4294967296",
    "a number for a string": "name: 5",
    "not a bool": 'attr { key: "k" value { b: yes } }',
    "a string for a float": 'attr { key: "k" value { f: "1" } }',
    "a close of the other kind": 'graph < name: "g" }',
    "a bad escape": r'name: "\x"',
    "not UTF-8 in a string field": r'name: "\377"',
    "a comma before the close of a list": 'graph { input: ["a",] }',
    "a message field as scalar": 'graph: "g"',
    "a separator right after an open": 'graph { attr {; key: "k" } }',
    "a separator right after a list item's open": 'graph [ { name: "a" }, {; name: "b" } ]',
}


@pytest.mark.parametrize("text", DECLINED.values(), ids=DECLINED.keys())
def test_what_it_declines_protobuf_reads(text, tmp_path):
    assert fast_reading(text) is None
    path = tmp_path / "ge_proto_1_Build.txt"
    path.write_text(text + "\n", encoding="utf-8")
    expected = protobuf_reading(text)
    if expected[0] == "error":
        with pytest.raises(PrecisionToolError):
            read_graph(path)
    else:
        assert canonical(read_graph(path)) == expected


@pytest.mark.parametrize("text", SYNTAX_ERRORS.values(), ids=SYNTAX_ERRORS.keys())
def test_syntax_errors_are_left_to_protobuf_and_name_their_place(text, tmp_path):
    assert fast_reading(text) is None
    assert protobuf_reading(text)[0] == "error"
    path = tmp_path / "ge_proto_1_Build.txt"
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(PrecisionToolError) as caught:
        read_graph(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    if "TextFormat syntax error" in message:
        assert "line" in message and "column" in message


def test_bad_ops_give_the_same_errors_as_protobufs():
    for text in (
        'graph { name: "g" op { type: "Relu" } }',
        'graph { name: "g" op { name: "a" } op { name: "a" } }',
        'graph { op { name: "a" } } graph { name: "two" op { name: "b" } op {} }',
    ):
        fast = fast_reading(text)
        assert fast is not None and fast[0] == "model error"
        assert fast == protobuf_reading(text)


def test_a_bad_op_does_not_hide_a_later_syntax_error():
    # protobuf's parser fails on the syntax before any op is looked at; so must this reader
    text = 'graph { op { name: "a" } op { name: "a" } } graph { op { name: } }'
    assert protobuf_reading(text)[0] == "error"
    assert fast_reading(text) is None


# --- big and repetitive graphs: learnt lines, templates, blocks -----------------------------


def _repetitive_model(count: int):
    """Ops drawing their descriptors and attributes from small pools, as real graphs do."""
    descs = [
        tensor_desc("DT_FLOAT16", layout, shape, origin_format="NCHW", origin_shape=shape[:2], attrs=extra)
        for layout in ("ND", "NC1HWC0")
        for shape in ((1, 2), (8, 64))
        for extra in ({}, {"size": 4096}, {"_datadump_origin_name": "x"})
    ]
    specs = []
    for i in range(count):
        attrs = {
            "_kernelname": f"k{i % 7}",
            "flag": i % 3 == 0,
            "ratio": (i % 5) / 10,
            "ids": [i % 4, 7],
            "blob": b"\x00\xff" if i % 50 == 7 else "text",
        }
        specs.append(
            OpSpec(
                f"n/{i}",
                ("Relu", "Add", "Cast")[i % 3],
                [f"n/{i - 1}:0"] + ([f"n/{i - 2}:-1"] if i % 4 == 1 else []) if i else [],
                [descs[i % len(descs)]],
                [descs[(i * 7) % len(descs)]],
                attrs,
                original_op_names=[f"orig/{i % 9}"] if i % 2 else None,
            )
        )
    return build_model(specs, attrs={"model_attr": "m"}, graph_attrs={"g": 1})


@pytest.fixture(scope="module")
def repetitive_text() -> str:
    return text_format.MessageToString(model_to_proto(_repetitive_model(200)))


def test_repetitive_graphs_in_every_layout(repetitive_text):
    proto = text_format.Parse(repetitive_text, ge_ir.ModelDef())
    assert_same(repetitive_text)
    assert_same(text_format.MessageToString(proto, as_one_line=True))
    assert_same(text_format.MessageToString(proto, pointy_brackets=True, use_short_repeated_primitives=True))
    # blocks that differ from a learnt one in a single line, or only in a literal
    edited = repetitive_text.replace('s: "NCHW"', 's: "NHWC"', 7).replace("dim: 64", "dim: 65", 5)
    assert_same(edited)


def test_lists_of_lists_repeated_are_replayed_as_blocks_and_given_fresh(monkeypatch):
    """An attribute holding lists of lists (GE's shape ranges on every descriptor), the same
    op after op, is learnt as one block and replayed, as protobuf reads it, each op getting
    lists of its own (a model's values are mutable). The same lists under another key replay
    the learnt ``list_list_int`` block inside the attribute's value."""
    ranges = [[8, 8], [64, -1]]
    desc = tensor_desc("DT_FLOAT16", "ND", (8, 64), attrs={"origin_shape_range": ranges, "shape_range": ranges})
    specs = [
        OpSpec(f"n/{i}", "Relu", [f"n/{i - 1}:0"] if i else [], [desc], [desc], {"ranges": [[0.5, 1.5], [2.0]]})
        for i in range(40)
    ]
    text = text_format.MessageToString(model_to_proto(build_model(specs)))
    assert_same(text)

    copies = []
    copy = fast_text._copy
    monkeypatch.setattr(fast_text, "_copy", lambda value, how: copies.append(how) or copy(value, how))
    schema = model_schema()
    fields = parse(text, schema)
    assert 3 in copies  # a list_list_int block replayed as a field's value
    op_type = schema.fields["graph"].message.fields["op"].message
    learnt = [entry[1] for by_line in op_type.blocks.values() for entry in by_line.values()]
    assert any(op[2][0] == "ranges" and op[3] == 4 for op in learnt if op)  # a map entry's lists of lists
    ops = model_from_fields(fields, None).graphs[0].ops
    first, last = ops[0], ops[-1]
    assert first.attrs["ranges"] == last.attrs["ranges"] == [[0.5, 1.5], [2.0]]
    assert first.attrs["ranges"] is not last.attrs["ranges"]
    assert first.attrs["ranges"][0] is not last.attrs["ranges"][0]
    found = [
        desc.attrs[key]
        for op in (first, last)
        for desc in op.input_descs
        for key in ("origin_shape_range", "shape_range")
    ]
    assert all(value == ranges for value in found)
    assert len({id(value[1]) for value in found}) == len(found)
