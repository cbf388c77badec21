"""Summary statistics of one tensor (shape, dtype, max, min, mean, NaN/Inf counts)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
