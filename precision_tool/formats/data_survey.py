"""A data root at a glance, for the shell's banner and the one-shot usage screen: what each
``npu/debug_N`` holds, the golden tensors, an msprobe dump, counted without reading any tensor
data. Apart from :mod:`.datadir` so that a command that only reads the layout (every ``vc``)
does not make the survey's classes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PrecisionToolError
from .datadir import DataRoot, require_data_root
from .graph_names import find_graph_files
from .tree import DumpTree


@dataclass(frozen=True)
class DebugSurvey:
    """What one ``npu/debug_N`` directory holds."""

    name: str
    graph_files: list[Path]
    runs: list[str | None]
    newest_run: str | None
    step_dirs: int  # step directories in the newest run
    dump_files: int  # dump files in the newest run


@dataclass(frozen=True)
class MsprobeSurvey:
    """An msprobe dump in ``npu/`` or ``bench/``: its rank directories and steps."""

    side: str  # "npu" or "bench"
    ranks: int
    steps: tuple[int, ...]


@dataclass(frozen=True)
class DataSurvey:
    """A data root at a glance: for the shell banner and the one-shot usage screen."""

    root: Path
    debug: list[DebugSurvey] = field(default_factory=list)
    golden_tensors: int = 0
    golden_invalid: int = 0
    problems: list[str] = field(default_factory=list)
    msprobe: list[MsprobeSurvey] = field(default_factory=list)


def _graph_files(graph_dir: Path, problems: list[str]) -> list[Path]:
    if not graph_dir.is_dir():
        return []
    try:
        return find_graph_files(graph_dir)
    except PrecisionToolError as exc:  # a badly named graph: say so, survey the rest
        problems.append(str(exc))
        return []


def _survey_debug(root: DataRoot, debug_dir: Path, problems: list[str]) -> DebugSurvey:
    graphs = _graph_files(root.graph_dir(debug_dir.name), problems)
    runs, newest, steps, files = [], None, 0, 0
    if root.dump_root(debug_dir.name).is_dir():
        try:
            tree = DumpTree(root.dump_root(debug_dir.name))
            runs, newest = tree.runs(), tree.newest_run()
            selected = tree.select(run=newest)
            steps = len(selected)
            files = sum(len(tree.listing(s).files) for s in selected)
        except PrecisionToolError as exc:
            problems.append(str(exc))
    return DebugSurvey(debug_dir.name, graphs, runs, newest, steps, files)


def _survey_msprobe(root: DataRoot) -> list[MsprobeSurvey]:
    from .msprobe_tree import find_tree

    found = []
    for side, where in (("npu", root.npu), ("bench", root.bench)):
        if not where.is_dir():
            continue
        try:
            tree = find_tree(where)
        except PrecisionToolError:  # not an msprobe dump: a GE data root's npu/
            continue
        if tree.ranks:
            found.append(MsprobeSurvey(side, len(tree.ranks), tree.steps))
    return found


def survey(path: str | os.PathLike) -> DataSurvey:
    """Count what a data root holds without reading any tensor data (nor any dump.json)."""
    root = require_data_root(path)
    problems: list[str] = []
    msprobe = _survey_msprobe(root)
    if msprobe and msprobe[0].side == "npu":
        return DataSurvey(root.path, problems=problems, msprobe=msprobe)
    debug = [_survey_debug(root, d, problems) for d in root.debug_dirs()]
    golden_count = golden_invalid = 0
    if root.golden_dir.is_dir():
        from .golden import read_golden  # numpy: only when there is a golden directory to count

        try:
            golden = read_golden(root.golden_dir)
            golden_count, golden_invalid = len(golden), len(golden.invalid)
        except PrecisionToolError as exc:
            problems.append(str(exc))
    return DataSurvey(root.path, debug, golden_count, golden_invalid, problems)
