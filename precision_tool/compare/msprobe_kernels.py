"""msprobe's six columns in numba passes over a pair of blocks (imported only when they run).

:func:`fold` computes what :func:`.msprobe_fold.numpy_part` computes with numpy in about a dozen
passes (float64 copies, four dot products, the differences, the float32 or float64 relative
errors and two comparisons), in two loops that LLVM vectorises: the float64 sums and
``max |x - y|`` (:func:`_sums`, whose sums alone may be reassociated into lanes), then msprobe's
relative error ``|(n - b) / b|`` in float32 for float16/float32 pairs, float64 otherwise, the
type's eps added to both where ``b == 0``, its maximum and the counts below the thresholds
(:func:`_relative32`, without ``fastmath``: it must round as numpy's does, operation by
operation). Maxima are taken over the bits of non-negative values, which order as the values
do. A block whose sums are not finite holds NaN or Inf (or overflows) and is folded again
element by element (:func:`_careful`): NaN and Inf at the same positions zeroed on both sides,
any other NaN or Inf position marks the pair. The sums are taken in another order than numpy's,
which moves them by about 1e-16 of their magnitude times the block's length: far below the 12
decimals msprobe rounds to.

Operands are read as :mod:`.kernels_numba` reads them (float16 and bfloat16 as their bits,
widened by the CPU): :func:`.kernels.kernel_operand`. Other dtypes stay with numpy. Measured
on a 32,768-element bfloat16/float32 block: 1.5 ns per element pair, against about 14 ns for
one element-by-element loop and more for the numpy fold.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels_numba import _bits, _bits32, _float, _float32, _load

FIELDS = ("sum_xy", "sum_xx", "sum_yy", "sum_sq", "max_abs", "rel_max", "below_0", "below_1", "mismatch")
_F32_EPS, _F64_EPS = np.float32(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps)
_T32 = (np.float32(0.001), np.float32(0.005))


_EXACT = dict(cache=True, nogil=True, error_model="numpy")
# the sums alone may be reassociated (several lanes) and contracted (fused multiply-add)
_SUMS = dict(_EXACT, fastmath={"reassoc", "contract"})


@njit(**_SUMS)
def _sums(x, y, out):
    """The four float64 sums and ``max |x - y|`` (over the bits of the non-negative
    differences, which order as the values do and vectorise); NaN or Inf make the sums not
    finite, and the caller then folds the block with :func:`_careful`."""
    sum_xy = sum_xx = sum_yy = sum_sq = 0.0
    top = np.int64(0)
    for i in range(x.size):
        a, b = _load(x, i), _load(y, i)
        sum_xy += a * b
        sum_xx += a * a
        sum_yy += b * b
        d = a - b
        sum_sq += d * d
        k = _bits(abs(d))
        top = k if k > top else top
    out[0], out[1], out[2], out[3], out[4] = sum_xy, sum_xx, sum_yy, sum_sq, _float(top)


@njit(**_EXACT)
def _relative32(x, y, out):
    """msprobe's float32 relative error of finite values: its maximum (over the bits, as in
    :func:`_sums`) and the counts below the two thresholds, rounded as numpy rounds."""
    t0, t1, eps = _T32[0], _T32[1], _F32_EPS
    top = np.int32(0)
    below_0 = below_1 = 0
    for i in range(x.size):
        n, b = np.float32(_load(x, i)), np.float32(_load(y, i))
        zero = b == 0
        n = n + eps if zero else n
        b = b + eps if zero else b
        r = abs((n - b) / b)
        below_0 += r < t0
        below_1 += r < t1
        k = _bits32(r)
        top = k if k > top else top
    out[5], out[6], out[7] = np.float64(_float32(top)), below_0, below_1


@njit(**_EXACT)
def _relative64(x, y, out):
    """As :func:`_relative32`, in float64 (a float64 side)."""
    top = np.int64(0)
    below_0 = below_1 = 0
    for i in range(x.size):
        n, b = _load(x, i), _load(y, i)
        zero = b == 0
        n = n + _F64_EPS if zero else n
        b = b + _F64_EPS if zero else b
        r = abs((n - b) / b)
        below_0 += r < 0.001
        below_1 += r < 0.005
        k = _bits(r)
        top = k if k > top else top
    out[5], out[6], out[7] = _float(top), below_0, below_1


@njit(**_EXACT)
def _careful(x, y, narrow, out):
    """Everything element by element, for a block holding NaN or Inf (or sums that overflow):
    same-position NaN/Inf zeroed on both sides, ``out[8]`` set at the first other one."""
    sum_xy = sum_xx = sum_yy = sum_sq = 0.0
    max_abs = rel_max = -math.inf
    below_0 = below_1 = 0
    t32_0, t32_1, eps32 = _T32[0], _T32[1], _F32_EPS
    for i in range(x.size):
        a, b = _load(x, i), _load(y, i)
        if not (math.isfinite(a) and math.isfinite(b)):
            if math.isnan(a) != math.isnan(b) or math.isinf(a) != math.isinf(b):
                out[8] = 1.0
                return
            a = b = 0.0
        sum_xy += a * b
        sum_xx += a * a
        sum_yy += b * b
        d = a - b
        sum_sq += d * d
        d = abs(d)
        if d > max_abs or d != d:
            max_abs = d
        if narrow:
            n32, b32 = np.float32(a), np.float32(b)
            if b32 == 0:
                n32 += eps32
                b32 += eps32
            r32 = abs((n32 - b32) / b32)
            below_0 += r32 < t32_0
            below_1 += r32 < t32_1
            r = np.float64(r32)
        else:
            n64, b64 = a, b
            if b64 == 0:
                n64 += _F64_EPS
                b64 += _F64_EPS
            r = abs((n64 - b64) / b64)
            below_0 += r < 0.001
            below_1 += r < 0.005
        if r > rel_max or r != r:
            rel_max = r
    out[0], out[1], out[2], out[3] = sum_xy, sum_xx, sum_yy, sum_sq
    out[4], out[5], out[6], out[7] = max_abs, rel_max, below_0, below_1


def fold(x: np.ndarray, y: np.ndarray, narrow: bool) -> np.ndarray:
    """The :data:`FIELDS` of one pair of operands (:func:`.kernels.kernel_operand`);
    ``narrow``: the relative error is msprobe's float32 one."""
    out = np.zeros(len(FIELDS))
    _sums(x, y, out)
    if math.isfinite(out[1]) and math.isfinite(out[2]):  # every value finite (sum_xy, sum_sq too)
        (_relative32 if narrow else _relative64)(x, y, out)
        if math.isfinite(out[0]) and math.isfinite(out[3]):
            return out
    out[:] = 0.0
    _careful(x, y, narrow, out)
    return out
