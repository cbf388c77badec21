"""``toolkit.dumpdata``: the header of an NPU binary dump file (FORMATS.md section 1)."""

from __future__ import annotations

from .dump_enums import DATA_TYPE_NAMES, FORMAT_NAMES
from .schema import Enum, Field, Message, ProtoFile, build_classes

_shape = Message("Shape", (Field("dim", 1, "uint64", repeated=True),))
_dim_range = Message("DimRange", (Field("dim_start", 1, "uint64"), Field("dim_end", 2, "uint64")))
_original_op = Message(
    "OriginalOp",
    (
        Field("name", 1, "string"),
        Field("output_index", 2, "uint32"),
        Field("data_type", 3, "OutputDataType"),
        Field("format", 4, "OutputFormat"),
    ),
)
_op_output = Message(
    "OpOutput",
    (
        Field("data_type", 1, "OutputDataType"),
        Field("format", 2, "OutputFormat"),
        Field("shape", 3, "Shape"),
        Field("original_op", 4, "OriginalOp"),
        Field("data", 5, "bytes"),
        Field("size", 6, "uint64"),
        Field("original_shape", 7, "Shape"),
        Field("sub_format", 8, "int32"),
        Field("address", 9, "uint64"),
        Field("dim_range", 10, "DimRange", repeated=True),
        Field("offset", 11, "uint64"),
    ),
)
# OpInput's numbering differs from OpOutput's after field 3 (it has no original_op).
_op_input = Message(
    "OpInput",
    (
        Field("data_type", 1, "OutputDataType"),
        Field("format", 2, "OutputFormat"),
        Field("shape", 3, "Shape"),
        Field("data", 4, "bytes"),
        Field("size", 5, "uint64"),
        Field("original_shape", 6, "Shape"),
        Field("sub_format", 7, "int32"),
        Field("address", 8, "uint64"),
        Field("offset", 9, "uint64"),
    ),
)
_op_buffer = Message(
    "OpBuffer",
    (
        Field("buffer_type", 1, "BufferType"),
        Field("data", 2, "bytes"),
        Field("size", 3, "uint64"),
    ),
)
_op_attr = Message("OpAttr", (Field("name", 1, "string"), Field("value", 2, "string")))
_workspace = Message(
    "Workspace",
    (
        Field("type", 1, "SpaceType"),
        Field("data", 2, "bytes"),
        Field("size", 3, "uint64"),
    ),
)
_dump_data = Message(
    "DumpData",
    (
        Field("version", 1, "string"),
        Field("dump_time", 2, "uint64"),
        Field("output", 3, "OpOutput", repeated=True),
        Field("input", 4, "OpInput", repeated=True),
        Field("buffer", 5, "OpBuffer", repeated=True),
        Field("op_name", 6, "string"),
        Field("attr", 7, "OpAttr", repeated=True),
        Field("space", 8, "Workspace", repeated=True),
    ),
)

DUMP_DATA_PROTO = ProtoFile(
    name="precision_tool/dump_data.proto",
    package="toolkit.dumpdata",
    enums=(
        # Enum value names share one C++ scope per package, hence the prefixes.
        Enum("OutputDataType", tuple((f"DT_{n}", v) for v, n in enumerate(DATA_TYPE_NAMES))),
        Enum("OutputFormat", tuple((f"FORMAT_{n}", v) for v, n in FORMAT_NAMES.items())),
        Enum("BufferType", (("L1", 0),)),
        Enum("SpaceType", (("LOG", 0),)),
    ),
    messages=(_shape, _dim_range, _original_op, _op_output, _op_input, _op_buffer, _op_attr, _workspace, _dump_data),
)

_classes = build_classes(DUMP_DATA_PROTO)
DumpData = _classes["DumpData"]
OpOutput = _classes["OpOutput"]
OpInput = _classes["OpInput"]
