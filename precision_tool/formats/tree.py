"""NPU dump file names, ``mapping.csv`` aliases and the training dump directory tree.

Pure readers: aliases are resolved in memory; nothing in a dump directory is ever written,
renamed or deleted (FORMATS.md section 2).

How :func:`parse_dump_name` tells the forms apart: split on ``.``; the first field is the op
type, then come op-name fields, then a tail of all-digit fields. The timestamp is the first tail
field with at least 13 digits (real ones have 16; task and stream ids never get near 13). One id
before it is the older ``{type}.{name}.{task}.{timestamp}`` form (stream_id None), two ids are
task and stream; with more, the surplus leading ones belong to a dotted op name (``x.1``). Digit
fields after the timestamp are FFTS+ extras. No id before it, or no timestamp: not a dump name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable

from precision_tool.errors import PrecisionToolError

MAPPING_FILE = "mapping.csv"
_MIN_TIMESTAMP_DIGITS = 13
_OP_TYPE = re.compile(r"^[A-Za-z0-9_\-]+$")
_RUN_NAME = re.compile(r"^[0-9]{14}$")  # YYYYmmddHHMMSS
_LAYOUT_DEPTH = 5  # run / device / model_name / model_id / step
_MAX_STEPS = 1_000_000  # a step range wider than this is surely a typo


@dataclass(frozen=True)
class DumpName:
    """The fields of one NPU dump file name."""

    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp: int
    extra: tuple[int, ...]
    file_name: str

    @property
    def is_opdebug(self) -> bool:
        """True for overflow-debug files (``Opdebug.Node_OpDebug.*``)."""
        return self.op_type == "Opdebug"


@dataclass(frozen=True)
class DumpFileRef:
    """One dump file on disk; ``path.name`` differs from ``name.file_name`` for aliases."""

    path: Path
    name: DumpName


@dataclass(frozen=True)
class Mapping:
    """Aliases read from ``mapping.csv``: short file name -> original file name.

    ``problems`` holds ``(line_number, reason)`` for lines that were not used; line 0 means the
    file as a whole.
    """

    aliases: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[int, str]] = field(default_factory=list)


def parse_dump_name(name: str) -> DumpName | None:
    """Parse an NPU dump file name (any of the three forms); None if it is not one."""
    parts = name.split(".")
    if len(parts) < 4 or not _OP_TYPE.match(parts[0]):
        return None
    tail_start = len(parts)
    while tail_start > 2 and _digits(parts[tail_start - 1]):
        tail_start -= 1
    tail = parts[tail_start:]
    ts_pos = next((i for i, p in enumerate(tail) if len(p) >= _MIN_TIMESTAMP_DIGITS), None)
    if not ts_pos:  # None (no timestamp) or 0 (no task id before it)
        return None
    ids = [int(p) for p in tail[:ts_pos]]
    name_parts = parts[1:tail_start] + tail[: max(0, ts_pos - 2)]
    op_name = ".".join(name_parts)
    if not op_name or not all(name_parts):
        return None
    task, stream = (ids[-2], ids[-1]) if len(ids) >= 2 else (ids[0], None)
    return DumpName(parts[0], op_name, task, stream, int(tail[ts_pos]),
                    tuple(int(p) for p in tail[ts_pos + 1:]), name)


def normalise_op_name(name: str) -> str:
    """The key a graph op name has in dump file names: ``/ . \\`` and spaces become ``_``."""
    for char in "/.\\ ":
        name = name.replace(char, "_")
    return name


def _unsafe(name: str) -> str | None:
    # Both sides become path components, so neither may leave the directory.
    if any(sep in name for sep in ("/", "\\", os.sep, "\0")):
        return "contains a path separator"
    return "contains '..'" if ".." in name else None


def read_mapping(directory: str | os.PathLike) -> Mapping:
    """Read ``directory/mapping.csv`` (lines ``<short_name>,<original_file_name>``).

    Bad lines, unsafe targets (path separators, ``..``) and duplicates are collected in
    ``problems`` instead of raising: one bad line must not hide every other alias. The first
    entry for a short name (or for a target) wins. A missing file gives an empty mapping.
    """
    path = Path(directory) / MAPPING_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Mapping()
    except OSError as exc:
        return Mapping(problems=[(0, f"cannot read {MAPPING_FILE}: {exc.strerror or exc}")])
    mapping, targets = Mapping(), set()
    for number, line in enumerate(raw.splitlines(), start=1):
        reason = _add_mapping_line(mapping.aliases, targets, line)
        if reason:
            mapping.problems.append((number, reason))
    return mapping


def _add_mapping_line(aliases: dict[str, str], targets: set[str], line: bytes) -> str | None:
    """Add one line's alias; the reason it was not used, or None."""
    try:
        text = line.decode("utf-8").strip()
    except UnicodeDecodeError:
        return "not UTF-8 text"
    if not text:
        return None
    short, comma, target = (part.strip() for part in text.partition(","))
    if not comma or not short or not target:
        return f"expected '<short_name>,<file_name>', got {text!r}"
    unsafe = _unsafe(short) or _unsafe(target)
    if unsafe:
        return f"{unsafe}: {text!r}"
    if short in aliases or target in targets:
        return f"duplicate entry: {text!r}"
    aliases[short] = target
    targets.add(target)
    return None


