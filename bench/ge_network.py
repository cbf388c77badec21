"""A held-out-like GE network for ``bench/compare_bench.py --network mixed``.

The bench's own data set (``--network uniform``) is a chain of identical 8 MiB tensors. Users
dump networks of another shape: convolutions in NC1HWC0 with FRACTAL_Z weights (channels that
are not a multiple of C0, so the device tensors are padded), attention in FRACTAL_NZ (3-D
activations and 2-D weights), and many small tensors beside the mid-size ones (biases, norm
parameters and statistics, scalars). :func:`generate` writes blocks of such ops, each about
10 MB, until the data set reaches the size asked, so 10 MB is one block and 1.5 GB about 150.

Values are not a real computation (the comparison does not care): each op output is a golden
float32 tensor, its NPU side the golden plus noise rounded to float16; every input of a dump is
the NPU side of the op output it reads, as GE dumps it, so the Build graph pairs it with that
op's golden. Deterministic for a given size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

BATCH, SIDE, SEQ, HIDDEN, HEADS = 2, 28, 128, 256, 4
CONV_CHANNELS = (48, 40)  # 40 is not a multiple of 16: NC1HWC0 pads it to 48
NOISE = 0.02
VERSION = "net-2"  # changes when generate() writes something else


@dataclass(frozen=True)
class Tensor:
    """One op output as the data set holds it."""

    name: str  # the producing op
    index: int  # its output index
    device: np.ndarray
    fmt: str
    host_shape: tuple
    layout: str


class Writer:
    """Writes ops of one data set: golden ``.npy`` files, dump files and the graph's op specs."""

    def __init__(self, root: Path, step_dir: Path, seed: int = 2028) -> None:
        from precision_tool.formats.graph_write import OpSpec

        self.root, self.step_dir = root, step_dir
        self.rng = np.random.default_rng(seed)
        self.specs: list = []
        self.ops = 0
        self.bytes = 0
        self._op_spec = OpSpec

    def _desc(self, tensor: Tensor):
        from precision_tool.formats.graph_write import tensor_desc

        return tensor_desc(
            "DT_FLOAT16",
            tensor.fmt,
            tensor.device.shape,
            origin_format=tensor.layout,
            origin_shape=tensor.host_shape,
            origin_name=tensor.name,
            origin_output_index=tensor.index,
        )

    def _tensor(self, name: str, index: int, shape: tuple, fmt: str, layout: str, scale: float = 1.0) -> Tensor:
        """A golden tensor of ``shape`` written for output ``index`` of ``name``; its NPU side
        in ``fmt``."""
        from precision_tool.formats.golden import write_golden
        from precision_tool.formats.layouts import to_device

        golden = np.tanh(self.rng.standard_normal(shape, dtype=np.float32)) * scale
        stamp = 1767200000000000 + 100 * len(self.specs)
        self.bytes += write_golden(self.root / "tf/dump", name, index, stamp, golden).stat().st_size
        noise = NOISE if self.ops % 11 else 0.4  # some ops drift more: some rows get flagged
        npu = (golden + noise * scale * self.rng.standard_normal(shape, dtype=np.float32)).astype(np.float16)
        device = to_device(npu, fmt, layout) if fmt != "ND" else npu
        return Tensor(name, index, device, fmt, tuple(shape), layout)

    def const(self, name: str, shape: tuple, fmt: str = "ND", layout: str = "ND") -> Tensor:
        """A weight or parameter: a Const op of the graph (no dump file, as GE dumps)."""
        tensor = self._tensor(name, 0, shape, fmt, layout, 0.1)
        self.specs.append(self._op_spec(name, "Const", output_descs=[self._desc(tensor)]))
        return tensor

    def op(self, name: str, op_type: str, inputs: list[Tensor], outputs: list[tuple]) -> list[Tensor]:
        """One computing op: its dump file (inputs and outputs) and its graph spec.

        ``outputs`` are (shape, format, layout), one golden file each (TF names them by the
        output index)."""
        from precision_tool.formats.dump_write import TensorSpec, write_dump

        made = [self._tensor(name, k, *out) for k, out in enumerate(outputs)]
        stamp = 1767300000000000 + 37 * self.ops
        path = self.root / self.step_dir / f"{op_type}.{name.replace('/', '_')}.{10 + self.ops}.0.{stamp}"
        specs = [TensorSpec(t.device, "FLOAT16", t.fmt, t.host_shape) for t in inputs]
        out_specs = [TensorSpec(t.device, "FLOAT16", t.fmt, t.host_shape, (t.name, t.index, t.layout)) for t in made]
        self.bytes += write_dump(path, name, specs, out_specs, dump_time=stamp).stat().st_size
        self.specs.append(
            self._op_spec(
                name,
                op_type,
                [f"{t.name}:{t.index}" for t in inputs],
                [self._desc(t) for t in inputs],
                [self._desc(t) for t in made],
                original_op_names=[name],
            )
        )
        self.ops += 1
        return made


