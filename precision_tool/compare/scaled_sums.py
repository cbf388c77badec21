"""Sums that overflow float64 from finite values: the chunk folded again, scaled.

float64 holds values up to 1.8e308, but the metrics sum squares and products: one element of
1e155 makes ``sum x*x`` infinite, and two identical tensors of 1e300 had cosine inf/inf = NaN,
with no reason given. Scaling every chunk would cost every comparison a pass; so the plain fold
runs as always, and only a chunk whose sums come out non-finite while its values are finite
(:func:`refold_if_overflowed`, called by :func:`.kernels.fold_first`) is folded again, its values
times powers of two (exact, but for values that become subnormal, which were below 2**-1074 of
the largest and nothing to its sums):

* each side's sums (``sum x*y``, ``x*x``, ``y*y``, the moments) over that side times its own
  power of two, so a small side does not underflow beside a huge one;
* the differences' (max, sum of ``|x-y|`` and of its square) over ``x - y`` taken unscaled (of
  halves where it overflows), then times its own power of two: small differences beside huge
  values keep their digits.

The part records the powers in ``scale_x``, ``scale_y`` and ``scale_d``
(:data:`.stat_groups.SCALED_FIELDS`); :func:`.stat_groups.combine` merges parts of any scales
and the metrics take the scales out (:func:`.stat_groups.unscaled`). Ranges, NaN/Inf counts and
relative errors stay the plain fold's: they cannot overflow, and msaccucmp's ``|y| > eps`` mask
of the relative errors must see the unscaled golden.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from .metric_data import StatGroup, Stats
from .stat_groups import BUILTIN, SCALED_FIELDS

Fold = Callable[[np.ndarray, np.ndarray, Sequence[StatGroup]], Stats]  # groups over a chunk, a new Stats

_PER_SIDE_GROUPS = frozenset({"xy", "xx", "yy", "moments"})  # their fields scale by each side's power
_PER_SIDE_FIELDS = [name for name, powers in SCALED_FIELDS.items() if not powers[2]]
_DIFF_FIELDS = [name for name, powers in SCALED_FIELDS.items() if powers[2]]


def refold_if_overflowed(
    part: Stats, x: np.ndarray, y: np.ndarray, builtin: Sequence[StatGroup], fold: Fold, counted: bool
) -> Stats:
    """``part`` (a chunk's plain fold, whose sums are not all finite) folded again scaled when
    its values are finite, else ``part`` as it is (a NaN or Inf propagates as numpy's would).

    ``fold`` folds the per-side groups (the backend's kernels); ``counted``: the plain fold
    counted the NaN and Inf values (else they are looked for here).
    """
    if not _overflowed(part, x, y, counted):
        return part
    out = replace(part, scale_x=_scale_of(x), scale_y=_scale_of(y))
    per_side = [g for g in builtin if g.name in _PER_SIDE_GROUPS]
    if per_side:
        again = fold(_scaled(x, out.scale_x), _scaled(y, out.scale_y), per_side)
        for name in _PER_SIDE_FIELDS:
            setattr(out, name, getattr(again, name))
    if any(g.name == "diff" for g in builtin):
        out.scale_d, d = _scaled_difference(x, y)
        again = Stats()
        with np.errstate(all="ignore"):  # the diff group's fold of (d, 0) folds d itself
            BUILTIN["diff"].fold(again, d, np.zeros_like(d))
        for name in _DIFF_FIELDS:
            setattr(out, name, getattr(again, name))
    return out


def _overflowed(part: Stats, x: np.ndarray, y: np.ndarray, counted: bool) -> bool:
    """Whether the sums that are not finite come from finite values. Only float64 (and wider)
    values can overflow a sum of squares; the counts answer when they were taken, else one
    look at the values (only in this case)."""
    if not any(v.dtype.kind == "f" and v.dtype.itemsize >= 8 for v in (x, y)):
        return False
    if part.nan_x or part.inf_x or part.nan_y or part.inf_y:
        return False
    return counted or bool(np.isfinite(x).all() and np.isfinite(y).all())


def _scale_of(values: np.ndarray) -> int:
    """The power of two that brings the largest magnitude of ``values`` to at most 1 (0 if it is)."""
    top = np.max(np.abs(values)) if values.size else 0.0
    return max(int(np.frexp(top)[1]), 0)


def _scaled(values: np.ndarray, scale: int) -> np.ndarray:
    """``values * 2**-scale`` as float64 (wide floats scaled before they are narrowed)."""
    wide = values if values.dtype.kind == "f" and values.dtype.itemsize >= 8 else values.astype(np.float64)
    return np.ldexp(wide, -scale).astype(np.float64, copy=False)


def _scaled_difference(x: np.ndarray, y: np.ndarray) -> tuple[int, np.ndarray]:
    """(k, ``(x - y) * 2**-k``) with the largest magnitude at most 1."""
    xw, yw = _scaled(x, 0), _scaled(y, 0)
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.subtract(xw, yw)
    halved = 0
    if not np.isfinite(d).all():  # opposite huge values: their halves' difference is finite
        d, halved = np.subtract(xw * 0.5, yw * 0.5), 1
    scale = _scale_of(d)
    return scale + halved, np.ldexp(d, -scale)
