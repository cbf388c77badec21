"""Float64 simulations of correct ops on a low-precision device: the independent reference the
noise model (:mod:`precision_tool.compare.noise`) is calibrated on.

Each case draws float32 inputs (what a TensorFlow golden holds), rounds them to the device type
(what the NPU's inputs hold), computes the op as the device does (products and sums in float32,
the output stored in the device type) and, as the golden, in float64 from the unrounded inputs.
The measured RED of the device output against the golden is what a correct op shows; the model
is given only what ``vcs`` knows: the dtypes, the shapes and the inputs' measured REDs.
``bench/noise_calibration.py`` prints the table of these cases into ``docs/noise.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from precision_tool.compare.noise import accumulation_length, output_noise


def red(value: np.ndarray, reference: np.ndarray) -> float:
    value, reference = np.asarray(value, np.float64), np.asarray(reference, np.float64)
    return float(np.linalg.norm(value - reference) / np.linalg.norm(reference))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)


def _conv(x, w):
    """NHWC x HWCN, stride 1, VALID, by patches and one matmul."""
    n, h, width, c = x.shape
    kh, kw, _, out = w.shape
    patches = np.stack([x[:, i : i + h - kh + 1, j : j + width - kw + 1, :] for i in range(kh) for j in range(kw)], -2)
    return patches.reshape(n, h - kh + 1, width - kw + 1, kh * kw * c) @ w.reshape(kh * kw * c, out)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


# op type -> (input shapes from a size parameter k, the function)
OPS: dict[str, tuple[Callable[[int], list[tuple[int, ...]]], Callable]] = {
    "MatMul": (lambda k: [(32, k), (k, 48)], lambda a, b: a @ b),
    "BatchMatMul": (lambda k: [(4, 16, k), (4, k, 24)], lambda a, b: a @ b),
    "Conv2D": (lambda k: [(2, 10, 10, k), (3, 3, k, 16)], _conv),
    "Add": (lambda k: [(k * 64,), (k * 64,)], lambda a, b: a + b),
    "Mul": (lambda k: [(k * 64,), (k * 64,)], lambda a, b: a * b),
    "BiasAdd": (lambda k: [(64, k), (k,)], lambda a, b: a + b),
    "Relu": (lambda k: [(k * 64,)], lambda a: np.maximum(a, 0)),
    "Gelu": (lambda k: [(k * 64,)], _gelu),
    "Tanh": (lambda k: [(k * 64,)], np.tanh),
    "Exp": (lambda k: [(k * 64,)], np.exp),
    "Softmax": (lambda k: [(64, k)], _softmax),
    "LayerNorm": (lambda k: [(64, k)], _layer_norm),
    "ReduceSum": (lambda k: [(64, k)], lambda a: a.sum(-1)),
    "ReduceMean": (lambda k: [(64, k)], lambda a: a.mean(-1)),
}
SIZES = (8, 64, 512, 2048)
SCALES = (1.0, 2.0, 3.0)


@dataclass(frozen=True)
class Case:
    """One simulated op and what the model says of it."""

    op_type: str
    size: int
    scale: float
    device: str
    golden: str
    measured: float
    expected: float
    limit: float

    @property
    def ratio(self) -> float:
        return self.measured / self.expected


def simulate(
    op_type: str, size: int, scale: float, device: str = "float16", golden: str = "float32", seed: int = 0
) -> Case:
    """One correct op on the device, against its float64 golden."""
    shapes, fn = OPS[op_type]
    rng = np.random.default_rng(seed)
    exact = [(rng.standard_normal(s) * scale).astype(np.float32) for s in shapes(size)]
    dtype = getattr(ml_dtypes, device, None) or np.dtype(device)
    stored = [x.astype(dtype) for x in exact]
    out = fn(*(x.astype(np.float32) for x in stored)).astype(np.float32).astype(dtype)
    reference = fn(*(x.astype(np.float64) for x in exact))
    if golden != "float32":  # a golden stored in a device type too (NPU against NPU)
        gtype = getattr(ml_dtypes, golden, None) or np.dtype(golden)
        reference = reference.astype(np.float32).astype(gtype)
    input_reds = [red(s, x) for s, x in zip(stored, exact)]
    k = accumulation_length(op_type, [x.shape for x in exact], out.shape)
    rms = float(np.sqrt(np.mean(np.square(exact[0], dtype=np.float64))))
    noise = output_noise(device, golden, input_reds, [device] * len(exact), k, op_type, rms, exact[0].size)
    return Case(op_type, size, scale, device, golden, red(out, reference), noise.expected, noise.limit)


def cases(devices=("float16", "bfloat16"), sizes=SIZES) -> list[Case]:
    """Every op at every size and scale, on each device type (and float16 against a float16
    golden)."""
    found = [
        simulate(op, size, scale, device, seed=size)
        for device in devices
        for op in OPS
        for size in sizes
        for scale in SCALES
        if not (op == "Exp" and scale > 2)
    ]  # exp(3 x 4.5) overflows float16: not rounding
    found += [simulate(op, size, 1.0, "float16", "float16", seed=size + 1) for op in OPS for size in sizes]
    return found


def chain_red(depth: int, device: str = "float16", seed: int = 0) -> float:
    """The RED after ``depth`` correct ops (a residual MLP block at a time: MatMul, Add, Gelu,
    LayerNorm), each reading the previous device output, against the float64 chain."""
    rng = np.random.default_rng(seed)
    dtype = getattr(ml_dtypes, device, None) or np.dtype(device)
    x = rng.standard_normal((32, 128)).astype(np.float32)
    exact, stored = x.astype(np.float64), x.astype(dtype)
    for step in range(depth):
        w = (rng.standard_normal((128, 128)) / np.sqrt(128)).astype(np.float32)
        op = step % 4

        def run(v, weight, cast, op=op):
            value = [lambda: v @ weight, lambda: v + weight[:1], lambda: _gelu(v), lambda: _layer_norm(v)][op]()
            return cast(value)

        exact = run(exact, w.astype(np.float64), lambda a: a)
        stored = run(
            stored.astype(np.float32), w.astype(dtype).astype(np.float32), lambda a: a.astype(np.float32).astype(dtype)
        )
    return red(stored, exact)
