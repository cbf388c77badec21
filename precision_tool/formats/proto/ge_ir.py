"""``ge.proto``: GE's graph IR (FORMATS.md section 4), and the reading of its TextFormat.

The schema is that of GE's ``ge_ir.proto``: field numbers and enum values are exact, so the same
classes read TextFormat, binary and (through :mod:`.atc_json`) the JSON that ``atc --mode=5``
writes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from google.protobuf import text_format

from .dump_enums import DATA_TYPE_NAMES
from .schema import Enum, Field, Message, ProtoFile, build_classes

LIST_VALUE_TYPES = (
    "VT_LIST_NONE",
    "VT_LIST_STRING",
    "VT_LIST_INT",
    "VT_LIST_FLOAT",
    "VT_LIST_BOOL",
    "VT_LIST_BYTES",
    "VT_LIST_TENSOR_DESC",
    "VT_LIST_TENSOR",
    "VT_LIST_GRAPH",
    "VT_LIST_NAMED_ATTRS",
    "VT_LIST_DATA_TYPE",
)
"""``AttrDef.ListValue.ListValueType`` names by value."""

# GE's DataType numbering equals the dump header's (0 UNDEFINED, 1 FLOAT, 2 FLOAT16, ...); the
# newest values (36+) are included so that graphs from recent CANN releases still parse.
_data_type = Enum("DataType", tuple((f"DT_{name}", value) for value, name in enumerate(DATA_TYPE_NAMES)))

_list_value = Message(
    "ListValue",
    (
        Field("s", 2, "bytes", repeated=True),
        Field("i", 3, "int64", repeated=True),
        Field("f", 4, "float", repeated=True),
        Field("b", 5, "bool", repeated=True),
        Field("bt", 7, "bytes", repeated=True),
        Field("td", 8, "TensorDescriptor", repeated=True),
        Field("t", 9, "TensorDef", repeated=True),
        Field("g", 10, "GraphDef", repeated=True),
        Field("na", 11, "NamedAttrs", repeated=True),
        Field("dt", 12, "int64", repeated=True),
        Field("val_type", 20, "AttrDef.ListValue.ListValueType"),
    ),
    enums=(Enum("ListValueType", tuple((n, v) for v, n in enumerate(LIST_VALUE_TYPES))),),
)
_list_list_int = Message(
    "ListListInt",
    (Field("list_list_i", 1, "AttrDef.ListListInt.ListInt", repeated=True),),
    nested=(Message("ListInt", (Field("list_i", 1, "int64", repeated=True),)),),
)
_list_list_float = Message(
    "ListListFloat",
    (Field("list_list_f", 1, "AttrDef.ListListFloat.ListFloat", repeated=True),),
    nested=(Message("ListFloat", (Field("list_f", 1, "float", repeated=True),)),),
)
_attr_def = Message(
    "AttrDef",
    (
        Field("list", 1, "AttrDef.ListValue", oneof="value"),
        Field("s", 2, "bytes", oneof="value"),
        Field("i", 3, "int64", oneof="value"),
        Field("f", 4, "float", oneof="value"),
        Field("b", 5, "bool", oneof="value"),
        Field("bt", 7, "bytes", oneof="value"),
        Field("func", 10, "NamedAttrs", oneof="value"),
        Field("td", 11, "TensorDescriptor", oneof="value"),
        Field("t", 12, "TensorDef", oneof="value"),
        Field("g", 13, "GraphDef", oneof="value"),
        Field("list_list_int", 14, "AttrDef.ListListInt", oneof="value"),
        Field("dt", 15, "int64", oneof="value"),
        Field("list_list_float", 16, "AttrDef.ListListFloat", oneof="value"),
    ),
    nested=(_list_value, _list_list_int, _list_list_float),
)
_named_attrs = Message(
    "NamedAttrs",
    (
        Field("name", 1, "string"),
        Field("attr", 2, "map<string, AttrDef>"),
    ),
)
_shape_def = Message("ShapeDef", (Field("dim", 1, "int64", repeated=True),))
_tensor_descriptor = Message(
    "TensorDescriptor",
    (
        Field("name", 1, "string"),
        Field("dtype", 2, "DataType"),
        Field("shape", 3, "ShapeDef"),
        Field("layout", 4, "string"),
        Field("attr", 5, "map<string, AttrDef>"),
        Field("has_out_attr", 9, "bool"),
        Field("size", 10, "int64"),
        Field("weight_size", 11, "int64"),
        Field("reuse_input", 12, "bool"),
        Field("output_tensor", 13, "bool"),
        Field("device_type", 14, "string"),
        Field("input_tensor", 15, "bool"),
        Field("real_dim_cnt", 16, "int64"),
        Field("reuse_input_index", 17, "int64"),
        Field("data_offset", 18, "int64"),
        Field("cmps_size", 19, "int64"),
        # bytes rather than string: a compression table need not be valid UTF-8.
        Field("cmps_tab", 20, "bytes"),
        Field("cmps_tab_offset", 21, "int64"),
    ),
)
_tensor_def = Message(
    "TensorDef",
    (
        Field("desc", 1, "TensorDescriptor"),
        Field("data", 2, "bytes"),
    ),
)
_op_def = Message(
    "OpDef",
    (
        Field("name", 1, "string"),
        Field("type", 2, "string"),
        Field("input", 5, "string", repeated=True),
        Field("attr", 10, "map<string, AttrDef>"),
        Field("has_out_attr", 20, "bool"),
        Field("id", 21, "int64"),
        Field("stream_id", 22, "int64"),
        Field("input_name", 23, "string", repeated=True),
        Field("src_name", 24, "string", repeated=True),
        Field("src_index", 25, "int64", repeated=True),
        Field("dst_name", 26, "string", repeated=True),
        Field("dst_index", 27, "int64", repeated=True),
        Field("input_i", 28, "int64", repeated=True),
        Field("output_i", 29, "int64", repeated=True),
        Field("workspace", 30, "int64", repeated=True),
        Field("workspace_bytes", 31, "int64", repeated=True),
        Field("is_input_const", 32, "bool", repeated=True),
        Field("input_desc", 33, "TensorDescriptor", repeated=True),
        Field("output_desc", 34, "TensorDescriptor", repeated=True),
        Field("subgraph_name", 35, "string", repeated=True),
    ),
)
_graph_def = Message(
    "GraphDef",
    (
        Field("name", 1, "string"),
        Field("input", 4, "string", repeated=True),
        Field("output", 5, "string", repeated=True),
        Field("op", 6, "OpDef", repeated=True),
        Field("attr", 11, "map<string, AttrDef>"),
    ),
)
_model_def = Message(
    "ModelDef",
    (
        Field("name", 1, "string"),
        Field("version", 2, "uint32"),
        Field("custom_version", 3, "string"),
        Field("graph", 7, "GraphDef", repeated=True),
        Field("attr", 11, "map<string, AttrDef>"),
    ),
)

GE_IR_PROTO = ProtoFile(
    name="precision_tool/ge_ir.proto",
    package="ge.proto",
    enums=(_data_type,),
    messages=(_model_def, _graph_def, _op_def, _tensor_descriptor, _shape_def, _attr_def, _named_attrs, _tensor_def),
)

_classes = build_classes(GE_IR_PROTO)
ModelDef = _classes["ModelDef"]
GraphDef = _classes["GraphDef"]
OpDef = _classes["OpDef"]
TensorDescriptor = _classes["TensorDescriptor"]
ShapeDef = _classes["ShapeDef"]
AttrDef = _classes["AttrDef"]
NamedAttrs = _classes["NamedAttrs"]
TensorDef = _classes["TensorDef"]

DATA_TYPE = ModelDef.DESCRIPTOR.file.enum_types_by_name["DataType"]
"""The ``DataType`` enum descriptor: ``values_by_name`` / ``values_by_number``."""


def shortest_float32(value: float) -> float:
    """``value`` rounded to float32 and given back as the shortest decimal that rounds to it.

    Protobuf hands out float fields widened to double (0.001 reads as 0.0010000000474974513);
    the shortest form is what the user wrote and what GE meant, and it is stable under a
    write/read round trip.
    """
    return float(str(np.float32(value))) if math.isfinite(value) else float(value)


# --- TextFormat -------------------------------------------------------------------------------


def parse_text(text: str) -> Any:
    """TextFormat ``text`` as a ``ModelDef``, unknown fields skipped. Raises
    ``text_format.ParseError`` on bad input.

    protobuf's TextFormat parser is pure Python (about 1 MB/s): :mod:`..graph` gives it only the
    texts the fast reader (:mod:`..graph_text_fast`) declines, which no layout GE writes is
    (``bench/graph_load_bench.py``), and it words their errors.
    """
    return text_format.Parse(text, ModelDef(), allow_unknown_field=True)
