"""One block of msprobe's statistic group (:mod:`.msprobe_metrics`): its sums, maximum and
counts, from the numba kernels (:mod:`.msprobe_kernels`) when the run loaded numba and the
kernels read both dtypes, else from numpy over float64 scratch copies (:func:`numpy_part`).
Both follow msprobe's rules, described in :mod:`.msprobe_metrics`.
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
import warnings
from functools import lru_cache

import numpy as np

THRESHOLDS = (0.001, 0.005)  # msprobe's two error ratios


def block_part(relative: type, x: np.ndarray, y: np.ndarray) -> tuple | None:
    """``(sum_xy, sum_xx, sum_yy, sum_sq, max_abs, rel_max, (below 0.001, below 0.005))`` of one
    pair of blocks in their stored dtypes, the relative error in ``relative`` (float32 or
    float64); None when NaN or Inf positions differ."""
    operands = kernel_operands(x, y)
    return _numba_part(relative, *operands) if operands else numpy_part(relative, x, y)


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.einsum("i,i->", a, b))  # einsum: see stat_groups._dot


class _Scratch(threading.local):
    """Arrays reused block after block, per role and dtype (fresh ones would cost page faults
    each block); per thread, as a Dask worker may run several folds at once."""

    def __init__(self) -> None:
        self.arrays: dict[tuple[str, type], np.ndarray] = {}

    def get(self, role: str, size: int, dtype: type) -> np.ndarray:
        array = self.arrays.get((role, dtype))
        if array is None or array.size < size:
            array = self.arrays[(role, dtype)] = np.empty(max(size, 1 << 15), dtype)
        return array[:size]


_SCRATCH = _Scratch()


def _copy(block: np.ndarray, role: str, dtype: type) -> np.ndarray:
    out = _SCRATCH.get(role, block.size, dtype)
    # exact (but int64 beyond 2**53): float64 holds every stored value, float32 every value
    # of the float16/bfloat16/float32 pairs whose relative error msprobe takes in float32
    np.copyto(out, block, casting="unsafe")
    return out


def _clean(x: np.ndarray, y: np.ndarray) -> bool:
    """Zero same-position NaN/Inf of the two scratch blocks; False when the positions differ."""
    nan_x, inf_x = np.isnan(x), np.isinf(x)
    if not (np.array_equal(nan_x, np.isnan(y)) and np.array_equal(inf_x, np.isinf(y))):
        return False
    bad = np.logical_or(nan_x, inf_x, out=nan_x)
    x[bad] = 0.0  # none when finite values' squares overflowed: msprobe's sums overflow too
    y[bad] = 0.0
    return True


def relative_errors(x: np.ndarray, y: np.ndarray, kind: type) -> np.ndarray:
    """msprobe's ``|(n - b) / b|`` in ``kind``, eps added to both where ``b == 0`` (a scratch
    array: use it before the next block)."""
    n, b = _copy(x, "n", kind), _copy(y, "b", kind)
    if not y.all():
        zero = y == 0
        eps = np.finfo(kind).eps
        n[zero] += eps
        b[zero] += eps
    np.subtract(n, b, out=n)
    np.divide(n, b, out=n)
    return np.abs(n, out=n)


def kernel_operands(x: np.ndarray, y: np.ndarray) -> tuple | None:
    """Both blocks as :mod:`.msprobe_kernels` reads them, or None for numpy: the run did not
    load numba (:func:`~.kernels.numba_pays_off` said it would not pay, or it is switched off
    or broken), or a dtype the kernels do not read."""
    if "numba" not in sys.modules:  # not loaded by this run: not worth loading for this group
        return None
    from . import kernels

    xv, yv = kernels.kernel_operand(x), kernels.kernel_operand(y)
    if xv is None or yv is None or _compiled() is None:
        return None
    return xv, yv


@lru_cache(maxsize=1)
def _compiled():
    """:mod:`.msprobe_kernels`, or None when numba's kernels are off or fail (once per process)."""
    from . import kernels

    if kernels.numba_kernels() is None:  # off, missing or failing its check
        return None
    try:
        return importlib.import_module(".msprobe_kernels", __package__)
    except Exception as exc:  # numba failing to compile here: numpy, said once
        warnings.warn(
            f"msprobe kernels unavailable ({type(exc).__name__}: {exc}); using numpy", RuntimeWarning, stacklevel=2
        )
        return None


def _numba_part(relative: type, xv: np.ndarray, yv: np.ndarray) -> tuple | None:
    out = _compiled().fold(xv, yv, relative is np.float32)
    if out[8]:
        return None
    return (
        float(out[0]),
        float(out[1]),
        float(out[2]),
        float(out[3]),
        float(out[4]),
        float(out[5]),
        (int(out[6]), int(out[7])),
    )


def numpy_part(relative: type, x: np.ndarray, y: np.ndarray) -> tuple | None:
    """One block's sums, maximum and counts with numpy; None when NaN/Inf positions differ."""
    xf, yf = _copy(x, "x", np.float64), _copy(y, "y", np.float64)
    sum_xx, sum_yy = _dot(xf, xf), _dot(yf, yf)
    if not (math.isfinite(sum_xx) and math.isfinite(sum_yy)):  # a NaN or Inf, or an overflow
        if not _clean(xf, yf):
            return None
        sum_xx, sum_yy = _dot(xf, xf), _dot(yf, yf)
    sum_xy = _dot(xf, yf)
    d = np.subtract(xf, yf, out=_SCRATCH.get("d", xf.size, np.float64))
    sum_sq = _dot(d, d)
    max_abs = float(np.abs(d, out=d).max())
    rel = relative_errors(xf, yf, relative)
    flags = _SCRATCH.get("flags", rel.size, np.bool_)
    below = tuple(int(np.count_nonzero(np.less(rel, relative(t), out=flags))) for t in THRESHOLDS)
    return sum_xy, sum_xx, sum_yy, sum_sq, max_abs, float(rel.max()), below
