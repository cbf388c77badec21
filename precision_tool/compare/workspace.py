"""The data of one data root, each piece loaded on first use and kept: the one place that loads.

Commands (through :class:`~precision_tool.context.Context`, which is a Workspace with a
console), the planner, the checks and the public :func:`precision_tool.compare` API all read
Build graphs, dump trees and the golden index through a :class:`Workspace`, so each is parsed
once per session and every caller sees the same objects.

An **msprobe data root** (``npu/`` holds an msprobe dump, PyTorch or MindSpore, and ``bench/``
usually the run to compare it with) is known here and nowhere else (:attr:`Workspace.is_msprobe`).
Its "debug dirs" are ``npu`` (the only one listed) and ``bench``, and their graphs are the rank
directories' calls (:mod:`~precision_tool.formats.msprobe_graph`: one model per rank directory,
named by its path, ``step0/rank0``), so :meth:`Workspace.models`, :meth:`Workspace.ops` and
:meth:`Workspace.find_op` give them to every command built on Build graphs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..errors import PrecisionToolError
from ..formats.datadir import DataRoot, require_data_root
from ..formats.dump_names import DumpFileRef, DumpListing
from ..formats.graph_model import GraphDesc, Model, Op
from ..formats.graph_names import BUILD_STAGE, find_graph_files, prefer_ge_proto
from ..formats.output_root import OutputRoot
from ..formats.tree import DumpTree, StepDir

if TYPE_CHECKING:  # the readers import numpy and protobuf: only when data is loaded
    from ..formats.golden import GoldenIndex
    from ..formats.msprobe_tree import MsprobeTree

MSPROBE_NPU, MSPROBE_BENCH = "npu", "bench"  # the two sides of an msprobe data root
MSPROBE_SIDES = (MSPROBE_NPU, MSPROBE_BENCH)


@dataclass(frozen=True)
class OpRef:
    """An op found in one of the loaded Build graphs."""

    debug: str  # "debug_0"
    model: Model
    graph: GraphDesc
    op: Op


class Workspace:
    """Settings plus the data of ``config.data_root_dir``, loaded lazily, thread-safely, once.

    ``reload()`` drops what was loaded (after new dumps land).
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self._cache: dict[Any, Any] = {}
        # The shell's completer loads op names in a thread while a command may load the same data.
        self._lock = threading.RLock()

    @property
    def data(self) -> DataRoot:
        """Where each kind of data lives under the data root; PrecisionToolError when there is no
        such directory (checked at each use: a shell may outlive the directory, or see it made)."""
        return require_data_root(self.config.data_root_dir)

    @property
    def output_dir(self) -> Path:
        """Where this session's results are: OUTPUT_ROOT (``--out``), else ``temp/`` of the data
        root, which must then exist (PrecisionToolError otherwise, not "no result there")."""
        if self.config.output_root is None:
            require_data_root(self.config.data_root_dir)
        return self.config.temp_dir

    @property
    def output(self) -> OutputRoot:
        """Where this session writes: :attr:`output_dir` (never a data root that is not there)."""
        return self.output_at(self.output_dir)

    def output_at(self, directory: str | Path) -> OutputRoot:
        """``directory`` (a command's ``-o``, or the output root) as the root of what a command
        writes; PrecisionToolError when it lies inside the NPU dumps or the golden directory,
        which the tool never writes to."""
        path = Path(directory).expanduser()
        layout = DataRoot(self.config.data_root_dir)  # no data root: nothing to protect
        for protected in (layout.npu, layout.golden_dir):
            if protected.exists() and _inside(path, protected):
                raise PrecisionToolError(f"refusing to write into the input data under {protected}", path)
        return OutputRoot(path)

    def reload(self) -> None:
        """Forget everything loaded so far."""
        with self._lock:
            self._cache.clear()

    def _cached(self, key: Any, load: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self._cache:
                self._cache[key] = load()
            return self._cache[key]

    def remembered(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``'s value, computed once per ``key`` until :meth:`reload` (a verdict on a
        result file, for every view of the session to share)."""
        return self._cached(key, compute)

    def debug_names(self) -> list[str]:
        """The NPU debug dirs present (``debug_0``, ``debug_1``...); ``npu`` on an msprobe
        data root (whose ``bench`` side is asked for by name)."""
        if self.is_msprobe:
            return [MSPROBE_NPU]
        return [p.name for p in self.data.debug_dirs()]

    # --- msprobe dumps ---------------------------------------------------------------------

    def msprobe_tree(self, side: str = MSPROBE_NPU) -> MsprobeTree | None:
        """The msprobe dump in ``npu/`` (or ``bench/``) of the data root: its rank
        directories; None when that directory holds none."""

        def load() -> MsprobeTree | None:
            from ..formats.msprobe_tree import find_tree

            path = self.data.bench if side == MSPROBE_BENCH else self.data.npu
            try:
                tree = find_tree(path)
            except PrecisionToolError:
                return None
            return tree if tree.ranks else None

        return self._cached(("msprobe tree", side), load)

    @property
    def is_msprobe(self) -> bool:
        """Whether this is an msprobe data root: ``npu/`` holds an msprobe dump (the one test
        of it: every command asks here)."""
        return self.msprobe_tree(MSPROBE_NPU) is not None

    def msprobe_models(self, side: str = MSPROBE_NPU) -> list[Model]:
        """One model per rank directory of the side's msprobe dump, in the tree's order, each
        called by its path in the dump (``step0/rank0``); empty when there is none.

        Raises:
            PrecisionToolError: a ``dump.json`` that cannot be read.
        """
        tree = self.msprobe_tree(side)
        if tree is None:
            return []
        return [self.msprobe_model_at(rank.path, _rank_name(tree.given, rank.path)) for rank in tree.ranks]

    def msprobe_model_at(self, rank_dir: str | os.PathLike, name: str | None = None) -> Model:
        """The model of the msprobe rank directory ``rank_dir`` (anywhere: a result compared
        with ``vc -lt/-rt`` names its own), read once per directory; ``name`` defaults to its
        last two path parts (``step0/rank0``).

        Raises:
            PrecisionToolError: it holds no readable ``dump.json``.
        """
        path = Path(rank_dir)

        def load() -> Model:
            from ..formats.msprobe_graph import read_model_at

            return read_model_at(path, name or self._rank_label(path))

        return self._cached(("msprobe model", _resolved(path)), load)

    def _rank_label(self, rank_dir: Path) -> str:
        """The rank directory's path in ``npu/`` or ``bench/`` (as :meth:`msprobe_models`
        names it), else its last two parts."""
        where = _resolved(rank_dir)
        layout = DataRoot(self.config.data_root_dir)
        for side in (layout.npu, layout.bench):
            if where.is_relative_to(_resolved(side)):
                return _rank_name(_resolved(side), where)
        return _rank_name(where.parent.parent, where)

    def result_model(self, csv: str | os.PathLike) -> Model | None:
        """The model of the rank directory the msprobe result ``csv`` compared (its manifest
        says which); None for any other result.

        Raises:
            PrecisionToolError: that rank directory holds no readable ``dump.json``.
        """
        from .manifest import info_of

        info = info_of(Path(csv))
        return self.msprobe_model_at(info.npu_dump) if info is not None and info.npu_dump else None

    def result_op(self, name: str, csv: str | os.PathLike | None = None) -> OpRef | None:
        """The op a row of the result ``csv`` names: for an msprobe comparison, the call of
        the rank directory it compared (:meth:`result_model`); else :meth:`find_op`."""
        model = self.result_model(csv) if csv is not None else None
        if model is None:
            return self.find_op(name)
        op = model.graphs[0].get(name)
        return None if op is None else OpRef(MSPROBE_NPU, model, model.graphs[0], op)

    def models_in(self, graph_dir: Path | None, stage: str = BUILD_STAGE) -> list[Model]:
        """The graphs of a graph directory (empty when there is none), parsed once: its Build
        graphs, or those of another compilation ``stage``; a graph dumped both as ge_proto and
        ge_onnx is read once (ge_proto wins)."""
        if graph_dir is None:
            return []

        def load() -> list[Model]:
            if not graph_dir.is_dir():
                return []
            return prefer_ge_proto([self._read_graph(p) for p in find_graph_files(graph_dir, stage)])

        return self._cached(("models", Path(graph_dir), stage), load)

    def _read_graph(self, path: Path) -> Model:
        """One graph file, through the graph cache of the output root when there is one."""
        from ..formats.graph_cache import CACHE_DIR, read_graph_cached
        from .numba_line import process_claimed

        try:
            root = self.output
        except PrecisionToolError:  # an output root inside the inputs: said when writing
            root = None
        cache = root.path / CACHE_DIR if root is not None else None
        # the tool's own process writes a new cache from a forked child while it goes on
        return read_graph_cached(path, cache, root=root, store_behind=process_claimed())

    def graph_file(self, path: str | Path) -> Model:
        """The graph file ``path`` (any form :func:`~..formats.graph.read_graph` reads, under any
        name, anywhere), parsed once: the model already loaded from a graph directory when it
        is one of those, else read through the graph cache.

        Raises:
            PrecisionToolError: the file cannot be read as a graph.
        """
        path = Path(path)

        def load() -> Model:
            for key, models in list(self._cache.items()):
                if isinstance(key, tuple) and key[:1] == ("models",) and _same_file(key[1], path.parent):
                    found = [m for m in models if m.source_path and _same_file(m.source_path, path)]
                    if found:
                        return found[0]
            return self._read_graph(path)

        return self._cached(("graph file", _resolved(path)), load)

    def models(self, debug: str = "debug_0", stage: str = BUILD_STAGE) -> list[Model]:
        """The graphs of one debug dir (see :meth:`models_in`); on an msprobe data root, of
        ``npu`` or ``bench`` the calls of each rank directory (:meth:`msprobe_models`)."""
        if debug in MSPROBE_SIDES and self.is_msprobe:
            return self.msprobe_models(debug)
        return self.models_in(self.data.graph_dir(debug), stage)

    def ops(self, debug: str | None = None, stage: str = BUILD_STAGE) -> list[OpRef]:
        """Every op of every loaded graph, of one debug dir or of all of them."""
        debugs = [debug] if debug else self.debug_names()
        return [OpRef(d, m, g, op) for d in debugs for m in self.models(d, stage) for g in m.graphs for op in g.ops]

    def find_ops(self, name: str, debug: str | None = None) -> Iterator[OpRef]:
        """The ops of the loaded Build graphs called ``name``, exactly or in dump-file spelling
        (:meth:`~precision_tool.formats.graph_model.GraphDesc.find_op`), one per graph holding
        it: of ``debug``, else of every debug dir (debug_0's first). How an op a result row or a
        dump file names is found; names users type go through :mod:`.lookup`. Lazy: a debug
        dir's graphs are loaded only when the ops before do not end the search.

        Raises:
            PrecisionToolError: a graph dump that cannot be read.
        """
        for each in [debug] if debug else self.debug_names():
            for model in self.models(each):
                for graph, op in model.find_ops(name):
                    yield OpRef(each, model, graph, op)

    def find_op(self, name: str, debug: str | None = None) -> OpRef | None:
        """The first of :meth:`find_ops`, or None when no loaded graph holds ``name``."""
        return next(self.find_ops(name, debug), None)

    def dump_tree(self, debug: str = "debug_0") -> DumpTree:
        """The dump tree of one debug dir; PrecisionToolError when it has no dumps."""
        root = self.data.dump_root(debug)
        if not root.is_dir():
            raise PrecisionToolError("no NPU dumps here", root)
        return self._cached(("tree", debug), lambda: DumpTree(root))

    def step_listings(self, debug: str = "debug_0") -> dict[StepDir, DumpListing]:
        """The dump files of the newest run, in the steps of TF_DUMP_STEP."""

        def load():
            tree = self.dump_tree(debug)
            return tree.listings(tree.select(steps=self.config.tf_dump_step))

        return self._cached(("listings", debug), load)

    def op_dumps(self, ref: OpRef) -> list[tuple[StepDir, DumpFileRef]]:
        """The op's latest launch in each selected step dir of the newest run that holds one,
        of the op's own graph: the step dirs named after it (the dump's model name), else those
        named after no other graph loaded (a same-named op of another graph is not this one)."""
        found = [(step, listing.latest(ref.op.name)) for step, listing in self.step_listings(ref.debug).items()]
        found = [(step, file) for step, file in found if file is not None]
        own = [item for item in found if item[0].model_name in (ref.graph.name, ref.model.name)]
        if own:
            return own
        others = {
            name for model in self.models(ref.debug) for name in (model.name, *(graph.name for graph in model.graphs))
        }
        return [item for item in found if item[0].model_name not in others]

    def golden(self) -> GoldenIndex:
        """The TF golden index; PrecisionToolError when the golden directory is missing."""
        from ..formats.golden import read_golden

        directory = self.data.golden_dir
        if not directory.is_dir():
            raise PrecisionToolError("no TF golden dumps here", directory)
        return self._cached("golden", lambda: read_golden(directory))


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def _same_file(a: Path, b: Path) -> bool:
    return _resolved(Path(a)) == _resolved(Path(b))


def _rank_name(base: Path, rank_dir: Path) -> str:
    """``step0/rank0``: the rank directory's path under ``base``, else its name."""
    try:
        relative = rank_dir.relative_to(base).as_posix()
    except ValueError:
        return rank_dir.name
    return rank_dir.name if relative == "." else relative


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False
