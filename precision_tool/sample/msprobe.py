"""The msprobe sample: a two-layer transformer run on an NPU and on a bench, dumped as msprobe
dumps them (``python -m precision_tool.sample DIR --framework pytorch|mindspore``).

``DIR/npu`` is the NPU run (PyTorch on torch_npu in bfloat16, or MindSpore in float16) and
``DIR/bench`` the bench run (the same network on a GPU in float32), each an msprobe dump path
``step0/rank0/{dump.json, stack.json, construct.json, dump_tensor_data/}`` at level ``mix``:
modules (``Module.layers.0.attn.Attention.forward.0``, MindSpore ``Cell.``) and the APIs they
call (``Functional.linear.0.forward``, MindSpore ``MintFunctional.linear.0.forward``).

The network (batch 2, sequence 8, vocabulary 32, width 32, 2 heads, MLP width 48): an
embedding, then per layer ``x + attn(layer_norm(x))`` with a fused qkv linear, reshape,
permute, unbind, ``matmul(q, k^T) * scale``, softmax, ``matmul(p, v)``, transpose, reshape and
an output projection, then ``x + mlp(rms_norm(x))`` with RMSNorm written out as pow, mean,
add, rsqrt and two products and a GELU MLP; a final LayerNorm and the vocabulary head. Values
are real activations computed with numpy (each op's result rounded to the side's dtype), from
weights seeded by ``seed``: the same weights on both sides.

The planted defect: on the NPU the output projection of layer 1's attention
(``layers.1.attn.proj``) multiplies by its weight as stored instead of by its transpose, the
kind of bug a wrongly transposed weight layout gives. Its API, ``Functional.linear.5.forward``
(MindSpore ``MintFunctional.linear.5.forward``, see :data:`DEFECT_KEYS`), is the first entry
whose output departs from the bench (cosine about 0) while its inputs match; its module
``Module.layers.1.attn.proj.Linear.forward.0``, ``layers.1.attn``, the residual
``Tensor.__add__.3.forward`` and everything after inherit the error.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..formats.msprobe_write import DumpSpec, Tensor, write_dump
from .msprobe_flavours import FLAVOURS, Flavour
from .msprobe_record import Recorder

BATCH, SEQ, VOCAB, DIM, HEADS, HIDDEN, LAYERS = 2, 8, 32, 32, 2, 48, 2
HEAD_DIM = DIM // HEADS
LN_EPS, RMS_EPS = 1e-5, 1e-6
DEFECT_LAYER = 1
DEFECT_KEYS = {"pytorch": "Functional.linear.5.forward", "mindspore": "MintFunctional.linear.5.forward"}
DEFECT_MODULES = {
    "pytorch": "Module.layers.1.attn.proj.Linear.forward.0",
    "mindspore": "Cell.layers.1.attn.proj.Linear.forward.0",
}
RUNS = ("npu", "bench")


def make_weights(seed: int = 2026) -> dict[str, np.ndarray]:
    """The network's parameters (float32, ``[out, in]`` linear weights) and its input ids."""
    rng = np.random.default_rng(seed)

    def normal(shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {"ids": rng.integers(0, VOCAB, (BATCH, SEQ)), "embed.weight": normal((VOCAB, DIM), 1.0)}
    for i in range(LAYERS):
        p = f"layers.{i}"
        for norm in ("attn_norm", "mlp_norm"):
            w[f"{p}.{norm}.weight"] = 1.0 + normal((DIM,), 0.1)
        w[f"{p}.attn_norm.bias"] = normal((DIM,), 0.05)
        for name, (out, inp) in {
            "attn.qkv": (3 * DIM, DIM),
            "attn.proj": (DIM, DIM),
            "mlp.up": (HIDDEN, DIM),
            "mlp.down": (DIM, HIDDEN),
        }.items():
            w[f"{p}.{name}.weight"] = normal((out, inp), inp**-0.5)
            w[f"{p}.{name}.bias"] = normal((out,), 0.02)
    w["norm.weight"], w["norm.bias"] = 1.0 + normal((DIM,), 0.1), normal((DIM,), 0.05)
    w["head.weight"], w["head.bias"] = normal((VOCAB, DIM), DIM**-0.5), normal((VOCAB,), 0.02)
    return w


def _wide(t: Tensor) -> np.ndarray:
    return np.asarray(t.array, np.float64)


_ERF = np.frompyfunc(math.erf, 1, 1)  # numpy has no erf; the tensors are small


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _ERF(x / np.sqrt(2.0)).astype(np.float64))


