"""Write the sample network as the real tools would: NPU dumps, a Build graph, TF golden npy.

``python -m precision_tool.sample [DIR]`` regenerates ``precision_data/`` byte for byte (the
data is a pure function of the seed; timestamps are fixed). ``--defect KIND`` writes the same
network with another planted defect (:mod:`.defects`); those graphs also carry the attributes a
real Build graph has (strides, pads, ksize, epsilon, axes...), which the shipped one lacks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..formats.dump_write import TensorSpec, write_dump
from ..formats.golden import write_golden
from ..formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from ..formats.layouts import to_device
from ..formats.tree import normalise_op_name
from . import network
from .defects import CLEAN, DEFECTS
from .fusion import write_fusion_sample
from .names import MODEL, RUN
from .overflow import write_overflow_sample

DUMP_START = 1764417600000000  # microseconds; NPU launches follow at 37 us intervals
GOLDEN_START = 1764410000000000
_BLOCKED = {"NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ"}
_DT = {"FLOAT": "DT_FLOAT", "FLOAT16": "DT_FLOAT16", "INT32": "DT_INT32", "INT64": "DT_INT64"}
_NUMPY = {"FLOAT": np.float32, "FLOAT16": np.float16, "INT32": np.int32, "INT64": np.int64}
_CONV = dict(
    strides=[1, 1, 1, 1], pads=[1, 1, 1, 1], dilations=[1, 1, 1, 1], groups=1, data_format="NHWC", padding="SAME"
)
# GE attributes as a Build graph converted from TensorFlow carries them (defect roots only).
GE_ATTRS = {
    "resnet/conv1/Conv2D": _CONV,
    "resnet/conv2/Conv2D": _CONV,
    "resnet/bn1/FusedBatchNormV3": dict(epsilon=network.BN_EPSILON, data_format="NHWC"),
    "resnet/pool/MaxPool": dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID", data_format="NHWC"),
    "resnet/pool/Mean": dict(axes=[1, 2], keep_dims=False),
    "resnet/dense/MatMul": dict(transpose_x1=False, transpose_x2=False),
    "resnet/softmax/Softmax": dict(axes=[-1]),
}


@dataclass(frozen=True)
class Out:
    """One op output: the TF tensor it equals, and how the NPU stores it."""

    tf_name: str  # golden tensor (output 0) this output equals
    format: str  # device format
    host_format: str  # origin format of the TF tensor
    data_type: str = "FLOAT16"


@dataclass(frozen=True)
class NpuOp:
    name: str
    type: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[Out, ...] = ()
    original_op_names: tuple[str, ...] | None = None  # None: the op's own name
    dumped: bool = True
    pass_name: tuple[str, ...] | None = None


def _const(name: str, fmt: str, host_format: str, data_type: str = "FLOAT16") -> NpuOp:
    return NpuOp(name, "Const", outputs=(Out(name, fmt, host_format, data_type),), dumped=False)


def _fused(name, type_, inputs, out, tf_ops, passes) -> NpuOp:
    return NpuOp(name, type_, inputs, (out,), tuple(tf_ops), pass_name=tuple(passes))


def network_ops() -> list[NpuOp]:
    """The Build graph's ops in execution order."""
    nc = "NC1HWC0"
    return [
        NpuOp("input", "Data", outputs=(Out("input", "NHWC", "NHWC", "FLOAT"),), dumped=False),
        _const("resnet/conv1/kernel", "FRACTAL_Z", "HWCN"),
        _const("resnet/conv1/bias", "ND", "ND"),
        NpuOp("trans_Cast_0", "Cast", ("input:0",), (Out("input", "NHWC", "NHWC"),), ()),
        NpuOp("trans_TransData_1", "TransData", ("trans_Cast_0:0",), (Out("input", nc, "NHWC"),), ()),
        _fused(
            "resnet/conv1/Conv2D",
            "Conv2D",
            ("trans_TransData_1:0", "resnet/conv1/kernel:0", "resnet/conv1/bias:0"),
            Out("resnet/conv1/Relu", nc, "NHWC"),
            ["resnet/conv1/Conv2D", "resnet/conv1/BiasAdd", "resnet/conv1/Relu"],
            ["ConvBiasAddFusionPass", "TbeConvReluFusionPass"],
        ),
        *[_const(f"resnet/bn1/{p}", "ND", "ND") for p in ("gamma", "beta", "moving_mean", "moving_variance")],
        NpuOp(
            "resnet/bn1/FusedBatchNormV3",
            "BNInfer",
            (
                "resnet/conv1/Conv2D:0",
                "resnet/bn1/gamma:0",
                "resnet/bn1/beta:0",
                "resnet/bn1/moving_mean:0",
                "resnet/bn1/moving_variance:0",
            ),
            (Out("resnet/bn1/FusedBatchNormV3", nc, "NHWC"),),
            pass_name=("BatchNormInferFusionPass",),
        ),
        _const("resnet/conv2/kernel", "FRACTAL_Z", "HWCN"),
        _const("resnet/conv2/bias", "ND", "ND"),
        _fused(
            "resnet/conv2/Conv2D",
            "Conv2D",
            ("resnet/bn1/FusedBatchNormV3:0", "resnet/conv2/kernel:0", "resnet/conv2/bias:0"),
            Out("resnet/conv2/BiasAdd", nc, "NHWC"),
            ["resnet/conv2/Conv2D", "resnet/conv2/BiasAdd"],
            ["ConvBiasAddFusionPass"],
        ),
        NpuOp(
            "resnet/add/add",
            "Add",
            ("resnet/bn1/FusedBatchNormV3:0", "resnet/conv2/Conv2D:0"),
            (Out("resnet/add/add", nc, "NHWC"),),
        ),
        NpuOp("resnet/relu2/Relu", "Relu", ("resnet/add/add:0",), (Out("resnet/relu2/Relu", nc, "NHWC"),)),
        NpuOp("resnet/pool/MaxPool", "MaxPool", ("resnet/relu2/Relu:0",), (Out("resnet/pool/MaxPool", nc, "NHWC"),)),
        NpuOp(
            "trans_TransData_2",
            "TransData",
            ("resnet/pool/MaxPool:0",),
            (Out("resnet/pool/MaxPool", "NHWC", "NHWC"),),
            (),
        ),
        NpuOp("resnet/pool/Mean", "ReduceMeanD", ("trans_TransData_2:0",), (Out("resnet/pool/Mean", "ND", "ND"),)),
        _const("resnet/dense/kernel", "FRACTAL_NZ", "ND"),
        _const("resnet/dense/bias", "ND", "ND"),
        NpuOp(
            "trans_TransData_3",
            "TransData",
            ("resnet/pool/Mean:0",),
            (Out("resnet/pool/Mean", "FRACTAL_NZ", "ND"),),
            (),
        ),
        _fused(
            "resnet/dense/MatMul",
            "MatMulV2",
            ("trans_TransData_3:0", "resnet/dense/kernel:0", "resnet/dense/bias:0"),
            Out("resnet/dense/BiasAdd", "FRACTAL_NZ", "ND"),
            ["resnet/dense/MatMul", "resnet/dense/BiasAdd"],
            ["MatMulBiasAddFusionPass"],
        ),
        NpuOp(
            "trans_TransData_4", "TransData", ("resnet/dense/MatMul:0",), (Out("resnet/dense/BiasAdd", "ND", "ND"),), ()
        ),
        NpuOp(
            "resnet/softmax/Softmax",
            "SoftmaxV2",
            ("trans_TransData_4:0",),
            (Out("resnet/softmax/Softmax", "ND", "ND"),),
        ),
        # int64 labels: the AI Core has no int64 kernels, so the compiler casts them to int32,
        # a narrowing cast the ac cast check reports.
        NpuOp("labels", "Data", outputs=(Out("labels", "ND", "ND", "INT64"),), dumped=False),
        NpuOp("trans_Cast_5", "Cast", ("labels:0",), (Out("labels", "ND", "ND", "INT32"),), ()),
        NpuOp("Node_Output", "NetOutput", ("resnet/softmax/Softmax:0", "trans_Cast_5:0"), dumped=False),
    ]


