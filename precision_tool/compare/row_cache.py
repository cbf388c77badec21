"""Rows computed before, kept so that a re-run or a resumed run computes only what is missing.

A row is keyed by what determines it: what both sides' files are
(:mod:`~precision_tool.formats.file_identity`: the absolute path with its directories' links
resolved, device and inode, size, modification and status-change times in ns, and a digest of
sampled bytes; found once per file per run), the tensor (kind, index, host layout), the metric
set, and this cache's schema and the tool's version (a new release may compute a metric
differently). So a file rewritten with its size and times restored, or another data root
opened by the same relative path, is compared again; what is trusted is said in that module's
docstring. Only the comparison's outcome is stored (metrics, StandardDeviation text, reason,
dtypes and shape); the row's position and names come from the pairing, which is redone on every
run, so a changed graph re-pairs even when the tensors are cached. The keys are made in
:mod:`.row_keys`: here, up front, when the store may hold some of the run's rows; else by the
engine, where each pair's files are read (:func:`cached_rows`).

The store is one SQLite file under the output root (``temp/row_cache/rows.sqlite``;
stdlib ``sqlite3``, nothing to install): rows are committed in batches as they come, so a run
killed at any moment keeps what it committed, and SQLite's journal keeps the file whole.
SQLite opens its files itself, so its directory is made through the output root (no link at
or below it) and a link planted at the database's or its journal's name is refused.
A damaged store (not SQLite, a table of other columns, a malformed row) is never trusted: the
cache turns itself off with one line and every row is computed, as with ``--fresh``.

Each outcome records when it was computed (``at``, ns since the epoch; rows of older versions
have none): ``vc --fresh`` reuses nothing but still stores what it computes, and its resume
reuses only the rows computed since the fresh run started (``since``), so a resumed fresh run
computes only what is missing and still nothing older.
"""

from __future__ import annotations

import json
import sqlite3
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from json.encoder import encode_basestring_ascii

from ..formats.held_dir import OutputError
from ..formats.output_root import OutputRoot
from ..formats.text import shape_text
from .golden_pairing import PairTask
from .result import CompareRow
from .row_keys import SCHEMA, RowKeys

CACHE_DIR, CACHE_NAME = "row_cache", "rows.sqlite"
_COLUMNS = [("key", 1), ("outcome", 0)]  # (name, primary key) of the one table
_UNREAD = "every row is computed (remove the file to start a new cache)"
_NOT_KEPT = "the rows of this run are not kept"
# A commit rewrites the index pages its keys fall on (random digests: most of them), so fewer,
# larger commits cost less: 6,726 rows took 26.8 ms of CPU in batches of 256 and 13.2 ms in
# batches of 4,096 (docs/performance.md). What a killed run loses stays bounded by the seconds.
_BATCH_ROWS = 4096
_BATCH_SECONDS = 2.0
# Keys looked up a query: fewer than the 999 host parameters SQLite allowed before 3.32
_LOOKUP_KEYS = 500


def _outcome(row: CompareRow) -> str:
    """The stored outcome of ``row``: a JSON object of its metrics' names and their values'
    bits, the StandardDeviation text, the reason, both dtypes, the shape, and when it was made.

    Written as text, not through ``json.dumps``, which writes a float by its shortest repr (7,200
    instructions each; with the dict's other items about 105,000 a row, 13% of a 1.5 GB run's
    main process): the values are one hex string of little-endian float64s instead (exact, NaN
    and infinities too), and only the texts go through JSON's string encoder.
    """
    metrics = row.metrics
    return "".join(
        (
            '{"names":',
            _names_json(tuple(metrics)),
            ',"bits":"',
            _float64s(len(metrics)).pack(*metrics.values()).hex(),
            '","std":',
            _json_text(row.std_text),
            ',"reason":',
            _json_text(row.fail_reason),
            ',"npu_dtype":',
            _json_text(row.npu_dtype),
            ',"golden_dtype":',
            _json_text(row.golden_dtype),
            ',"shape":',
            shape_text(row.shape, unknown="null"),
            ',"at":',
            str(time.time_ns()),
            "}",
        )
    )


def _json_text(text: str | None) -> str:
    return "null" if text is None else encode_basestring_ascii(text)


@lru_cache(maxsize=64)
def _names_json(names: tuple[str, ...]) -> str:
    """The metric names as a JSON array: the same few tuples, row after row."""
    return "[" + ",".join(map(encode_basestring_ascii, names)) + "]"


@lru_cache(maxsize=64)
def _float64s(count: int) -> struct.Struct:
    """``count`` little-endian float64s: how an outcome's ``bits`` hold its metrics."""
    return struct.Struct(f"<{count}d")