def _conv_stage(w: Writer, prefix: str, x: Tensor, channels: int) -> Tensor:
    """Conv2D (FRACTAL_Z weight) -> BiasAdd -> FusedBatchNorm (with its statistics) -> Relu."""
    host = (BATCH, SIDE, SIDE, channels)
    cin = x.host_shape[-1]
    kernel = w.const(f"{prefix}/kernel", (3, 3, cin, channels), "FRACTAL_Z", "HWCN")
    (conv,) = w.op(f"{prefix}/Conv2D", "Conv2D", [x, kernel], [(host, "NC1HWC0", "NHWC")])
    bias = w.const(f"{prefix}/bias", (channels,))
    (biased,) = w.op(f"{prefix}/BiasAdd", "BiasAdd", [conv, bias], [(host, "NC1HWC0", "NHWC")])
    gamma, beta = w.const(f"{prefix}/gamma", (channels,)), w.const(f"{prefix}/beta", (channels,))
    normed, _, _ = w.op(
        f"{prefix}/FusedBatchNormV3",
        "FusedBatchNormV3",
        [biased, gamma, beta],
        [(host, "NC1HWC0", "NHWC"), ((channels,), "ND", "ND"), ((channels,), "ND", "ND")],
    )
    (relu,) = w.op(f"{prefix}/Relu", "Relu", [normed], [(host, "NC1HWC0", "NHWC")])
    return relu


def _attention(w: Writer, prefix: str, x: Tensor) -> Tensor:
    """Q/K/V MatMuls (FRACTAL_NZ 2-D weights) -> scores -> Softmax -> context -> Add -> LayerNorm."""
    act = (BATCH, SEQ, HIDDEN)
    nz = lambda shape: (shape, "FRACTAL_NZ", "ND")  # noqa: E731
    qkv = []
    for part in ("q", "k", "v"):
        weight = w.const(f"{prefix}/{part}/kernel", (HIDDEN, HIDDEN), "FRACTAL_NZ", "ND")
        qkv += w.op(f"{prefix}/{part}/MatMul", "BatchMatMulV2", [x, weight], [nz(act)])
    scores_shape = (BATCH * HEADS, SEQ, SEQ)
    (scores,) = w.op(f"{prefix}/scores/BatchMatMul", "BatchMatMulV2", qkv[:2], [nz(scores_shape)])
    scale = w.const(f"{prefix}/scale", (1,))
    (scaled,) = w.op(f"{prefix}/scores/Mul", "Mul", [scores, scale], [nz(scores_shape)])
    (probs,) = w.op(f"{prefix}/Softmax", "SoftmaxV2", [scaled], [nz(scores_shape)])
    (context,) = w.op(f"{prefix}/context/BatchMatMul", "BatchMatMulV2", [probs, qkv[2]], [nz(act)])
    (added,) = w.op(f"{prefix}/Add", "Add", [context, x], [(act, "ND", "ND")])
    gamma, beta = w.const(f"{prefix}/ln/gamma", (HIDDEN,)), w.const(f"{prefix}/ln/beta", (HIDDEN,))
    stats = (BATCH, SEQ, 1)
    out, _, _ = w.op(
        f"{prefix}/LayerNorm",
        "LayerNorm",
        [added, gamma, beta],
        [(act, "ND", "ND"), (stats, "ND", "ND"), (stats, "ND", "ND")],
    )
    return out


def generate(root: Path, gb: float, step_dir: Path, graph: Path, model: str) -> int:
    """Write the network under ``root`` (dumps in ``step_dir``, the Build graph at ``graph`` as
    text and atc JSON); returns the number of computing ops."""
    from precision_tool.formats.graph_write import build_model, write_graph_json, write_graph_text

    w = Writer(root, step_dir)
    image = w._tensor("input", 0, (BATCH, SIDE, SIDE, 16), "NC1HWC0", "NHWC")
    tokens = w._tensor("tokens", 0, (BATCH, SEQ, HIDDEN), "ND", "ND")
    w.specs += [w._op_spec(t.name, "Data", output_descs=[w._desc(t)]) for t in (image, tokens)]
    block = 0
    while w.bytes < gb * 1e9 or block == 0:
        for k, channels in enumerate(CONV_CHANNELS):
            image = _conv_stage(w, f"net/layer{block}/conv{k}", image, channels)
        tokens = _attention(w, f"net/layer{block}/attn", tokens)
        block += 1
    graph.parent.mkdir(parents=True, exist_ok=True)
    built = build_model(w.specs, name=model)
    write_graph_text(built, graph)
    write_graph_json(built, graph.with_name(graph.name + ".json"))
    return w.ops


def main(argv: list[str] | None = None) -> int:
    """Write the network on its own, as ``compare_bench.py --network mixed`` lays it out."""
    import argparse

    parser = argparse.ArgumentParser(
        description="Write the held-out-like GE network (NPU dumps, goldens, Build graph) under a data root."
    )
    parser.add_argument("root", type=Path, help="the data root to write (npu/ and the goldens)")
    parser.add_argument("--gb", type=float, default=0.01, help="size of the dumps in GB (default 0.01)")
    args = parser.parse_args(argv)
    from compare_bench import GRAPH, MODEL, STEP_DIR  # beside this file: the bench's own layout

    ops = generate(args.root, args.gb, STEP_DIR, args.root / GRAPH, MODEL)
    print(f"{ops} ops written under {args.root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
