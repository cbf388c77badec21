"""What a file's header may claim about an array, checked before anything is allocated for it.

Element types first: numpy's ``void`` types (structured records, raw bytes such as
``|V2147483647``, a 2 GiB element) hold no numbers, and allocating even one element of them
can fail; :func:`element_problem` names them by their kind alone (ml_dtypes' bfloat16 and fp8
have kind ``V`` too, but are not ``void``).

A dump header or a ``.npy`` header states a shape and an element type; numpy refuses arrays of
more than :data:`MAX_DIMS` dimensions, negative dimensions, and arrays whose non-zero dimensions
times the element size exceed the address space (even when another dimension is 0: numpy
checks the product of the others, "array is too big"). Asking numpy for such an array raises
ValueError, OverflowError or MemoryError deep inside a reader; these functions say so first,
in words, so a bad header is that one tensor's problem.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .text import shape_text


def _max_dims() -> int:
    """The most dimensions this numpy allows an array (64 since numpy 2, 32 before)."""
    for dims in (64, 32):
        try:
            np.empty((1,) * dims, np.uint8)
        except ValueError:
            continue
        return dims
    return 32


MAX_DIMS = _max_dims()
MAX_BYTES = sys.maxsize  # numpy's npy_intp: the largest byte size of one array
_SHOWN_DIMS = 8  # longer shapes are described by their length, not printed


def element_problem(dtype: np.dtype) -> str | None:
    """Why elements of ``dtype`` are not numbers (a structured, sub-array or raw-bytes type),
    or None when they may be."""
    if not issubclass(dtype.type, np.void):
        return None
    if dtype.names is not None:
        return f"a structured data type ({len(dtype.names)} field(s), {dtype.itemsize} bytes a record)"
    if dtype.subdtype is not None:
        return f"a sub-array data type ({dtype.subdtype[0]} x {list(dtype.subdtype[1])})"
    return f"raw bytes ({dtype.str}) of no numeric type"


def rank_problem(rank: int) -> str | None:
    """Why no array can have ``rank`` dimensions (``"shape has ..."``), or None when one can."""
    if rank > MAX_DIMS:
        return f"shape has {rank} dimensions (numpy arrays have at most {MAX_DIMS})"
    return None


def shape_problem(shape: Sequence[int], itemsize: int) -> str | None:
    """Why no array of ``shape`` with ``itemsize``-byte elements can exist (``"shape ..."``),
    or None.

    Args:
        shape: the dimensions a header claims.
        itemsize: bytes of one element.
    """
    problem = rank_problem(len(shape))
    if problem:  # not kept: such a shape may list millions of dimensions
        return problem
    return _dims_problem(tuple(shape), itemsize)


@lru_cache(maxsize=1024)
def _dims_problem(shape: tuple[int, ...], itemsize: int) -> str | None:
    """:func:`shape_problem` of a shape of an allowed rank; worked out once per shape and size
    (every tensor of a run is checked, and a network's tensors share a few shapes)."""
    if any(d < 0 for d in shape):
        return f"shape {_shown(shape)} has a negative dimension"
    nbytes = max(itemsize, 1)
    for d in shape:
        nbytes *= d or 1
        if nbytes > MAX_BYTES:
            return (
                f"shape {_shown(shape)} of {itemsize}-byte elements is too big for any array "
                f"(more than {MAX_BYTES} bytes)"
            )
    return None


def _shown(shape: Sequence[int]) -> str:
    # written only for a problem: every tensor's shape is checked, few have one
    return shape_text(shape) if len(shape) <= _SHOWN_DIMS else f"of {len(shape)} dimensions"
