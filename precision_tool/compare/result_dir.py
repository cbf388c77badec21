"""One vc run's result directory, from start to end: a new ``temp/vector_compare/{stamp}/``, or
the ``DIR`` of ``vc -o DIR``. A result directory holds one run.

The directory gets ``run.json`` when the run starts: what was asked (the options, which
``vc --resume`` replays and holds a resume's own options against), how far it got
(``running``, then ``complete`` or ``interrupted``), who writes it (a pid: a directory a live
vc is writing is never taken over) and which CSVs of an earlier run there it replaces. The CSVs
appear under their final names only when all are complete, then ``comparisons.json``
(:mod:`.manifest`) naming them, which is when readers switch to the new run; only then are the
earlier run's CSVs removed. An interrupted run leaves ``run.json`` (and any earlier result,
whole): ``vc --resume`` continues it there, and thanks to the row cache (:mod:`.row_cache`)
computes only what the interrupted run had not.

``vc -o DIR`` may name a directory with the user's files in it: only what vc wrote there (the
CSVs its manifest lists, those its ``run.json`` names, and its run's own) is ever replaced, and
a directory with result CSVs of anyone else, which every reader would take in beside ours, is
refused in one line, as are a damaged ``run.json`` or manifest (:mod:`.state_file`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from ..errors import PrecisionToolError
from ..formats.held_dir import OutputError, process_exists
from ..formats.output_root import STAMP, OutputRoot, stamp_time, stamps
from .manifest import is_csv_name, load_manifest
from .result_csv import RESULTS_DIR, result_path
from .state_file import read_json_file, shown, typed_fields

RUN_FILE = "run.json"
RUNNING, COMPLETE, INTERRUPTED = "running", "complete", "interrupted"
STATES = (RUNNING, COMPLETE, INTERRUPTED)
MAX_PID = 2**31 - 1  # a pid_t


@dataclass(frozen=True)
class CompareOptions:
    """What ``vc`` was asked: enough to run it again the same way."""

    left: str | None = None
    right: str | None = None
    graph: str | None = None
    steps: str | None = None
    devices: str | None = None
    algorithms: str | None = None
    mapping: str | None = None  # msprobe dumps: the tensor mapping file (vc --mapping)

    def differing(self, given: CompareOptions) -> list[str]:
        """The options ``given`` sets (not None) to other values than these have: what a
        resume of the run these are the options of refuses."""
        return [
            f.name
            for f in fields(self)
            if getattr(given, f.name) is not None and getattr(given, f.name) != getattr(self, f.name)
        ]


@dataclass(frozen=True)
class _RunFile:
    """The JSON object of run.json, field by field, for :func:`typed_fields`."""

    state: str
    options: dict
    stamp: str
    pid: int | None = None
    replaces: list | None = None
    fresh_since: int | None = None


@dataclass(frozen=True)
class RunState:
    """What a ``run.json`` says (:func:`read_state`)."""

    state: str
    options: CompareOptions
    when: datetime
    pid: int | None = None
    replaces: tuple[str, ...] = ()
    fresh_since: int | None = None  # vc --fresh: reuse only rows computed from then (ns)

    @property
    def writer_alive(self) -> bool:
        """Whether another vc writes the run now: running, by a process that exists and is not
        this one (which runs one command at a time, so its own is one that failed)."""
        return self.state == RUNNING and self.pid is not None and self.pid != os.getpid() and process_exists(self.pid)


def read_state(directory: Path) -> RunState | None:
    """The ``run.json`` of ``directory``; None when it has none.

    Raises:
        PrecisionToolError: naming the file, when it is damaged in any way.
    """
    path = Path(directory) / RUN_FILE
    try:
        found = typed_fields(_RunFile, read_json_file(path), path)
    except FileNotFoundError:
        return None
    missing = [name for name in ("state", "options", "stamp") if name not in found]
    if missing:
        raise PrecisionToolError(f"no {missing[0]}: not the run.json of a vc", path)
    if found["state"] not in STATES:
        raise PrecisionToolError(f"state is {shown(found['state'])}, not one of {', '.join(STATES)}", path)
    options = CompareOptions(**typed_fields(CompareOptions, found["options"], path, "options."))
    try:
        when = stamp_time(found["stamp"])
    except ValueError:
        raise PrecisionToolError(f"stamp is {shown(found['stamp'])}, not YYYYmmddHHMMSS", path) from None
    pid = found.get("pid")
    if pid is not None and not 0 < pid <= MAX_PID:
        raise PrecisionToolError(f"pid is {shown(pid)}, not a process id", path)
    replaces = found.get("replaces") or []
    if not all(isinstance(name, str) and is_csv_name(name) for name in replaces):
        raise PrecisionToolError(f"replaces is {shown(replaces)}, not a list of CSV names", path)
    fresh_since = found.get("fresh_since")
    if fresh_since is not None and fresh_since < 0:
        raise PrecisionToolError(f"fresh_since is {shown(fresh_since)}, not a time in ns", path)
    return RunState(found["state"], options, when, pid, tuple(replaces), fresh_since)


@dataclass(frozen=True)
class ResultDir:
    """A run's directory, the output root it is written under, its time stamp, and the CSVs of
    an earlier run there that it replaces when complete."""

    root: OutputRoot
    path: Path
    when: datetime
    replaces: tuple[str, ...] = ()
    fresh_since: int | None = None  # vc --fresh: its resume reuses only rows computed from then

    def csv_path(self, tag: str | None) -> Path:
        """``result_{stamp}[_{tag}].csv`` in this directory."""
        return self.path / result_path(self.path, self.when, tag).name

    def mark(self, state: str, options: CompareOptions) -> None:
        """Record ``state`` and ``options`` in ``run.json`` (and, until complete, the CSVs
        this run replaces, so a resume or the next run still knows them for vc's)."""
        document = {"state": state, "options": asdict(options), "pid": os.getpid(), "stamp": self.when.strftime(STAMP)}
        if state != COMPLETE and self.replaces:
            document["replaces"] = list(self.replaces)
        if self.fresh_since is not None:
            document["fresh_since"] = self.fresh_since
        self.root.write_text(self.path / RUN_FILE, json.dumps(document, indent=1))

    def replace_previous(self, written: Iterable[Path]) -> None:
        """Remove the earlier run's CSVs that this run did not write again; called once the
        manifest names this run's, so no reader is looking at them any more."""
        kept = {Path(p).name for p in written}
        for name in self.replaces:
            if name not in kept:
                self.root.remove(self.path / name)


def _of_run(name: str, stamp: str) -> bool:
    """Whether ``name`` is a CSV name of the run stamped ``stamp`` (:meth:`ResultDir.csv_path`)."""
    prefix = f"result_{stamp}"
    return name.startswith(prefix) and name[len(prefix) : len(prefix) + 1] in ("_", ".") and is_csv_name(name)


def _prepared(
    root: OutputRoot, path: Path, state: RunState | None, when: datetime, names: list[str] | None = None
) -> ResultDir:
    """The ResultDir of a run stamped ``when`` in ``path`` (whose entries are ``names``), which
    ``state`` (None: no run.json) describes: what vc wrote there is replaced; other result CSVs
    are refused."""
    names = root.names(*root.parts(path)) if names is None else names
    ours = set(load_manifest(path))
    if state is not None:
        stamp = state.when.strftime(STAMP)
        ours.update(state.replaces, (name for name in names if _of_run(name, stamp)))
    csvs = [name for name in names if is_csv_name(name)]
    foreign = sorted(name for name in csvs if name not in ours and (path / name).is_file())
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise PrecisionToolError(
            f"holds result CSVs vc did not write ({', '.join(foreign[:3])}{more}), which would be "
            "read with its result; move them away, or give an empty directory or one vc wrote",
            path,
        )
    return ResultDir(
        root,
        path,
        when,
        tuple(sorted(name for name in csvs if name in ours)),
        state.fresh_since if state is not None and state.when == when else None,
    )


def _refuse_live(state: RunState, path: Path) -> None:
    if state.writer_alive:
        raise PrecisionToolError(
            f"another vc (pid {state.pid}) is writing this run now; let it "
            "end (no vc has that pid? remove this run.json), or use another "
            "directory",
            path / RUN_FILE,
        )


def new_result_dir(root: OutputRoot, output: OutputRoot | None = None) -> ResultDir:
    """A directory for a new run: ``output`` (``vc -o DIR``) when given, else a fresh
    ``vector_compare/{stamp}`` of ``root``, created exclusively (a run started in the same
    second takes the next stamp, and never shares or replaces another run's result).

    ``DIR`` may be new, empty, or hold an earlier vc result beside the user's files; the new
    run's stamp differs from every CSV name there, and it replaces only what vc wrote.

    Raises:
        PrecisionToolError: ``DIR`` holds result CSVs vc did not write, a damaged ``run.json``
            or ``comparisons.json``, or a run another vc is writing now.
    """
    now = datetime.now().replace(microsecond=0)
    if output is None:
        path = root.new_directory([RESULTS_DIR], stamps(now))
        return ResultDir(root, path, stamp_time(path.name))
    path = output.directory()
    state = read_state(path)
    if state is not None:
        _refuse_live(state, path)
    names = output.names()
    stamp = next((s for s in stamps(now) if not any(_of_run(name, s) for name in names)), None)
    if stamp is None:
        raise OutputError("every result CSV name of the next seconds is taken here", path)
    return _prepared(output, path, state, stamp_time(stamp), names)


def resumable_dir(root: OutputRoot) -> tuple[ResultDir, CompareOptions]:
    """The run in the directory ``root`` (``vc --resume DIR``) and its options.

    Raises:
        PrecisionToolError: it has no run.json or a damaged one, the run is complete, or
            another vc is writing it now.
    """
    path = root.path
    state = read_state(path)
    if state is None:
        raise PrecisionToolError("no run.json: not a vc result directory, nothing to resume", path)
    if state.state == COMPLETE:
        raise PrecisionToolError("this run is complete: nothing to resume (vc -o DIR runs it again)", path / RUN_FILE)
    _refuse_live(state, path)
    return _prepared(root, path, state, state.when), state.options


class Resumable(NamedTuple):
    """The run ``vc --resume`` continues, and the damaged run.json passed over on the way (one
    line each: the user sees why a newer run was not the one continued)."""

    directory: ResultDir
    options: CompareOptions
    skipped: tuple[str, ...] = ()


def _newest_first(base: Path) -> list[Path]:
    try:
        return sorted((d for d in base.iterdir() if d.is_dir()), reverse=True)
    except OSError:
        return []


def interrupted_run(root: OutputRoot) -> Resumable | None:
    """The newest run under ``root`` that did not complete and no live vc is writing, with its
    options; None when there is none."""
    skipped = []
    for directory in _newest_first(root.path / RESULTS_DIR):
        try:
            state = read_state(directory)
        except PrecisionToolError as exc:
            skipped.append(str(exc))
            continue
        if state is not None and state.state != COMPLETE and not state.writer_alive:
            return Resumable(_prepared(root, directory, state, state.when), state.options, tuple(skipped))
    return None


def csv_tags(tags: list[str]) -> list[str | None]:
    """The tag of each CSV name: none for a single CSV, made unique when tags repeat."""
    if len(tags) == 1:
        return [None]
    return [tag if tags.count(tag) == 1 else f"{tag}_{i}" for i, tag in enumerate(tags)]
