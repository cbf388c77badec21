"""``onnx``: the subset of ONNX's ``onnx.proto`` that GE's ``ge_onnx_*`` graph dumps use.

GE dumps each graph also as an ONNX ``ModelProto`` in TextFormat (``ge_onnx_*_Build.pbtxt``),
written by its ``OnnxUtils`` (metadef ``graph/utils/ge_ir_utils.cc``): one ``GraphProto`` whose
nodes are the ops, op types prefixed ``ge:``, every op field and tensor descriptor flattened
into node attributes, and each sub-graph as an extra node of type ``subgraph`` holding it in a
``GRAPH`` attribute. The schema below is declared as plain data, as :mod:`.ge_ir` declares
``ge.proto``, with ONNX's field numbers and enum values (``onnx/onnx.proto``), so protobuf's own
parsers read the text (and binary) form; fields outside the subset are skipped when parsing.
:mod:`..onnx_graph` turns the message into a ``ge.proto.ModelDef``.

Declared here rather than taken from the ``onnx`` package: the package pins protobuf versions
and brings a C++ extension for what is a dozen message types, and only their names matter to
the TextFormat parser.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import text_format

from .schema import Enum, Field, Message, ProtoFile, build_classes

ATTRIBUTE_TYPES = (
    ("UNDEFINED", 0),
    ("FLOAT", 1),
    ("INT", 2),
    ("STRING", 3),
    ("TENSOR", 4),
    ("GRAPH", 5),
    ("FLOATS", 6),
    ("INTS", 7),
    ("STRINGS", 8),
    ("TENSORS", 9),
    ("GRAPHS", 10),
    ("SPARSE_TENSOR", 11),
    ("SPARSE_TENSORS", 12),
    ("TYPE_PROTO", 13),
    ("TYPE_PROTOS", 14),
)
"""``AttributeProto.AttributeType``: name and value."""

_string_entry = Message(
    "StringStringEntryProto",
    (
        Field("key", 1, "string"),
        Field("value", 2, "string"),
    ),
)
_opset = Message(
    "OperatorSetIdProto",
    (
        Field("domain", 1, "string"),
        Field("version", 2, "int64"),
    ),
)
_tensor = Message(
    "TensorProto",
    (
        Field("dims", 1, "int64", repeated=True),
        Field("data_type", 2, "int32"),
        Field("float_data", 4, "float", repeated=True),
        Field("int32_data", 5, "int32", repeated=True),
        Field("string_data", 6, "bytes", repeated=True),
        Field("int64_data", 7, "int64", repeated=True),
        Field("name", 8, "string"),
        Field("raw_data", 9, "bytes"),
        Field("double_data", 10, "double", repeated=True),
        Field("uint64_data", 11, "uint64", repeated=True),
        Field("doc_string", 12, "string"),
    ),
)
_shape = Message(
    "TensorShapeProto",
    (Field("dim", 1, "TensorShapeProto.Dimension", repeated=True),),
    nested=(
        Message(
            "Dimension",
            (
                Field("dim_value", 1, "int64", oneof="value"),
                Field("dim_param", 2, "string", oneof="value"),
                Field("denotation", 3, "string"),
            ),
        ),
    ),
)
_type = Message(
    "TypeProto",
    (Field("tensor_type", 1, "TypeProto.Tensor"), Field("denotation", 6, "string")),
    nested=(
        Message(
            "Tensor",
            (
                Field("elem_type", 1, "int32"),
                Field("shape", 2, "TensorShapeProto"),
            ),
        ),
    ),
)
_value_info = Message(
    "ValueInfoProto",
    (
        Field("name", 1, "string"),
        Field("type", 2, "TypeProto"),
        Field("doc_string", 3, "string"),
    ),
)
_attribute = Message(
    "AttributeProto",
    (
        Field("name", 1, "string"),
        Field("f", 2, "float"),
        Field("i", 3, "int64"),
        Field("s", 4, "bytes"),
        Field("t", 5, "TensorProto"),
        Field("g", 6, "GraphProto"),
        Field("floats", 7, "float", repeated=True),
        Field("ints", 8, "int64", repeated=True),
        Field("strings", 9, "bytes", repeated=True),
        Field("tensors", 10, "TensorProto", repeated=True),
        Field("graphs", 11, "GraphProto", repeated=True),
        Field("doc_string", 13, "string"),
        Field("type", 20, "AttributeProto.AttributeType"),
        Field("ref_attr_name", 21, "string"),
    ),
    enums=(Enum("AttributeType", ATTRIBUTE_TYPES),),
)
_node = Message(
    "NodeProto",
    (
        Field("input", 1, "string", repeated=True),
        Field("output", 2, "string", repeated=True),
        Field("name", 3, "string"),
        Field("op_type", 4, "string"),
        Field("attribute", 5, "AttributeProto", repeated=True),
        Field("doc_string", 6, "string"),
        Field("domain", 7, "string"),
    ),
)
_graph = Message(
    "GraphProto",
    (
        Field("node", 1, "NodeProto", repeated=True),
        Field("name", 2, "string"),
        Field("initializer", 5, "TensorProto", repeated=True),
        Field("doc_string", 10, "string"),
        Field("input", 11, "ValueInfoProto", repeated=True),
        Field("output", 12, "ValueInfoProto", repeated=True),
        Field("value_info", 13, "ValueInfoProto", repeated=True),
    ),
)
_model = Message(
    "ModelProto",
    (
        Field("ir_version", 1, "int64"),
        Field("producer_name", 2, "string"),
        Field("producer_version", 3, "string"),
        Field("domain", 4, "string"),
        Field("model_version", 5, "int64"),
        Field("doc_string", 6, "string"),
        Field("graph", 7, "GraphProto"),
        Field("opset_import", 8, "OperatorSetIdProto", repeated=True),
        Field("metadata_props", 14, "StringStringEntryProto", repeated=True),
    ),
)

ONNX_PROTO = ProtoFile(
    name="precision_tool/onnx_subset.proto",
    package="onnx",
    messages=(_model, _graph, _node, _attribute, _value_info, _type, _shape, _tensor, _opset, _string_entry),
)

_classes = build_classes(ONNX_PROTO)
ModelProto = _classes["ModelProto"]
GraphProto = _classes["GraphProto"]
NodeProto = _classes["NodeProto"]
AttributeProto = _classes["AttributeProto"]
TensorProto = _classes["TensorProto"]
ValueInfoProto = _classes["ValueInfoProto"]

ATTRIBUTE_TYPE = AttributeProto.DESCRIPTOR.enum_types_by_name["AttributeType"]
"""The ``AttributeType`` enum descriptor: ``values_by_name`` / ``values_by_number``."""


def parse_text(text: str) -> Any:
    """TextFormat ``text`` as a ``ModelProto``, unknown fields skipped.

    Raises ``text_format.ParseError`` on bad input.
    """
    return text_format.Parse(text, ModelProto(), allow_unknown_field=True)
