"""How close two tensors must be to count as equal, from the data types they were stored in.

An NPU tensor stored in float16 differs from its float32 golden by float16's rounding even when
the op is right: each stored value is rounded to the nearest float16 (a relative error of up to
half float16's machine epsilon, 2**-11), and an op reads inputs that were rounded too. A
tolerance made for float32 (atol 1e-5, rtol 1e-3) calls half of such a tensor wrong. So the
tolerance follows the *lower-precision* side of a comparison (the dtype with the larger epsilon):

    rtol = atol = ROUNDING_ULPS * eps(dtype), at least FLOOR

with ``eps`` the dtype's machine epsilon (``ml_dtypes.finfo``: float16 2**-10, bfloat16 2**-7,
float8_e4m3fn 2**-3, float8_e5m2 2**-2, float32 2**-23). Four units in the last place cover
the rounding of the inputs and of the output and an accumulation in higher precision, as Ascend
cores do (on the sample network every healthy float16 tensor is within 4 ulps, while one ulp
leaves up to 2% of a healthy tensor's elements outside); ``atol`` equal to ``rtol`` treats
values near zero as the difference of operands of magnitude one. FLOOR (1e-5, float32's usual
tolerance) keeps float32 and float64 comparisons from demanding bit equality of results computed
in another order. Integers and booleans compare exactly (0, 0).

This table is the one home of that rule: ``cp`` uses it for its defaults, and anything that
judges whether a difference is rounding (a "precision" cause) should ask it too.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

ROUNDING_ULPS = 4
FLOOR = 1e-5
# The dtypes the table documents (``cp --help`` and docs/commands.md list them).
DOCUMENTED = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float32", "float64")


@dataclass(frozen=True)
class Tolerance:
    """``|left - right| <= atol + rtol * |right|`` for values of ``dtype`` (a numpy name)."""

    dtype: str
    atol: float
    rtol: float
    eps: float  # the dtype's machine epsilon; 0 for exact (integer) dtypes

    @property
    def exact(self) -> bool:
        """True for integer and boolean dtypes: only equal values are close."""
        return self.eps == 0

    @property
    def what(self) -> str:
        """``float16 rounding`` (or ``exact int32``): what a difference within it is."""
        return f"exact {self.dtype}" if self.exact else f"{self.dtype} rounding"

    def describe(self) -> str:
        """``atol 0.00390625, rtol 0.00390625 (float16: 4 x eps 0.000976562)``."""
        if self.exact:
            return f"atol 0, rtol 0 ({self.dtype}: exact)"
        rule = f"{ROUNDING_ULPS} x eps {self.eps:g}"
        if ROUNDING_ULPS * self.eps < FLOOR:
            rule += f", at least {FLOOR:g}"
        return f"atol {self.atol:g}, rtol {self.rtol:g} ({self.dtype}: {rule})"


def _dtype(dtype) -> np.dtype:
    return np.dtype(dtype)


def dtype_tolerance(dtype) -> Tolerance:
    """The tolerance of values stored as ``dtype`` (a numpy or ml_dtypes dtype, or its name).

    Raises:
        ValueError: ``dtype`` is neither a number type numpy knows nor one of ml_dtypes'.
    """
    resolved = _dtype(dtype)
    if resolved.kind in "biu":
        return Tolerance(resolved.name, 0.0, 0.0, 0.0)
    if resolved.kind == "c":
        resolved = np.dtype(np.float32 if resolved.itemsize <= 8 else np.float64)
    eps = float(ml_dtypes.finfo(resolved).eps)
    value = max(ROUNDING_ULPS * eps, FLOOR)
    return Tolerance(resolved.name, value, value, eps)


def pair_tolerance(left, right) -> Tolerance:
    """The tolerance for comparing ``left`` with ``right`` values: that of the side with the
    lower precision (the larger epsilon; a float side wins over an integer one)."""
    first, second = dtype_tolerance(left), dtype_tolerance(right)
    if first.exact or second.exact:
        return second if first.exact else first
    return first if first.eps >= second.eps else second


def tolerance_table() -> list[Tolerance]:
    """The tolerance of every documented dtype, lowest precision first."""
    return sorted((dtype_tolerance(getattr(ml_dtypes, n, n)) for n in DOCUMENTED), key=lambda t: -t.eps)
