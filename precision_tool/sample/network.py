"""The sample network's arithmetic: a small residual CNN classifier in numpy.

Golden values are what TensorFlow computes in float32. The NPU side runs the same graph in
float16 (inputs rounded to float16, arithmetic in float64, results rounded to float16), with one
deliberate defect: the NPU's ``resnet/conv2/Conv2D`` reads its kernel with H and W swapped, the
kind of layout bug a wrong TransData causes. Everything downstream inherits the error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

BATCH, SIZE, CHANNELS_IN, CHANNELS, CLASSES = 4, 12, 3, 24, 10
BN_EPSILON = 1e-3
DEFECTIVE_OP = "resnet/conv2/Conv2D"


@dataclass(frozen=True)
class Defect:
    """What goes wrong on the NPU side (the golden side never changes, except through
    ``weights``, which both sides share).

    Attributes:
        kind: the cause ``why`` should name.
        op: the NPU op that introduces it.
        tensor: the TF tensor whose NPU value ``damage`` rewrites (in float64, then rounded).
        damage: what the NPU does wrong to ``tensor``.
        weights: a change to the parameters both sides use (values too large for float16...).
        npu_input: what the NPU is fed instead of the input batch.
        swap_kernel: the NPU's conv2 reads its kernel with H and W swapped.
    """

    kind: str
    op: str
    tensor: str = ""
    damage: Callable[[np.ndarray], np.ndarray] | None = None
    weights: Callable[[dict], dict] | None = None
    npu_input: Callable[[np.ndarray], np.ndarray] | None = None
    swap_kernel: bool = False


KERNEL_SWAP = Defect("computation", DEFECTIVE_OP, swap_kernel=True)  # the shipped sample's


def conv2d_same(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """NHWC x HWCN convolution, stride 1, SAME padding, computed in float64."""
    kh, kw = kernel.shape[:2]
    padded = np.pad(x.astype(np.float64), ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(1, 2))
    # windows: [N, H, W, C, kh, kw]; contract C, kh, kw with the kernel's H, W, C.
    return np.einsum("nhwcij,ijcd->nhwd", windows, kernel.astype(np.float64))


def max_pool_2x2(x: np.ndarray) -> np.ndarray:
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def softmax(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # inf logits (the overflow defect) give NaN, as on the NPU
        shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def make_weights(seed: int = 2026) -> dict[str, np.ndarray]:
    """Input batch and parameters, float32, keyed by TF tensor name (without ``:0``)."""
    rng = np.random.default_rng(seed)

    def normal(shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {
        "input": normal((BATCH, SIZE, SIZE, CHANNELS_IN), 1.0),
        "resnet/conv1/kernel": normal((3, 3, CHANNELS_IN, CHANNELS), 0.3),
        "resnet/conv1/bias": normal((CHANNELS,), 0.05),
        "resnet/bn1/gamma": (1.0 + normal((CHANNELS,), 0.1)),
        "resnet/bn1/beta": normal((CHANNELS,), 0.1),
        "resnet/bn1/moving_mean": normal((CHANNELS,), 0.1) + 0.5,
        "resnet/bn1/moving_variance": np.abs(normal((CHANNELS,), 0.2)) + 0.3,
        "resnet/conv2/kernel": normal((3, 3, CHANNELS, CHANNELS), 0.12),
        "resnet/conv2/bias": normal((CHANNELS,), 0.05),
        "resnet/dense/kernel": normal((CHANNELS, CLASSES), 0.4),
        "resnet/dense/bias": normal((CLASSES,), 0.05),
    }


def make_labels(seed: int = 2026) -> np.ndarray:
    """The batch's int64 class labels (an input the NPU graph casts to int32)."""
    return np.random.default_rng(seed + 1).integers(0, CLASSES, BATCH, dtype=np.int64)


def forward(w: dict[str, np.ndarray], npu: bool, defect: Defect = KERNEL_SWAP) -> dict[str, np.ndarray]:
    """Every tensor of the network by TF name. ``npu``: float16 rounding and the defect."""
    dtype = np.float16 if npu else np.float32

    def r(x):  # round a result to the side's storage type
        with np.errstate(over="ignore"):  # values past float16's range become inf, as on the NPU
            return np.asarray(x).astype(dtype)

    p = {k: r(v) for k, v in w.items()}
    t = _Tensors(defect if npu else None, r)
    t["input"] = defect.npu_input(w["input"]) if npu and defect.npu_input else w["input"]
    x = r(t["input"])
    t["resnet/conv1/Conv2D"] = r(conv2d_same(x, p["resnet/conv1/kernel"]))
    t["resnet/conv1/BiasAdd"] = r(t["resnet/conv1/Conv2D"].astype(np.float64) + p["resnet/conv1/bias"])
    t["resnet/conv1/Relu"] = r(np.maximum(t["resnet/conv1/BiasAdd"], 0))
    scale = p["resnet/bn1/gamma"] / np.sqrt(p["resnet/bn1/moving_variance"].astype(np.float64) + BN_EPSILON)
    t["resnet/bn1/FusedBatchNormV3"] = r(
        (t["resnet/conv1/Relu"] - p["resnet/bn1/moving_mean"].astype(np.float64)) * scale + p["resnet/bn1/beta"]
    )
    kernel2 = p["resnet/conv2/kernel"]
    if npu and defect.swap_kernel:
        kernel2 = kernel2.transpose(1, 0, 2, 3)  # the planted defect: H and W swapped
    t["resnet/conv2/Conv2D"] = r(conv2d_same(t["resnet/bn1/FusedBatchNormV3"], kernel2))
    t["resnet/conv2/BiasAdd"] = r(t["resnet/conv2/Conv2D"].astype(np.float64) + p["resnet/conv2/bias"])
    t["resnet/add/add"] = r(t["resnet/bn1/FusedBatchNormV3"].astype(np.float64) + t["resnet/conv2/BiasAdd"])
    t["resnet/relu2/Relu"] = r(np.maximum(t["resnet/add/add"], 0))
    t["resnet/pool/MaxPool"] = r(max_pool_2x2(t["resnet/relu2/Relu"]))
    t["resnet/pool/Mean"] = r(t["resnet/pool/MaxPool"].astype(np.float64).mean(axis=(1, 2)))
    t["resnet/dense/MatMul"] = r(t["resnet/pool/Mean"].astype(np.float64) @ p["resnet/dense/kernel"])
    t["resnet/dense/BiasAdd"] = r(t["resnet/dense/MatMul"].astype(np.float64) + p["resnet/dense/bias"])
    t["resnet/softmax/Softmax"] = r(softmax(t["resnet/dense/BiasAdd"].astype(np.float64)))
    return {**p, **t} if npu else {**w, **t}


class _Tensors(dict):
    """The network's tensors; on the NPU side the defect's tensor is damaged as it is stored."""

    def __init__(self, defect: Defect | None, rounding) -> None:
        super().__init__()
        self.defect, self.rounding = defect, rounding

    def __setitem__(self, name: str, value: np.ndarray) -> None:
        defect = self.defect
        if defect is not None and defect.damage is not None and name == defect.tensor:
            value = self.rounding(defect.damage(np.asarray(value, dtype=np.float64)))
        super().__setitem__(name, value)