@dataclass(frozen=True)
class DumpListing:
    """The dump files of one step directory, sorted by timestamp, plus what was skipped."""

    directory: Path
    files: list[DumpFileRef]
    skipped: list[tuple[Path, str]]

    @cached_property
    def _by_op(self) -> dict[str, list[DumpFileRef]]:
        groups: dict[str, list[DumpFileRef]] = {}
        for ref in self.files:  # already in timestamp order, so each group is too
            groups.setdefault(normalise_op_name(ref.name.op_name), []).append(ref)
        return groups

    def by_op(self) -> dict[str, list[DumpFileRef]]:
        """Launches per normalised op name, each list sorted by timestamp."""
        return dict(self._by_op)

    def launches(self, op_name: str) -> list[DumpFileRef]:
        """All launches of an op (graph or file spelling), oldest first; empty if none."""
        return list(self._by_op.get(normalise_op_name(op_name), []))

    def latest(self, op_name: str) -> DumpFileRef | None:
        """The default launch of an op: the one with the newest timestamp."""
        group = self._by_op.get(normalise_op_name(op_name))
        return group[-1] if group else None


def _check_dir(directory: Path) -> None:
    if not directory.is_dir():
        why = "not a directory" if directory.exists() else "dump directory does not exist"
        raise PrecisionToolError(why, directory)


