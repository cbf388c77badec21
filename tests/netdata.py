"""A small chain network with names the test chooses, written as the real tools write it.

``write_net(root, ops)`` writes a data root: the Build graph (``graph_write``), one NPU dump per
op (``dump_write``, float16 in ND) and the TF golden tensors (float32), so every command runs on
it. Each op's golden output is a fixed function of its inputs; the NPU output is the golden one
rounded to float16, plus a planted error for ops marked ``broken``. An op's golden tensor is
named by its ``tf_name`` (the TF op it stands for), so NPU op names may hold anything, control
characters included, while the golden file names keep TF's naming rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from precision_tool.formats.dump_names import normalise_op_name
from precision_tool.formats.dump_write import TensorSpec, write_dump
from precision_tool.formats.golden import write_golden
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text

RUN = "20260301000000"
MODEL = f"ge_default_{RUN}_1"
STEP_REL = f"npu/debug_0/dump/{RUN}/0/{MODEL}/1/0"
GRAPH_REL = "npu/debug_0/graph/ge_proto_00000001_Build.txt"
TS = 1772323200000000
SHAPE = (4, 8)
INPUT = "model/input"


@dataclass(frozen=True)
class NetOp:
    """One op of the chain: its NPU name and type, the ops it reads (default: the one before),
    the TF op its output stands for, the TF ops fused into it, and whether its output is wrong."""

    name: str
    type: str = "Relu"
    tf_name: str = ""  # default: the NPU name (must then follow TF's golden naming rule)
    inputs: Sequence[str] | None = None
    original_op_names: Sequence[str] | None = None
    broken: bool = False
    attrs: dict | None = None

    @property
    def golden_name(self) -> str:
        return self.tf_name or self.name


def _desc(tf_name: str | None = None, dtype: str = "DT_FLOAT16"):
    return tensor_desc(
        dtype,
        "ND",
        SHAPE,
        origin_format="ND",
        origin_shape=SHAPE,
        origin_name=tf_name,
        origin_output_index=0 if tf_name else None,
    )


def _value(k: int, inputs: list[np.ndarray]) -> np.ndarray:
    total = sum(inputs) if inputs else np.zeros(SHAPE)
    return np.tanh(total * 0.7 + 0.1 * (k + 1)).astype(np.float32)


def _npu(golden: np.ndarray, broken: bool, k: int) -> np.ndarray:
    if broken:
        rng = np.random.default_rng(100 + k)
        golden = golden + rng.standard_normal(SHAPE).astype(np.float32) * 0.5
    return golden.astype(np.float16)


def _graph_ops(ops: Sequence[NetOp]) -> list[OpSpec]:
    specs = [OpSpec(INPUT, "Data", input_descs=[_desc(dtype="DT_FLOAT")], output_descs=[_desc(INPUT, "DT_FLOAT")])]
    previous = INPUT
    for op in ops:
        sources = list(op.inputs) if op.inputs is not None else [previous]
        specs.append(
            OpSpec(
                op.name,
                op.type,
                [f"{s}:0" for s in sources],
                [_desc() for _ in sources],
                [_desc(op.golden_name)],
                attrs=dict(op.attrs or {}),
                original_op_names=op.original_op_names if op.original_op_names is not None else [op.golden_name],
            )
        )
        previous = op.name
    return specs


def write_net(root: Path, ops: Sequence[NetOp]) -> Path:
    """Write the network of ``ops`` (after a Data op ``model/input``) under ``root``; returns it."""
    graph_path = root / GRAPH_REL
    graph_path.parent.mkdir(parents=True, exist_ok=True)
    write_graph_text(build_model(_graph_ops(ops), name=MODEL), graph_path)
    rng = np.random.default_rng(7)
    golden = {INPUT: rng.standard_normal(SHAPE).astype(np.float32)}
    npu = {INPUT: golden[INPUT].astype(np.float16)}
    golden_dir, step_dir = root / "tf" / "dump", root / STEP_REL
    write_golden(golden_dir, INPUT, 0, TS, golden[INPUT])
    previous = INPUT
    for k, op in enumerate(ops):
        sources = list(op.inputs) if op.inputs is not None else [previous]
        golden[op.name] = _value(k, [golden[s] for s in sources])
        npu[op.name] = _npu(golden[op.name], op.broken, k)
        write_golden(golden_dir, op.golden_name, 0, TS + 100 * (k + 1), golden[op.name])
        file_name = f"{op.type}.{normalise_op_name(op.name)}.{k + 2}.0.{TS + 37 * (k + 1)}"
        inputs = [
            TensorSpec(npu[s], "FLOAT16" if npu[s].dtype == np.float16 else "FLOAT", original_shape=SHAPE)
            for s in sources
        ]
        outputs = [TensorSpec(npu[op.name], "FLOAT16", original_shape=SHAPE, original_op=(op.golden_name, 0, "ND"))]
        write_dump(step_dir / file_name, op.name, inputs, outputs, dump_time=TS + 37 * (k + 1))
        previous = op.name
    return root


def chain(names: Sequence[str], broken: int | None = None, op_type: str = "Relu") -> list[NetOp]:
    """``names`` as a chain of ``op_type`` ops, the ``broken``-th one (0-based) wrong."""
    return [NetOp(name, op_type, broken=(k == broken)) for k, name in enumerate(names)]
