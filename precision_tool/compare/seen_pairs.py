"""Pairs compared before in the same call: an op's input is the tensor its producer output.

A GE dump holds each op's inputs as well as its outputs, so a tensor passed from one op to the
next is dumped twice: as the producer's output and as the consumer's input, the same device
bytes as a rule. Both are paired with the same golden file, the producer's output golden
(:mod:`.golden_pairing`), so the second pair compares the same two arrays again. On the 1.5 GB
bench network (``bench/ge_network.py``) 2,358 of the 6,726 pairs are such repeats, and they are
its activations, the larger tensors.

:class:`SeenPairs` keeps the outcome of what a call (or an inline run) compared lately, keyed by
the golden file and what the device tensor's opening depends on (:func:`~.sides.stored_tensor`),
with a copy of its stored bytes. A pair is given a kept outcome only when its stored bytes equal
the kept ones byte for byte: then both sides are the same arrays, and so are the metrics, the
StandardDeviation text, the dtypes, the shape and the notes; the row's names and cache key
are still the task's own. Any difference, in one byte or one fact, and the pair is compared.
Within a call a path is one file, as for its :class:`~.sides.ReadCache` and its row keys.

Other pairs (an msprobe dump's tensor files, two directories of ``.npy``) are looked up after
both sides are open, by their contents (:meth:`SeenPairs.contents`): two sides held in memory,
keyed by their dtypes, shapes and a sample of their elements, and given a kept outcome only when
both sides' bytes equal the kept ones. An msprobe dump repeats as a GE dump does (an API's input
is the tensor another API output, and both runs dumped it twice): in the 500 MB msprobe bench
dump 957 of its 1,554 pairs hold the two arrays of a pair before them.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..formats.file_identity import FileIdentities
from .golden_pairing import DumpSide, NpySide, PairTask
from .load import ArrayBlocks, Source
from .metrics import MetricResult
from .sides import ReadCache, stored_tensor

# The stored bytes kept at most, as copies (the files they came from are not held). On the
# bench network a consumer comes at most 64 tasks after its producer, 60% within 4; its
# tensors of about 150 KB make that 10 MB.
SEEN_BYTES = 32 << 20
_SAMPLES = 16  # elements of each side in a contents key: different tensors differ in them


@dataclass
class Probe:
    """A pair looked up: the key and the arrays it was looked up by (no key: it is not kept),
    what was kept for it when its arrays hold those bytes (``found``), and whether it is to be
    looked up by its contents once open instead (``by_contents``: not a GE pair)."""

    key: tuple | None = None
    arrays: tuple[np.ndarray, ...] = ()
    found: tuple | None = None
    by_contents: bool = False


_NOT_KEPT = Probe()
_BY_CONTENTS = Probe(by_contents=True)


def _sample(array: np.ndarray) -> bytes:
    """:data:`_SAMPLES` elements spread over ``array`` (all of a smaller one), as bytes."""
    step = max(1, array.size // _SAMPLES)
    return array.flat[np.arange(0, array.size, step)[:_SAMPLES]].tobytes()


class SeenPairs:
    """The outcomes of pairs compared lately (see the module docstring); :attr:`hits` counts
    the pairs given one."""

    def __init__(self, max_bytes: int = SEEN_BYTES, tasks: Iterable[PairTask] | None = None) -> None:
        """``tasks``: all the tasks the pairs will come from, when known: a GE pair is then kept
        only when its golden is read again by another of them (else nothing is copied)."""
        self.max_bytes = max_bytes
        self.hits = 0
        self._again = None if tasks is None else _read_again(tasks)
        self._kept: OrderedDict[tuple, tuple[tuple[bytes, ...], tuple]] = OrderedDict()
        self._bytes = 0

    def probe(self, task: PairTask, reads: ReadCache, identities: FileIdentities | None = None) -> Probe:
        """Look ``task`` up before opening it: an NPU dump tensor against a ``.npy``, its dump
        file read whole (``identities``: as :func:`~.sides.open_side`). ``found``: the row's
        compared fields and the bytes compared."""
        if not (isinstance(task.left, DumpSide) and isinstance(task.right, NpySide)):
            return _BY_CONTENTS
        if self._again is not None and task.right.path not in self._again:
            return _NOT_KEPT
        stored = stored_tensor(task.left, reads, identities)
        if stored is None:
            return _NOT_KEPT
        facts, data = stored
        return self._found((task.right.path, facts), (data,))

    def contents(self, x: Source, y: Source) -> Probe:
        """Look two opened sides up by their contents, when both are held in memory and together
        take at most a quarter of :attr:`max_bytes`. ``found``: the metrics and the note."""
        if not (isinstance(x, ArrayBlocks) and isinstance(y, ArrayBlocks)):
            return _NOT_KEPT
        a, b = x.array, y.array
        if a is None or b is None or a.nbytes + b.nbytes > self.max_bytes // 4:
            return _NOT_KEPT
        return self._found((a.dtype.str, a.shape, b.dtype.str, b.shape, _sample(a), _sample(b)), (a, b))

    def _found(self, key: tuple, arrays: tuple[np.ndarray, ...]) -> Probe:
        kept = self._kept.get(key)
        if kept is None or any(len(k) != a.nbytes or k != a.tobytes() for k, a in zip(kept[0], arrays)):
            return Probe(key, arrays)
        self._kept.move_to_end(key)
        self.hits += 1
        return Probe(key, arrays, _fresh(kept[1]))

    def keep(self, probe: Probe, *outcome) -> None:
        """Keep the outcome of the pair ``probe`` found nothing for (what its ``found`` gives
        back), with copies of its arrays' bytes; the least recent dropped beyond :attr:`max_bytes`."""
        size = sum(a.nbytes for a in probe.arrays)
        if probe.key is None or size > self.max_bytes:
            return
        old = self._kept.pop(probe.key, None)
        if old is not None:
            self._bytes -= sum(map(len, old[0]))
        self._kept[probe.key] = (tuple(a.tobytes() for a in probe.arrays), _fresh(outcome))
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (stored, _) = self._kept.popitem(last=False)
            self._bytes -= sum(map(len, stored))


def _read_again(tasks: Iterable[PairTask]) -> set[str]:
    """The ``.npy`` files more than one of the comparable ``tasks`` reads."""
    counts = Counter(t.right.path for t in tasks if t.comparable and isinstance(t.right, NpySide))
    return {path for path, count in counts.items() if count > 1}


def _fresh(outcome: tuple) -> tuple:
    """``outcome`` with its dicts copied: two rows never share one."""
    return tuple(_copied(part) for part in outcome)


def _copied(part):
    if isinstance(part, dict):
        return {k: dict(v) if isinstance(v, dict) else v for k, v in part.items()}
    if isinstance(part, MetricResult):
        return MetricResult(dict(part.values), part.reasons)
    return part


__all__ = ["SEEN_BYTES", "Probe", "SeenPairs"]
