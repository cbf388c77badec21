"""What the globals a ``torch.save`` pickle names mean: torch's dtypes as numpy's, the typed
storage classes by the dtype of their elements, and the only callables a tensor's rebuild may
call. :mod:`.torch_pickle`'s interpreter allows exactly these names (and names the dtypes numpy
has no type for in words); :mod:`.npy_file` reads the ``torch.<name>`` dtype names of msprobe's
``dump.json`` with the same table.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

# torch's dtypes as numpy's; a dtype pickles as the global ``torch.<name>``
TORCH_DTYPES = {
    "float32": np.float32,
    "float": np.float32,
    "float64": np.float64,
    "double": np.float64,
    "float16": np.float16,
    "half": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "short": np.int16,
    "int32": np.int32,
    "int": np.int32,
    "int64": np.int64,
    "long": np.int64,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "bool": np.bool_,
    "complex64": np.complex64,
    "cfloat": np.complex64,
    "complex128": np.complex128,
    "cdouble": np.complex128,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
}
# torch dtypes numpy has no type for: named in words rather than refused as unknown globals
NO_NUMPY_DTYPES = frozenset(
    {
        "complex32",
        "chalf",
        "float4_e2m1fn_x2",
        "qint8",
        "quint8",
        "qint32",
        "quint4x2",
        "quint2x4",
        "bits1x8",
        "bits2x4",
        "bits4x2",
        "bits8",
        "bits16",
        *(f"int{n}" for n in range(1, 8)),
        *(f"uint{n}" for n in range(1, 8)),
    }
)
# the typed storage classes of torch.save's persistent ids, by the dtype of their elements
STORAGES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
NO_NUMPY_STORAGES = frozenset(
    {"ComplexHalfStorage", "QInt8Storage", "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage"}
)
UNTYPED_STORAGES = {("torch.storage", "UntypedStorage"), ("torch", "UntypedStorage")}
# the only callables: what each is, checked when it is called
CALLS = {
    ("torch._utils", "_rebuild_tensor"): "tensor",
    ("torch._utils", "_rebuild_tensor_v2"): "tensor_v2",
    ("torch._utils", "_rebuild_tensor_v3"): "tensor_v3",
    ("torch._utils", "_rebuild_parameter"): "parameter",
    ("torch._utils", "_rebuild_parameter_with_state"): "parameter",
    ("collections", "OrderedDict"): "dict",
}


__all__ = ["CALLS", "NO_NUMPY_DTYPES", "NO_NUMPY_STORAGES", "STORAGES", "TORCH_DTYPES", "UNTYPED_STORAGES"]