@dataclass
class _Tensor:
    """An NPU op output as both the graph and the dump see it."""

    desc: object  # graph TensorDesc
    spec: TensorSpec  # dump tensor, device layout


@dataclass
class SampleWriter:
    """Turns :func:`network_ops` and the network's values into files under ``root``."""

    root: Path
    npu: dict[str, np.ndarray]
    outputs: dict[str, _Tensor] = field(default_factory=dict)
    attributes: bool = False  # write GE_ATTRS

    def tensor(self, out: Out) -> _Tensor:
        host = self.npu[out.tf_name].astype(_NUMPY[out.data_type])
        device = to_device(host, out.format, out.host_format) if out.format in _BLOCKED else host
        desc = tensor_desc(
            _DT[out.data_type],
            out.format,
            device.shape,
            origin_format=out.host_format,
            origin_shape=host.shape,
            origin_name=out.tf_name,
            origin_output_index=0,
        )
        spec = TensorSpec(
            device, out.data_type, out.format, original_shape=host.shape, original_op=(out.tf_name, 0, out.host_format)
        )
        return _Tensor(desc, spec)

    def op_spec(self, op: NpuOp) -> OpSpec:
        outs = [self.tensor(o) for o in op.outputs]
        for index, out in enumerate(outs):
            self.outputs[f"{op.name}:{index}"] = out
        ins = [self.outputs[i] for i in op.inputs]
        compute = op.dumped and op.type != "Cast"  # what runs as an AI Core kernel
        return OpSpec(
            op.name,
            op.type,
            op.inputs,
            [t.desc for t in ins],
            [t.desc for t in outs],
            attrs=GE_ATTRS.get(op.name, {}) if self.attributes else {},
            original_op_names=op.original_op_names,
            pass_name=op.pass_name,
            kernel_name=f"te_{op.type.lower()}_{len(self.outputs):04d}" if compute else None,
            kernel_lib="AIcoreEngine" if op.dumped else "DNN_VM_GE_LOCAL_OP_STORE",
        )

    def write_dump(self, op: NpuOp, task_id: int, timestamp: int, step_dir: Path) -> None:
        ins = [
            TensorSpec(t.spec.array, t.spec.data_type, t.spec.format, t.spec.original_shape)
            for t in (self.outputs[i] for i in op.inputs)
        ]
        outs = [self.outputs[f"{op.name}:{i}"].spec for i in range(len(op.outputs))]
        name = f"{op.type}.{normalise_op_name(op.name)}.{task_id}.0.{timestamp}"
        write_dump(step_dir / name, op.name, ins, outs, dump_time=timestamp)


