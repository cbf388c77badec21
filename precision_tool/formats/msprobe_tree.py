"""The directory tree msprobe dumps into: dump root, step directories, rank directories.

msprobe writes ``{dump_path}/step{N}/{rank}/`` where ``{rank}`` is ``rank{R}`` (the process had
a distributed rank), ``proc{pid}`` (it had none: single-device runs, data-loading processes of
a big job), or a bare ``rank`` (older single-device runs). MindSpore with a ``jit`` cell at
level L0/mix writes two such trees side by side, ``{dump_path}/graph/step{N}/...`` and
``{dump_path}/pynative/step{N}/...``. A rank directory holds ``dump.json``, ``stack.json``,
``construct.json`` and, when tensors were saved, ``dump_tensor_data/``.

:func:`find_tree` takes any of the three levels (a dump root, one step directory, one rank
directory) and says which it was given. Nothing here reads a ``dump.json`` beyond its header
(:func:`.msprobe_json.read_header`), and nothing is ever written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError
from .dump_names import check_dir, is_file_entry, scan_dir

if TYPE_CHECKING:  # read when a header is asked for: every data root is asked whether it is a tree
    from .msprobe_json import DumpHeader

__all__ = ["MsprobeTree", "RankDir", "find_tree", "is_msprobe_dump"]

DUMP_JSON, STACK_JSON, CONSTRUCT_JSON = "dump.json", "stack.json", "construct.json"
TENSOR_DIR = "dump_tensor_data"
MODES = ("graph", "pynative")  # MindSpore's two trees when a jit cell is dumped
ROOT, STEP, RANK = "root", "step", "rank"
_STEP = re.compile(r"^step([0-9]+)$")
_RANK = re.compile(r"^(rank|proc)([0-9]*)$")


@dataclass(frozen=True)
class RankDir:
    """One rank directory: its path, the step it belongs to (None when a rank directory was
    given that is not in a ``step{N}`` one), its rank (None for ``proc{pid}`` and a bare
    ``rank``), its pid (``proc{pid}`` only), and MindSpore's ``graph``/``pynative`` (else None).
    """

    path: Path
    step: int | None
    rank: int | None
    pid: int | None = None
    mode: str | None = None

    @property
    def name(self) -> str:
        """The directory's name: ``rank0``, ``proc2016``, ``rank``."""
        return self.path.name

    @property
    def dump_json(self) -> Path:
        """Its ``dump.json``."""
        return self.path / DUMP_JSON

    @property
    def stack_json(self) -> Path:
        """Its ``stack.json`` (may be missing: ``extra_info`` off, or level L2)."""
        return self.path / STACK_JSON

    @property
    def construct_json(self) -> Path:
        """Its ``construct.json`` (may be missing)."""
        return self.path / CONSTRUCT_JSON

    @property
    def tensor_dir(self) -> Path:
        """Its ``dump_tensor_data`` directory (missing in statistics mode)."""
        return self.path / TENSOR_DIR

    def header(self) -> DumpHeader:
        """The task, level, framework and ``dump_data_dir`` of its ``dump.json``.

        Raises:
            PrecisionToolError: its ``dump.json`` cannot be read.
        """
        from .msprobe_json import read_header

        return read_header(self.dump_json)


@dataclass(frozen=True)
class MsprobeTree:
    """What :func:`find_tree` found: the path it was given, which level that was (``root``,
    ``step`` or ``rank``), the rank directories holding a ``dump.json`` (by mode, step, then
    ranks before procs, by number) and one line for each directory that was left out."""

    given: Path
    kind: str
    ranks: tuple[RankDir, ...]
    problems: tuple[str, ...] = ()

    @property
    def steps(self) -> tuple[int, ...]:
        """The steps present, in order (none when a lone rank directory was given)."""
        return tuple(sorted({r.step for r in self.ranks if r.step is not None}))

    def at_step(self, step: int | None) -> tuple[RankDir, ...]:
        """The rank directories of ``step`` (None: of no step, a lone rank directory)."""
        return tuple(r for r in self.ranks if r.step == step)


