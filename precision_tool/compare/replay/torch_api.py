"""Replays of PyTorch and MindSpore API calls recorded by msprobe, from their own arguments.

msprobe names a call ``{prefix}.{api}.{count}.forward`` (:mod:`~...formats.msprobe_keys`); the
prefixes replayed here are PyTorch's ``Functional`` (``torch.nn.functional``), ``Torch``
(``torch``), ``Tensor`` (methods: ``self`` is the first argument) and ``NPU`` (``torch_npu``),
and MindSpore's ``Functional`` (``mindspore.ops``), ``Mint`` (``mindspore.mint``),
``MintFunctional`` (``mindspore.mint.nn.functional``), ``Tensor`` and ``Primitive``
(``{attribute}.{class}``, matched by the class). The API names are those of msprobe's
``support_wrap_ops.yaml`` lists. Backward calls and modules are not replayed.

A call's arguments are bound to the API's parameters by position and keyword, as Python binds
them (:func:`bind`), with the keyword spellings of both frameworks (``dim``/``axis``,
``eps``/``epsilon``...). Signatures follow the frameworks' documentation; where MindSpore's
``ops`` differ from torch (``conv2d``'s ``pad_mode``, ``rms_norm(x, gamma, epsilon)`` returning
``(y, rstd)``, ``softmax``'s ``axis=-1``) they have entries of their own.

The math is the TF replays' (:mod:`.linalg`, :mod:`.conv`, :mod:`.norm`, :mod:`.elementwise`),
in float64. The call ran in the dtype of its first output: tensor inputs of a finer float type
are rounded to it first (autocast hands ``linear`` float32 tensors and computes in float16), and
a note says so. Each API names the TF op type whose noise model fits it (:mod:`..noise`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from ...formats.msprobe_keys import FORWARD, CallKey
from ..noise import roundoff_or_none
from . import conv, norm
from .elementwise import BINARY, UNARY, gelu_erf, gelu_tanh, silu
from .linalg import product
from .registry import MAX_REPLAY_ELEMENTS, ReplayArgs, ReplayError

TORCH_PREFIXES = frozenset({"Functional", "Torch", "Tensor", "NPU"})
MINDSPORE_PREFIXES = frozenset({"Functional", "Mint", "MintFunctional", "Tensor"})
# keyword spellings of the other framework (or of another API) -> the parameter names used here
ALIASES = {
    "self": "input",
    "x": "input",
    "input_x": "input",
    "logits": "input",
    "axis": "dim",
    "gamma": "weight",
    "epsilon": "eps",
    "tensor2": "other",
    "mat2": "other",
    "y": "other",
}


@dataclass
class Bound:
    """A call's arguments by parameter name, what it ran in, and the notes of its replay."""

    values: dict[str, Any]
    framework: str
    dtype: np.dtype | None = None
    notes: list[str] = field(default_factory=list)

    def get(self, name: str, default: Any = None) -> Any:
        """The argument ``name``; ``default`` when not given (or given as None)."""
        value = self.values.get(name)
        return default if value is None else value

    def tensor(self, name: str) -> np.ndarray:
        """The tensor argument ``name`` as float64 (a ReplayError when it is not a tensor)."""
        value = self.values.get(name)
        if not isinstance(value, np.ndarray):
            raise ReplayError(f"argument {name} is {'absent' if value is None else 'not a tensor'}")
        return np.asarray(value, dtype=np.float64)

    def optional(self, name: str) -> np.ndarray | None:
        """The tensor argument ``name`` as float64, None when not given."""
        return None if self.values.get(name) is None else self.tensor(name)

    def operand(self, name: str) -> np.ndarray:
        """A tensor or a Python number, as float64."""
        value = self.values.get(name)
        if isinstance(value, (bool, int, float)):
            return np.float64(value)
        return self.tensor(name)

    def note(self, text: str) -> None:
        """Record an assumption the replay made."""
        if text not in self.notes:
            self.notes.append(text)


