"""Replays of the normalising and reducing ops: BNInfer and inference FusedBatchNorm,
LayerNorm, RmsNorm, Softmax / SoftmaxV2, LogSoftmax / LogSoftmaxV2, ReduceMean / ReduceSum.

Defaults are the op definitions' (CANN's IR and TensorFlow's): BNInfer / FusedBatchNorm
``epsilon`` 0.0001; LayerNorm ``begin_norm_axis`` 0, ``begin_params_axis`` 0, ``epsilon`` 1e-7;
RmsNorm ``epsilon`` 1e-6 over the axes gamma spans (the last ones), its second output ``rstd``
(``1 / sqrt(mean(x^2) + epsilon)``, those axes kept as 1); SoftmaxV2 and LogSoftmaxV2 ``axes``
[-1]; reductions ``keep_dims`` False. A reduction whose axes are neither an
attribute nor an input is inferred from the shapes when only one choice fits.
"""

from __future__ import annotations

import itertools

import numpy as np

from .registry import ReplayArgs, ReplayError, channel_axis, normalise_axes, replay_of

BN_EPSILON = 1e-4
LN_EPSILON = 1e-7
RMS_EPSILON = 1e-6


def _epsilon(args: ReplayArgs, default: float) -> float:
    value = args.attr("epsilon", default=None)
    if value is None:
        args.note(f"epsilon not in the graph: {default:g} assumed (the op's default)")
        return default
    return float(value)


@replay_of("BNInfer", "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def batch_norm(args: ReplayArgs) -> list[np.ndarray]:
    """(x - mean) * scale / sqrt(variance + epsilon) + offset along the channel axis."""
    if args.attr("is_training", default=False):
        raise ReplayError("a training-mode FusedBatchNorm normalises with batch statistics: not replayed")
    x = args.x(0)
    fmt = args.attr("data_format", default=None) or args.format(0)
    axis = channel_axis(fmt if fmt == "NCHW" else None, x.ndim)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    scale, offset, mean, variance = (args.x(i).reshape(shape) for i in range(1, 5))
    return [(x - mean) * scale / np.sqrt(variance + _epsilon(args, BN_EPSILON)) + offset]


@replay_of("LayerNorm")
def layer_norm(args: ReplayArgs) -> list[np.ndarray]:
    """y, mean and variance over the axes from ``begin_norm_axis`` on; gamma and beta span the
    axes from ``begin_params_axis`` on."""
    x = args.x(0)
    rank = x.ndim
    norm_axis = int(args.attr("begin_norm_axis", default=0)) % max(rank, 1)
    params_axis = int(args.attr("begin_params_axis", default=0)) % max(rank, 1)
    axes = tuple(range(norm_axis, rank))
    mean = x.mean(axis=axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    params = (1,) * params_axis + x.shape[params_axis:]
    gamma, beta = args.x(1).reshape(params), args.x(2).reshape(params)
    y = (x - mean) / np.sqrt(variance + _epsilon(args, LN_EPSILON)) * gamma + beta
    return [y, mean, variance]


@replay_of("RmsNorm")
def rms_norm(args: ReplayArgs) -> list[np.ndarray]:
    """y = x * rstd * gamma and rstd = 1 / sqrt(mean(x^2) + epsilon), the mean over the last
    ``gamma.ndim`` axes of x."""
    x, gamma = args.x(0), args.x(1)
    if gamma.ndim > x.ndim or x.shape[x.ndim - gamma.ndim :] != gamma.shape:
        raise ReplayError(f"gamma of shape {list(gamma.shape)} does not fit x of shape {list(x.shape)}")
    axes = tuple(range(x.ndim - gamma.ndim, x.ndim))
    rstd = 1.0 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + _epsilon(args, RMS_EPSILON))
    return [x * rstd * gamma, rstd]


def _softmax_axes(args: ReplayArgs, x: np.ndarray) -> tuple[int, ...]:
    return normalise_axes(args.attr("axes", "axis", default=[-1]), x.ndim)


@replay_of("Softmax", "SoftmaxV2")
def softmax(args: ReplayArgs) -> np.ndarray:
    """exp(x - max) / sum over ``axes`` (default the last)."""
    x = args.x(0)
    axes = _softmax_axes(args, x)
    shifted = np.exp(x - x.max(axis=axes, keepdims=True))
    return shifted / shifted.sum(axis=axes, keepdims=True)


@replay_of("LogSoftmax", "LogSoftmaxV2")
def log_softmax(args: ReplayArgs) -> np.ndarray:
    """x - max - log(sum(exp(x - max))) over ``axes`` (default the last)."""
    x = args.x(0)
    axes = _softmax_axes(args, x)
    shifted = x - x.max(axis=axes, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axes, keepdims=True))


def _inferred_axes(in_shape, out_shape, keep: bool | None) -> tuple[tuple[int, ...], bool]:
    """The reduced axes (and keep_dims) that turn ``in_shape`` into ``out_shape``; a
    ReplayError unless exactly one choice fits (reducing axes of length 1 counts as no choice)."""
    rank = len(in_shape)
    fits = set()
    for count in range(rank + 1):
        for axes in itertools.combinations(range(rank), count):
            for keep_dims in [keep] if keep is not None else [False, True]:
                shape = (
                    tuple(1 if a in axes else n for a, n in enumerate(in_shape))
                    if keep_dims
                    else tuple(n for a, n in enumerate(in_shape) if a not in axes)
                )
                if shape == tuple(out_shape):
                    fits.add((tuple(a for a in axes if in_shape[a] != 1), keep_dims))
    if len(fits) != 1:
        raise ReplayError(
            f"the reduction axes are not in the graph and the shapes fit {'none' if not fits else 'several'}"
        )
    return next(iter(fits))


def _reduce(args: ReplayArgs, op) -> np.ndarray:
    x = args.x(0)
    keep = args.attr("keep_dims", "keepdims", default=None)
    axes = args.attr("axes", "axis", default=None)
    if axes is None and len(args.inputs) > 1:
        axes = np.asarray(args.inputs[1]).astype(np.int64).ravel().tolist()
    if axes is None:
        if args.output_shape() is None:
            raise ReplayError("the reduction axes are not in the graph")
        axes, keep = _inferred_axes(x.shape, args.output_shape(), None if keep is None else bool(keep))
        args.note(f"reduction axes not in the graph: {list(axes)} inferred from the shapes")
    axes = tuple(range(x.ndim)) if len(axes) == 0 else normalise_axes(axes, x.ndim)
    return op(x, axis=axes, keepdims=bool(keep))


@replay_of("ReduceMean", "ReduceMeanD", "Mean")
def reduce_mean(args: ReplayArgs) -> np.ndarray:
    """The mean over ``axes`` (attribute, else input 1; empty: all axes), ``keep_dims``."""
    return _reduce(args, np.mean)


@replay_of("ReduceSum", "ReduceSumD", "Sum")
def reduce_sum(args: ReplayArgs) -> np.ndarray:
    """The sum over ``axes`` (attribute, else input 1; empty: all axes), ``keep_dims``."""
    return _reduce(args, np.sum)
