"""Session state: the configuration, the console, and data loaded lazily, once per session."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from .config import Config
from .errors import PrecisionToolError
from .formats.datadir import DataRoot
from .formats.golden import GoldenIndex, read_golden
from .formats.graph_names import BUILD_STAGE, find_graph_files, prefer_ge_proto
from .formats.graph_cache import CACHE_DIR, read_graph_cached
from .formats.graph_model import GraphDesc, Model, Op
from .formats.dump_names import DumpListing
from .formats.tree import DumpTree, StepDir


@dataclass(frozen=True)
class OpRef:
    """An op found in one of the loaded Build graphs."""

    debug: str  # "debug_0"
    model: Model
    graph: GraphDesc
    op: Op


@dataclass
class Context:
    """What every command gets: settings, console, and the data, each loaded on first use.

    Loaded data is cached for the session; ``reload()`` drops the cache (after new dumps land).
    """

    config: Config
    console: Console
    error_console: Console | None = None  # where errors go; the main console when None
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)
    # The completer loads op names in a background thread while commands may load the same data.
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def data(self) -> DataRoot:
        return DataRoot(self.config.data_root_dir)

    def reload(self) -> None:
        with self._lock:
            self._cache.clear()

    def _cached(self, key: Any, load):
        with self._lock:
            if key not in self._cache:
                self._cache[key] = load()
            return self._cache[key]

    def debug_names(self) -> list[str]:
        """The NPU debug dirs present (``debug_0``, ``debug_1``...)."""
        return [p.name for p in self.data.debug_dirs()]

    def models(self, debug: str = "debug_0", stage: str = BUILD_STAGE) -> list[Model]:
        """The graphs of one debug dir (empty when it has none): its Build graphs, or those of
        another compilation ``stage``; a graph dumped both as ge_proto and ge_onnx is read once."""
        def load():
            graph_dir = self.data.graph_dir(debug)
            if not graph_dir.is_dir():
                return []
            cache = self.config.temp_dir / CACHE_DIR
            return prefer_ge_proto([read_graph_cached(p, cache, workers=self.config.worker_count)
                                    for p in find_graph_files(graph_dir, stage)])
        return self._cached(("models", debug, stage), load)

    def ops(self, debug: str | None = None, stage: str = BUILD_STAGE) -> list[OpRef]:
        """Every op of every loaded graph, of one debug dir or of all of them."""
        debugs = [debug] if debug else self.debug_names()
        return [OpRef(d, m, g, op) for d in debugs for m in self.models(d, stage)
                for g in m.graphs for op in g.ops]

    def dump_tree(self, debug: str = "debug_0") -> DumpTree:
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

    def golden(self) -> GoldenIndex:
        directory = self.data.golden_dir
        if not directory.is_dir():
            raise PrecisionToolError("no TF golden dumps here", directory)
        return self._cached("golden", lambda: read_golden(directory))

    def temp_dir(self, *parts: str) -> Path:
        """A directory under the data root's ``temp/`` (created): the only place the tool writes."""
        path = self.config.temp_dir.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path
