"""Replays of the ops that move or convert values: Cast, TransData (the identity in host
layout), Reshape, Transpose / TransposeD, ConcatV2 / ConcatV2D / ConcatD, Identity."""

from __future__ import annotations

import math

import numpy as np

from .registry import ReplayArgs, ReplayError, normalise_axes, replay_of


def _as_output_shape(x: np.ndarray, args: ReplayArgs) -> np.ndarray:
    shape = args.output_shape()
    if shape is None or tuple(shape) == x.shape:
        return x
    if math.prod(shape) != x.size:
        raise ReplayError(f"{x.size} input elements cannot become shape {list(shape)}")
    return x.reshape(shape)


@replay_of("Cast")
def cast(args: ReplayArgs) -> np.ndarray:
    """The input converted to the output's dtype (float to int truncates, as TensorFlow's)."""
    dtype = args.output_dtypes[0] if args.output_dtypes else None
    raw = np.asarray(args.inputs[0])
    value = raw.astype(dtype) if dtype is not None else raw
    return _as_output_shape(np.asarray(value, dtype=np.float64), args)


@replay_of("TransData", "Identity")
def identity(args: ReplayArgs) -> np.ndarray:
    """In host layout a layout conversion changes nothing."""
    return _as_output_shape(args.x(0), args)


@replay_of("Reshape", "Squeeze", "ExpandDims", "Flatten")
def reshape(args: ReplayArgs) -> np.ndarray:
    """The input's values in the output's shape."""
    if args.output_shape() is None:
        raise ReplayError("the output shape is unknown")
    return _as_output_shape(args.x(0), args)


@replay_of("Transpose", "TransposeD")
def transpose(args: ReplayArgs) -> np.ndarray:
    """The input with axes permuted by ``perm`` (attribute, else input 1)."""
    x = args.x(0)
    perm = args.attr("perm", default=None)
    if perm is None and len(args.inputs) > 1:
        perm = np.asarray(args.inputs[1]).astype(np.int64).ravel().tolist()
    if perm is None:
        raise ReplayError("the graph has no perm attribute and the dump no perm input")
    perm = [int(p) % x.ndim for p in perm]
    if sorted(perm) != list(range(x.ndim)):
        raise ReplayError(f"perm {perm} is not a permutation of {x.ndim} axes")
    return x.transpose(perm)


@replay_of("ConcatV2", "ConcatV2D", "ConcatD", "Concat")
def concat(args: ReplayArgs) -> np.ndarray:
    """The inputs joined along ``concat_dim``: an attribute (the D forms), else ConcatV2's last
    input or Concat's first."""
    values = list(args.inputs)
    axis = args.attr("concat_dim", "axis", default=None)
    if axis is None and len(values) > 1:
        position = 0 if np.ndim(values[0]) == 0 else -1
        axis = int(np.asarray(values.pop(position)).ravel()[0])
    if axis is None:
        raise ReplayError("the concat axis is neither an attribute nor an input")
    arrays = [np.asarray(v, dtype=np.float64) for v in values]
    (axis,) = normalise_axes(int(axis), arrays[0].ndim)
    try:
        return np.concatenate(arrays, axis=axis)
    except ValueError:
        raise ReplayError(f"shapes {[list(a.shape) for a in arrays]} do not concatenate on axis {axis}") from None
