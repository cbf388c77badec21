"""The enums of ``toolkit.dumpdata`` (:mod:`.dumpdata`) as plain tables: what a reader needs to
name a dump's data types and formats without building the protobuf classes (which imports
protobuf: about 18 ms that a run of msprobe dumps, which reads no DumpData, does without).
"""

from __future__ import annotations

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