Compute = Callable[[Bound], "np.ndarray | list[np.ndarray]"]


@dataclass(frozen=True)
class Api:
    """One API: what it is called in messages, the TF op type of its noise model, its
    parameters in positional order, and its float64 replay."""

    name: str
    op_type: str
    params: tuple[str, ...]
    compute: Compute
    defaults: tuple[tuple[str, Any], ...] = ()


def bind(api: Api, args: list, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` and ``kwargs`` by parameter name (keywords unknown to the API are dropped:
    ``out``, ``inplace``, ``_stacklevel`` change nothing replayed)."""
    if len(args) > len(api.params):
        raise ReplayError(f"{api.name} takes {len(api.params)} positional argument(s), the call gave {len(args)}")
    values = {**dict(api.defaults), **dict(zip(api.params, args))}
    for name, value in kwargs.items():
        name = name if name in api.params else ALIASES.get(name, name)
        if name in api.params:
            values[name] = value
    return values


# --- the replays ------------------------------------------------------------------------------


def _plus_bias(y: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    return y if bias is None else y + bias


def _linear(b: Bound) -> np.ndarray:
    x, w = b.tensor("input"), b.tensor("weight")
    return _plus_bias(product(x, np.swapaxes(w, -1, -2) if w.ndim >= 2 else w), b.optional("bias"))


def _matmul(b: Bound) -> np.ndarray:
    return product(b.tensor("input"), b.tensor("other"))


def _scaled_sum(b: Bound, first: str, second: str) -> np.ndarray:
    """beta * input + alpha * (first @ second) (``addmm``, ``baddbmm``; beta 0 ignores input)."""
    beta, alpha = float(b.get("beta", 1)), float(b.get("alpha", 1))
    y = alpha * product(b.tensor(first), b.tensor(second))
    return y if beta == 0 else beta * b.tensor("input") + y


def _ints(value: Any, count: int, name: str) -> tuple[int, ...]:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(items) == 1:
        items = items * count
    if len(items) != count or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise ReplayError(f"{name} {value!r} is not {count} integer(s)")
    return tuple(items)


def _conv_pads(b: Bound, x: np.ndarray, w: np.ndarray, strides, dilations, dims: int) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of torch's ``padding`` (ints, ``'same'``, ``'valid'``) or, with
    MindSpore ops' ``pad_mode``: ``valid``, ``same`` (TensorFlow's: the odd pad at the end) or
    ``pad`` (``padding`` one int, (height, width), or top, bottom, left, right)."""
    padding, mode = b.get("padding", 0), b.get("pad_mode")
    word = mode if mode is not None else padding if isinstance(padding, str) else None
    word = str(word).lower() if word is not None else None
    if word == "valid":
        return 0, 0, 0, 0
    if word == "same":
        if mode is not None:
            h, w_ = (conv.same_pads(x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i]) for i in range(2))
        else:
            h, w_ = (_centred(w.shape[2 + i], dilations[i]) for i in range(2))
        return (*h, *w_)
    if word not in (None, "pad"):
        raise ReplayError(f"padding {padding!r} / pad_mode {mode!r}: neither same, valid nor pad")
    items = list(padding) if isinstance(padding, (list, tuple)) else [padding]
    if dims == 1:
        left, right = _ints(items, 2, "padding")
        return 0, 0, left, right
    if len(items) == 4:
        return _ints(items, 4, "padding")
    ph, pw = _ints(items, 2, "padding")
    return ph, ph, pw, pw


def _centred(kernel: int, dilation: int) -> tuple[int, int]:
    """torch's ``padding='same'``: the output as long as the input, the odd pad at the end."""
    total = dilation * (kernel - 1)
    return total // 2, total - total // 2


def _conv(b: Bound, dims: int) -> np.ndarray:
    x, w = b.tensor("input"), b.tensor("weight")
    unbatched = x.ndim == dims + 1
    x = x[None] if unbatched else x
    if dims == 1:  # a 1-D convolution is a 2-D one over a height of one
        x, w = x[:, :, None, :], w[:, :, None, :]
    if x.ndim != 4 or w.ndim != 4:
        raise ReplayError(f"conv{dims}d of shapes {list(b.tensor('input').shape)} and {list(b.tensor('weight').shape)}")
    strides = (1, *_ints(b.get("stride", 1), 1, "stride")) if dims == 1 else _ints(b.get("stride", 1), 2, "stride")
    dilations = (
        (1, *_ints(b.get("dilation", 1), 1, "dilation")) if dims == 1 else _ints(b.get("dilation", 1), 2, "dilation")
    )
    attrs = {
        "data_format": "NCHW",
        "strides": [1, 1, *strides],
        "dilations": [1, 1, *dilations],
        "pads": list(_conv_pads(b, x, w, strides, dilations, dims)),
        "groups": int(b.get("groups", 1)),
    }
    bias = b.optional("bias")
    inputs = (x, w) if bias is None else (x, w, bias)
    y = conv.conv2d(ReplayArgs(inputs, ("NCHW", "NCHW"), attrs))
    y = y[:, :, 0, :] if dims == 1 else y
    return y[0] if unbatched else y


def _shape(b: Bound) -> tuple[int, ...]:
    """The ``normalized_shape`` argument (an int or a list of them)."""
    value = b.get("normalized_shape")
    if value is None:
        raise ReplayError("argument normalized_shape is absent")
    return _ints(value, len(value) if isinstance(value, (list, tuple)) else 1, "normalized_shape")


def _layer_norm(b: Bound) -> np.ndarray:
    x = b.tensor("input")
    shape = _shape(b)
    axis = x.ndim - len(shape)
    gamma = b.optional("weight")
    beta = b.optional("bias")
    inputs = (x, np.ones(shape) if gamma is None else gamma, np.zeros(shape) if beta is None else beta)
    attrs = {"begin_norm_axis": axis, "begin_params_axis": axis, "epsilon": float(b.get("eps", 1e-5))}
    return norm.layer_norm(ReplayArgs(inputs, attrs=attrs))[0]


def _rms(b: Bound, gamma: np.ndarray, eps: float) -> list[np.ndarray]:
    return norm.rms_norm(ReplayArgs((b.tensor("input"), gamma), attrs={"epsilon": eps}))


def _rms_norm(b: Bound) -> np.ndarray:
    """torch's ``rms_norm(input, normalized_shape, weight=None, eps=None)``: eps None is the
    input dtype's machine epsilon."""
    shape = _shape(b)
    gamma = b.optional("weight")
    eps = b.get("eps")
    if eps is None:
        eps = float(ml_dtypes.finfo(_float_dtype(b.values["input"])).eps)
    return _rms(b, np.ones(shape) if gamma is None else gamma, float(eps))[0]


def _float_dtype(array: np.ndarray) -> np.dtype:
    dtype = np.asarray(array).dtype
    return dtype if dtype.kind == "f" or dtype.name == "bfloat16" else np.dtype(np.float32)


def _rms_pair(b: Bound) -> list[np.ndarray]:
    """``npu_rms_norm(self, gamma, epsilon=1e-6)`` and MindSpore's ``ops.rms_norm(x, gamma,
    epsilon=1e-6)``: (y, rstd)."""
    return _rms(b, b.tensor("weight"), float(b.get("eps", norm.RMS_EPSILON)))


def _primitive_rms(b: Bound) -> list[np.ndarray]:
    b.note(f"a Primitive's epsilon is not dumped: {norm.RMS_EPSILON:g} assumed (RmsNorm's default)")
    return _rms(b, b.tensor("weight"), norm.RMS_EPSILON)


def _softmax_dim(b: Bound, x: np.ndarray) -> int:
    dim = b.get("dim")
    if dim is not None:
        return int(dim)
    if b.framework == "mindspore":
        return -1
    legacy = 0 if x.ndim in (0, 1, 3) else 1  # torch's implicit dim (it warns about it)
    b.note(f"no dim given: torch's implicit dim {legacy} for a {x.ndim}-D input")
    return legacy


def _softmax(b: Bound) -> np.ndarray:
    x = b.tensor("input")
    return norm.softmax(ReplayArgs((x,), attrs={"axes": [_softmax_dim(b, x)]}))


def _log_softmax(b: Bound) -> np.ndarray:
    x = b.tensor("input")
    return norm.log_softmax(ReplayArgs((x,), attrs={"axes": [_softmax_dim(b, x)]}))


def _gelu(b: Bound) -> np.ndarray:
    approximate = str(b.get("approximate", "none")).lower()
    if approximate not in ("none", "tanh"):
        raise ReplayError(f"gelu approximate={approximate!r} is neither 'none' nor 'tanh'")
    x = b.tensor("input")
    return gelu_tanh(x) if approximate == "tanh" else gelu_erf(x)


def _alpha(b: Bound) -> float:
    return float(b.get("alpha", 1))


def _div(b: Bound, reverse: bool = False) -> np.ndarray:
    x, y = b.operand("input"), b.operand("other")
    q = BINARY["RealDiv"](y, x) if reverse else BINARY["RealDiv"](x, y)
    mode = b.get("rounding_mode")
    if mode is None:
        return q
    if mode not in ("trunc", "floor"):
        raise ReplayError(f"rounding_mode {mode!r} is neither 'trunc' nor 'floor'")
    return np.trunc(q) if mode == "trunc" else np.floor(q)


def _api(name, op_type, params, compute, **defaults) -> Api:
    return Api(name, op_type, tuple(params.split()), compute, tuple(defaults.items()))


_BINARY = "input other alpha"
_CONV = "input weight bias stride padding dilation groups"
_MS_CONV = "input weight bias stride pad_mode padding dilation groups"
_TABLE = [  # names, noise type, parameters, replay
    ("linear dense", "MatMul", "input weight bias", _linear),
    ("matmul __matmul__ mm bmm", "BatchMatMul", "input other", _matmul),
    ("addmm", "MatMul", "input mat1 mat2 beta alpha", lambda b: _scaled_sum(b, "mat1", "mat2")),
    ("baddbmm", "BatchMatMul", "input batch1 batch2 beta alpha", lambda b: _scaled_sum(b, "batch1", "batch2")),
    ("conv1d", "Conv2D", _CONV, lambda b: _conv(b, 1)),
    ("conv2d", "Conv2D", _CONV, lambda b: _conv(b, 2)),
    ("layer_norm", "LayerNorm", "input normalized_shape weight bias eps", _layer_norm),
    ("rms_norm", "RmsNorm", "input normalized_shape weight eps", _rms_norm),
    ("npu_rms_norm", "RmsNorm", "input weight eps", _rms_pair),
    ("softmax", "Softmax", "input dim", _softmax),
    ("log_softmax", "LogSoftmax", "input dim", _log_softmax),
    ("gelu", "Gelu", "input approximate", _gelu),
    ("silu", "Swish", "input", lambda b: silu(b.tensor("input"))),
    ("relu", "Relu", "input", lambda b: UNARY["Relu"](b.tensor("input"))),
    ("add __add__ __radd__", "Add", _BINARY, lambda b: b.operand("input") + _alpha(b) * b.operand("other")),
    ("sub subtract __sub__", "Sub", _BINARY, lambda b: b.operand("input") - _alpha(b) * b.operand("other")),
    ("rsub __rsub__", "Sub", _BINARY, lambda b: b.operand("other") - _alpha(b) * b.operand("input")),
    (
        "mul multiply __mul__ __rmul__",
        "Mul",
        "input other",
        lambda b: BINARY["Mul"](b.operand("input"), b.operand("other")),
    ),
    ("div divide true_divide __truediv__ __div__", "RealDiv", "input other rounding_mode", _div),
    ("__rtruediv__ __rdiv__", "RealDiv", "input other", lambda b: _div(b, reverse=True)),
]
# torch's APIs by name, and MindSpore's where they are called and behave alike
COMMON: dict[str, Api] = {
    name: _api(name, op_type, params, compute) for names, op_type, params, compute in _TABLE for name in names.split()
}

# mindspore.ops (msprobe's MindSpore Functional.) where its signature is not torch's
MS_OPS: dict[str, Api] = {
    "conv1d": _api("conv1d", "Conv2D", _MS_CONV, lambda b: _conv(b, 1), pad_mode="valid"),
    "conv2d": _api("conv2d", "Conv2D", _MS_CONV, lambda b: _conv(b, 2), pad_mode="valid"),
    "rms_norm": _api("rms_norm", "RmsNorm", "input weight eps", _rms_pair),
}
# MindSpore primitives by class; their init attributes are not dumped, so only those without
PRIMITIVES: dict[str, Api] = {
    "RmsNorm": _api("RmsNorm", "RmsNorm", "input weight", _primitive_rms),
    "Add": COMMON["add"],
    "Sub": COMMON["sub"],
    "Mul": COMMON["mul"],
    "RealDiv": _api("RealDiv", "RealDiv", "input other", _div),
    "ReLU": COMMON["relu"],
}


def find_api(key: CallKey, framework: str | None) -> Api | None:
    """The replay of the call ``key`` names (a forward API call), None when there is none."""
    if key.direction != FORWARD or key.is_module:
        return None
    if key.prefix == "Primitive":
        return PRIMITIVES.get(key.name.rsplit(".", 1)[-1])
    mindspore = framework == "mindspore"
    if key.prefix not in (MINDSPORE_PREFIXES if mindspore else TORCH_PREFIXES):
        return None
    if mindspore and key.prefix == "Functional" and key.name in MS_OPS:
        return MS_OPS[key.name]
    return COMMON.get(key.name)


def _finer(array: np.ndarray, dtype: np.dtype) -> bool:
    """Whether ``array`` holds a finer float type than the float ``dtype``."""
    mine, theirs = roundoff_or_none(array.dtype), roundoff_or_none(dtype)
    return bool(mine and theirs) and mine < theirs


def _as_run(value: Any, dtype: np.dtype | None, rounded: list[bool]) -> Any:
    """``value`` with its float tensors rounded to ``dtype`` where they are finer."""
    if isinstance(value, np.ndarray):
        if dtype is not None and _finer(value, dtype):
            rounded.append(True)
            return value.astype(dtype)
        return value
    if isinstance(value, list):
        return [_as_run(v, dtype, rounded) for v in value]
    return value


def replay_call(
    api: Api, args: list, kwargs: Mapping[str, Any], framework: str | None, dtype: np.dtype | None
) -> tuple[list[np.ndarray], list[str]]:
    """``api`` replayed in float64 on ``args`` and ``kwargs`` (tensors as arrays), run in
    ``dtype`` (the call's first output's): (outputs, notes).

    Raises:
        ReplayError: the arguments do not fit the API, or are too large to replay.
    """
    total = sum(int(np.size(v)) for v in [*args, *kwargs.values()] if isinstance(v, np.ndarray))
    if total > MAX_REPLAY_ELEMENTS:
        raise ReplayError(f"{total} input elements: too large to replay (limit {MAX_REPLAY_ELEMENTS})")
    rounded: list[bool] = []
    values = {k: _as_run(v, dtype, rounded) for k, v in bind(api, list(args), kwargs).items()}
    bound = Bound(values, framework or "pytorch", dtype)
    if rounded:
        bound.note(f"inputs rounded to {np.dtype(dtype).name}, the dtype the call ran in")
    try:
        with np.errstate(all="ignore"):  # NaN and inf are results here, not warnings
            result = api.compute(bound)
    except (ValueError, IndexError, TypeError) as exc:
        raise ReplayError(f"the replay of {api.name} cannot use these arguments ({exc})") from None
    outputs = result if isinstance(result, list) else [result]
    return [np.asarray(r, dtype=np.float64) for r in outputs], bound.notes
