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
import os
from collections.abc import Sequence
from functools import lru_cache
from json.encoder import encode_basestring_ascii

from .. import __version__
from ..formats.file_identity import FileIdentities
from .golden_pairing import DumpSide, FileSide, NpySide, PairTask, TensorFileSide

SCHEMA = 3  # 2: files keyed by what they are (file_identity), not by the path as typed; 3: metrics as bits


def _side_text(side: DumpSide | NpySide | TensorFileSide, identities: FileIdentities, files: dict) -> str | None:
    """The JSON text of a side's part of a key (``["dump", *identity, kind, index, origin]``,
    ``["tensor file", *identity, dtype]``, ``["npy", *identity]``), as ``json.dumps`` spells
    it; None for a record (msprobe statistics: computed anew, cheaply) or a file that cannot be
    read. ``files`` keeps each file's identity as text (a path's own is found once): a run's
    tensors share files, and the text of an identity is most of a key's cost."""
    if not isinstance(side, FileSide):
        return None
    path = os.fspath(side.path)
    identity = files.get(path)
    if identity is None:
        found = identities.of(side.path)
        if found is None:
            return None
        identity = files[path] = _identity_text(*found)
    if isinstance(side, DumpSide):
        return f'["dump", {identity}, {_dump_tail(side.kind, side.index, side.origin_format)}'
    if isinstance(side, TensorFileSide):
        return f'["tensor file", {identity}, {json.dumps(side.dtype_name)}]'
    return f'["npy", {identity}]'


def _identity_text(path: str, device: int, inode: int, size: int, mtime_ns: int, ctime_ns: int, sample: str) -> str:
    """``json.dumps(list(identity))[1:-1]``, spelt field by field: the same text (strings as
    json's ASCII encoder writes them, integers in decimal) for a third of the cost."""
    text = encode_basestring_ascii
    return f"{text(path)}, {device}, {inode}, {size}, {mtime_ns}, {ctime_ns}, {text(sample)}"


@lru_cache(maxsize=4096)
def _dump_tail(kind: str, index: int, origin: str | None) -> str:
    """The end of a dump side's key text: ``json.dumps([kind, index, origin])[1:]`` (a run's
    tensors share a few such tails)."""
    return json.dumps([kind, index, origin])[1:]


def metric_identities(metrics) -> list[str]:
    """What identifies each metric in a key: its name and its formula's module and name (a
    custom metric reusing a built-in's name must not reuse its rows)."""
    return [
        f"{m.name}={getattr(m.compute, '__module__', '?')}.{getattr(m.compute, '__qualname__', '?')}" for m in metrics
    ]


def task_key(task: PairTask, metric_names: Sequence[str], identities: FileIdentities | None = None) -> str | None:
    """The cache key of a comparable task; None when it is not comparable or a file cannot be
    read. ``identities`` finds each file's identity once (pass one for all of a run's tasks)."""
    return _keyed(task, _prefix(metric_names), FileIdentities() if identities is None else identities, {})


def _prefix(metric_names: Sequence[str]):
    """The digest of what every key of a run begins with: the SHA-256 of the JSON text
    ``[SCHEMA, version, metric names, left, right]`` is this, fed the sides' text after it."""
    text = json.dumps([SCHEMA, __version__, list(metric_names)])
    return hashlib.sha256(f"{text[:-1]}, ".encode("utf-8", "surrogateescape"))


def _keyed(task: PairTask, prefix, identities: FileIdentities, files: dict) -> str | None:
    if not task.comparable:
        return None
    left, right = _side_text(task.left, identities, files), _side_text(task.right, identities, files)
    if left is None or right is None:
        return None
    digest = prefix.copy()  # the run's part is hashed once, not once a task
    digest.update(f"{left}, {right}]".encode("utf-8", "surrogateescape"))
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
        self._files: dict[str, str] = {}  # a file's identity as key text (_side_text)

    @classmethod
    def for_metrics(cls, metrics: Sequence) -> RowKeys:
        """The keys of tasks compared with ``metrics`` (Metric objects)."""
        return cls(metric_identities(metrics))

    def key(self, task: PairTask) -> str | None:
        """The task's key (:func:`task_key`), once its sides are open."""
        return _keyed(task, self._prefix, self.identities, self._files)


__all__ = ["SCHEMA", "RowKeys", "metric_identities", "task_key"]
