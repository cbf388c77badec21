"""Small msprobe dump trees written by the tests themselves (plain json and numpy), so the
pairing and the comparison are checked against files whose every value the test chose."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def tensor_record(key: str, where: str, array: np.ndarray, dtype: str | None = None) -> dict:
    """A dump.json tensor leaf for ``array`` saved as ``{key}.{where}.npy``."""
    a = array.astype(np.float64)
    return {
        "type": "mindspore.Tensor",
        "dtype": dtype or str(array.dtype).capitalize(),
        "shape": list(array.shape),
        "Max": float(a.max()),
        "Min": float(a.min()),
        "Mean": float(a.mean()),
        "Norm": float(np.sqrt((a * a).sum())),
        "data_name": f"{key}.{where}.npy",
    }


def value_record(value):
    """A dump.json leaf of a non-tensor argument, as msprobe writes it: None as null, a list
    or tuple as a list of leaves, anything else ``{"type", "value"}``."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [value_record(item) for item in value]
    return {"type": type(value).__name__, "value": value}


def _leaf(data_dir: Path, key: str, where: str, value):
    """The record of one argument (a tensor is saved as ``{key}.{where}.npy``), nested lists
    and tuples holding tensors leaf by leaf."""
    if isinstance(value, np.ndarray):
        np.save(data_dir / f"{key}.{where}.npy", value)
        return tensor_record(key, where, value)
    if isinstance(value, (list, tuple)) and any(isinstance(item, np.ndarray) for item in value):
        return [_leaf(data_dir, key, f"{where}.{i}", item) for i, item in enumerate(value)]
    return value_record(value)


def write_rank(rank_dir: Path, calls: list[tuple], framework: str = "mindspore") -> Path:
    """A rank directory: dump.json (task tensor, level L1) and a ``.npy`` per tensor;
    ``calls`` are (key, inputs, outputs) or (key, inputs, outputs, kwargs) in call order. An
    input or keyword argument that is no array is written as msprobe writes values (an int,
    a float, a string, None, a list of them)."""
    data_dir = rank_dir / "dump_tensor_data"
    data_dir.mkdir(parents=True, exist_ok=True)
    data = {}
    for key, inputs, outputs, *rest in calls:
        kwargs = rest[0] if rest else {}
        entry = {
            "input_args": [_leaf(data_dir, key, f"input.{i}", value) for i, value in enumerate(inputs)],
            "input_kwargs": {name: _leaf(data_dir, key, f"input.{name}", value) for name, value in kwargs.items()},
            "output": [_leaf(data_dir, key, f"output.{i}", array) for i, array in enumerate(outputs)],
        }
        data[key] = entry
    doc = {"task": "tensor", "level": "L1", "framework": framework, "dump_data_dir": str(data_dir), "data": data}
    (rank_dir / "dump.json").write_text(json.dumps(doc, indent=1))
    return rank_dir
