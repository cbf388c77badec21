"""One planted defect of each kind ``why`` names, for ``python -m precision_tool.sample DIR
--defect KIND``: the sample network with that defect instead of the shipped one.

Each :class:`~.network.Defect` damages one op's NPU output (or the NPU's input data, or the
parameters both sides share) so that the op named is where the error starts:

============  ===========================  ================================================
kind          op                           what the NPU does
============  ===========================  ================================================
computation   resnet/conv2/Conv2D          reads its kernel with H and W swapped (shipped)
permutation   resnet/relu2/Relu            writes its output with H and W swapped
scale         resnet/pool/MaxPool          halves its output (cosine stays 1.0)
offset        resnet/bn1/FusedBatchNormV3  adds 0.75 to its output
sign          resnet/add/add               negates its output
overflow      resnet/dense/MatMul          dense weights 2e4 times larger on both sides: outputs
                                           past 65504 become inf in float16
underflow     resnet/bn1/FusedBatchNormV3  gamma and beta 3e-5 times smaller on both sides: the
                                           NPU flushes outputs below float16's smallest normal
nan           resnet/pool/Mean             gives NaN for the first image
input         trans_Cast_0                 is fed the batch with a per-channel offset (another
                                           preprocessing), so the first op's input differs
============  ===========================  ================================================
"""

from __future__ import annotations

import numpy as np

from .network import KERNEL_SWAP, Defect

FLOAT16_TINY = float(np.finfo(np.float16).tiny)
CHANNEL_SHIFT = np.array([0.5, -0.3, 0.2], dtype=np.float32)  # a mean subtracted differently


def _scaled(names: tuple[str, ...], factor: float):
    def weights(w: dict) -> dict:
        return {**w, **{name: (w[name] * np.float32(factor)).astype(np.float32) for name in names}}

    return weights


def _flush_to_zero(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < FLOAT16_TINY, 0.0, x)


def _nan_first_image(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    x[0] = np.nan
    return x


DEFECTS: dict[str, Defect] = {
    "computation": KERNEL_SWAP,
    "permutation": Defect(
        "permutation", "resnet/relu2/Relu", "resnet/relu2/Relu", damage=lambda x: x.transpose(0, 2, 1, 3)
    ),
    "scale": Defect("scale", "resnet/pool/MaxPool", "resnet/pool/MaxPool", damage=lambda x: 0.5 * x),
    "offset": Defect("offset", "resnet/bn1/FusedBatchNormV3", "resnet/bn1/FusedBatchNormV3", damage=lambda x: x + 0.75),
    "sign": Defect("sign", "resnet/add/add", "resnet/add/add", damage=lambda x: -x),
    "overflow": Defect(
        "overflow", "resnet/dense/MatMul", weights=_scaled(("resnet/dense/kernel", "resnet/dense/bias"), 2e4)
    ),
    "underflow": Defect(
        "underflow",
        "resnet/bn1/FusedBatchNormV3",
        "resnet/bn1/FusedBatchNormV3",
        damage=_flush_to_zero,
        weights=_scaled(("resnet/bn1/gamma", "resnet/bn1/beta"), 3e-5),
    ),
    "nan": Defect("nan", "resnet/pool/Mean", "resnet/pool/Mean", damage=_nan_first_image),
    "input": Defect("input", "trans_Cast_0", npu_input=lambda x: (x + CHANNEL_SHIFT).astype(np.float32)),
}
# ``--defect none``: the same network with nothing planted, every difference rounding
CLEAN = Defect("none", "")
KINDS = (*sorted(DEFECTS), CLEAN.kind)
