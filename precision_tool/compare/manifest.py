"""What a result directory holds: ``comparisons.json``, one entry per CSV ``vc`` wrote.

``vc`` writes it beside the CSVs when they are complete, so ``vcs``, ``ac`` and ``report`` know
which device, sub-graph and step each CSV compares (a CSV's name is only a tag), and which CSVs
are the result at all (:func:`result_csvs`): a ``vc -o DIR`` run again writes its CSVs beside
the earlier run's, and replacing this one file is the moment the directory changes from one
run to the other, so no reader ever sees CSVs of both. A directory without one (msaccucmp's
output, a CSV copied elsewhere) is still read: all its CSVs, without a device.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError
from ..formats.output_root import OutputRoot
from .state_file import read_json_file, typed_fields

if TYPE_CHECKING:
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
    npu_dump: str | None = None  # msprobe dumps: the NPU rank directory compared (absolute)
    bench_dump: str | None = None  # msprobe dumps: the bench rank directory compared (absolute)


def csv_info(csv_name: str, comparison: Comparison) -> CsvInfo:
    """The manifest entry of ``comparison`` written as ``csv_name``."""
    step, sides = comparison.step, comparison.msprobe
    if sides is not None:
        return CsvInfo(
            csv_name,
            comparison.label,
            device=sides.npu_rank.rank,
            step=sides.npu_rank.step,
            npu_vs_npu=True,
            npu_dump=str(sides.npu_rank.path.absolute()),
            bench_dump=str(sides.bench_rank.path.absolute()),
        )
    return CsvInfo(
        csv_name,
        comparison.label,
        device=step.device if step else None,
        model=step.model_name if step else None,
        model_id=step.model_id if step else None,
        step=step.step if step else None,
        run=step.run if step else None,
        npu_vs_npu=comparison.npu_vs_npu,
    )


def write_manifest(root: OutputRoot, directory: Path, entries: Iterable[CsvInfo]) -> Path:
    """Write ``comparisons.json`` into ``directory`` under ``root`` (complete or absent)."""
    document = {"schema": SCHEMA, "comparisons": [asdict(e) for e in entries]}
    return root.write_text(directory / MANIFEST_NAME, json.dumps(document, indent=1))


def load_manifest(directory: Path) -> dict[str, CsvInfo]:
    """The entries of ``directory``'s manifest by CSV file name; empty when it has none.

    Raises:
        PrecisionToolError: it is there but damaged (see :mod:`.state_file`), an entry lacks
            ``csv`` or ``label``, a field has the wrong type, or a CSV is not a plain file name.
    """
    path = directory / MANIFEST_NAME
    try:
        document = read_json_file(path)
    except FileNotFoundError:
        return {}
    entries = document.get("comparisons") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise PrecisionToolError("not a result manifest: no list of comparisons", path)
    found = {}
    for number, entry in enumerate(entries):
        fields = typed_fields(CsvInfo, entry, path, f"comparisons[{number}].")
        if not {"csv", "label"} <= fields.keys() or not is_csv_name(fields["csv"]):
            raise PrecisionToolError(f"comparisons[{number}] names no CSV of the directory", path)
        found[fields["csv"]] = CsvInfo(**fields)
    return found


def read_manifest(directory: Path) -> dict[str, CsvInfo]:
    """:func:`load_manifest`, but empty when the manifest is damaged: the CSVs are then read
    without their labels."""
    try:
        return load_manifest(directory)
    except PrecisionToolError:
        return {}


def is_csv_name(name: str) -> bool:
    """Whether ``name`` is the plain name of a CSV a reader of the directory takes (no path,
    not hidden): what ``vc`` may replace there, and nothing else."""
    return name.endswith(".csv") and not name.startswith(".") and not any(c in name for c in "/\\\0")


def result_csvs(directory: Path) -> list[Path]:
    """The result CSVs of ``directory``, sorted: those its manifest lists, when it lists one
    that is there (CSVs of a run still being written, or of the earlier run it replaced, are
    not the result); else every ``*.csv`` file (msaccucmp's output, CSVs copied together)."""
    every = sorted(p for p in directory.glob("*.csv") if p.is_file())
    listed = read_manifest(directory)
    return [p for p in every if p.name in listed] or every


def info_of(csv: Path) -> CsvInfo | None:
    """The manifest entry of one CSV (from its directory's manifest), or None."""
    return read_manifest(csv.parent).get(csv.name)
