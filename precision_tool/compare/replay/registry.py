"""The replay registry: one small function per op type, and fused ops as chains of TF ops.

A replay function takes :class:`ReplayArgs` (the op's NPU inputs in host layout, their host
layouts, the graph attributes, the NPU outputs' host shapes and dtypes) and returns the op's
outputs computed in float64 (a list, or one array for one output). It raises
:class:`ReplayError` with a reason when it cannot replay this instance (an attribute it needs is
absent and cannot be inferred). Assumptions it makes go to :meth:`ReplayArgs.note`.

A fused op (``_datadump_original_op_names`` naming two or more TF ops) is replayed by composing
the replays of those TF ops when the first has the same replay as the NPU op and the others are
epilogues (BiasAdd, Relu, Add...) consuming the previous result and the next NPU inputs:
Conv2D+BiasAdd+Relu, MatMul+BiasAdd. Other fusions (LayerNorm, the Gelu pattern) are replayed by
the NPU op's own type, which stands for the whole pattern.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

MAX_REPLAY_ELEMENTS = 1 << 25  # inputs above this many elements are not replayed (float64 copies)
_MISSING = object()


class ReplayError(Exception):
    """This op cannot be replayed; the message says why."""


@dataclass(frozen=True)
class ReplayArgs:
    """What a replay function gets.

    Attributes:
        inputs: the NPU input tensors in host layout, in their stored dtype.
        formats: each input's host layout (``NHWC``, ``HWCN``...), None when unknown.
        attrs: the graph op's attributes.
        output_shapes, output_dtypes, output_formats: of the NPU outputs, in host layout.
        original_types: the TF op types the op stands for (fused ops), may be empty.
    """

    inputs: tuple[np.ndarray, ...]
    formats: tuple[str | None, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)
    output_shapes: tuple[tuple[int, ...], ...] = ()
    output_dtypes: tuple[np.dtype, ...] = ()
    output_formats: tuple[str | None, ...] = ()
    original_types: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    def x(self, index: int) -> np.ndarray:
        """Input ``index`` as float64."""
        if index >= len(self.inputs):
            raise ReplayError(f"the dump has {len(self.inputs)} input(s), the replay needs input {index}")
        return np.asarray(self.inputs[index], dtype=np.float64)

    def format(self, index: int) -> str | None:
        """The host layout of input ``index``, None when unknown."""
        return self.formats[index] if index < len(self.formats) else None

    def attr(self, *names: str, default: Any = _MISSING) -> Any:
        """The first of the attributes ``names`` the graph has; ``default`` when none (a
        ReplayError when there is no default)."""
        for name in names:
            if name in self.attrs and self.attrs[name] is not None:
                return self.attrs[name]
        if default is _MISSING:
            raise ReplayError(f"the graph has no {' / '.join(names)} attribute")
        return default

    def note(self, text: str) -> None:
        """Record an assumption the replay made."""
        if text not in self.notes:
            self.notes.append(text)

    def output_shape(self, index: int = 0) -> tuple[int, ...] | None:
        """The NPU output's host shape, None when unknown."""
        return tuple(self.output_shapes[index]) if index < len(self.output_shapes) else None


ReplayFn = Callable[[ReplayArgs], "np.ndarray | Sequence[np.ndarray]"]
REGISTRY: dict[str, ReplayFn] = {}
# Epilogues a fused chain may end with: type -> NPU inputs it consumes besides the running value.
EPILOGUES = {
    "BiasAdd": 1,
    "Add": 1,
    "AddV2": 1,
    "Sub": 1,
    "Mul": 1,
    "RealDiv": 1,
    "Relu": 0,
    "Relu6": 0,
    "Sigmoid": 0,
    "Tanh": 0,
}
HEAD_INPUTS = 2  # Conv2D, MatMul: the input and the weight


def replay_of(*op_types: str) -> Callable[[ReplayFn], ReplayFn]:
    """Register the decorated function as the replay of ``op_types``."""

    def register(fn: ReplayFn) -> ReplayFn:
        for op_type in op_types:
            REGISTRY[op_type] = fn
        return fn

    return register


