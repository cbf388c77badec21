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
from datetime import datetime, timedelta
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.atomic import atomic_write
from .result_csv import result_path

RUN_FILE = "run.json"
RUNNING, COMPLETE, INTERRUPTED = "running", "complete", "interrupted"
_STAMP = "%Y%m%d%H%M%S"


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
    """A run's directory, its time stamp, and whether the run created it (else ``-o DIR``)."""

    path: Path
    when: datetime
    created: bool

    def csv_path(self, tag: str | None) -> Path:
        """``result_{stamp}[_{tag}].csv`` in this directory."""
        return self.path / result_path(self.path, self.when, tag).name

    def mark(self, state: str, options: CompareOptions) -> None:
        """Record ``state`` and ``options`` in ``run.json``."""
        document = {"state": state, "options": asdict(options), "pid": os.getpid(),
                    "stamp": self.when.strftime(_STAMP)}
        with atomic_write(self.path / RUN_FILE) as handle:
            json.dump(document, handle, indent=1)


def _vector_compare_dir(output_root: Path) -> Path:
    return output_root / "vector_compare"


def new_result_dir(data_root: Path, output: str | None) -> ResultDir:
    """A new directory for a run: ``output`` when given, else a fresh time-stamped one (the
    next second when this second's exists)."""
    when = datetime.now().replace(microsecond=0)
    if output:
        path = Path(output)
        created = not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        return ResultDir(path, when, created)
    while True:
        path = result_path(data_root, when).parent
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir()  # exclusive: a run started in the same second takes the next stamp
            return ResultDir(path, when, True)
        except FileExistsError:
            when += timedelta(seconds=1)
        except OSError as exc:
            raise PrecisionToolError(f"cannot create the result directory: {exc.strerror or exc}",
                                     path) from None


def _state(directory: Path) -> dict | None:
    try:
        document = json.loads((directory / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def interrupted_run(data_root: Path) -> tuple[ResultDir, CompareOptions] | None:
    """The newest run that did not complete, with its options; None when there is none."""
    base = _vector_compare_dir(Path(data_root) / "temp")
    dirs = sorted((d for d in base.iterdir() if d.is_dir()), reverse=True) if base.is_dir() else []
    for directory in dirs:
        state = _state(directory)
        if state is None or state.get("state") == COMPLETE:
            continue
        try:
            when = datetime.strptime(state["stamp"], _STAMP)
            options = CompareOptions(**{k: v for k, v in state["options"].items()
                                        if k in CompareOptions.__dataclass_fields__})
        except (KeyError, TypeError, ValueError):
            continue
        return ResultDir(directory, when, False), options
    return None


def csv_tags(tags: list[str]) -> list[str | None]:
    """The tag of each CSV name: none for a single CSV, made unique when tags repeat."""
    if len(tags) == 1:
        return [None]
    return [tag if tags.count(tag) == 1 else f"{tag}_{i}" for i, tag in enumerate(tags)]
