"""NPU dump file names, ``mapping.csv`` aliases and the listing of one step directory.

Pure readers: aliases are resolved in memory; nothing in a dump directory is ever written,
renamed or deleted (FORMATS.md section 2).

How :func:`parse_dump_name` tells the forms apart: split on ``.``; the first field is the op
type, then come op-name fields, then a tail of all-digit fields. The timestamp is the first tail
field with at least 13 digits (real ones have 16; task and stream ids never get near 13). Not
every writer counts in microseconds since 1970: a nano dump's is 9 digits
(``ConcatV2D.concatv2.0.0.550288648``, msprobe's sample); so without a 13-digit field the
timestamp is the longest tail field after the first (the last of them on a tie), since ids and
FFTS+ extras are short numbers. One id before it is the older ``{type}.{name}.{task}.{timestamp}``
form (stream_id None), two ids are task and stream; with more, the surplus leading ones belong
to a dotted op name (``x.1``). Digit fields after the timestamp are FFTS+ extras. No id before
it, or no timestamp: not a dump name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from precision_tool.errors import PrecisionToolError

from .files import child_prefix, read_regular

MAPPING_FILE = "mapping.csv"
MAX_MAPPING_BYTES = 64 << 20  # a line of two file names per aliased file: far more is not one
_MIN_TIMESTAMP_DIGITS = 13
_OP_TYPE = re.compile(r"^[A-Za-z0-9_\-]+$")


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
    """One dump file on disk; ``path.name`` differs from ``name.file_name`` for aliases.

    ``location`` is the file's path as text, what the pairing and a comparison open; ``path``
    makes it a :class:`~pathlib.Path` when asked (a listing of thousands of files built one
    each: docs/performance.md, "Golden paths as text").
    """

    location: str
    name: DumpName

    @property
    def path(self) -> Path:
        """The file's path."""
        return Path(self.location)


@dataclass(frozen=True)
class Mapping:
    """Aliases read from ``mapping.csv``: short file name -> original file name.

    ``problems`` holds ``(line_number, reason)`` for lines that were not used; line 0 means the
    file as a whole.
    """

    aliases: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[int, str]] = field(default_factory=list)

    @property
    def unread(self) -> str | None:
        """Why the file as a whole was not read (a FIFO, too large, unreadable), or None."""
        return next((why for line, why in self.problems if line == 0), None)

    def skipped(self, directory: Path) -> list[tuple[Path, str]]:
        """The problems as a listing's ``(path, reason)`` entries for ``directory``."""
        return [(directory / MAPPING_FILE, f"line {line}: {why}" if line else why) for line, why in self.problems]


def parse_dump_name(name: str) -> DumpName | None:
    """Parse an NPU dump file name (any of the three forms); None if it is not one."""
    parts = name.split(".")
    if len(parts) < 4 or not _OP_TYPE.match(parts[0]):
        return None
    tail_start = len(parts)
    while tail_start > 2 and all_digits(parts[tail_start - 1]):
        tail_start -= 1
    tail = parts[tail_start:]
    ts_pos = _timestamp_position(tail)
    if not ts_pos:  # None (no timestamp) or 0 (no task id before it)
        return None
    ids = [int(p) for p in tail[:ts_pos]]
    name_parts = parts[1:tail_start] + tail[: max(0, ts_pos - 2)]
    op_name = ".".join(name_parts)
    if not op_name or not all(name_parts):
        return None
    task, stream = (ids[-2], ids[-1]) if len(ids) >= 2 else (ids[0], None)
    return DumpName(parts[0], op_name, task, stream, int(tail[ts_pos]), tuple(int(p) for p in tail[ts_pos + 1 :]), name)


def _timestamp_position(tail: list[str]) -> int | None:
    """Where the timestamp is among the all-digit ``tail`` fields (see the module's docstring)."""
    long = next((i for i, p in enumerate(tail) if len(p) >= _MIN_TIMESTAMP_DIGITS), None)
    if long is not None or len(tail) < 2:
        return long
    return max(range(1, len(tail)), key=lambda i: (len(tail[i]), i))


_NORMALISE = str.maketrans({"/": "_", ".": "_", "\\": "_", " ": "_"})


def normalise_op_name(name: str) -> str:
    """The key a graph op name has in dump file names: ``/ . \\`` and spaces become ``_``."""
    return name.translate(_NORMALISE)


def _unsafe(name: str) -> str | None:
    # Both sides become path components, so neither may leave the directory.
    if any(sep in name for sep in ("/", "\\", os.sep, "\0")):
        return "contains a path separator"
    return "contains '..'" if ".." in name else None


