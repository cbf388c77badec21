"""Small msprobe dump trees written by the tests themselves (plain json and numpy), so the
pairing and the comparison are checked against files whose every value the test chose."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def tensor_record(key: str, where: str, array: np.ndarray, dtype: str | None = None) -> dict:
    """A dump.json tensor leaf for ``array`` saved as ``{key}.{where}.npy``."""
    a = array.astype(np.float64)
    return {"type": "mindspore.Tensor", "dtype": dtype or str(array.dtype).capitalize(),
            "shape": list(array.shape), "Max": float(a.max()), "Min": float(a.min()),
            "Mean": float(a.mean()), "Norm": float(np.sqrt((a * a).sum())),
            "data_name": f"{key}.{where}.npy"}


def write_rank(rank_dir: Path, calls: list[tuple[str, list[np.ndarray], list[np.ndarray]]],
               framework: str = "mindspore") -> Path:
    """A rank directory: dump.json (task tensor, level L1) and a ``.npy`` per tensor;
    ``calls`` are (key, inputs, outputs) in call order."""
    data_dir = rank_dir / "dump_tensor_data"
    data_dir.mkdir(parents=True, exist_ok=True)
    data = {}
    for key, inputs, outputs in calls:
        entry = {"input_args": [], "input_kwargs": {}, "output": []}
        for i, array in enumerate(inputs):
            entry["input_args"].append(tensor_record(key, f"input.{i}", array))
            np.save(data_dir / f"{key}.input.{i}.npy", array)
        for i, array in enumerate(outputs):
            entry["output"].append(tensor_record(key, f"output.{i}", array))
            np.save(data_dir / f"{key}.output.{i}.npy", array)
        data[key] = entry
    doc = {"task": "tensor", "level": "L1", "framework": framework,
           "dump_data_dir": str(data_dir), "data": data}
    (rank_dir / "dump.json").write_text(json.dumps(doc, indent=1))
    return rank_dir
