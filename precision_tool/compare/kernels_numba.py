"""The numba-compiled fused kernels behind :mod:`.kernels` (imported only when they run).

Importing this module imports numba and defines the kernels; numba compiles each one for the
operand types it first meets and caches the machine code on disk (``NUMBA_CACHE_DIR``, set by
:mod:`.kernels` before the import). An operand is either a float32/float64 array read as it is,
or a uint16 array of codes read through a 65,536-entry float64 table (float16, bfloat16 and the
other 2-byte types): ``table is None`` selects the first kind, and numba removes the unused
branch when it compiles.

How the loops are written so that LLVM vectorises them (measured on the AVX2 machine this was
written on; a loop that does not vectorise runs 2-3x slower):

* no stores inside the element loops (a store that might alias an input stops vectorisation),
  so every statistic is a scalar reduction;
* maxima and minima are taken over integer keys of the float64 bit patterns (:func:`_key`),
  which LLVM vectorises, where a floating-point max reduction stays scalar;
* ``fastmath`` allows only reassociation and contraction (sums in several lanes, fused
  multiply-add); NaN and Inf keep IEEE semantics, the NaN and Inf counts are exact.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

BLOCK = 2048  # elements summed into per-block partials before they join the totals
FLAGS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})
EPS = 2.220446049250313e-16  # float64 eps: msaccucmp's |y| > eps mask of the relative error
F32_EPS = 1.1920928955078125e-07  # KL's floor for the normalised values
_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)
_SQRT2 = 1.4142135623730951
_LN2 = 0.6931471805599453


@intrinsic
def _bits(typingctx, value):
    """The float64's bit pattern as an int64 (a register move, no memory)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _float(typingctx, bits):
    """The float64 whose bit pattern is the int64 ``bits``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@njit(inline="always")
def _key(value):
    """An int64 ordered as the floats are (for non-NaN values): flip the magnitude of negatives."""
    bits = _bits(value)
    return bits ^ ((bits >> 63) & _SIGN)


@njit(inline="always")
def _unkey(key):
    return _float(key ^ ((key >> 63) & _SIGN))


@njit(inline="always")
def _load(values, table, i):
    if table is None:
        return np.float64(values[i])
    return table[values[i]]


@njit(inline="always")
def _log(v):
    """ln v for v >= 2**-1022 or +inf (and NaN -> NaN), within 2e-15 relative, vectorisable.

    v = m * 2**e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(f), f = (m - 1)/(m + 1), |f| <=
    0.1716, from the series 2 (f + f**3/3 + ... + f**17/17); the next term is below 3e-16.
    """
    bits = _bits(v)
    # the exponent as a float without an int64 -> float64 conversion (AVX2 has none)
    e = _float((bits >> 52) | 0x4330000000000000) - (4503599627370496.0 + 1023.0)
    m = _float((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1.0 if big else e
    f = (m - 1.0) / (m + 1.0)
    f2 = f * f
    s = 1.0 / 17.0
    s = s * f2 + 1.0 / 15.0
    s = s * f2 + 1.0 / 13.0
    s = s * f2 + 1.0 / 11.0
    s = s * f2 + 1.0 / 9.0
    s = s * f2 + 1.0 / 7.0
    s = s * f2 + 1.0 / 5.0
    s = s * f2 + 1.0 / 3.0
    s = s * f2 + 1.0
    r = e * _LN2 + 2.0 * f * s
    return r if v < np.inf else v  # ln(inf) = inf, ln(nan) = nan


@njit(inline="always")
def _chan(n_a, sum_a, m2_a, n_b, sum_b, m2_b):
    """Squared deviations of two merged parts (Chan, Golub and LeVeque's pairwise update)."""
    if n_a == 0:
        return m2_b
    delta = sum_b / n_b - sum_a / n_a
    return m2_a + m2_b + delta * delta * (n_a * n_b / (n_a + n_b))


@njit(**FLAGS)
def cosine(xv, xt, yv, yt, out):
    """out[0:3] = sum xy, sum xx, sum yy."""
    n = xv.size
    sxy = sxx = syy = 0.0
    for start in range(0, n, BLOCK):
        bxy = bxx = byy = 0.0
        for i in range(start, min(start + BLOCK, n)):
            x = _load(xv, xt, i)
            y = _load(yv, yt, i)
            bxy += x * y
            bxx += x * x
            byy += y * y
        sxy += bxy
        sxx += bxx
        syy += byy
    out[0] = sxy
    out[1] = sxx
    out[2] = syy


@njit(**FLAGS)
def fused(xv, xt, yv, yt, out):
    """Every first-pass statistic in one pass; ``out`` in :data:`.kernels.FUSED_FIELDS` order."""
    n = xv.size
    acc = np.zeros(12)  # sxy sxx syy sx sy m2x m2y sabs ssq rsum
    cnt = np.zeros(4, np.int64)  # nan_x nan_y inf_x inf_y
    dmax = rmax = np.int64(-1)
    xlo = ylo = _SIGN
    xhi = yhi = -_SIGN - 1
    done = 0
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
        cx, cy = _load(xv, xt, start), _load(yv, yt, start)  # a shift for the squared deviations
        sxy = sxx = syy = sx = sy = qx = qy = s1x = s1y = sabs = ssq = rsum = 0.0
        nx = ny = ix = iy = 0
        for i in range(start, stop):
            x = _load(xv, xt, i)
            y = _load(yv, yt, i)
            sxy += x * y
            sxx += x * x
            syy += y * y
            sx += x
            sy += y
            dx = x - cx
            dy = y - cy
            s1x += dx
            s1y += dy
            qx += dx * dx
            qy += dy * dy
            d = abs(x - y)
            sabs += d
            ssq += d * d
            k = _bits(d)
            dmax = k if k > dmax else dmax
            r = abs(x / y - 1.0) if abs(y) > EPS else 0.0
            rsum += r
            k = _bits(r)
            rmax = k if k > rmax else rmax
            k = _key(x)
            xlo = k if k < xlo else xlo
            xhi = k if k > xhi else xhi
            k = _key(y)
            ylo = k if k < ylo else ylo
            yhi = k if k > yhi else yhi
            nx += x != x
            ny += y != y
            ix += abs(x) == np.inf
            iy += abs(y) == np.inf
        m = stop - start
        # shifted by an element of the block: (c - mean)^2 <= m var, so q - s1^2/m keeps its digits
        m2x, m2y = qx - s1x * s1x / m, qy - s1y * s1y / m
        acc[5] = _chan(done, acc[3], acc[5], m, sx, m2x)
        acc[6] = _chan(done, acc[4], acc[6], m, sy, m2y)
        acc[0] += sxy
        acc[1] += sxx
        acc[2] += syy
        acc[3] += sx
        acc[4] += sy
        acc[7] += sabs
        acc[8] += ssq
        acc[9] += rsum
        cnt[0] += nx
        cnt[1] += ny
        cnt[2] += ix
        cnt[3] += iy
        done += m
    out[0] = n
    out[1:8] = acc[0:7]
    out[8] = _float(dmax) if dmax >= 0 else -np.inf
    out[9] = acc[7]
    out[10] = acc[8]
    out[11] = acc[9]
    out[12] = _float(rmax) if rmax >= 0 else -np.inf
    out[13] = _unkey(xlo) if n else np.inf
    out[14] = _unkey(xhi) if n else -np.inf
    out[15] = _unkey(ylo) if n else np.inf
    out[16] = _unkey(yhi) if n else -np.inf
    out[17:21] = cnt


@njit(inline="always")
def _normalised(values, table, logs, lo, span, inv, i):
    """(P, ln P) of element ``i``: from the tables, or max((v - lo)/span, eps) and its log."""
    if table is None:
        v = np.float64(values[i])
        if span == 0.0:
            p = v
        elif inv != 0.0:
            p = (v - lo) * inv
        else:
            p = (v - lo) / span
        p = F32_EPS if p < F32_EPS else p  # NaN stays NaN, as numpy's maximum does
        return p, _log(p)
    return table[values[i]], logs[values[i]]


@njit(**FLAGS)
def kl(xv, xp, xl, x_lo, x_span, x_inv, yv, yp, yl, y_lo, y_span, y_inv, out):
    """out[0:3] = sum P, sum Q, sum P (ln P - ln Q) (the KL pass, after the ranges are known)."""
    n = xv.size
    sp = sq = cross = 0.0
    for start in range(0, n, BLOCK):
        bp = bq = bc = 0.0
        for i in range(start, min(start + BLOCK, n)):
            p, lp = _normalised(xv, xp, xl, x_lo, x_span, x_inv, i)
            q, lq = _normalised(yv, yp, yl, y_lo, y_span, y_inv, i)
            bp += p
            bq += q
            bc += p * (lp - lq)
        sp += bp
        sq += bq
        cross += bc
    out[0] = sp
    out[1] = sq
    out[2] = cross