def _softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


class _Run:
    """One side's forward pass: every op computed in float64 from its inputs, rounded to the
    side's dtype, and recorded as msprobe's hooks would see it."""

    def __init__(self, flavour: Flavour, dtype, weights: dict, defect: bool) -> None:
        self.f, self.dtype, self.defect = flavour, np.dtype(dtype), defect
        self.rec = Recorder(flavour.module_prefix, flavour.machinery, flavour.root)
        self.p = {k: Tensor(v.astype(self.dtype), True) for k, v in weights.items() if k != "ids"}
        self.ids = Tensor(weights["ids"].astype(flavour.ids_dtype))

    def result(self, value, *inputs) -> Tensor:
        grad = any(isinstance(x, Tensor) and x.requires_grad for x in inputs)
        return Tensor(np.asarray(value, np.float64).astype(self.dtype), grad)

    def api(self, op: str, args: list, value, kwargs: dict | None = None, site: str = ""):
        prefix, name = self.f.ops[op]
        self.rec.api(prefix, name, args, value, kwargs, site)
        return value

    def linear(self, path: str, x: Tensor, site: str) -> Tensor:
        w, b = self.p[f"{path}.weight"], self.p[f"{path}.bias"]
        with self.rec.module(path, "Linear", [x], parameters={"weight": w, "bias": b}, site=site) as m:
            # the planted defect: the weight used as stored, not transposed
            weight = _wide(w) if self.defect and path == f"layers.{DEFECT_LAYER}.attn.proj" else _wide(w).T
            m.outputs = self.api(
                "linear", [x, w, b], self.result(_wide(x) @ weight + _wide(b), x, w, b), site=self.f.library["linear"]
            )
        return m.outputs

    def layer_norm(self, path: str, x: Tensor, site: str) -> Tensor:
        w, b = self.p[f"{path}.weight"], self.p[f"{path}.bias"]
        with self.rec.module(path, "LayerNorm", [x], parameters={"weight": w, "bias": b}, site=site) as m:
            v = _wide(x)
            normed = (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + LN_EPS)
            m.outputs = self.api(
                "layer_norm",
                [x, (DIM,), w, b, LN_EPS],
                self.result(normed * _wide(w) + _wide(b), x, w, b),
                site=self.f.library["layer_norm"],
            )
        return m.outputs

    def rms_norm(self, path: str, x: Tensor, site: str) -> Tensor:
        w = self.p[f"{path}.weight"]
        here = self.f.site
        with self.rec.module(path, "RMSNorm", [x], parameters={"weight": w}, site=site) as m:
            square = self.api("pow", [x, 2], self.result(_wide(x) ** 2, x), site=here("rms.variance"))
            variance = self.api(
                "mean",
                [square, -1],
                self.result(_wide(square).mean(-1, keepdims=True), square),
                {"keepdim": True},
                here("rms.variance"),
            )
            shifted = self.api(
                "add", [variance, RMS_EPS], self.result(_wide(variance) + RMS_EPS, variance), site=here("rms.normed")
            )
            scale = self.api(
                "rsqrt", [shifted], self.result(1 / np.sqrt(_wide(shifted)), shifted), site=here("rms.normed")
            )
            normed = self.api(
                "mul", [x, scale], self.result(_wide(x) * _wide(scale), x, scale), site=here("rms.normed")
            )
            m.outputs = self.api(
                "mul", [w, normed], self.result(_wide(w) * _wide(normed), w, normed), site=here("rms.scale")
            )
        return m.outputs

    def attention(self, path: str, x: Tensor, site: str) -> Tensor:
        here = self.f.site
        with self.rec.module(path, "Attention", [x], site=site) as m:
            qkv = self.linear(f"{path}.qkv", x, here("attn.qkv"))
            split = self.api(
                "reshape",
                [qkv, BATCH, SEQ, 3, HEADS, HEAD_DIM],
                self.result(_wide(qkv).reshape(BATCH, SEQ, 3, HEADS, HEAD_DIM), qkv),
                site=here("attn.reshape"),
            )
            heads = self.api(
                "permute",
                [split, 2, 0, 3, 1, 4],
                self.result(_wide(split).transpose(2, 0, 3, 1, 4), split),
                site=here("attn.split"),
            )
            q, k, v = self.api(
                "unbind",
                [heads, 0],
                tuple(self.result(_wide(heads)[i], heads) for i in range(3)),
                site=here("attn.split"),
            )
            k_t = self.api(
                "transpose", [k, -2, -1], self.result(_wide(k).swapaxes(-2, -1), k), site=here("attn.scores")
            )
            scores = self.api("matmul", [q, k_t], self.result(_wide(q) @ _wide(k_t), q, k_t), site=here("attn.scores"))
            scaled = self.api(
                "mul",
                [scores, HEAD_DIM**-0.5],
                self.result(_wide(scores) * HEAD_DIM**-0.5, scores),
                site=here("attn.scores"),
            )
            probs = self.api(
                "softmax", [scaled], self.result(_softmax(_wide(scaled)), scaled), {"dim": -1}, here("attn.softmax")
            )
            context = self.api(
                "matmul", [probs, v], self.result(_wide(probs) @ _wide(v), probs, v), site=here("attn.context")
            )
            swapped = self.api(
                "transpose",
                [context, 1, 2],
                self.result(_wide(context).swapaxes(1, 2), context),
                site=here("attn.context"),
            )
            merged = self.api(
                "reshape",
                [swapped, BATCH, SEQ, -1],
                self.result(_wide(swapped).reshape(BATCH, SEQ, -1), swapped),
                site=here("attn.context"),
            )
            m.outputs = self.linear(f"{path}.proj", merged, here("attn.proj"))
        return m.outputs

    def mlp(self, path: str, x: Tensor, site: str) -> Tensor:
        with self.rec.module(path, "MLP", [x], site=site) as m:
            up = self.linear(f"{path}.up", x, self.f.site("mlp"))
            act = self.api("gelu", [up], self.result(_gelu(_wide(up)), up), site=self.f.site("mlp"))
            m.outputs = self.linear(f"{path}.down", act, self.f.site("mlp"))
        return m.outputs

    def block(self, i: int, x: Tensor) -> Tensor:
        path, here = f"layers.{i}", self.f.site
        with self.rec.module(path, "Block", [x], site=here("model.layer")) as m:
            a = self.attention(
                f"{path}.attn", self.layer_norm(f"{path}.attn_norm", x, here("block.attn")), here("block.attn")
            )
            x = self.api("add", [x, a], self.result(_wide(x) + _wide(a), x, a), site=here("block.attn"))
            h = self.mlp(f"{path}.mlp", self.rms_norm(f"{path}.mlp_norm", x, here("block.mlp")), here("block.mlp"))
            m.outputs = self.api("add", [x, h], self.result(_wide(x) + _wide(h), x, h), site=here("block.mlp"))
        return m.outputs

    def forward(self) -> list:
        w = self.p["embed.weight"]
        with self.rec.module(
            "embed", "Embedding", [self.ids], parameters={"weight": w}, site=self.f.site("model.embed")
        ) as m:
            m.outputs = self.api(
                "embedding",
                [self.ids, w, *self.f.embedding_args],
                self.result(_wide(w)[self.ids.array], w),
                site=self.f.library["embedding"],
            )
        x = m.outputs
        for i in range(LAYERS):
            x = self.block(i, x)
        self.linear("head", self.layer_norm("norm", x, self.f.site("model.head")), self.f.site("model.head"))
        return self.rec.calls