def _scan(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except OSError as exc:
        reason = f"cannot list directory: {exc.strerror or exc}"
        raise PrecisionToolError(reason, directory) from exc


def _is_file(entry: os.DirEntry, want_dir: bool = False) -> bool:
    try:
        return entry.is_dir() if want_dir else entry.is_file()
    except OSError:  # e.g. removed while listing: treat as absent
        return False


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()  # str.isdigit alone accepts e.g. superscripts


def list_dump_files(directory: str | os.PathLike) -> DumpListing:
    """List the dump files directly inside one step directory (not recursive).

    File names that are keys of ``mapping.csv`` are resolved through it in memory; all-digit
    names that it lacks, mapping entries without a file, mapping problems and files that are not
    dumps go to ``skipped`` as ``(path, reason)``.
    """
    directory = Path(directory)
    _check_dir(directory)
    entries = _scan(directory)
    mapping = read_mapping(directory)
    skipped = [(directory / MAPPING_FILE, f"line {n}: {why}") for n, why in mapping.problems]
    files: list[DumpFileRef] = []
    present: set[str] = set()
    for entry in entries:
        if entry.name == MAPPING_FILE:
            continue
        path = directory / entry.name
        if not _is_file(entry):
            skipped.append((path, "not a regular file"))
            continue
        present.add(entry.name)
        ref, reason = _resolve_entry(path, mapping)
        if ref is None:
            skipped.append((path, reason))
        else:
            files.append(ref)
    for short in sorted(set(mapping.aliases) - present):
        skipped.append((directory / short, f"{MAPPING_FILE} names it but there is no such file"))
    files.sort(key=lambda ref: (ref.name.timestamp, ref.name.file_name, ref.path.name))
    skipped.sort(key=lambda item: (str(item[0]), item[1]))
    return DumpListing(directory, files, skipped)


def _resolve_entry(path: Path, mapping: Mapping) -> tuple[DumpFileRef | None, str]:
    target = mapping.aliases.get(path.name)
    if target is not None:
        parsed = parse_dump_name(target)
        if parsed is None:
            return None, f"{MAPPING_FILE} maps it to {target!r}, which is not a dump file name"
        return DumpFileRef(path, parsed), ""
    if _digits(path.name):
        return None, f"alias with no entry in {MAPPING_FILE}"
    parsed = parse_dump_name(path.name)
    if parsed is None:
        return None, "not a dump file name"
    return DumpFileRef(path, parsed), ""


def parse_step_spec(spec: str | int | Iterable[int] | None) -> frozenset[int] | None:
    """Parse a ``TF_DUMP_STEP`` value: ``'0'``, ``'0|5|10'``, ranges ``'3-5'``; None = all.

    None and blank strings mean every step. Ranges are inclusive (as the TF adapter's
    ``dump_step`` accepts them).
    """
    if spec is None:
        return None
    if isinstance(spec, bool) or not isinstance(spec, (str, int, list, tuple, set, frozenset)):
        raise PrecisionToolError(f"bad TF_DUMP_STEP {spec!r}: expected steps like '0|5|10'")
    if not isinstance(spec, str):  # a step number, or a collection of them
        spec = "|".join(map(str, spec)) if not isinstance(spec, int) else str(spec)
    if not spec.strip():
        return None
    steps: set[int] = set()
    for token in spec.split("|"):
        steps.update(_parse_step_token(token.strip(), spec))
    return frozenset(steps)


def _parse_step_token(token: str, spec: str) -> range:
    bad = PrecisionToolError(f"bad TF_DUMP_STEP {spec!r}: expected steps like '0|5|10' or '3-5'")
    low, sep, high = token.partition("-")
    low, high = low.strip(), high.strip()
    if not _digits(low) or (sep and not _digits(high)):
        raise bad
    first, last = int(low), int(high) if sep else int(low)
    if last < first or last - first >= _MAX_STEPS:
        raise bad
    return range(first, last + 1)


@dataclass(frozen=True)
class StepDir:
    """One step directory of the training layout; a label is None when the layout lacks it."""

    run: str | None
    device: int | None
    model_name: str | None
    model_id: int | None
    step: int | None
    path: Path


_INT_LABELS = (False, True, False, True, True)  # which of the five labels are numbers


def _label(value: str, numeric: bool) -> str | int | None:
    return value if not numeric else int(value) if _digits(value) else None


def _run_sort_key(run: str | None) -> tuple[int, str]:
    # Timestamp-named runs first, in time order (fixed width, so text order is time order);
    # other names after them, by name; unknown last.
    if run is None:
        return (2, "")
    return (0 if _RUN_NAME.match(run) else 1, run)


def _step_sort_key(s: StepDir) -> tuple:
    nums = [(v is None, v or 0) for v in (s.device, s.model_id, s.step)]
    return (_run_sort_key(s.run), nums[0], s.model_name or "", *nums[1:], str(s.path))


class DumpTree:
    """The NPU dump tree ``{root}/{run}/{device}/{model_name}/{model_id}/{step}/files``.

    Tolerant of partial trees: any directory up to five levels below ``dump_root`` that holds
    dump files directly (or sits at the fifth level) is a step directory. Its labels are its path
    components right-aligned on ``run/device/model_name/model_id/step``, so a root that is a step
    (or model, or device) directory of a real tree keeps its labels, taken from the root's
    ancestors when those fit (numeric device, model id and step); labels that do not fit are None.
    Run names that are not ``YYYYmmddHHMMSS`` timestamps sort after those that are, and are only
    the default run when no timestamped run exists.
    """

    def __init__(self, dump_root: str | os.PathLike):
        self.root = Path(dump_root)
        _check_dir(self.root)
        self.skipped: list[tuple[Path, str]] = []
        self._steps = sorted(self._walk(self.root, 0, []), key=_step_sort_key)
        self.skipped.sort(key=lambda item: str(item[0]))

    def _walk(self, directory: Path, depth: int, rel: list[str]) -> list[StepDir]:
        try:
            entries = _scan(directory)
        except PrecisionToolError as exc:
            if depth == 0:  # nothing at all can be found: say so rather than return nothing
                raise
            self.skipped.append((directory, exc.problem))
            return []
        found: list[StepDir] = []
        if depth == _LAYOUT_DEPTH or any(_looks_like_dump(e) for e in entries):
            found.append(self._step_dir(directory, rel))
        if depth < _LAYOUT_DEPTH:
            for entry in entries:  # any order: the step list is sorted once at the end
                if _is_file(entry, want_dir=True):
                    found += self._walk(directory / entry.name, depth + 1, rel + [entry.name])
        return found

    def _step_dir(self, path: Path, rel: list[str]) -> StepDir:
        missing = _LAYOUT_DEPTH - len(rel)
        outer = [None] * missing
        if missing:
            root = self.root.resolve()
            names = [p.name for p in [root, *root.parents]][:missing][::-1]
            fitted = [_label(n, num) for n, num in zip(names, _INT_LABELS)]
            if len(names) == missing and all(names) and None not in fitted:
                outer = fitted
        inner = [_label(n, num) for n, num in zip(rel, _INT_LABELS[missing:])]
        return StepDir(*outer, *inner, path=path)

    def step_dirs(self) -> list[StepDir]:
        """Every step directory found, sorted by run (oldest first), device, model, id, step."""
        return list(self._steps)

    def runs(self) -> list[str | None]:
        """The run (time) directories, oldest first; see the class note on odd names."""
        return sorted({s.run for s in self._steps}, key=_run_sort_key)

    def newest_run(self) -> str | None:
        """The default run: the newest timestamped one, else the last by name."""
        runs = self.runs()
        stamped = [r for r in runs if r is not None and _RUN_NAME.match(r)]
        return (stamped or runs or [None])[-1]

    def devices(self, run: str | None = None) -> list[int | None]:
        """Device ids present, ascending. In these listings a None filter means "any"."""
        return self._labels("device", run)

    def models(self, run: str | None = None, device: int | str | None = None) -> list[str | None]:
        """Model (GE sub-graph) names present, by name."""
        return self._labels("model_name", run, device)

    def model_ids(self, run: str | None = None, device: int | str | None = None,
                  model: str | None = None) -> list[int | None]:
        """Model ids present, ascending."""
        return self._labels("model_id", run, device, model)

    def steps(self, run: str | None = None, device: int | str | None = None,
              model: str | None = None) -> list[int | None]:
        """Step numbers present, ascending."""
        return self._labels("step", run, device, model)

    def _labels(self, attr: str, *filters: object) -> list:
        values = {getattr(s, attr) for s in self._matching(*filters)}
        return sorted(values, key=lambda v: (v is None, v if v is not None else 0))

    def _matching(self, run: str | None = None, device: int | str | None = None,
                  model: str | None = None) -> list[StepDir]:
        device = _as_int(device)
        return [s for s in self._steps if (run is None or s.run == run)
                and (device is None or s.device == device)
                and (model is None or s.model_name == model)]

    def select(self, run: str | None = None, steps: str | int | Iterable[int] | None = None,
               device: int | str | None = None, model: str | None = None) -> list[StepDir]:
        """The step directories to compare.

        Defaults to the newest run, every device and model, and every step. ``steps`` is a
        ``TF_DUMP_STEP`` value (see :func:`parse_step_spec`); a step directory whose step is
        unknown (a flat tree) passes any step filter. Returns an empty list when nothing matches.
        """
        wanted_steps = parse_step_spec(steps)
        chosen = self._matching(run if run is not None else self.newest_run(), device, model)
        if wanted_steps is None:
            return chosen
        return [s for s in chosen if s.step is None or s.step in wanted_steps]

    def listing(self, step_dir: StepDir) -> DumpListing:
        """The dump files of one step directory."""
        return list_dump_files(step_dir.path)

    def listings(self, step_dirs: Iterable[StepDir]) -> dict[StepDir, DumpListing]:
        """Listings keyed by step directory, so equal file names of two devices never collide."""
        return {s: list_dump_files(s.path) for s in step_dirs}


def _as_int(value: int | str | None) -> int | None:
    if value is None or isinstance(value, int):
        return value
    if _digits(value.strip()):
        return int(value)
    raise PrecisionToolError(f"expected a number, got {value!r}")


def _looks_like_dump(entry: os.DirEntry) -> bool:
    if entry.name == MAPPING_FILE or _digits(entry.name):
        return _is_file(entry)
    return parse_dump_name(entry.name) is not None and _is_file(entry)
