"""Rows computed before, kept so that a re-run or a resumed run computes only what is missing.

A row is keyed by what determines it: both sides' files (path, size, modification time in ns),
the tensor (kind, index, host layout) and the golden file, the metric set, and this cache's
schema and the tool's version (a new release may compute a metric differently). Only the
comparison's outcome is stored (metrics, StandardDeviation text, reason, dtypes and shape); the
row's position and names come from the pairing, which is redone on every run, so a changed
graph re-pairs even when the tensors are cached.

The store is one SQLite file under the output root (``temp/row_cache/rows.sqlite``;
stdlib ``sqlite3``, nothing to install): rows are committed in batches as they come, so a run
killed at any moment keeps what it committed, and SQLite's journal keeps the file whole.
SQLite opens its files itself, so its directory is made through the output root (no link at
or below it) and a link planted at the database's or its journal's name is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from .. import __version__
from ..formats.atomic import OutputError, OutputRoot
from .pairing import DumpSide, NpySide, PairTask
from .result import CompareRow

log = logging.getLogger("precision_tool")
CACHE_DIR, CACHE_NAME = "row_cache", "rows.sqlite"
SCHEMA = 1
_BATCH_ROWS = 256
_BATCH_SECONDS = 2.0


def _file_stamp(path: Path) -> list:
    info = os.stat(path)
    return [str(path), info.st_size, info.st_mtime_ns]


def _side_key(side: DumpSide | NpySide) -> list:
    if isinstance(side, DumpSide):
        return ["dump", *_file_stamp(side.path), side.kind, side.index, side.origin_format]
    return ["npy", *_file_stamp(side.path)]


def metric_identities(metrics) -> list[str]:
    """What identifies each metric in a key: its name and its formula's module and name (a
    custom metric reusing a built-in's name must not reuse its rows)."""
    return [f"{m.name}={getattr(m.compute, '__module__', '?')}.{getattr(m.compute, '__qualname__', '?')}"
            for m in metrics]


def task_key(task: PairTask, metric_names: Sequence[str]) -> str | None:
    """The cache key of a comparable task; None when it is not comparable or a file is gone."""
    if not task.comparable:
        return None
    try:
        parts = [SCHEMA, __version__, list(metric_names), _side_key(task.left), _side_key(task.right)]
    except OSError:
        return None
    return hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _outcome(row: CompareRow) -> str:
    return json.dumps({"metrics": row.metrics, "std": row.std_text, "reason": row.fail_reason,
                       "npu_dtype": row.npu_dtype, "golden_dtype": row.golden_dtype,
                       "shape": list(row.shape) if row.shape is not None else None})


def _with_outcome(task: PairTask, stored: str) -> CompareRow:
    data = json.loads(stored)
    shape = tuple(data["shape"]) if data["shape"] is not None else None
    base = CompareRow(index=task.index, op_type=task.op_type, npu_name=task.npu_name,
                      npu_dtype=data["npu_dtype"], npu_address=None, ground_truth=task.ground_truth,
                      golden_dtype=data["golden_dtype"], tensor_index=task.tensor_index, shape=shape)
    return replace(base, metrics={k: float(v) for k, v in data["metrics"].items()},
                   std_text=data["std"], fail_reason=data["reason"])


class RowCache:
    """The rows of earlier runs, in one SQLite file under ``root``. Use as a context manager.

    The cache only ever saves work: when its file cannot be opened, read or written (a full
    disk, a damaged file), it turns itself off and the run computes every row as without it.
    A planted link at its names is the one refusal (an OutputError).
    """

    def __init__(self, root: OutputRoot, *parts: str) -> None:
        self.root, self.parts = root, parts or (CACHE_DIR,)
        self.path = root.path.joinpath(*parts, CACHE_NAME)
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[str, str]] = []
        self._last_flush = time.monotonic()

    def __enter__(self) -> RowCache:
        directory = self.root.directory(*self.parts)
        for name in (CACHE_NAME, *(CACHE_NAME + s for s in ("-wal", "-shm", "-journal"))):
            if (directory / name).is_symlink():
                raise OutputError("is a symbolic link: the row cache is never opened through one",
                                  directory / name)
        self.path = directory / CACHE_NAME
        try:
            self._db = sqlite3.connect(self.path, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, outcome TEXT NOT NULL)")
        except sqlite3.Error as exc:
            self._off(exc)
        return self

    def _off(self, exc: Exception) -> None:
        log.debug("row cache %s turned off: %s", self.path, exc)
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
        self._db, self._pending = None, []

    def __exit__(self, *exc) -> None:
        self.flush()  # also after Ctrl-C: what was computed is kept for the resumed run
        if self._db is not None:
            self._db.close()
            self._db = None

    def get(self, key: str) -> str | None:
        """The stored outcome of ``key``, or None."""
        if self._db is None:
            return None
        try:
            found = self._db.execute("SELECT outcome FROM rows WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._off(exc)
            return None
        return found[0] if found else None

    def put(self, key: str, row: CompareRow) -> None:
        """Store ``row``'s outcome under ``key`` (committed in batches)."""
        if self._db is None:
            return
        self._pending.append((key, _outcome(row)))
        if len(self._pending) >= _BATCH_ROWS or time.monotonic() - self._last_flush > _BATCH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Commit what is pending."""
        if self._pending and self._db is not None:
            try:
                with self._db:
                    self._db.executemany("INSERT OR REPLACE INTO rows VALUES (?, ?)", self._pending)
            except sqlite3.Error as exc:  # a full disk: the run goes on without the cache
                self._off(exc)
            self._pending.clear()
        self._last_flush = time.monotonic()


Engine = Callable[[list[PairTask]], Iterator[CompareRow]]


def cached_rows(tasks: Iterable[PairTask], metric_names: Sequence[str], cache: RowCache | None,
                compute: Engine, stats: dict | None = None) -> Iterator[CompareRow]:
    """One row per task, in task order: from ``cache`` where it has the task, else from
    ``compute`` (called once, on the tasks still to do, in order), storing what it computes.

    ``stats`` (if given) gets ``reused`` and ``computed`` counts.
    """
    tasks = list(tasks)
    if cache is None:
        yield from compute(tasks)
        return
    keys = [task_key(task, metric_names) for task in tasks]
    stored = [cache.get(key) if key else None for key in keys]
    todo = [task for task, found in zip(tasks, stored) if found is None]
    fresh = compute(todo)
    counts = stats if stats is not None else {}
    counts.update(reused=len(tasks) - len(todo), computed=sum(1 for t in todo if t.comparable))
    for task, key, found in zip(tasks, keys, stored):
        if found is not None:
            yield _with_outcome(task, found)
            continue
        row = next(fresh)
        if key is not None and row.compared:
            cache.put(key, row)
        yield row
