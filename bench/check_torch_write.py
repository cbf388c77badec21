"""Check ``precision_tool.formats.torch_write`` against real torch: for every dtype it knows and
a set of shapes, the file ``write_pt`` writes must be byte for byte the file ``torch.save``
writes for the same contiguous CPU tensor, and ``torch.load(..., weights_only=True)`` must give
the same dtype, shape and bytes back (also with the device tags ``cuda:0`` and ``npu:0``, loaded
with ``map_location="cpu"``). Prints one line per case and a summary; exit status 1 on any
difference.

Needs torch, which the test suite does not: run it with a Python that has torch, numpy and
ml_dtypes, e.g.

    python -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy ml_dtypes \\
        --index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple
    /tmp/torchvenv/bin/python bench/check_torch_write.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHAPES = [(), (0,), (1,), (7,), (2, 3), (2, 0, 3), (1, 2, 3, 4), (2, 1, 3, 1, 2), (300,), (70000,)]


def _values(dtype, shape, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    size = int(np.prod(shape)) if shape else 1
    if dtype.numpy.kind == "b":
        return (rng.integers(0, 2, size) == 1).reshape(shape)
    if dtype.numpy.kind in "iu":
        info = np.iinfo(dtype.numpy)
        return rng.integers(info.min, info.max, size, dtype=dtype.numpy, endpoint=True).reshape(shape)
    if dtype.numpy.kind == "c":
        return (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dtype.numpy).reshape(shape)
    return (rng.standard_normal(size) * 3).astype(dtype.numpy).reshape(shape)


def _torch_tensor(torch, values, dtype):
    """The same tensor built in torch from the array's bytes (from_numpy knows no bfloat16)."""
    target = getattr(torch, dtype.name)
    raw = values.tobytes()
    if not raw:
        return torch.empty(values.shape, dtype=target)
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(target)
    return flat.reshape(values.shape).clone()


def _loaded_bytes(tensor) -> bytes:
    return (
        bytes(tensor.contiguous().view(-1).view(__import__("torch").uint8).numpy().tobytes()) if tensor.numel() else b""
    )


def check_case(torch, dtype, shape, seed: int, directory: Path) -> list[str]:
    """What differs for one dtype and shape (empty: nothing)."""
    from precision_tool.formats.torch_write import write_pt

    values = _values(dtype, shape, seed)
    ours = write_pt(directory / "ours" / "Functional.linear.0.forward.input.0.pt", values)
    theirs = directory / "theirs" / "Functional.linear.0.forward.input.0.pt"
    torch.save(_torch_tensor(torch, values, dtype), theirs)
    problems = []
    if ours.read_bytes() != theirs.read_bytes():
        problems.append("bytes differ from torch.save")
    for location in ("cpu", "cuda:0", "npu:0"):
        path = write_pt(directory / "ours" / f"at_{location.replace(':', '_')}.pt", values, location=location)
        loaded = torch.load(path, weights_only=True, map_location="cpu")
        if loaded.dtype != getattr(torch, dtype.name) or tuple(loaded.shape) != tuple(shape):
            problems.append(f"{location}: loaded as {loaded.dtype} {tuple(loaded.shape)}")
        elif _loaded_bytes(loaded) != values.tobytes():
            problems.append(f"{location}: loaded values differ")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Compare write_pt's files with torch.save's (needs torch).")
    parser.parse_args(argv)
    import torch

    from precision_tool.formats.torch_write import TORCH_DTYPES

    failures = cases = 0
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "ours").mkdir()
        (directory / "theirs").mkdir()
        for seed, dtype in enumerate(TORCH_DTYPES.values()):
            if not hasattr(torch, dtype.name):
                print(f"{dtype.name:16} skipped: this torch has no such dtype")
                continue
            for shape in SHAPES:
                cases += 1
                problems = check_case(torch, dtype, shape, seed, directory)
                failures += bool(problems)
                print(f"{dtype.name:16} {str(shape):18} {'; '.join(problems) or 'same bytes, loads equal'}")
    print(f"torch {torch.__version__}: {cases - failures} of {cases} cases identical")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
