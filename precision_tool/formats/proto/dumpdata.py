"""``toolkit.dumpdata``: the header of an NPU binary dump file (FORMATS.md section 1)."""

from __future__ import annotations

from .schema import Enum, Field, Message, ProtoFile, build_classes

DATA_TYPE_NAMES = (
    "UNDEFINED FLOAT FLOAT16 INT8 UINT8 INT16 UINT16 INT32 INT64 UINT32 UINT64 BOOL DOUBLE STRING "
    "DUAL_SUB_INT8 DUAL_SUB_UINT8 COMPLEX64 COMPLEX128 QINT8 QINT16 QINT32 QUINT8 QUINT16 RESOURCE "
    "STRING_REF DUAL VARIANT BF16 INT4 UINT1 INT2 UINT2 COMPLEX32 HIFLOAT8 FLOAT8_E5M2 "
    "FLOAT8_E4M3FN FLOAT8_E8M0 FLOAT6_E3M2 FLOAT6_E2M3 FLOAT4_E2M1 FLOAT4_E1M2"
).split()
"""``OutputDataType`` names by enum value (0 is UNDEFINED, 1 FLOAT, 2 FLOAT16, ...)."""

FORMAT_NAMES = {
    **dict(
        enumerate(
            (
                "NCHW NHWC ND NC1HWC0 FRACTAL_Z NC1C0HWPAD NHWC1C0 FSR_NCHW FRACTAL_DECONV C1HWNC0 "
                "FRACTAL_DECONV_TRANSPOSE FRACTAL_DECONV_SP_STRIDE_TRANS NC1HWC0_C04 FRACTAL_Z_C04 CHWN "
                "FRACTAL_DECONV_SP_STRIDE8_TRANS HWCN NC1KHKWHWC0 BN_WEIGHT FILTER_HWCK "
                "HASHTABLE_LOOKUP_LOOKUPS HASHTABLE_LOOKUP_KEYS HASHTABLE_LOOKUP_VALUE "
                "HASHTABLE_LOOKUP_OUTPUT HASHTABLE_LOOKUP_HITS C1HWNCoC0 MD NDHWC FRACTAL_ZZ FRACTAL_NZ "
                "NCDHW DHWCN NDC1HWC0 FRACTAL_Z_3D CN NC DHWNC FRACTAL_Z_3D_TRANSPOSE FRACTAL_ZN_LSTM "
                "FRACTAL_Z_G RESERVED ALL NULL ND_RNN_BIAS FRACTAL_ZN_RNN YUV YUV_A NCL FRACTAL_Z_WINO C1HWC0"
            ).split()
        )
    ),
    255: "MAX",
}
"""``OutputFormat`` names by enum value."""

FORMAT_VALUES = {name: value for value, name in FORMAT_NAMES.items()}
DATA_TYPE_VALUES = {name: value for value, name in enumerate(DATA_TYPE_NAMES)}

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