def tf_type(name: str) -> str:
    """The TF op type a TF op name suggests: its last path part without a ``_N`` suffix
    (``resnet/conv1/BiasAdd_1`` -> ``BiasAdd``)."""
    return re.sub(r"_\d+$", "", name.rsplit("/", 1)[-1])


def chain(op_type: str, original_types: Sequence[str], n_inputs: int) -> list[tuple[str, int]] | None:
    """The TF ops to compose as ``(type, NPU inputs consumed)``, or None when the op is
    replayed by its own type."""
    types = list(original_types)
    if len(types) < 2 or op_type not in REGISTRY or REGISTRY.get(types[0]) is not REGISTRY[op_type]:
        return None
    if not all(t in EPILOGUES for t in types[1:]):
        return None
    steps = [(types[0], HEAD_INPUTS)] + [(t, EPILOGUES[t]) for t in types[1:]]
    return steps if sum(n for _, n in steps) == n_inputs else None


def _outputs(result) -> list[np.ndarray]:
    if isinstance(result, (list, tuple)):
        return [np.asarray(r, dtype=np.float64) for r in result]
    return [np.asarray(result, dtype=np.float64)]  # one output (a 0-d result of a full reduction too)


def _run_chain(steps: list[tuple[str, int]], args: ReplayArgs) -> list[np.ndarray]:
    value, used = None, 0
    out_format = args.output_formats[0] if args.output_formats else None
    for op_type, count in steps:
        if value is None:
            inputs, formats = args.inputs[:count], args.formats[:count]
        else:
            inputs = (value, *args.inputs[used : used + count])
            formats = (out_format, *args.formats[used : used + count])
        step = replace(args, inputs=tuple(inputs), formats=tuple(formats), notes=args.notes)
        value = _outputs(REGISTRY[op_type](step))[0]
        used += count
    return [value]


def run_replay(op_type: str, original_types: Sequence[str], args: ReplayArgs) -> tuple[list[np.ndarray], str]:
    """Replay one op: ``(outputs in float64, what was replayed, e.g. "Conv2D+BiasAdd+Relu")``.

    Raises:
        ReplayError: no replay for the type, inputs too large, or the replay cannot run.
    """
    total = sum(int(np.size(x)) for x in args.inputs)
    if total > MAX_REPLAY_ELEMENTS:
        raise ReplayError(f"{total} input elements: too large to replay (limit {MAX_REPLAY_ELEMENTS})")
    steps = chain(op_type, original_types, len(args.inputs))
    if steps is None and op_type not in REGISTRY:
        raise ReplayError(f"no replay for {op_type}")
    label = "+".join(t for t, _ in steps) if steps is not None else op_type
    try:
        with np.errstate(all="ignore"):  # NaN and inf are results here, not warnings
            return (_run_chain(steps, args) if steps is not None else _outputs(REGISTRY[op_type](args))), label
    except (ValueError, IndexError, TypeError) as exc:  # tensors whose shapes the op does not accept
        raise ReplayError(f"the replay of {label} cannot use these tensors ({exc})") from None


def channel_axis(layout: str | None, rank: int) -> int:
    """The channel axis of a host layout (``NCHW``: 1; ``NHWC`` and the rest: the last)."""
    if layout and "C" in layout and len(layout) == rank:
        return layout.index("C")
    return rank - 1 if rank else 0


def normalise_axes(axes, rank: int) -> tuple[int, ...]:
    """``axes`` (an int or a list, negative allowed) as sorted non-negative axes."""
    items = [int(axes)] if np.ndim(axes) == 0 else [int(a) for a in np.ravel(axes)]
    for a in items:
        if not -rank <= a < max(rank, 1):
            raise ReplayError(f"axis {a} is out of range for rank {rank}")
    return tuple(sorted({a % rank if rank else 0 for a in items}))
