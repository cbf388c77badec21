"""The numba-compiled fused kernels behind :mod:`.kernels` (imported only when they run).

Importing this module imports numba and defines the kernels; numba compiles each one for the
operand types it first meets and caches the machine code on disk (``NUMBA_CACHE_DIR``, set by
:mod:`.kernels` before the import). An operand is a float32 or float64 array read as it is, a
uint16 array holding float16 bit patterns, or an int16 array holding bfloat16 bit patterns
(:func:`_load` picks the conversion when the kernel compiles).

float16 and bfloat16 are widened by the CPU, not through a 65,536-entry table: LLVM's ``fpext``
from ``half`` is one F16C instruction for eight values, and bfloat16 is its upper 16 bits of a
float32. That way is faster than a table (a gather per element; the figures are in
docs/performance.md, "Figures behind design choices"); both are exact for all 65,536 patterns,
which :func:`.kernels._check` verifies before the kernels are used.

How the loops are written so that LLVM vectorises them (a loop that does not vectorise runs
several times slower; docs/performance.md has the figure):

* no stores inside the element loops (a store that might alias an input stops vectorisation),
  so every statistic is a scalar reduction;
* a block's loop runs over slices of the block (``xv[start : start + BLOCK]`` from index 0),
  never ``range(start, stop)`` over the whole array: numba 0.68's LLVM leaves that form
  scalar, several times slower (docs/performance.md, "Figures behind design choices");
* maxima and minima are taken over integer keys of the bit patterns (:func:`_key`,
  :func:`_range_key`: 32-bit for 16- and 32-bit types), which LLVM vectorises, where a
  floating-point max reduction stays scalar;
* NaN and Inf are counted by a separate kernel, run only for a side whose sum of squares is not
  finite (a finite sum of squares means every element is finite);
* ``fastmath`` allows only reassociation and contraction (sums in several lanes, fused
  multiply-add); NaN and Inf keep IEEE semantics, the NaN and Inf counts are exact.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

BLOCK = 2048  # elements summed into per-block partials before they join the totals
FLAGS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})
EPS = 2.220446049250313e-16  # float64 eps: msaccucmp's |y| > eps mask of the relative error
F32_EPS = 1.1920928955078125e-07  # KL's floor for the normalised values
_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)
_SQRT2 = 1.4142135623730951
_U52, _MAGIC = np.uint64(52), np.uint64(0x4330000000000000)  # 2**52 as a double's bits
_MANTISSA, _ONE = np.uint64(0x000FFFFFFFFFFFFF), np.uint64(0x3FF0000000000000)
_LN2 = 0.6931471805599453


def _bitcast(source, target, ir_target, doc: str):
    """An intrinsic that reinterprets a ``source`` scalar's bits as ``target`` (a register move,
    no memory): the float <-> integer views the kernels' keys and logarithm are made of."""

    @intrinsic
    def cast(typingctx, value):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir_target)

        return target(source), codegen

    cast.__doc__ = doc
    return cast


_bits = _bitcast(types.float64, types.int64, ir.IntType(64), "A float64's bit pattern as an int64.")
_float = _bitcast(types.int64, types.float64, ir.DoubleType(), "The float64 of an int64 bit pattern.")
_ubits = _bitcast(
    types.float64,
    types.uint64,
    ir.IntType(64),
    "A float64's bit pattern as a uint64 (AVX2 shifts 64-bit lanes only logically).",
)
_ufloat = _bitcast(types.uint64, types.float64, ir.DoubleType(), "The float64 of a uint64 bit pattern.")
_bits32 = _bitcast(types.float32, types.int32, ir.IntType(32), "A float32's bit pattern as an int32.")
_float32 = _bitcast(types.int32, types.float32, ir.FloatType(), "The float32 of an int32 bit pattern.")


@njit(inline="always")
def _key(value):
    """An int64 ordered as the floats are (for non-NaN values): flip the magnitude of negatives."""
    bits = _bits(value)
    return bits ^ ((bits >> 63) & _SIGN)


@njit(inline="always")
def _unkey(key):
    return _float(key ^ ((key >> 63) & _SIGN))


@intrinsic
def _from_f16(typingctx, bits):
    """float16 bits (uint16) widened to float64 by the CPU (F16C's vcvtph2ps on x86)."""

    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.DoubleType())

    return types.float64(types.uint16), codegen


@intrinsic
def _from_bf16(typingctx, bits):
    """bfloat16 bits (int16) widened to float64: they are the upper half of a float32."""

    def codegen(context, builder, signature, args):
        wide = builder.shl(builder.zext(args[0], ir.IntType(32)), ir.Constant(ir.IntType(32), 16))
        return builder.fpext(builder.bitcast(wide, ir.FloatType()), ir.DoubleType())

    return types.float64(types.int16), codegen


def _load(values, i):
    """Element ``i`` as float64 (uint16: float16 bits; int16: bfloat16 bits)."""


