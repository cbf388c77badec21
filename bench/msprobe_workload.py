"""Write a seeded pair of msprobe dumps (NPU and bench) of a transformer-like stack, of a given size.

    python bench/msprobe_workload.py DIR [--size 500M] [--framework pytorch|mindspore]
                                         [--level mix|L1] [--npu-dtype mixed|bf16|fp16] [--seed N]

``DIR/{framework}_{level}_{npu dtype}_{size}/`` gets ``npu/`` and ``bench/``, each an msprobe dump
path ``step0/rank0/{dump.json, stack.json, construct.json, dump_tensor_data/}`` of task ``tensor``
(PyTorch ``.pt`` or MindSpore ``.npy`` files), and ``bench.json`` with the parameters: a later call
with the same parameters reuses it. ``bench/msprobe_bench.py`` measures ``vc`` and msprobe on it.

The stack (batch 2, sequence 64, width 256, 4 heads, MLP width 1024): an embedding, then per
layer LayerNorm, a fused qkv linear, reshape, permute, unbind, transpose, ``matmul(q, k^T)``,
scale, softmax, ``matmul(p, v)``, transpose, reshape, an output projection, a residual add, a
second LayerNorm, a GELU MLP (two linears) and a residual add; at level ``mix`` the modules too
(``Module.layers.0.attn.qkv.Linear.forward.0``, MindSpore ``Cell.``), as the sample's recorder
keys them. Small tensors (norm weights, biases) sit beside mid-size ones (activations,
attention maps, 1 MiB weights). Each op is computed in float32 from its own side's inputs and
rounded: the bench side to float32, the NPU side to bfloat16 or float16 (``--npu-dtype``;
``mixed`` alternates by layer); the middle layer's output projection uses its weight
untransposed on the NPU (a planted defect, so cosines spread). Layers are added until the
tensor files of both sides come nearest ``--size`` (about 28 MB a layer for PyTorch at ``mix``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path
from generated import clear_generated  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LAYOUT_VERSION = "msprobe-bench-1"  # changes when the workload changes
BATCH, SEQ, DIM, HEADS, HIDDEN, VOCAB = 2, 64, 256, 4, 1024, 1024
HEAD_DIM = DIM // HEADS
RUNS = ("npu", "bench")


class _Pass:
    """One side's forward pass, recorded as msprobe's hooks would see it (the sample's recorder
    and framework spellings); every op in float32 from its inputs, rounded to the layer's dtype."""

    def __init__(self, framework: str, dtypes: list, seed: int, defect_layer: int | None) -> None:
        from precision_tool.formats.msprobe_write import Tensor
        from precision_tool.sample.msprobe_flavours import FLAVOURS
        from precision_tool.sample.msprobe_record import Recorder

        self.tensor = Tensor
        self.f = FLAVOURS[framework]()
        self.rec = Recorder(self.f.module_prefix, self.f.machinery, self.f.root)
        self.dtypes, self.seed, self.defect_layer = dtypes, seed, defect_layer

    def params(self, layer: int, dtype) -> dict:
        rng = np.random.default_rng([self.seed, layer])  # the same weights on both sides
        shapes = {
            "ln1.weight": (DIM,),
            "ln1.bias": (DIM,),
            "qkv.weight": (3 * DIM, DIM),
            "qkv.bias": (3 * DIM,),
            "proj.weight": (DIM, DIM),
            "proj.bias": (DIM,),
            "ln2.weight": (DIM,),
            "ln2.bias": (DIM,),
            "up.weight": (HIDDEN, DIM),
            "up.bias": (HIDDEN,),
            "down.weight": (DIM, HIDDEN),
            "down.bias": (DIM,),
        }
        out = {}
        for name, shape in shapes.items():
            value = rng.standard_normal(shape, dtype=np.float32)
            if len(shape) == 2:
                value *= shape[1] ** -0.5
            else:  # a norm's weight near 1, biases near 0
                value = value * 0.1 + 1 if name.startswith("ln") and name.endswith("weight") else value * 0.02
            out[name] = self.tensor(value.astype(dtype), True)
        return out

    def result(self, value, dtype, grad: bool = True):
        return self.tensor(np.asarray(value, np.float32).astype(dtype), grad)

    def api(self, op: str, args: list, value, kwargs: dict | None = None, site: str = ""):
        prefix, name = self.f.ops[op]
        self.rec.api(prefix, name, args, value, kwargs, site)
        return value

    def linear(self, path: str, x, w, b, dtype, site: str, untransposed: bool = False):
        with self.rec.module(path, "Linear", [x], parameters={"weight": w, "bias": b}, site=site) as m:
            weight = _f32(w) if untransposed else _f32(w).T
            m.outputs = self.api(
                "linear", [x, w, b], self.result(_f32(x) @ weight + _f32(b), dtype), site=self.f.library["linear"]
            )
        return m.outputs

    def layer_norm(self, path: str, x, w, b, dtype, site: str):
        with self.rec.module(path, "LayerNorm", [x], parameters={"weight": w, "bias": b}, site=site) as m:
            v = _f32(x)
            normed = (v - v.mean(-1, keepdims=True)) / (v.var(-1, keepdims=True) + 1e-5) ** 0.5
            m.outputs = self.api(
                "layer_norm",
                [x, (DIM,), w, b, 1e-5],
                self.result(normed * _f32(w) + _f32(b), dtype),
                site=self.f.library["layer_norm"],
            )
        return m.outputs

    def attention(self, i: int, x, p: dict, dtype):
        path, here, r = f"layers.{i}.attn", self.f.site, self.result
        with self.rec.module(path, "Attention", [x], site=here("block.attn")) as m:
            qkv = self.linear(f"{path}.qkv", x, p["qkv.weight"], p["qkv.bias"], dtype, here("attn.qkv"))
            split = self.api(
                "reshape",
                [qkv, BATCH, SEQ, 3, HEADS, HEAD_DIM],
                r(_f32(qkv).reshape(BATCH, SEQ, 3, HEADS, HEAD_DIM), dtype),
                site=here("attn.reshape"),
            )
            heads = self.api(
                "permute",
                [split, 2, 0, 3, 1, 4],
                r(_f32(split).transpose(2, 0, 3, 1, 4), dtype),
                site=here("attn.split"),
            )
            q, k, v = self.api(
                "unbind", [heads, 0], tuple(r(_f32(heads)[j], dtype) for j in range(3)), site=here("attn.split")
            )
            k_t = self.api("transpose", [k, -2, -1], r(_f32(k).swapaxes(-2, -1), dtype), site=here("attn.scores"))
            scores = self.api("matmul", [q, k_t], r(_f32(q) @ _f32(k_t), dtype), site=here("attn.scores"))
            scaled = self.api(
                "mul", [scores, HEAD_DIM**-0.5], r(_f32(scores) * HEAD_DIM**-0.5, dtype), site=here("attn.scores")
            )
            shifted = np.exp(_f32(scaled) - _f32(scaled).max(-1, keepdims=True))
            probs = self.api(
                "softmax",
                [scaled],
                r(shifted / shifted.sum(-1, keepdims=True), dtype),
                {"dim": -1},
                here("attn.softmax"),
            )
            context = self.api("matmul", [probs, v], r(_f32(probs) @ _f32(v), dtype), site=here("attn.context"))
            swapped = self.api(
                "transpose", [context, 1, 2], r(_f32(context).swapaxes(1, 2), dtype), site=here("attn.context")
            )
            merged = self.api(
                "reshape",
                [swapped, BATCH, SEQ, -1],
                r(_f32(swapped).reshape(BATCH, SEQ, -1), dtype),
                site=here("attn.context"),
            )
            m.outputs = self.linear(
                f"{path}.proj",
                merged,
                p["proj.weight"],
                p["proj.bias"],
                dtype,
                here("attn.proj"),
                untransposed=i == self.defect_layer,
            )
        return m.outputs

    def mlp(self, i: int, x, p: dict, dtype):
        path, site = f"layers.{i}.mlp", self.f.site("mlp")
        with self.rec.module(path, "MLP", [x], site=self.f.site("block.mlp")) as m:
            up = self.linear(f"{path}.up", x, p["up.weight"], p["up.bias"], dtype, site)
            u = _f32(up)
            gelu = 0.5 * u * (1 + np.tanh(0.7978846 * (u + 0.044715 * u**3)))
            act = self.api("gelu", [up], self.result(gelu, dtype), {"approximate": "tanh"}, site)
            m.outputs = self.linear(f"{path}.down", act, p["down.weight"], p["down.bias"], dtype, site)
        return m.outputs

    def block(self, i: int, x):
        dtype, here = self.dtypes[i], self.f.site
        p = self.params(i, dtype)
        with self.rec.module(f"layers.{i}", "Block", [x], site=here("model.layer")) as m:
            a = self.attention(
                i,
                self.layer_norm(f"layers.{i}.ln1", x, p["ln1.weight"], p["ln1.bias"], dtype, here("block.attn")),
                p,
                dtype,
            )
            x = self.api("add", [x, a], self.result(_f32(x) + _f32(a), dtype), site=here("block.attn"))
            h = self.mlp(
                i,
                self.layer_norm(f"layers.{i}.ln2", x, p["ln2.weight"], p["ln2.bias"], dtype, here("block.mlp")),
                p,
                dtype,
            )
            m.outputs = self.api("add", [x, h], self.result(_f32(x) + _f32(h), dtype), site=here("block.mlp"))
        return m.outputs

    def forward(self) -> list:
        rng = np.random.default_rng([self.seed, 1 << 20])
        ids = self.tensor(rng.integers(0, VOCAB, (BATCH, SEQ)).astype(self.f.ids_dtype))
        table = self.tensor(rng.standard_normal((VOCAB, DIM), dtype=np.float32).astype(self.dtypes[0]), True)
        with self.rec.module(
            "embed", "Embedding", [ids], parameters={"weight": table}, site=self.f.site("model.embed")
        ) as m:
            m.outputs = self.api(
                "embedding",
                [ids, table, *self.f.embedding_args],
                self.result(_f32(table)[ids.array], self.dtypes[0]),
                site=self.f.library["embedding"],
            )
        x = m.outputs
        for i in range(len(self.dtypes)):
            x = self.block(i, x)
        return self.rec.calls