def find_tree(path: str | os.PathLike) -> MsprobeTree:
    """The msprobe dump at ``path``: a dump root (``step*/`` inside, or ``graph/`` and
    ``pynative/`` holding them), one step directory (``rank*/``, ``proc*/`` inside), or one rank
    directory (``dump.json`` inside; the ``dump.json`` itself stands for its directory).

    Raises:
        PrecisionToolError: naming ``path``: not a directory, or none of the three.
    """
    given = Path(path)
    if given.name == DUMP_JSON and given.is_file():
        given = given.parent
    check_dir(given)
    entries = scan_dir(given)
    names = {e.name for e in entries if is_file_entry(e, want_dir=False)}
    dirs = sorted(e.name for e in entries if is_file_entry(e, want_dir=True))
    problems: list[str] = []
    if DUMP_JSON in names:
        rank = _rank_dir(given, _step_of(given.parent), _mode_of(given.parent))
        return MsprobeTree(given, RANK, (rank,))
    if any(_RANK.match(name) for name in dirs):
        ranks = _ranks_in(given, _step_of(given), _mode_of(given), problems)
        return MsprobeTree(given, STEP, ranks, tuple(problems))
    if any(_STEP.match(name) for name in dirs) or any(mode in dirs for mode in MODES):
        return MsprobeTree(given, ROOT, _ranks_under_root(given, dirs, problems), tuple(problems))
    raise PrecisionToolError(
        "no msprobe dump here: expected step*/ directories (a dump root), "
        "rank*/ or proc*/ directories (a step), or a dump.json (a rank)",
        given,
    )


def _ranks_under_root(root: Path, dirs: list[str], problems: list[str]) -> tuple[RankDir, ...]:
    ranks: list[RankDir] = []
    own = root.name if root.name in MODES else None  # given graph/ or pynative/ itself
    trees = [(root, own)] + [(root / mode, mode) for mode in MODES if mode in dirs]
    for tree, mode in trees:
        steps = dirs if tree == root else _dir_names(tree)
        for name in sorted((n for n in steps if _STEP.match(n)), key=_number):
            ranks.extend(_ranks_in(tree / name, _number(name), mode, problems))
    return tuple(ranks)


def _ranks_in(step_dir: Path, step: int | None, mode: str | None, problems: list[str]) -> list[RankDir]:
    found = []
    for name in sorted((n for n in _dir_names(step_dir) if _RANK.match(n)), key=_rank_order):
        where = step_dir / name
        if (where / DUMP_JSON).is_file():
            found.append(_rank_dir(where, step, mode))
        else:
            # msprobe writes dump.json when it starts, so only level L2 (kernel dumps) has none
            problems.append(f"{where}: no dump.json (level L2 writes none): left out")
    if not found:
        problems.append(f"{step_dir}: no rank directory with a dump.json")
    return found


def _dir_names(directory: Path) -> list[str]:
    return [e.name for e in scan_dir(directory) if is_file_entry(e, want_dir=True)]


def _rank_dir(path: Path, step: int | None, mode: str | None) -> RankDir:
    found = _RANK.match(path.name)
    if found is None:
        return RankDir(path, step, None, None, mode)
    number = int(found.group(2)) if found.group(2) else None
    if found.group(1) == "proc":
        return RankDir(path, step, None, number, mode)
    return RankDir(path, step, number, None, mode)


def _step_of(path: Path) -> int | None:
    found = _STEP.match(path.name)
    return int(found.group(1)) if found else None


def _mode_of(path: Path) -> str | None:
    """``graph``/``pynative`` when ``path`` (a step directory) sits in such a tree."""
    return path.parent.name if path.parent.name in MODES and _STEP.match(path.name) else None


def _number(name: str) -> int:
    return int(re.sub(r"[^0-9]", "", name) or -1)


def _rank_order(name: str) -> tuple[int, int]:
    """Ranks before procs, a bare ``rank`` first, then by number."""
    found = _RANK.match(name)
    assert found is not None  # only names that matched are sorted
    return (0 if found.group(1) == "rank" else 1, int(found.group(2) or -1))


def is_msprobe_dump(path: str | os.PathLike) -> bool:
    """Whether ``path`` is an msprobe dump root, step or rank directory (or its dump.json)
    holding at least one rank; never raises."""
    try:
        return bool(find_tree(path).ranks)
    except PrecisionToolError:
        return False
