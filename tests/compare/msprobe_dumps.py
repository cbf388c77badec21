"""Reading the msprobe reference dumps of tests/data/msprobe_metrics/ with plain json (not the
package's readers), for the msprobe comparison tests."""

from __future__ import annotations

import json
from pathlib import Path

from precision_tool.compare.msprobe_result import shape_text
from precision_tool.compare.msprobe_stats import Summary, value_md5

DATA = Path(__file__).resolve().parent.parent / "data" / "msprobe_metrics"


def dump(mode: str, side: str) -> dict:
    """The ``data`` of one side's dump.json."""
    return json.loads((DATA / mode / side / "dump.json").read_text())["data"]


def expected(mode: str) -> list[dict]:
    """The rows of the CSV msprobe wrote for the mode's dump pair (every cell as text)."""
    return json.loads((DATA / mode / "expected.json").read_text())["rows"]


def records(data: dict) -> dict[str, tuple[str, dict]]:
    """NPU-name -> (call key, record) for every tensor or argument of a dump, as msprobe names
    its rows (``{key}.input.{i}``, ``{key}.output.{i}``)."""
    named = {}
    for key, call in data.items():
        for part, kind in (("input_args", "input"), ("output", "output")):
            for i, record in enumerate(call.get(part, [])):
                named[f"{key}.{kind}.{i}"] = (key, record)
    return named


def summary(record: dict) -> Summary:
    if record["type"].endswith("Tensor"):
        return Summary(record.get("Max"), record.get("Min"), record.get("Mean"), record.get("Norm"))
    return Summary(*[record["value"]] * 4)  # msprobe shows an argument's value as each statistic


def dtype(record: dict) -> str:
    return record.get("dtype") or str(type(record["value"]))


def shape(record: dict) -> str:
    return shape_text(record["shape"]) if "shape" in record else "[]"


def md5(record: dict) -> str:
    return record.get("md5") or value_md5(record.get("value", ""))
