"""Issue 12.1 through the real CLI: ``cp``'s default tolerance follows the lower-precision
side's dtype, and the verdict says whether the difference is that dtype's rounding."""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np

from precision_tool.formats.dump_write import TensorSpec, write_dump
from tests.conftest import REPO_ROOT

HEALTHY = ("resnet/conv1/Conv2D", "tf:resnet_conv1_Relu.0")  # cosine 0.99999991 in float16
BROKEN = ("resnet/conv2/Conv2D", "tf:resnet_conv2_BiasAdd.0")  # the planted defect


def _cp(data, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.update(PYTHONPATH=str(REPO_ROOT), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(data), "cp", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=data.parent,
    )


def _value(text: str, label: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith(f"│ {label} "))
    return line.split("│")[2].strip()


def test_a_healthy_float16_tensor_is_within_float16_rounding(sample_data):
    done = _cp(sample_data, *HEALTHY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _value(done.stdout, "verdict") == "within float16 rounding"
    assert _value(done.stdout, "tolerance").startswith(f"atol {4 * 2**-10:g}, rtol {4 * 2**-10:g} (float16: 4 x eps")
    assert _value(done.stdout, "mismatches") == "0"


def test_the_float32_tolerance_the_issue_saw_would_call_it_different(sample_data):
    done = _cp(sample_data, *HEALTHY, "-al", "1e-5", "-rl", "1e-3")
    assert done.returncode == 1
    assert _value(done.stdout, "verdict") == "differs beyond the given tolerance"
    assert int(_value(done.stdout, "mismatches")) > 1000


def test_the_planted_defect_differs_beyond_float16_rounding(sample_data):
    done = _cp(sample_data, *BROKEN, "-p", "0")
    assert done.returncode == 1
    assert _value(done.stdout, "verdict") == "▲ differs: diverges (output cosine <= 0.98, RED >= 0.2 or NaN/Inf)"


def test_a_bfloat16_dump_gets_bfloat16_s_tolerance(sample_data, tmp_path):
    golden = np.linspace(-3, 3, 64, dtype=np.float32)
    npu = golden.astype(ml_dtypes.bfloat16)
    dump = write_dump(tmp_path / "Relu.net_relu.2.0.1767225600000020", "net/relu", [], [TensorSpec(npu, "BF16")])
    np.save(tmp_path / "golden.npy", golden)
    done = _cp(sample_data, str(dump), str(tmp_path / "golden.npy"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _value(done.stdout, "verdict") == "within bfloat16 rounding"
    assert _value(done.stdout, "tolerance").startswith(f"atol {4 * 2**-7:g}")
    tight = _cp(sample_data, str(dump), str(tmp_path / "golden.npy"), "-rl", str(2**-10), "-al", "0")
    assert tight.returncode == 1  # bfloat16's rounding is beyond one float16 ulp


def test_two_float32_tensors_get_float32_s_tolerance(sample_data, tmp_path):
    left = np.array([1.0, 2.0, 3.0], np.float32)
    np.save(tmp_path / "a.npy", left)
    np.save(tmp_path / "b.npy", left * np.float32(1 + 1e-6))
    np.save(tmp_path / "c.npy", left * np.float32(1 + 1e-3))
    close = _cp(sample_data, str(tmp_path / "a.npy"), str(tmp_path / "b.npy"))
    assert close.returncode == 0 and _value(close.stdout, "verdict") == "within float32 rounding"
    far = _cp(sample_data, str(tmp_path / "a.npy"), str(tmp_path / "c.npy"))
    # 1e-3 relative: far beyond float32's rounding, far from what the flag rule calls an error
    assert far.returncode == 0 and _value(far.stdout, "verdict") == "◆ beyond float32 rounding, not flagged"
