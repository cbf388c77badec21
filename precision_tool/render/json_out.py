"""``--json`` output: what ``vcs`` and ``ac`` found, as JSON for scripts and CI.

The schema is documented in docs/json.md. Numbers that are NaN or infinite
become ``null`` (JSON has no NaN); paths become strings; a check's result is its dataclass's
fields (and its ``present``/``found``/``flagged`` verdicts), converted the same way.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..compare.devices import DeviceVerdict
from ..compare.divergence import Divergence, OpCosines, TensorCosine
from ..compare.verdict import FlagRule, LocalCheck

SCHEMA_VERSION = 1
_VERDICTS = ("present", "found", "flagged")


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses as dicts of their fields, tuples and sets as
    lists, paths as strings, non-finite floats as None, numpy scalars as Python numbers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if not f.name.startswith("_")}
        for verdict in _VERDICTS:
            if verdict not in out and isinstance(getattr(type(value), verdict, None), property):
                out[verdict] = plain(getattr(value, verdict))
        return out
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def tensor_json(tensor: TensorCosine, rule: FlagRule) -> dict:
    """One input or output: slot, cosine, RED, its state (:mod:`~precision_tool.compare.verdict`)
    and the RED rounding explains there, NaN/Inf and on which side, whether it diverges."""
    return {
        "slot": tensor.slot,
        "cosine": _number(tensor.cosine),
        "red": _number(tensor.red),
        "state": tensor.state(rule),
        "rounding_limit": _number(tensor.limit),
        "nonfinite": tensor.nonfinite,
        "nonfinite_side": tensor.nonfinite_side,
        "diverges": tensor.diverges(rule),
    }


def local_json(local: LocalCheck | None) -> dict | None:
    """The replay's evidence of one op, None when none ran."""
    if local is None:
        return None
    return {
        "replayed": local.replayed,
        "output": local.slot,
        "red": _number(local.red),
        "nonfinite_mismatch": local.nonfinite_mismatch,
        "rounding_limit": local.noise.limit,
        "beyond": local.beyond,
    }


def op_json(op: OpCosines) -> dict:
    """One op: name, type, index, golden names, verdict (and what decided it), every input and
    output."""
    return {
        "op": op.name,
        "type": op.op_type,
        "index": op.index,
        "ground_truth": op.ground_truth,
        "state": op.state,
        "introduces": op.introduces,
        "amplifies": op.amplifies,
        "decided_by": op.decided_by,
        "replay": local_json(op.local),
        "cause": op.cause,
        "inputs": [tensor_json(t, op.rule) for t in op.inputs],
        "outputs": [tensor_json(t, op.rule) for t in op.outputs],
    }


def divergence_json(csv: Path, divergence: Divergence) -> dict:
    """One result CSV's verdict: the rule, the counts, every flagged op, the first introducer,
    the lowest output cosine and the ops close to the threshold."""
    first, lowest = divergence.first_introducer, divergence.lowest_output
    rule = divergence.rule
    return {
        "csv": str(csv),
        "rule": {"cosine": rule.cosine, "red": rule.red_threshold},
        "ops_compared": len(divergence.dumped),
        "flagged": [op_json(op) for op in divergence.flagged],
        "first_introducer": op_json(first) if first is not None else None,
        "lowest_output": ({"op": lowest.name, "cosine": _number(lowest.worst_output)} if lowest is not None else None),
        "near": [op.name for op in divergence.near],
        "nonfinite": [op.name for op in divergence.nonfinite],
        "unjudged": [op.name for op in divergence.unjudged],
    }


def device_json(verdict: DeviceVerdict) -> dict:
    """One device of the cross-device summary."""
    op = verdict.first_introducer
    return {
        "device": verdict.device,
        "results": verdict.results,
        "first_introducer": op.name if op is not None else None,
        "first_introducer_index": op.index if op is not None else None,
        "min_output_cosine": _number(verdict.min_output_cosine),
        "differs_from_majority": verdict.differs_from_majority,
        "diverges_first": verdict.diverges_first,
    }


def summary_json(
    results: Iterable[tuple[Path, Divergence]], errors: Iterable[str] = (), devices: Iterable[DeviceVerdict] = ()
) -> dict:
    """The ``vcs --json`` document."""
    return {
        "schema": SCHEMA_VERSION,
        "results": [divergence_json(p, d) for p, d in results],
        "devices": [device_json(v) for v in devices],
        "errors": list(errors),
    }


def dumps(document: dict | list) -> str:
    """The document as indented JSON (ASCII only: names from the data are escaped)."""
    return json.dumps(document, indent=2, ensure_ascii=True, allow_nan=False)