def _metrics_of(names: list, bits: str) -> dict[str, float]:
    """The metrics a stored outcome's ``names`` and ``bits`` hold; ValueError when they do not
    fit (not hex, not eight bytes a name, a name twice)."""
    raw = bytes.fromhex(bits)
    if len(raw) != 8 * len(names) or len(set(names)) != len(names):
        raise ValueError("its bits do not hold one float64 a name")
    return dict(zip(names, _float64s(len(names)).unpack(raw)))


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text_or_none(value) -> bool:
    return value is None or isinstance(value, str)


# what each field of a stored outcome must be (see _outcome)
_FIELDS = {
    "names": lambda v: isinstance(v, list) and all(isinstance(name, str) for name in v),
    "bits": lambda v: isinstance(v, str),
    "std": lambda v: isinstance(v, str),
    "reason": lambda v: isinstance(v, str),
    "npu_dtype": _is_text_or_none,
    "golden_dtype": _is_text_or_none,
    "shape": lambda v: v is None or isinstance(v, list) and all(map(_is_int, v)),
}


def _checked_outcome(stored) -> dict:
    """A stored outcome, read back and checked field by field (the file is the user's to damage);
    ValueError saying what is wrong."""
    try:
        data = json.loads(stored) if isinstance(stored, str) else None
    except ValueError as exc:
        raise ValueError(f"a stored row is not JSON: {exc}") from None
    except RecursionError:  # "[[[[...": nested past the parser's depth
        data = None
    if not isinstance(data, dict):
        raise ValueError(f"a stored row is not a JSON object: {str(stored)[:40]!r}")
    wrong = [name for name, good in _FIELDS.items() if name not in data or not good(data[name])]
    if wrong:
        raise ValueError(f"a stored row has a missing or mistyped {', '.join(wrong)}")
    try:
        data["metrics"] = _metrics_of(data["names"], data["bits"])
    except ValueError as exc:
        raise ValueError(f"a stored row's metrics cannot be read: {exc}") from None
    return data


def _counted(tasks: Iterable[PairTask], counts: dict) -> Iterator[PairTask]:
    """``tasks``, each comparable one counted in ``counts["computed"]`` as it is taken."""
    for task in tasks:
        counts["computed"] += task.comparable
        yield task


def _with_outcome(task: PairTask, data: dict) -> CompareRow:
    """The row of ``task`` from its stored outcome (:func:`_checked_outcome`'s), made in one call:
    a re-run makes one for each of its rows (``dataclasses.replace`` of a half-made row took
    twice as long)."""
    shape = data["shape"]
    return CompareRow(
        index=task.index,
        op_type=task.op_type,
        npu_name=task.npu_name,
        npu_dtype=data["npu_dtype"],
        npu_address=None,
        ground_truth=task.ground_truth,
        golden_dtype=data["golden_dtype"],
        tensor_index=task.tensor_index,
        shape=tuple(shape) if shape is not None else None,
        metrics=data["metrics"],
        std_text=data["std"],
        fail_reason=data["reason"],
    )


class _Unusable(Exception):
    """The store is not the cache's (a table of other columns)."""