def read_mapping(directory: str | os.PathLike) -> Mapping:
    """Read ``directory/mapping.csv`` (lines ``<short_name>,<original_file_name>``).

    Bad lines, unsafe targets (path separators, ``..``) and duplicates are collected in
    ``problems`` instead of raising: one bad line must not hide every other alias. The first
    entry for a short name (or for a target) wins. A missing file gives an empty mapping; one
    that is not a regular file, or is larger than :data:`MAX_MAPPING_BYTES`, is not read (its
    problem is line 0's).
    """
    path = Path(directory) / MAPPING_FILE
    if not path.exists():
        return Mapping()
    try:
        raw = read_regular(path, MAPPING_FILE, MAX_MAPPING_BYTES)
    except PrecisionToolError as exc:
        return Mapping(problems=[(0, exc.problem)])
    mapping, targets = Mapping(), set()
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 BOM (Windows editors) is no part of a name
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
    """The dump files of one step directory, sorted by timestamp, plus what was skipped, and why
    its ``mapping.csv`` was not read at all (None when it was, or there is none)."""

    directory: Path
    files: list[DumpFileRef]
    skipped: list[tuple[Path, str]]
    unread_mapping: str | None = None

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


def check_dir(directory: Path) -> None:
    """Raise :class:`PrecisionToolError` naming ``directory`` unless it is a directory."""
    if not directory.is_dir():
        why = "not a directory" if directory.exists() else "dump directory does not exist"
        raise PrecisionToolError(why, directory)


def scan_dir(directory: Path) -> list[os.DirEntry]:
    """The entries of ``directory``; :class:`PrecisionToolError` naming it when unreadable."""
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except OSError as exc:
        reason = f"cannot list directory: {exc.strerror or exc}"
        raise PrecisionToolError(reason, directory) from exc


def is_file_entry(entry: os.DirEntry, want_dir: bool = False) -> bool:
    """Whether ``entry`` is a regular file (a directory with ``want_dir``); False if it vanished."""
    try:
        return entry.is_dir() if want_dir else entry.is_file()
    except OSError:  # e.g. removed while listing: treat as absent
        return False


def all_digits(text: str) -> bool:
    """Whether ``text`` is one or more ASCII digits."""
    return text.isascii() and text.isdigit()  # str.isdigit alone accepts e.g. superscripts


def list_dump_files(directory: str | os.PathLike) -> DumpListing:
    """List the dump files directly inside one step directory (not recursive).

    File names that are keys of ``mapping.csv`` are resolved through it in memory; all-digit
    names that it lacks, mapping entries without a file, mapping problems and files that are not
    dumps go to ``skipped`` as ``(path, reason)``.
    """
    directory = Path(directory)
    check_dir(directory)
    entries = scan_dir(directory)
    mapping = read_mapping(directory)
    skipped = mapping.skipped(directory)
    files: list[DumpFileRef] = []
    present: set[str] = set()
    prefix = child_prefix(directory)  # each file's text: no Path a file
    for entry in entries:
        if entry.name == MAPPING_FILE:
            continue
        if not is_file_entry(entry):
            skipped.append((directory / entry.name, "not a regular file"))
            continue
        present.add(entry.name)
        ref, reason = _resolve_entry(entry.name, prefix + entry.name, mapping)
        if ref is None:
            skipped.append((directory / entry.name, reason))
        else:
            files.append(ref)
    for short in sorted(set(mapping.aliases) - present):
        skipped.append((directory / short, f"{MAPPING_FILE} names it but there is no such file"))
    files.sort(key=lambda ref: (ref.name.timestamp, ref.name.file_name, os.path.basename(ref.location)))
    skipped.sort(key=lambda item: (str(item[0]), item[1]))
    return DumpListing(directory, files, skipped, mapping.unread)


def _resolve_entry(file_name: str, location: str, mapping: Mapping) -> tuple[DumpFileRef | None, str]:
    """The file ``file_name`` at ``location`` as a dump file, or None and why it is not one."""
    target = mapping.aliases.get(file_name)
    if target is not None:
        parsed = parse_dump_name(target)
        if parsed is None:
            return None, f"{MAPPING_FILE} maps it to {target!r}, which is not a dump file name"
        return DumpFileRef(location, parsed), ""
    if all_digits(file_name):
        return None, f"alias with no entry in {MAPPING_FILE}"
    parsed = parse_dump_name(file_name)
    if parsed is None:
        return None, "not a dump file name"
    return DumpFileRef(location, parsed), ""
