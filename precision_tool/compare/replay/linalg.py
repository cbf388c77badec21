"""Replays of MatMul, MatMulV2, BatchMatMul and BatchMatMulV2.

The transpose flags have several spellings: GE's MatMul/MatMulV2 ``transpose_x1``/``transpose_x2``,
TF's MatMul ``transpose_a``/``transpose_b``, GE's BatchMatMul ``adj_x1``/``adj_x2`` and TF's
BatchMatMul ``adj_x``/``adj_y``; all default to False. GE's optional third input is a bias.
Batch dimensions broadcast as in ``np.matmul`` (BatchMatMulV2's rule).
"""

from __future__ import annotations

import numpy as np

from .registry import ReplayArgs, ReplayError, replay_of

FIRST = ("transpose_x1", "transpose_a", "adj_x1", "adj_x")
SECOND = ("transpose_x2", "transpose_b", "adj_x2", "adj_y")


def product(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """``np.matmul(x1, x2)`` (= ``torch.matmul``: 1-D operands promoted, batch dimensions
    broadcast); a ReplayError when the shapes do not multiply."""
    try:
        return np.matmul(x1, x2)
    except ValueError:
        raise ReplayError(f"shapes {list(x1.shape)} and {list(x2.shape)} do not multiply") from None


def _flag(args: ReplayArgs, names) -> bool:
    return bool(args.attr(*names, default=False))


@replay_of("MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2")
def matmul(args: ReplayArgs) -> np.ndarray:
    """x1 @ x2, either transposed in its last two axes by its flag, plus the optional bias."""
    x1, x2 = args.x(0), args.x(1)
    if x1.ndim < 2 or x2.ndim < 2:
        raise ReplayError(f"matmul of shapes {list(x1.shape)} and {list(x2.shape)}: both need 2 axes")
    if _flag(args, FIRST):
        x1 = np.swapaxes(x1, -1, -2)
    if _flag(args, SECOND):
        x2 = np.swapaxes(x2, -1, -2)
    y = product(x1, x2)
    if len(args.inputs) > 2:
        y = y + args.x(2).reshape(-1)
    return y
