"""The row cache's keys: what a compared row is keyed by, found wherever the row is computed.

A key is a digest of what determines the row (:mod:`.row_cache`): this cache's schema and the
tool's version, the metric set, and each side's file identity
(:mod:`~precision_tool.formats.file_identity`) with the tensor read from it. It lives apart from
the store so that a worker can find it (:class:`RowKeys`): a run with nothing to reuse has its
keys found where the files are read, on the workers, rather than all up front in the parent,
whose serial start they lengthened (0.1 s for the 3,108 files of the 500 MB msprobe pair, 0.3 s
at 1.5 GB). A file's identity is then found by the reader that opens it, before its data is
read (a ``.pt``'s from the very descriptor and bytes it reads: no second open), so a key names
the file the row was computed from, as one found up front does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from .. import __version__
from ..formats.file_identity import FileIdentities
from .golden_pairing import DumpSide, FileSide, NpySide, PairTask, TensorFileSide

SCHEMA = 2  # 2: files keyed by what they are (file_identity), not by the path as typed


def _side_key(side: DumpSide | NpySide | TensorFileSide, identities: FileIdentities) -> list | None:
    if not isinstance(side, FileSide):  # a record (msprobe statistics): computed anew, cheaply
        return None
    identity = identities.of(side.path)
    if identity is None:
        return None
    if isinstance(side, DumpSide):
        return ["dump", *identity, side.kind, side.index, side.origin_format]
    if isinstance(side, TensorFileSide):
        return ["tensor file", *identity, side.dtype_name]
    return ["npy", *identity]


def metric_identities(metrics) -> list[str]:
    """What identifies each metric in a key: its name and its formula's module and name (a
    custom metric reusing a built-in's name must not reuse its rows)."""
    return [
        f"{m.name}={getattr(m.compute, '__module__', '?')}.{getattr(m.compute, '__qualname__', '?')}" for m in metrics
    ]


def task_key(task: PairTask, metric_names: Sequence[str], identities: FileIdentities | None = None) -> str | None:
    """The cache key of a comparable task; None when it is not comparable or a file cannot be
    read. ``identities`` finds each file's identity once (pass one for all of a run's tasks)."""
    return _keyed(task, _prefix(metric_names), FileIdentities() if identities is None else identities)


def _prefix(metric_names: Sequence[str]):
    """The digest of what every key of a run begins with: the SHA-256 of the JSON text
    ``[SCHEMA, version, metric names, left, right]`` is this, fed the sides' text after it."""
    text = json.dumps([SCHEMA, __version__, list(metric_names)])
    return hashlib.sha256(f"{text[:-1]}, ".encode("utf-8", "surrogateescape"))


def _keyed(task: PairTask, prefix, identities: FileIdentities) -> str | None:
    if not task.comparable:
        return None
    left, right = _side_key(task.left, identities), _side_key(task.right, identities)
    if left is None or right is None:
        return None
    digest = prefix.copy()  # the run's part is hashed once, not once a task
    digest.update(json.dumps([left, right])[1:].encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


class RowKeys:
    """The keys of one call's tasks, all compared with the same metrics: each file identified
    once, by whoever reads it first (:func:`~.sides.open_side` with :attr:`identities`: a
    ``.pt`` from the descriptor it is read through), so :meth:`key` opens nothing more."""

    def __init__(self, metric_names: Sequence[str]) -> None:
        """``metric_names``: the metrics' :func:`metric_identities`."""
        self.metric_names = list(metric_names)
        self.identities = FileIdentities()
        self._prefix = _prefix(self.metric_names)

    @classmethod
    def for_metrics(cls, metrics: Sequence) -> RowKeys:
        """The keys of tasks compared with ``metrics`` (Metric objects)."""
        return cls(metric_identities(metrics))

    def key(self, task: PairTask) -> str | None:
        """The task's key (:func:`task_key`), once its sides are open."""
        return _keyed(task, self._prefix, self.identities)


__all__ = ["SCHEMA", "RowKeys", "metric_identities", "task_key"]