class RowCache:
    """The rows of earlier runs, in one SQLite file under ``root``. Use as a context manager.

    The cache only ever saves work: when its file cannot be opened, read or written (a full
    disk, a damaged file, a malformed row), it turns itself off, says so once in ``warning``
    (one line naming the file and the problem), and the run computes every row it has not
    reused as without it. A planted link at its names is the one refusal (an OutputError).
    """

    def __init__(self, root: OutputRoot, *parts: str, read: bool = True, since: int | None = None) -> None:
        """``read`` False stores rows and reuses none (``--fresh``); ``since`` (ns since the
        epoch) reuses only rows computed from then on (a fresh run's resume)."""
        self.root, self.parts = root, parts or (CACHE_DIR,)
        self.read, self.since = read, since
        self.path = root.path.joinpath(*self.parts, CACHE_NAME)
        self.warning: str | None = None
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[str, str]] = []
        self._last_flush = time.monotonic()

    def __enter__(self) -> RowCache:
        directory = self.root.directory(*self.parts)
        for name in (CACHE_NAME, *(CACHE_NAME + s for s in ("-wal", "-shm", "-journal"))):
            if (directory / name).is_symlink():
                raise OutputError("is a symbolic link: the row cache is never opened through one", directory / name)
        self.path = directory / CACHE_NAME
        try:
            self._db = sqlite3.connect(self.path, timeout=30)
            self._set_up(self._db)
        except (sqlite3.Error, _Unusable) as exc:
            self._off(exc)
        return self

    @staticmethod
    def _set_up(db: sqlite3.Connection) -> None:
        """Journal settings, the one table (checked: a table of other columns is not ours),
        and rows of an older schema dropped (their keys can never match again)."""
        db.execute("PRAGMA journal_mode=WAL")  # the first read: 'file is not a database' here
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, outcome TEXT NOT NULL)")
        columns = [(c[1], c[5]) for c in db.execute("PRAGMA table_info(rows)")]
        if columns != _COLUMNS:
            names = ", ".join(name for name, _ in columns)
            raise _Unusable(f"its table 'rows' has columns ({names}), not (key primary key, outcome)")
        if db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA:
            with db:
                db.execute("DELETE FROM rows")
                db.execute(f"PRAGMA user_version = {SCHEMA:d}")

    def _off(self, problem: Exception, consequence: str = _UNREAD) -> None:
        if self.warning is None:
            self.warning = f"{self.path}: row cache turned off ({problem}): {consequence}"
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

    def may_reuse(self) -> bool:
        """Whether a lookup could find anything: rows are read and the store holds some."""
        if not self.read or self._db is None:
            return False
        try:
            return self._db.execute("SELECT 1 FROM rows LIMIT 1").fetchone() is not None
        except sqlite3.Error as exc:
            self._off(exc)
            return False

    def get(self, key: str) -> str | None:
        """The stored outcome of ``key`` as stored (unchecked), or None."""
        return self._stored([key]).get(key)

    def _stored(self, keys: Sequence[str]) -> dict[str, str]:
        """The stored outcomes (as stored, unchecked) of those of ``keys`` the store holds, read
        :data:`_LOOKUP_KEYS` keys a query (one query a key cost a re-run 3.5 us a row)."""
        if self._db is None:
            return {}
        found: dict[str, str] = {}
        try:
            for start in range(0, len(keys), _LOOKUP_KEYS):
                part = keys[start : start + _LOOKUP_KEYS]
                marks = ",".join("?" * len(part))
                found.update(self._db.execute(f"SELECT key, outcome FROM rows WHERE key IN ({marks})", part))
        except sqlite3.Error as exc:
            self._off(exc)
            return {}
        return found

    def outcomes(self, keys: Sequence[str | None]) -> list[dict | None]:
        """The checked stored outcome of each key (None: not stored, or no key). When the store
        fails or one row is malformed, none is trusted: the cache turns off, all are None."""
        if not self.read:
            return [None] * len(keys)
        stored = self._stored(list(dict.fromkeys(key for key in keys if key)))
        try:
            checked = {key: _checked_outcome(text) for key, text in stored.items()}
        except ValueError as exc:
            self._off(exc)
            return [None] * len(keys)
        if self.since is not None:  # older than the fresh run: computed again
            checked = {k: c for k, c in checked.items() if _is_int(c.get("at")) and c["at"] >= self.since}
        if self._db is None:
            return [None] * len(keys)
        return [checked.get(key) if key else None for key in keys]

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
                    self._db.executemany("INSERT OR REPLACE INTO rows (key, outcome) VALUES (?, ?)", self._pending)
            except sqlite3.Error as exc:  # a full disk: the run goes on without the cache
                self._off(exc, _NOT_KEPT)
            self._pending.clear()
        self._last_flush = time.monotonic()


Engine = Callable[[Iterable[PairTask], bool], Iterator[CompareRow]]  # (tasks, keyed): see cached_rows


def cached_rows(
    tasks: Iterable[PairTask],
    metric_names: Sequence[str],
    cache: RowCache | None,
    compute: Engine,
    stats: dict | None = None,
    keys_where_read: bool = False,
) -> Iterator[CompareRow]:
    """One row per task, in task order: from ``cache`` where it has the task, else from
    ``compute`` (called once, on the tasks still to do, in order), storing what it computes.

    ``compute(todo, keyed)``: with ``keyed`` true, each compared row it gives carries its key
    (:attr:`~.result.CompareRow.cache_key`, :mod:`.row_keys`), found where its files are read.
    It is asked to when ``keys_where_read`` (the engine's processes see the files as this one
    does: not a cluster's) and the cache can reuse nothing (``--fresh``, an empty store): the
    run then starts computing without finding the keys first, on ``tasks`` as they come (the
    pairing may still be making them). Otherwise each file's identity
    is found here, once, however many tasks read it, before anything is computed. ``stats``
    (if given) gets ``reused`` and ``computed`` counts.
    """
    if cache is None:
        yield from compute(tasks, False)
        return
    counts = stats if stats is not None else {}
    if keys_where_read and not cache.may_reuse():  # the tasks go to the engine as they come
        counts.update(reused=0, computed=0)
        for row in compute(_counted(tasks, counts), True):
            if row.cache_key is not None and row.compared:
                cache.put(row.cache_key, row)
            yield row
        return
    tasks = list(tasks)
    keys_of = RowKeys(metric_names)
    keys = [keys_of.key(task) for task in tasks]
    stored = cache.outcomes(keys)
    todo = [task for task, found in zip(tasks, stored) if found is None]
    fresh = compute(todo, False)
    counts.update(reused=len(tasks) - len(todo), computed=sum(1 for t in todo if t.comparable))
    for task, key, found in zip(tasks, keys, stored):
        if found is not None:
            yield _with_outcome(task, found)
            continue
        row = next(fresh)
        if key is not None and row.compared:
            cache.put(key, row)
        yield row
