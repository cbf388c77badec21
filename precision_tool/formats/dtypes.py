"""Dump data types (``OutputDataType``) as numpy dtypes, including packed sub-byte types.

Byte-sized types map one-to-one onto numpy or ml_dtypes dtypes. Sub-byte types (INT4, INT2,
UINT2, UINT1, FLOAT4_E2M1) are stored packed, low bits first (FORMATS.md: INT4 is "two per
byte, low nibble first, sign-extended"; the same rule is assumed for the narrower integer kinds),
and are unpacked to one element per byte on read.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import numpy as np

from ..errors import PrecisionToolError
from .proto.dump_enums import DATA_TYPE_NAMES


@dataclass(frozen=True)
class DumpDType:
    """How the bytes of one dump data type become a numpy array."""

    name: str  # the enum name, e.g. "FLOAT16"
    dtype: np.dtype  # element dtype after unpacking
    bits: int = 0  # bits per element when packed below one byte, else 0
    signed: bool = False  # sign-extend packed integers

    @property
    def packed(self) -> bool:
        return self.bits > 0

    def nbytes(self, count: int) -> int:
        """Bytes that ``count`` elements occupy in the dump."""
        if self.packed:
            return -(-count * self.bits // 8)
        return count * self.dtype.itemsize

    def count(self, nbytes: int) -> int:
        """The most elements ``nbytes`` of dump data can hold."""
        return nbytes * 8 // self.bits if self.packed else nbytes // self.dtype.itemsize


def _d(name: str, dtype, bits: int = 0, signed: bool = False) -> tuple[str, DumpDType]:
    return name, DumpDType(name, np.dtype(dtype), bits, signed)


_TYPES = dict(
    (
        _d("FLOAT", np.float32),
        _d("FLOAT16", np.float16),
        _d("DOUBLE", np.float64),
        _d("BF16", ml_dtypes.bfloat16),
        _d("INT8", np.int8),
        _d("UINT8", np.uint8),
        _d("INT16", np.int16),
        _d("UINT16", np.uint16),
        _d("INT32", np.int32),
        _d("UINT32", np.uint32),
        _d("INT64", np.int64),
        _d("UINT64", np.uint64),
        _d("BOOL", np.bool_),
        _d("COMPLEX64", np.complex64),
        _d("COMPLEX128", np.complex128),
        # Quantised types carry plain integers; the scale lives elsewhere.
        _d("QINT8", np.int8),
        _d("QINT16", np.int16),
        _d("QINT32", np.int32),
        _d("QUINT8", np.uint8),
        _d("QUINT16", np.uint16),
        _d("FLOAT8_E5M2", ml_dtypes.float8_e5m2),
        _d("FLOAT8_E4M3FN", ml_dtypes.float8_e4m3fn),
        _d("FLOAT8_E8M0", ml_dtypes.float8_e8m0fnu),
        _d("INT4", np.int8, bits=4, signed=True),
        _d("INT2", np.int8, bits=2, signed=True),
        _d("UINT2", np.uint8, bits=2),
        _d("UINT1", np.uint8, bits=1),
        _d("FLOAT4_E2M1", ml_dtypes.float4_e2m1fn, bits=4),
    )
)

# The float types whose Inf and NaN are exactly the values with every one of some bits set (the
# exponent's, for the IEEE binary formats; e4m3fn has no Inf, and its NaN is 0x7F of either
# sign): the unsigned view that reads those bits, and the bits. Testing them is an integer pass,
# where numpy's isfinite of float16 widens every element (20x slower).
_NONFINITE_BITS = {
    np.dtype(np.float16): (np.dtype(np.uint16), 0x7C00),
    np.dtype(ml_dtypes.bfloat16): (np.dtype(np.uint16), 0x7F80),
    np.dtype(np.float32): (np.dtype(np.uint32), 0x7F800000),
    np.dtype(np.float64): (np.dtype(np.uint64), 0x7FF0000000000000),
    np.dtype(ml_dtypes.float8_e5m2): (np.dtype(np.uint8), 0x7C),
    np.dtype(ml_dtypes.float8_e4m3fn): (np.dtype(np.uint8), 0x7F),
}


# numpy's names of the types whose enum names differ, so "bfloat16" finds BF16
_NUMPY_SPELLING = {"BFLOAT16": "BF16", "FLOAT32": "FLOAT", "FLOAT64": "DOUBLE"}

# Display names for the CSV DataType column and tables (numpy's own spelling).
_DISPLAY = {
    "BF16": "bfloat16",
    "FLOAT4_E2M1": "float4_e2m1fn",
    "INT4": "int4",
    "INT2": "int2",
    "UINT2": "uint2",
    "UINT1": "uint1",
}


def nonfinite_bits(dtype: np.dtype) -> tuple[np.dtype, int] | None:
    """``(view, mask)`` when a value of ``dtype`` is Inf or NaN exactly when its bits, read as
    ``view``, have every bit of ``mask`` set; None for other dtypes (integers, complex, fp8 kinds
    whose NaN is another pattern)."""
    return _NONFINITE_BITS.get(np.dtype(dtype))


def data_type_name(value: int) -> str:
    """The enum name of a data type value, or ``UNKNOWN(value)``."""
    return DATA_TYPE_NAMES[value] if 0 <= value < len(DATA_TYPE_NAMES) else f"UNKNOWN({value})"


def dump_dtype(value: int) -> DumpDType:
    """The numpy view of data type ``value``; PrecisionToolError when numpy cannot hold it."""
    name = data_type_name(value)
    try:
        return _TYPES[name]
    except KeyError:
        if name.startswith("UNKNOWN"):
            raise PrecisionToolError(f"unknown data_type {value}") from None
        raise PrecisionToolError(f"unsupported data_type {name} ({value})") from None


def named_dtype(name: str) -> DumpDType | None:
    """The dump data type called ``name`` (``"INT4"``, ``"DT_INT8"``, ``"float16"``, any case),
    or None when no dump data type has that name."""
    key = str(name).strip().upper()
    key = key[3:] if key.startswith("DT_") else key
    return _TYPES.get(key) or _TYPES.get(_NUMPY_SPELLING.get(key, ""))


def element_bits(dtype: DumpDType | np.dtype | type | str) -> int:
    """Bits per element of ``dtype``: a dump data type, its name, or a numpy dtype.

    Sub-byte types count their packed width (INT4: 4), whatever numpy unpacks them to; a name
    is a dump data type name first, so ``"int4"`` is 4 bits (numpy alone reads it otherwise).
    """
    if isinstance(dtype, str):
        dtype = named_dtype(dtype) or _numpy_named(dtype)
    if isinstance(dtype, DumpDType):
        return dtype.bits if dtype.packed else dtype.dtype.itemsize * 8
    dtype = np.dtype(dtype)
    if dtype.itemsize == 1:  # ml_dtypes' int4, int2, float4 are one byte each in numpy
        for info in (ml_dtypes.iinfo, ml_dtypes.finfo):
            try:
                return int(info(dtype).bits)
            except ValueError:
                continue
    return dtype.itemsize * 8


def _numpy_named(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        raise PrecisionToolError(f"unknown data type {name!r}") from None


def display_name(dtype: DumpDType) -> str:
    """How a data type is shown to users: ``float16``, ``bfloat16``, ``int4``..."""
    return _DISPLAY.get(dtype.name) or numpy_name(dtype.dtype)


@lru_cache(maxsize=64)
def numpy_name(dtype: np.dtype) -> str:
    """``dtype.name``, which numpy works out in Python each time it is asked (a few
    microseconds; every tensor a run opens asks it)."""
    return dtype.name


def unpack_bits(raw: np.ndarray, dtype: DumpDType, count: int) -> np.ndarray:
    """Unpack ``count`` sub-byte elements from uint8 ``raw``, low bits of each byte first."""
    per_byte = 8 // dtype.bits
    shifts = np.arange(per_byte, dtype=np.uint8) * dtype.bits
    mask = np.uint8((1 << dtype.bits) - 1)
    values = ((raw[:, None] >> shifts) & mask).reshape(-1)[:count]
    if dtype.signed:
        # Sign-extend: values with the top bit set are negative.
        half = 1 << (dtype.bits - 1)
        return (values.astype(np.int16) - ((values >= half) << dtype.bits)).astype(np.int8)
    if dtype.dtype != np.uint8:
        return values.view(dtype.dtype) if dtype.dtype.itemsize == 1 else values.astype(dtype.dtype)
    return values


def pack_bits(values: np.ndarray, dtype: DumpDType) -> bytes:
    """The inverse of :func:`unpack_bits`, for writers."""
    per_byte = 8 // dtype.bits
    flat = np.ascontiguousarray(values).reshape(-1).view(np.uint8) & np.uint8((1 << dtype.bits) - 1)
    pad = (-flat.size) % per_byte
    flat = np.concatenate([flat, np.zeros(pad, np.uint8)]).reshape(-1, per_byte)
    shifts = np.arange(per_byte, dtype=np.uint8) * dtype.bits
    return np.bitwise_or.reduce(flat << shifts, axis=1).astype(np.uint8).tobytes()
