"""What a result directory holds: ``comparisons.json``, one entry per CSV ``vc`` wrote.

``vc`` writes it beside the CSVs when they are complete, so ``vcs``, ``ac`` and ``report`` know
which device, sub-graph and step each CSV compares (a CSV's name is only a tag). A directory
without one (msaccucmp's output, a CSV copied elsewhere) is still read: its CSVs have no device.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from ..formats.atomic import OutputRoot
from .plan import Comparison

MANIFEST_NAME = "comparisons.json"
SCHEMA = 1


@dataclass(frozen=True)
class CsvInfo:
    """One CSV of a result directory: what it compares."""

    csv: str  # the file name, in the manifest's directory
    label: str
    device: int | None = None
    model: str | None = None
    model_id: int | None = None
    step: int | None = None
    run: str | None = None
    npu_vs_npu: bool = False


def csv_info(csv_name: str, comparison: Comparison) -> CsvInfo:
    """The manifest entry of ``comparison`` written as ``csv_name``."""
    step = comparison.step
    return CsvInfo(csv_name, comparison.label,
                   device=step.device if step else None, model=step.model_name if step else None,
                   model_id=step.model_id if step else None, step=step.step if step else None,
                   run=step.run if step else None, npu_vs_npu=comparison.npu_vs_npu)


def write_manifest(root: OutputRoot, directory: Path, entries: Iterable[CsvInfo]) -> Path:
    """Write ``comparisons.json`` into ``directory`` under ``root`` (complete or absent)."""
    document = {"schema": SCHEMA, "comparisons": [asdict(e) for e in entries]}
    return root.write_text(directory / MANIFEST_NAME, json.dumps(document, indent=1))


def read_manifest(directory: Path) -> dict[str, CsvInfo]:
    """The entries of ``directory``'s manifest by CSV file name; empty when it has none or it
    cannot be read (the CSVs are then read without their labels)."""
    try:
        document = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
        entries = document["comparisons"]
        fields = CsvInfo.__dataclass_fields__
        found = [CsvInfo(**{k: v for k, v in e.items() if k in fields}) for e in entries]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {e.csv: e for e in found if isinstance(e.csv, str)}


def info_of(csv: Path) -> CsvInfo | None:
    """The manifest entry of one CSV (from its directory's manifest), or None."""
    return read_manifest(csv.parent).get(csv.name)