def _f32(tensor) -> np.ndarray:
    return np.asarray(tensor.array, np.float32)


def _npu_dtypes(choice: str, layers: int) -> list:
    import ml_dtypes

    kinds = {"bf16": [ml_dtypes.bfloat16], "fp16": [np.float16], "mixed": [ml_dtypes.bfloat16, np.float16]}[choice]
    return [np.dtype(kinds[i % len(kinds)]) for i in range(layers)]


def side_calls(params: dict, run: str, layers: int) -> list:
    """The calls of one side (``npu`` or ``bench``) at ``layers`` layers; L1 keeps only the APIs."""
    dtypes = _npu_dtypes(params["npu_dtype"], layers) if run == "npu" else [np.dtype(np.float32)] * layers
    calls = _Pass(params["framework"], dtypes, params["seed"], layers // 2 if run == "npu" else None).forward()
    return calls if params["level"] == "mix" else [c for c in calls if not c.is_module]


def _file_bytes(value, framework: str) -> int:
    """Bytes of the tensor files ``value`` (a call's inputs, outputs, ...) makes, near enough."""
    from precision_tool.formats.msprobe_write import Tensor

    if isinstance(value, Tensor):
        a = np.asarray(value.array)
        per = 4 if framework == "mindspore" and a.dtype.name == "bfloat16" else a.itemsize  # saved as float32
        return a.size * per + (1100 if framework == "pytorch" else 128)  # the zip / npy header
    if isinstance(value, (list, tuple)):
        return sum(_file_bytes(v, framework) for v in value)
    if isinstance(value, dict):
        return sum(_file_bytes(v, framework) for v in value.values())
    return 0


def layers_for(params: dict) -> int:
    """Layers whose tensor files come nearest ``params['bytes']`` (from 1- and 3-layer runs)."""

    def total(layers: int) -> int:
        return sum(
            _file_bytes([c.inputs, c.kwargs, c.outputs, c.parameters or {}], params["framework"])
            for run in RUNS
            for c in side_calls(params, run, layers)
        )

    one, three = total(1), total(3)
    return max(1, round(1 + (params["bytes"] - one) / ((three - one) / 2)))


def prepare(workdir: Path, params: dict) -> Path:
    """The data root (``npu/`` and ``bench/`` msprobe dumps) for ``params``: reused, or written."""
    from precision_tool.formats.msprobe_write import DumpSpec, write_dump

    root = workdir / f"{params['framework']}_{params['level']}_{params['npu_dtype']}_{params['size']}"
    marker = root / "bench.json"
    wanted = {**params, "layout": LAYOUT_VERSION}
    if (
        marker.is_file()
        and {k: v for k, v in json.loads(marker.read_text(encoding="utf-8")).items() if k != "layers"} == wanted
    ):
        return root
    clear_generated(root, "bench.json")
    start, layers = time.perf_counter(), layers_for(params)
    for run in RUNS:  # one side at a time: only its tensors are in memory
        location = {"npu": "npu:0", "bench": "cuda:0"}[run] if params["framework"] == "pytorch" else "cpu"
        spec = DumpSpec(params["framework"], "tensor", params["level"], location=location)
        write_dump(root / run, {0: {0: side_calls(params, run, layers)}}, spec, dump_path_text=f"./{run}")
    marker.write_text(json.dumps({**wanted, "layers": layers}), encoding="utf-8")
    print(f"generated {layers} layers in {time.perf_counter() - start:.1f} s", flush=True)
    return root


def tensor_files(root: Path) -> list[Path]:
    """Every tensor file of both sides."""
    return sorted(p for run in RUNS for p in (root / run).glob("step*/rank*/dump_tensor_data/*") if p.is_file())


def parse_size(text: str) -> int:
    """``50M``, ``1.5G``, ``800k`` or bytes, in decimal units (as GB/s is)."""
    units = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
    try:
        scale = units.get(text[-1:].lower())
        return int(float(text[:-1] if scale else text) * (scale or 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is no size (50M, 1.5G)") from None


def main(argv: list[str] | None = None) -> int:
    """Parse the flags and write (or reuse) the workload."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="where the workload's directory goes")
    add_workload_arguments(parser)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    print(prepare(Path(args.directory), workload_params(args)))
    return 0


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that choose a workload (shared with msprobe_bench.py)."""
    parser.add_argument(
        "--size", default="500M", type=_size_text, help="tensor files of both sides: 50M, 500M, 1.5G (default 500M)"
    )
    parser.add_argument(
        "--framework",
        choices=("pytorch", "mindspore"),
        default="pytorch",
        help="msprobe dump kind: .pt (pytorch, default) or .npy (mindspore)",
    )
    parser.add_argument("--level", choices=("mix", "L1"), default="mix", help="msprobe level (default mix)")
    parser.add_argument(
        "--npu-dtype",
        choices=("mixed", "bf16", "fp16"),
        default="mixed",
        help="NPU side's dtype; mixed alternates bfloat16 and float16 by layer (default)",
    )
    parser.add_argument("--seed", type=int, default=2026, help="workload seed (default 2026)")


def _size_text(text: str) -> str:
    parse_size(text)
    return text


def workload_params(args) -> dict:
    """The parameters of the workload the flags chose (what bench.json records)."""
    return {
        "size": args.size,
        "bytes": parse_size(args.size),
        "framework": args.framework,
        "level": args.level,
        "npu_dtype": args.npu_dtype,
        "seed": args.seed,
    }


if __name__ == "__main__":
    sys.exit(main())
