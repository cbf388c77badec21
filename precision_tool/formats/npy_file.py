"""msprobe's ``.npy`` tensor files, and the dtype names of its ``dump.json``.

msprobe's MindSpore dump saves each tensor with ``np.save(tensor.asnumpy())`` after widening
the types numpy lacks to float32: ``BFloat16`` (``convert_bf16_to_fp32``) and the 8-bit floats
``Float8E5M2``, ``Float8E4M3FN``, ``HiFloat8`` (``cast_to_float_if_fp8``), while ``dump.json``
keeps the tensor's own dtype. So a file's dtype differs from ``dump.json``'s in exactly that
way; the widening is exact, and :func:`read_npy` narrows back to the recorded dtype (checking
that it is exact) so a bfloat16 tensor is compared as one. HiFloat8 has no numpy type: its
float32 values stay float32. Every other dtype is saved as it is, and a mismatch is an error.
msprobe's PyTorch dump writes ``.npy`` only for string arrays (numbers go to ``.pt``), which
hold no numbers and are refused.

Names in ``dump.json``: MindSpore's (``Float32``, ``BFloat16``), torch's (``torch.float32``)
and numpy's for ``numpy.ndarray`` arguments (``float32``).
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np

from ..errors import PrecisionToolError
from .golden import load_npy
from .torch_names import TORCH_DTYPES
from .torch_pickle import shown

MINDSPORE_DTYPES = {
    "Float16": np.float16,
    "Float32": np.float32,
    "Float64": np.float64,
    "BFloat16": ml_dtypes.bfloat16,
    "Int8": np.int8,
    "Int16": np.int16,
    "Int32": np.int32,
    "Int64": np.int64,
    "UInt8": np.uint8,
    "UInt16": np.uint16,
    "UInt32": np.uint32,
    "UInt64": np.uint64,
    "Bool": np.bool_,
    "Complex64": np.complex64,
    "Complex128": np.complex128,
    "Float8E4M3FN": ml_dtypes.float8_e4m3fn,
    "Float8E5M2": ml_dtypes.float8_e5m2,
}
# what msprobe widens to float32 before saving: the dtype dump.json records for it
_WIDENED = frozenset({"BFloat16", "Float8E4M3FN", "Float8E5M2", "HiFloat8"})
_NO_NUMPY = frozenset({"HiFloat8"})
# numpy kinds a .npy may hold that are no tensor's (msprobe saves string arrays as .npy)
_NOT_NUMBERS = {"U": "strings", "S": "byte strings", "M": "dates", "m": "time spans"}


def dump_dtype(name: str) -> np.dtype | None:
    """The numpy dtype of a ``dump.json`` dtype name (``torch.bfloat16``, ``BFloat16``,
    ``float32``), or None when numpy has none (``HiFloat8``) or the name is unknown."""
    if name.startswith("torch."):
        found = TORCH_DTYPES.get(name[len("torch.") :])
    else:
        found = MINDSPORE_DTYPES.get(name)
    if found is not None:
        return np.dtype(found)
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError, SyntaxError):
        return None
    return dtype if dtype.kind in "biufc" else None


def read_npy(path: str | os.PathLike, dtype_name: str | None = None) -> np.ndarray:
    """The ``.npy`` file ``path`` memory-mapped read-only (never unpickled), as the dtype
    ``dump.json`` records when ``dtype_name`` is given: a float32 file of a tensor msprobe
    widened (bfloat16, float8) is narrowed back, exactly, which copies it.

    Raises:
        PrecisionToolError: naming ``path``: the file is missing, not a ``.npy`` file,
            truncated, holds pickled objects or no numbers, or its dtype is not what
            ``dtype_name`` can be saved as.
    """
    try:
        array = load_npy(path)
    except PrecisionToolError as exc:  # its words are a golden file's; this is a dump tensor
        raise PrecisionToolError(exc.problem.replace("golden file", "tensor file"), path) from None
    if array.dtype.kind in _NOT_NUMBERS:
        raise PrecisionToolError(f"holds {_NOT_NUMBERS[array.dtype.kind]} ({array.dtype.str}), not numbers", path)
    return array if dtype_name is None else as_dump_dtype(array, dtype_name, path)


def as_dump_dtype(array: np.ndarray, dtype_name: str, path: str | os.PathLike) -> np.ndarray:
    """``array`` read from ``path`` as the ``dump.json`` dtype ``dtype_name`` (see
    :func:`read_npy`)."""
    target = dump_dtype(dtype_name)
    if dtype_name in _NO_NUMPY and array.dtype == np.float32:
        return array
    if target is None:
        raise PrecisionToolError(f"dump.json dtype {shown(dtype_name)!r} is not one numpy holds", path)
    if array.dtype == target:
        return array
    if dtype_name not in _WIDENED or array.dtype != np.float32:
        raise PrecisionToolError(f"holds {array.dtype}, but dump.json says {shown(dtype_name)}", path)
    with np.errstate(invalid="ignore"):  # a signalling NaN narrows to a NaN, as it should, with numpy's flag raised
        narrowed = array.astype(target)
    if not np.array_equal(narrowed.astype(np.float32), array, equal_nan=True):
        raise PrecisionToolError(
            f"holds float32 values that are not {shown(dtype_name)} values, though dump.json says the tensor is one",
            path,
        )
    narrowed.flags.writeable = False
    return narrowed
