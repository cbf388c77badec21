"""The sample's overflow-debug run: one op whose float16 output really overflows, and the Opdebug
file that reports it.

The story: a second training run, with overflow detection on, fed the sample network larger
activations. ``resnet/pool/Mean`` (ReduceMeanD) sums 6 x 6 values per channel before dividing;
on the NPU the sum is kept in float16, so channels whose sum passes 65504 come out as ``inf``.
The overflow run's dumps hold that op (its input scaled by :data:`SCALE`, its output computed
with the float16 sum) and ``Opdebug.Node_OpDebug.2.1.{ts}``, whose AI Core status says float
overflow (0x20) and FP32-to-FP16 conversion overflow (0x100) for the op's task (19, stream 0).
The file name carries the debug task's own ids (2, 1): only the payload names the op.

Only ``overflow/dump/`` is written; ``npu/`` and ``tf/`` are left alone. Deterministic: the
values follow from the seed and the timestamps are fixed.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..formats.dump_write import TensorSpec, write_dump
from ..formats.overflow import UnitInfo, build_overflow_payload, opdebug_file_name, write_overflow_dump
from . import network

OVERFLOW_RUN = "20261129130000"
OVERFLOW_MODEL = f"ge_default_{OVERFLOW_RUN}_1"
OP_NAME = "resnet/pool/Mean"
OP_FILE_PREFIX = "ReduceMeanD.resnet_pool_Mean"
TASK_ID, STREAM_ID = 19, 0  # the overflowed op's task, as the payload says
DEBUG_TASK_ID, DEBUG_STREAM_ID = 2, 1  # the OpDebug task's own ids, in its file name
OP_TIMESTAMP = 1764421200000333
DEBUG_TIMESTAMP = 1764421200000350
SCALE = 512.0
AI_CORE_STATUS = 0x20 | 0x100
KERNEL_CODE = 0x1F400
FLOAT16_MAX = 65504.0


def overflow_step_dir(root: str | os.PathLike) -> Path:
    """Where the sample's overflow dumps go: ``overflow/dump/{run}/0/{model}/1/0``."""
    return Path(root) / "overflow" / "dump" / OVERFLOW_RUN / "0" / OVERFLOW_MODEL / "1" / "0"


def overflowing_mean(seed: int = 2026) -> tuple[np.ndarray, np.ndarray]:
    """The op's input (NHWC, float16) and output ([N, C], float16, inf where the sum overflows)."""
    values = network.forward(network.make_weights(seed), npu=True)["resnet/pool/MaxPool"]
    scaled = (values.astype(np.float32) * SCALE).astype(np.float16)
    with np.errstate(over="ignore"):
        sums = scaled.astype(np.float32).sum(axis=(1, 2)).astype(np.float16)  # the float16 sum
        count = np.float16(scaled.shape[1] * scaled.shape[2])
        mean = (sums / count).astype(np.float16)
    assert np.isinf(mean).any() and np.isfinite(scaled).all(), "the sample must overflow"
    return scaled, mean


def write_overflow_sample(root: str | os.PathLike, seed: int = 2026) -> Path:
    """Write the overflow-debug dumps under ``root/overflow/dump``; returns their step dir."""
    step_dir = overflow_step_dir(root)
    scaled, mean = overflowing_mean(seed)
    inputs = [TensorSpec(scaled, "FLOAT16", "NHWC", original_shape=scaled.shape)]
    outputs = [TensorSpec(mean, "FLOAT16", "ND", original_shape=mean.shape, original_op=(OP_NAME, 0, "ND"))]
    write_dump(
        step_dir / f"{OP_FILE_PREFIX}.{TASK_ID}.{STREAM_ID}.{OP_TIMESTAMP}",
        OP_NAME,
        inputs,
        outputs,
        dump_time=OP_TIMESTAMP,
    )
    info = UnitInfo(
        model_id=1,
        stream_id=STREAM_ID,
        task_id=TASK_ID,
        task_type=0,
        pc_start=0x12C0_4000_0000,
        para_base=0x12C0_8000_0000,
    )
    payload = build_overflow_payload(info, AI_CORE_STATUS, kernel_code=KERNEL_CODE, block_idx=0)
    write_overflow_dump(
        step_dir / opdebug_file_name(DEBUG_TASK_ID, DEBUG_STREAM_ID, DEBUG_TIMESTAMP),
        payload,
        dump_time=DEBUG_TIMESTAMP,
    )
    return step_dir
