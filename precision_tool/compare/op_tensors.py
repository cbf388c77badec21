"""All the data ``why`` and the verdict's replay read, in one place: one op's NPU dump tensors
and their goldens, and the ops of the newest comparison result that introduce error.

Pairing is ``vc``'s rule (``compare.pairing.golden_for``); the dump file is the op's latest launch in the
newest run (``Workspace.op_dumps``). Only the op's own dump file and
the golden files it pairs with are opened, and their data is memory-mapped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import PrecisionToolError
from ..formats.dump import read_dump
from ..formats.dump_tensor import DumpTensor
from ..formats.golden import GoldenIndex, load_npy
from ..formats.graph_model import GraphDesc, Op, TensorName
from ..formats.tree import StepDir
from .divergence import Divergence, OpCosines
from .golden_pairing import golden_for
from .workspace import OpRef, Workspace

NETWORK_INPUT_TYPES = frozenset({"Data", "PlaceHolder", "Placeholder", "RefData", "AippData"})


@dataclass(frozen=True)
class TensorSide:
    """One input or output of the op: the NPU dump tensor and the golden it pairs with.

    Attributes:
        kind, slot: ``input``/``output`` and its number.
        tensor: the dump tensor (data not read yet).
        origin_format: the host layout to convert it to.
        source: the golden tensor; ``golden_path`` its file, None when absent.
        network_input: True when the value is the network's input data (a Data op's output).
    """

    kind: str
    slot: int
    tensor: DumpTensor
    origin_format: str | None
    source: TensorName | None
    golden_path: Path | None
    network_input: bool = False

    @property
    def label(self) -> str:
        """``input:0``, ``output:1``."""
        return f"{self.kind}:{self.slot}"

    @property
    def source_text(self) -> str:
        """``name:index`` of the golden, empty when there is none."""
        return str(self.source) if self.source else ""

    @property
    def dtype(self) -> np.dtype:
        """The NPU tensor's dtype."""
        return self.tensor.dtype

    @property
    def host_format(self) -> str | None:
        """The host layout the tensor is read in."""
        return self.tensor.origin_format(self.origin_format)

    def npu(self) -> np.ndarray:
        """The NPU tensor in host layout (PrecisionToolError when it cannot be read)."""
        return self.tensor.host(self.origin_format)

    def golden(self) -> np.ndarray | None:
        """The golden tensor (memory-mapped), None when there is no golden file."""
        return None if self.golden_path is None else load_npy(self.golden_path)


@dataclass(frozen=True)
class OpTensors:
    """One launch of one op: its graph entry, dump file, and every tensor side."""

    ref: OpRef
    step: StepDir
    dump_path: Path
    inputs: tuple[TensorSide, ...]
    outputs: tuple[TensorSide, ...]

    @property
    def op(self) -> Op:
        return self.ref.op


def _is_network_input(graph: GraphDesc, name: str) -> bool:
    producer = graph.find_op(name)
    return producer is not None and producer.type in NETWORK_INPUT_TYPES


def _input_side(graph: GraphDesc, op: Op, tensor: DumpTensor, golden: GoldenIndex) -> TensorSide:
    desc = op.input_desc(tensor.index)
    source = golden_for(graph, op, "input", tensor.index)
    return TensorSide(
        "input",
        tensor.index,
        tensor,
        desc.origin_format if desc else None,
        source,
        golden.latest_path(*source) if source else None,
        bool(source) and _is_network_input(graph, source[0]),
    )


def _output_side(graph: GraphDesc, op: Op, tensor: DumpTensor, golden: GoldenIndex) -> TensorSide:
    desc = op.output_desc(tensor.index)
    source = golden_for(graph, op, "output", tensor.index)
    return TensorSide(
        "output", tensor.index, tensor, desc.origin_format if desc else None, source, golden.latest_path(*source)
    )


def op_tensors(context: Workspace, ref: OpRef) -> list[OpTensors]:
    """The tensors of ``ref``'s latest launch in each selected step dir (usually one).

    Raises:
        PrecisionToolError: no dump file of the op in the newest run, or it cannot be read.
    """
    steps = context.op_dumps(ref)
    if not steps:
        raise PrecisionToolError(
            f"no dump file of {ref.op.name} in the newest run of {ref.debug} "
            f"(TF_DUMP_STEP={context.config.tf_dump_step or 'all'})"
        )
    golden = context.golden()
    found = []
    for step, file in steps:
        dump = read_dump(file.path, file.name.file_name)
        found.append(
            OpTensors(
                ref,
                step,
                file.path,
                tuple(_input_side(ref.graph, ref.op, t, golden) for t in dump.inputs),
                tuple(_output_side(ref.graph, ref.op, t, golden) for t in dump.outputs),
            )
        )
    return found


def first_introducers(divergence: Divergence) -> list[OpCosines]:
    """The ops that introduce error, in execution order; when none does but ops are flagged,
    the first flagged op (its inputs already differ: the error comes from the network input)."""
    introducers = [op for op in divergence.ops if op.introduces]
    if introducers:
        return introducers
    return list(divergence.flagged[:1])
