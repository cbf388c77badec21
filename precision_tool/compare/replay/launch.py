"""Replaying one launch of an op: its NPU inputs in host layout and its graph attributes handed
to :func:`~.registry.run_replay`. ``why`` (:mod:`precision_tool.explain.diagnosis`) and the
verdict's replay (:mod:`precision_tool.compare.judged`) both replay through here, so they
recompute the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..op_tensors import OpTensors
from ..workspace import OpRef
from .registry import ReplayArgs, ReplayError, run_replay, tf_type


def original_types(ref: OpRef) -> tuple[str, ...]:
    """The TF op types a fused op stands for: ``_datadump_original_op_types`` when it has them,
    else read off the ``_datadump_original_op_names``."""
    op = ref.op
    names = op.original_op_names or []
    if op.original_op_types and len(op.original_op_types) == len(names):
        return tuple(op.original_op_types)
    return tuple(tf_type(name) for name in names)


def replay_op(tensors: OpTensors, inputs: list, outputs: list) -> tuple[list[np.ndarray], str, list[str]]:
    """Replay the op from its NPU inputs (host arrays, None where unreadable): (outputs, what
    was replayed, notes). Raises ReplayError."""
    missing = [s.label for s, array in zip(tensors.inputs, inputs) if array is None]
    if missing:
        raise ReplayError(f"{', '.join(missing)} cannot be read")
    args = ReplayArgs(
        tuple(inputs),
        tuple(s.host_format for s in tensors.inputs),
        tensors.op.attrs,
        tuple(
            tuple(a.shape) if a is not None else tuple(s.tensor.original_shape or s.tensor.shape)
            for s, a in zip(tensors.outputs, outputs)
        ),
        tuple(s.tensor.dtype for s in tensors.outputs),
        tuple(s.host_format for s in tensors.outputs),
        original_types(tensors.ref),
    )
    replayed, label = run_replay(tensors.op.type, args.original_types, args)
    return replayed, label, list(args.notes)


@dataclass(frozen=True)
class GeLaunch:
    """One launch of a GE op as the verdict's replay and ``why`` read any call they replay
    (:class:`~..msprobe_replay.MsprobeLaunch` is the other kind): its name, type and the type
    its noise is modelled as, its dump file, its tensor sides, and its replay."""

    tensors: OpTensors

    @property
    def name(self) -> str:
        return self.tensors.op.name

    @property
    def op_type(self) -> str:
        return self.tensors.op.type

    @property
    def noise_type(self) -> str:
        return self.tensors.op.type

    @property
    def dump_name(self) -> str:
        return self.tensors.dump_path.name

    @property
    def inputs(self):
        return self.tensors.inputs

    @property
    def outputs(self):
        return self.tensors.outputs

    def replay(self, inputs: list, outputs: list) -> tuple[list[np.ndarray], str, list[str]]:
        """:func:`replay_op` of the launch."""
        return replay_op(self.tensors, inputs, outputs)
