"""The ``precision_data/`` layout (SPEC.md "Data layout") and a survey of what is in it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PrecisionToolError
from .graph_names import find_graph_files
from .tree import DumpTree


@dataclass(frozen=True)
class DataRoot:
    """Where each kind of data lives under a data root. Only ``temp`` is ever written."""

    path: Path

    @property
    def npu(self) -> Path:
        return self.path / "npu"

    def debug_dirs(self) -> list[Path]:
        """``npu/debug_0``, ``npu/debug_1``, ... in order."""
        if not self.npu.is_dir():
            return []
        return sorted(
            (p for p in self.npu.iterdir() if p.is_dir() and p.name.startswith("debug_")),
            key=lambda p: (len(p.name), p.name),
        )

    def dump_root(self, debug: str = "debug_0") -> Path:
        return self.npu / debug / "dump"

    def graph_dir(self, debug: str = "debug_0") -> Path:
        return self.npu / debug / "graph"

    @property
    def bench(self) -> Path:
        """``bench/``: the bench run (GPU, CPU or another NPU run) of an msprobe dump in ``npu/``."""
        return self.path / "bench"

    @property
    def golden_dir(self) -> Path:
        return self.path / "tf" / "dump"

    @property
    def overflow_root(self) -> Path:
        return self.path / "overflow" / "dump"

    @property
    def fusion_file(self) -> Path:
        return self.path / "fusion" / "fusion_result.json"

    @property
    def temp(self) -> Path:
        return self.path / "temp"


def require_data_root(path: str | os.PathLike) -> DataRoot:
    """The layout of the data root ``path``; a PrecisionToolError naming it when there is no
    such directory (every reader of the data root says so in these words)."""
    root = DataRoot(Path(path))
    if not root.path.is_dir():
        raise PrecisionToolError("no such data root (give --data DIR or set DATA_ROOT_DIR)", root.path)
    return root


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
