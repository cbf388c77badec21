"""One vc run's result directory: ``temp/vector_compare/{YYYYmmddHHMMSS}/``, from start to end.

The directory is created when the run starts, with ``run.json`` saying what was asked (the
options, replayed by ``vc --resume``) and how far it got (``running``, then ``complete`` or
``interrupted``). The CSVs appear under their final names only when all are complete, and
``comparisons.json`` (:mod:`.manifest`) beside them. An interrupted run leaves its directory
with ``run.json`` only: ``vc --resume`` continues it there, and thanks to the row cache
(:mod:`.row_cache`) computes only what the interrupted run had not.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from ..formats.atomic import STAMP, OutputRoot, stamps
from .result_csv import RESULTS_DIR, result_path

RUN_FILE = "run.json"
RUNNING, COMPLETE, INTERRUPTED = "running", "complete", "interrupted"


@dataclass(frozen=True)
class CompareOptions:
    """What ``vc`` was asked: enough to run it again the same way."""

    left: str | None = None
    right: str | None = None
    graph: str | None = None
    steps: str | None = None
    devices: str | None = None
    algorithms: str | None = None


@dataclass(frozen=True)
class ResultDir:
    """A run's directory, the output root it is written under, and its time stamp."""

    root: OutputRoot
    path: Path
    when: datetime

    def csv_path(self, tag: str | None) -> Path:
        """``result_{stamp}[_{tag}].csv`` in this directory."""
        return self.path / result_path(self.path, self.when, tag).name

    def mark(self, state: str, options: CompareOptions) -> None:
        """Record ``state`` and ``options`` in ``run.json``."""
        document = {"state": state, "options": asdict(options), "pid": os.getpid(),
                    "stamp": self.when.strftime(STAMP)}
        self.root.write_text(self.path / RUN_FILE, json.dumps(document, indent=1))


def new_result_dir(root: OutputRoot, output: OutputRoot | None = None) -> ResultDir:
    """A new directory for a run: ``output`` (``vc -o DIR``) when given, else a fresh
    ``vector_compare/{stamp}`` of ``root``, created exclusively (a run started in the same
    second takes the next stamp, and never shares or replaces another run's result)."""
    when = datetime.now().replace(microsecond=0)
    if output is not None:
        return ResultDir(output, output.directory(), when)
    path = root.new_directory([RESULTS_DIR], stamps(when))
    return ResultDir(root, path, datetime.strptime(path.name, STAMP))


def _state(directory: Path) -> dict | None:
    try:
        document = json.loads((directory / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def interrupted_run(root: OutputRoot) -> tuple[ResultDir, CompareOptions] | None:
    """The newest run under ``root`` that did not complete, with its options; None when there
    is none."""
    base = root.path / RESULTS_DIR
    dirs = sorted((d for d in base.iterdir() if d.is_dir()), reverse=True) if base.is_dir() else []
    for directory in dirs:
        state = _state(directory)
        if state is None or state.get("state") == COMPLETE:
            continue
        try:
            when = datetime.strptime(state["stamp"], STAMP)
            options = CompareOptions(**{k: v for k, v in state["options"].items()
                                        if k in CompareOptions.__dataclass_fields__})
        except (KeyError, TypeError, ValueError):
            continue
        return ResultDir(root, directory, when), options
    return None


def csv_tags(tags: list[str]) -> list[str | None]:
    """The tag of each CSV name: none for a single CSV, made unique when tags repeat."""
    if len(tags) == 1:
        return [None]
    return [tag if tags.count(tag) == 1 else f"{tag}_{i}" for i, tag in enumerate(tags)]
