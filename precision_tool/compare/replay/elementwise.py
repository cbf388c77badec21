"""Replays of elementwise ops: activations, binary arithmetic with broadcasting, BiasAdd.

Activations follow their TF / CANN definitions: Relu6 clips to [0, 6]; Gelu is the tanh
approximation ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (CANN's Gelu), or the exact
``0.5 x (1 + erf(x / sqrt(2)))`` when the fused TF ops include an ``Erf``.
"""

from __future__ import annotations

import math

import numpy as np

from .registry import ReplayArgs, ReplayError, channel_axis, replay_of

_erf = np.vectorize(math.erf, otypes=[np.float64])

UNARY = {
    "Relu": lambda x: np.maximum(x, 0.0),
    "Relu6": lambda x: np.clip(x, 0.0, 6.0),
    "Tanh": np.tanh,
    "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "Exp": np.exp,
    "Log": np.log,
    "Sqrt": np.sqrt,
    "Rsqrt": lambda x: 1.0 / np.sqrt(x),
}

BINARY = {
    "Add": np.add,
    "AddV2": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "RealDiv": np.divide,
}


def _unary(op_type: str):
    def replay(args: ReplayArgs) -> np.ndarray:
        return UNARY[op_type](args.x(0))

    replay.__doc__ = f"{op_type}, elementwise."
    return replay


def _binary(op_type: str):
    def replay(args: ReplayArgs) -> np.ndarray:
        x, y = args.x(0), args.x(1)
        try:
            return BINARY[op_type](x, y)
        except ValueError:
            raise ReplayError(f"shapes {list(x.shape)} and {list(y.shape)} do not broadcast") from None

    replay.__doc__ = f"{op_type} with numpy (= TensorFlow) broadcasting."
    return replay


for _name in UNARY:
    replay_of(_name)(_unary(_name))
for _name in BINARY:
    replay_of(_name)(_binary(_name))


def gelu_erf(x: np.ndarray) -> np.ndarray:
    """The exact Gelu, ``0.5 x (1 + erf(x / sqrt(2)))``."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """Gelu's tanh approximation, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def silu(x: np.ndarray) -> np.ndarray:
    """SiLU (Swish with scale 1), ``x sigmoid(x)``."""
    return x * UNARY["Sigmoid"](x)


@replay_of("Gelu")
def gelu(args: ReplayArgs) -> np.ndarray:
    """Gelu: tanh approximation, or erf when the fused TF ops include Erf."""
    x = args.x(0)
    return gelu_erf(x) if "Erf" in args.original_types else gelu_tanh(x)


@replay_of("BiasAdd")
def bias_add(args: ReplayArgs) -> np.ndarray:
    """BiasAdd: a 1-D bias along the channel axis of ``data_format`` (NCHW: 1, else the last)."""
    x, bias = args.x(0), args.x(1).reshape(-1)
    fmt = args.attr("data_format", default=None) or args.format(0)
    axis = channel_axis(fmt if fmt == "NCHW" else None, x.ndim)
    if x.ndim == 0 or x.shape[axis] != bias.size:
        raise ReplayError(f"bias of {bias.size} does not fit axis {axis} of shape {list(x.shape)}")
    shape = [1] * x.ndim
    shape[axis] = bias.size
    return x + bias.reshape(shape)