def sample_calls(framework: str, run: str, seed: int = 2026) -> list:
    """The calls of one run (``npu``: the NPU dtype and the defect; ``bench``: float32)."""
    flavour = FLAVOURS[framework]()
    dtype = flavour.npu_dtype if run == "npu" else np.dtype(np.float32)
    return _Run(flavour, dtype, make_weights(seed), defect=run == "npu").forward()


def write_msprobe_sample(
    root: str | os.PathLike, framework: str = "pytorch", task: str = "tensor", seed: int = 2026
) -> Path:
    """Write ``root/npu`` and ``root/bench``, each ``step0/rank0/...``; returns ``root``.

    Tensors are saved from the device as msprobe saves them (PyTorch ``.pt`` files tagged
    ``npu:0`` and ``cuda:0``); dump.json's ``dump_data_dir`` reads ``./npu/...`` and
    ``./bench/...``, as for runs configured with ``dump_path`` ``./npu`` and ``./bench``.
    """
    root = Path(root)
    for run in RUNS:
        location = {"npu": "npu:0", "bench": "cuda:0"}[run] if framework == "pytorch" else "cpu"
        spec = DumpSpec(framework, task, "mix", location=location)
        write_dump(root / run, {0: {0: sample_calls(framework, run, seed)}}, spec, dump_path_text=f"./{run}")
    return root
