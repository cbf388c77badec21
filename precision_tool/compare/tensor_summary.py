"""Summary statistics of one tensor (shape, dtype, max, min, mean, NaN/Inf counts), and whether
it holds any Inf or NaN at all."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..formats.dtypes import nonfinite_bits

_CHUNK = 1 << 22  # elements per reduction step: bounded memory on huge tensors


@dataclass(frozen=True)
class TensorStats:
    shape: tuple[int, ...]
    dtype: str
    max: float
    min: float
    mean: float
    nan: int
    inf: int

    @property
    def finite(self) -> bool:
        return self.nan == 0 and self.inf == 0


def _float_view(chunk: np.ndarray) -> np.ndarray:
    # float16 / bfloat16 / fp8 are upcast so the sums do not overflow or lose precision.
    if chunk.dtype == np.bool_ or chunk.dtype.kind in "iu":
        return chunk.astype(np.float64)
    if chunk.dtype.kind == "c":
        return np.abs(chunk).astype(np.float64)
    return chunk.astype(np.float64, copy=False)


def tensor_stats(array: np.ndarray, dtype_name: str | None = None) -> TensorStats:
    """Max, min and mean over the finite values, plus NaN and Inf counts, in float64, in chunks."""
    flat = np.asarray(array).reshape(-1)
    total, count, nan, inf = 0.0, 0, 0, 0
    high, low = -np.inf, np.inf
    for start in range(0, flat.size, _CHUNK):
        chunk = _float_view(flat[start : start + _CHUNK])
        finite = np.isfinite(chunk)
        nan += int(np.isnan(chunk).sum())
        inf += int(chunk.size - finite.sum()) - int(np.isnan(chunk).sum())
        values = chunk[finite] if not finite.all() else chunk
        if values.size:
            high, low = max(high, float(values.max())), min(low, float(values.min()))
            total += float(values.sum())
            count += values.size
    mean = total / count if count else float("nan")
    if not count:
        high = low = float("nan")
    return TensorStats(tuple(np.shape(array)), dtype_name or str(np.asarray(array).dtype), high, low, mean, nan, inf)


def has_inf_nan(array: np.ndarray) -> bool:
    """Whether ``array`` holds any Inf or NaN (integers and booleans never do); in chunks, by
    the values' bits where the dtype allows (:func:`~precision_tool.formats.dtypes.nonfinite_bits`)."""
    flat = np.asarray(array).reshape(-1)
    if flat.dtype.kind in "biu":
        return False
    bits = nonfinite_bits(flat.dtype)
    if bits is not None:
        view, mask = bits
        return _any_all_set(flat.view(view), view.type(mask))
    for start in range(0, flat.size, _CHUNK):
        chunk = flat[start : start + _CHUNK]
        if chunk.dtype.kind not in "fc":  # other extension types
            chunk = chunk.astype(np.float32)
        if not np.isfinite(chunk).all():
            return True
    return False


def _any_all_set(values: np.ndarray, mask) -> bool:
    """Whether some element of ``values`` has every bit of ``mask`` set; in chunks."""
    scratch = np.empty(min(values.size, _CHUNK), values.dtype)
    for start in range(0, values.size, _CHUNK):
        chunk = values[start : start + _CHUNK]
        masked = np.bitwise_and(chunk, mask, out=scratch[: chunk.size])
        if masked.max() == mask:
            return True
    return False