@overload(_load, inline="always")
def _load_typed(values, i):
    kind = values.dtype
    if kind == types.uint16:
        return lambda values, i: _from_f16(values[i])
    if kind == types.int16:
        return lambda values, i: _from_bf16(values[i])
    return lambda values, i: np.float64(values[i])


@njit(inline="always")
def _log(v):
    """ln v for v >= 2**-1022 or +inf (and NaN -> NaN), within 5e-13 absolutely, vectorisable.

    v = m * 2**e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(f), f = (m - 1)/(m + 1), |f| <=
    0.1716, from the series 2 (f + f**3/3 + ... + f**13/13); what it leaves out is at most
    2 f**15/15 / (1 - f**2) < 5e-13 (with seven terms more, 3e-16, the KL pass is 20% slower).
    """
    bits = _ubits(v)
    # the exponent as a float without an int64 -> float64 conversion (AVX2 has none)
    e = _ufloat((bits >> _U52) | _MAGIC) - (4503599627370496.0 + 1023.0)
    m = _ufloat((bits & _MANTISSA) | _ONE)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1.0 if big else e
    f = (m - 1.0) / (m + 1.0)
    f2 = f * f
    s = 1.0 / 13.0
    s = s * f2 + 1.0 / 11.0
    s = s * f2 + 1.0 / 9.0
    s = s * f2 + 1.0 / 7.0
    s = s * f2 + 1.0 / 5.0
    s = s * f2 + 1.0 / 3.0
    s = s * f2 + 1.0
    r = e * _LN2 + 2.0 * f * s
    return r if v < np.inf else v  # ln(inf) = inf, ln(nan) = nan


def _range_key(values, i):
    """An integer ordered as element ``i``'s value is (NaN aside): the stored bits, negatives'
    magnitude flipped. 32-bit for 16- and 32-bit types, so min and max are native AVX2 ops."""


def _key_start(values):
    """(the largest key, the smallest key): where a min and a max start."""


def _key_value(values, key):
    """The float64 value whose key is ``key``."""


@overload(_range_key, inline="always")
def _range_key_typed(values, i):
    kind = values.dtype
    if kind in (types.uint16, types.int16):

        def key16(values, i):
            b = np.int32(np.int16(values[i]))
            return b ^ ((b >> 31) & 0x7FFF)

        return key16
    if kind == types.float32:

        def key32(values, i):
            b = _bits32(values[i])
            return b ^ ((b >> 31) & 0x7FFFFFFF)

        return key32
    return lambda values, i: _key(np.float64(values[i]))


@overload(_key_start, inline="always")
def _key_start_typed(values):
    if values.dtype in (types.uint16, types.int16, types.float32):
        return lambda values: (np.int32(0x7FFFFFFF), np.int32(-0x80000000))
    return lambda values: (_SIGN, -_SIGN - 1)


@overload(_key_value, inline="always")
def _key_value_typed(values, key):
    kind = values.dtype
    if kind == types.uint16:
        return lambda values, key: _from_f16(np.uint16(key ^ ((key >> 31) & 0x7FFF)))
    if kind == types.int16:
        return lambda values, key: _from_bf16(np.int16(key ^ ((key >> 31) & 0x7FFF)))
    if kind == types.float32:
        return lambda values, key: np.float64(_float32(key ^ ((key >> 31) & 0x7FFFFFFF)))
    return lambda values, key: _unkey(key)


@njit(inline="always")
def _chan(n_a, sum_a, m2_a, n_b, sum_b, m2_b):
    """Squared deviations of two merged parts (Chan, Golub and LeVeque's pairwise update)."""
    if n_a == 0:
        return m2_b
    delta = sum_b / n_b - sum_a / n_a
    return m2_a + m2_b + delta * delta * (n_a * n_b / (n_a + n_b))


