"""The noise model (:mod:`precision_tool.compare.noise`) fed with what ``why`` and ``cp`` measure
themselves: the op's inputs against their goldens, the shapes, the dtypes.

``vcs`` feeds the same model from the result CSV's input rows (the same pairing, the same
numbers), so an output is "rounding" in ``why``, ``cp`` and ``vcs`` alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..compare.noise import Noise, accumulation_length, output_noise, replay_noise, unmeasured_noise
from .subject import InputCheck


def input_noise(check: InputCheck) -> Noise:
    """The noise of one input against its golden: of a tensor with an unmeasured history."""
    return unmeasured_noise(check.facts.name)


def op_output_noise(
    op_type: str, npu_dtype, golden_dtype, inputs: Sequence[InputCheck], input_shapes: Sequence, output_shape
) -> Noise:
    """The noise of an op's output against its golden, from its inputs' measured differences
    (an input without a golden counts as unmeasured), its sums and its dtypes."""
    reds = [check.stats.red if check.stats is not None else None for check in inputs] or [None]
    first = inputs[0].stats if inputs else None
    k = accumulation_length(op_type, input_shapes, output_shape)
    return output_noise(
        npu_dtype,
        golden_dtype,
        reds,
        [c.facts.name for c in inputs],
        k,
        op_type,
        first.rms_golden if first is not None else None,
        first.size if first is not None else 1,
    )


def op_replay_noise(op_type: str, npu_dtype, input_shapes: Sequence, output_shape) -> Noise:
    """The noise of an op's NPU output against its replay on its own NPU inputs."""
    return replay_noise(npu_dtype, op_type, accumulation_length(op_type, input_shapes, output_shape))