def _second_run(specs: list[OpSpec]) -> list[OpSpec]:
    """debug_1: the same network compiled to keep Softmax in float32 and MatMul's output in ND,
    with an Identity the first run does not have (what the graph-similarity check finds)."""
    changed = []
    for spec in specs:
        if spec.name == "resnet/softmax/Softmax":
            spec = replace(spec, output_descs=[replace(d, dtype="DT_FLOAT") for d in spec.output_descs])
        if spec.name == "resnet/dense/MatMul":
            spec = replace(spec, output_descs=[replace(d, layout="ND") for d in spec.output_descs])
        changed.append(spec)
        if spec.name == "resnet/softmax/Softmax":
            changed.append(
                OpSpec(
                    "resnet/softmax/Identity",
                    "Identity",
                    ("resnet/softmax/Softmax:0",),
                    spec.output_descs,
                    spec.output_descs,
                    kernel_lib="AIcoreEngine",
                )
            )
    return changed


def _write_graph(root: Path, debug: str, specs: list[OpSpec]) -> None:
    graph_dir = root / "npu" / debug / "graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    model = build_model(
        specs,
        name=MODEL,
        graph_inputs=["input:0", "labels:0"],
        graph_outputs=["resnet/softmax/Softmax:0"],
        graph_attrs={"_session_graph_id": "1_1"},
    )
    write_graph_text(model, graph_dir / "ge_proto_00000001_Build.txt")


def write_sample(root: str | os.PathLike, seed: int = 2026, defect: str | None = None) -> Path:
    """Write the sample ``precision_data`` tree under ``root``; returns ``root``.

    ``defect``: a kind of :data:`.defects.DEFECTS` planted instead of the shipped defect (the
    graph then carries GE attributes too), or ``none`` for a network without one; None writes
    the shipped sample.
    """
    root = Path(root)
    planted = (CLEAN if defect == CLEAN.kind else DEFECTS[defect]) if defect is not None else network.KERNEL_SWAP
    weights = network.make_weights(seed)
    if planted.weights is not None:
        weights = planted.weights(weights)
    labels = network.make_labels(seed)
    writer = SampleWriter(
        root, {**network.forward(weights, npu=True, defect=planted), "labels": labels}, attributes=defect is not None
    )
    step_dir = root / "npu/debug_0/dump" / RUN / "0" / MODEL / "1" / "0"
    specs, launches = [], 0
    for op in network_ops():
        specs.append(writer.op_spec(op))
        if op.dumped:
            writer.write_dump(op, 10 + launches, DUMP_START + 37 * launches, step_dir)
            launches += 1
    _write_graph(root, "debug_0", specs)
    _write_graph(root, "debug_1", _second_run(specs))
    golden = {**network.forward(weights, npu=False), "labels": labels}
    for index, (name, value) in enumerate(golden.items()):
        stored = value if value.dtype.kind in "iu" else value.astype(np.float32)
        write_golden(root / "tf/dump", name, 0, GOLDEN_START + 100 * index, stored)
    write_fusion_sample(root)
    write_overflow_sample(root)
    return root