@njit(**FLAGS)
def cosine(xv, yv, out):
    """out[0:3] = sum xy, sum xx, sum yy."""
    n = xv.size
    sxy = sxx = syy = 0.0
    for start in range(0, n, BLOCK):
        xb, yb = xv[start : start + BLOCK], yv[start : start + BLOCK]
        bxy = bxx = byy = 0.0
        for i in range(xb.size):
            x = _load(xb, i)
            y = _load(yb, i)
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
def distance(xv, yv, out):
    """out[0:6] = sum xy, sum xx, sum yy, sum |x - y|, sum (x - y)^2, max |x - y| (the cosine's
    and the difference's groups alone: what msprobe runs' verdict reads), as :func:`fused`
    folds them. The maximum has a loop of its own over each block (still in the cache), into a
    maximum of the block's own: with the sums in the same loop, or into the running maximum,
    LLVM leaves the loop scalar on AVX2 (which has no 64-bit integer maximum) and the pass
    takes several times as long (docs/performance.md)."""
    n = xv.size
    sxy = sxx = syy = sabs = ssq = 0.0
    dmax = np.int64(-1)
    for start in range(0, n, BLOCK):
        xb, yb = xv[start : start + BLOCK], yv[start : start + BLOCK]
        bxy = bxx = byy = babs = bsq = 0.0
        for i in range(xb.size):
            x = _load(xb, i)
            y = _load(yb, i)
            bxy += x * y
            bxx += x * x
            byy += y * y
            d = abs(x - y)
            babs += d
            bsq += d * d
        bmax = np.int64(-1)
        for i in range(xb.size):
            k = _bits(abs(_load(xb, i) - _load(yb, i)))
            bmax = k if k > bmax else bmax
        dmax = bmax if bmax > dmax else dmax
        sxy += bxy
        sxx += bxx
        syy += byy
        sabs += babs
        ssq += bsq
    out[0] = sxy
    out[1] = sxx
    out[2] = syy
    out[3] = sabs
    out[4] = ssq
    out[5] = _float(dmax) if dmax >= 0 else -np.inf


@njit(**FLAGS)
def fused(xv, yv, out):
    """Every first-pass statistic in one pass; ``out`` in :data:`.kernels.FUSED_FIELDS` order.

    The ranges are found over integer keys of the stored bits (:func:`_range_key`); NaN and
    Inf are not counted here (``out[17:21]`` stay 0): a side whose sum of squares is not finite
    is counted afterwards by :func:`count_nonfinite`.
    """
    n = xv.size
    acc = np.zeros(12)  # sxy sxx syy sx sy m2x m2y sabs ssq rsum
    dmax = rmax = np.int64(-1)
    xlo, xhi = _key_start(xv)
    ylo, yhi = _key_start(yv)
    done = 0
    for start in range(0, n, BLOCK):
        xb, yb = xv[start : start + BLOCK], yv[start : start + BLOCK]
        cx, cy = _load(xb, 0), _load(yb, 0)  # a shift for the squared deviations
        sxy = sxx = syy = sx = sy = qx = qy = s1x = s1y = sabs = ssq = rsum = 0.0
        for i in range(xb.size):
            x = _load(xb, i)
            y = _load(yb, i)
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
            k = _range_key(xb, i)
            xlo = k if k < xlo else xlo
            xhi = k if k > xhi else xhi
            k = _range_key(yb, i)
            ylo = k if k < ylo else ylo
            yhi = k if k > yhi else yhi
        m = xb.size
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
        done += m
    out[0] = n
    out[1:8] = acc[0:7]
    out[8] = _float(dmax) if dmax >= 0 else -np.inf
    out[9] = acc[7]
    out[10] = acc[8]
    out[11] = acc[9]
    out[12] = _float(rmax) if rmax >= 0 else -np.inf
    out[13] = _key_value(xv, xlo) if n else np.inf
    out[14] = _key_value(xv, xhi) if n else -np.inf
    out[15] = _key_value(yv, ylo) if n else np.inf
    out[16] = _key_value(yv, yhi) if n else -np.inf


@njit(**FLAGS)
def count_nonfinite(values, out):
    """out[0:2] = NaN count, Inf count of ``values``."""
    nan = inf = 0
    for i in range(values.size):
        v = _load(values, i)
        nan += v != v
        inf += abs(v) == np.inf
    out[0] = nan
    out[1] = inf


@njit(inline="always")
def _normalised(values, lo, inv, i):
    """KL's max((v - lo)/span, float32 eps) as (v - lo) inv: no branch, no division.

    :func:`.kernels.kl_scaling` chooses ``lo`` and ``inv`` (a 0 span: 0 and 1, so P = v); NaN
    stays NaN, as in numpy's maximum.
    """
    p = (_load(values, i) - lo) * inv
    return F32_EPS if p < F32_EPS else p


@njit(**FLAGS)
def kl(xv, x_lo, x_inv, yv, y_lo, y_inv, out):
    """out[0:3] = sum P, sum Q, sum P ln(P/Q) (the KL pass, after the ranges are known)."""
    n = xv.size
    sp = sq = cross = 0.0
    for start in range(0, n, BLOCK):
        xb, yb = xv[start : start + BLOCK], yv[start : start + BLOCK]
        bp = bq = bc = 0.0
        for i in range(xb.size):
            p = _normalised(xb, x_lo, x_inv, i)
            q = _normalised(yb, y_lo, y_inv, i)
            bp += p
            bq += q
            bc += p * _log(p / q)  # one log and one division: ln P - ln Q would take two of each
        sp += bp
        sq += bq
        cross += bc
    out[0] = sp
    out[1] = sq
    out[2] = cross


@njit(**FLAGS)
def widen(values, out):
    """out[i] = element i as float64: how the kernels read ``values`` (checked at load)."""
    for i in range(values.size):
        out[i] = _load(values, i)
