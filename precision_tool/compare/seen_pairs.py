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
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..formats.file_identity import FileIdentities
from .golden_pairing import DumpSide, NpySide, PairTask
from .sides import ReadCache, stored_tensor

# The stored bytes kept at most, as copies (the files they came from are not held). On the
# bench network a consumer comes at most 64 tasks after its producer, 60% within 4; its
# tensors of about 150 KB make that 10 MB.
SEEN_BYTES = 32 << 20


@dataclass
class Probe:
    """A task looked up: the key and stored bytes it was looked up by (None: it cannot be
    kept), and what was kept for it when its bytes are those (``found``)."""

    key: tuple | None = None
    stored: np.ndarray | None = None
    found: tuple[dict, int] | None = None  # (the row's compared fields, bytes compared)


_NOT_KEPT = Probe()


class SeenPairs:
    """The outcomes of pairs compared lately (see the module docstring); :attr:`hits` counts
    the pairs given one."""

    def __init__(self, max_bytes: int = SEEN_BYTES) -> None:
        self.max_bytes = max_bytes
        self.hits = 0
        self._kept: OrderedDict[tuple, tuple[bytes, dict, int]] = OrderedDict()
        self._bytes = 0

    def probe(self, task: PairTask, reads: ReadCache, identities: FileIdentities | None = None) -> Probe:
        """Look ``task`` up: an NPU dump tensor against a ``.npy`` whose dump file is read
        whole (``identities``: as :func:`~.sides.open_side`)."""
        if not (isinstance(task.left, DumpSide) and isinstance(task.right, NpySide)):
            return _NOT_KEPT
        stored = stored_tensor(task.left, reads, identities)
        if stored is None:
            return _NOT_KEPT
        facts, data = stored
        key = (task.right.path, facts)
        kept = self._kept.get(key)
        if kept is None or len(kept[0]) != data.size or kept[0] != data.tobytes():
            return Probe(key, data)
        self._kept.move_to_end(key)
        self.hits += 1
        fields, nbytes = kept[1], kept[2]
        return Probe(key, data, (dict(fields, metrics=dict(fields["metrics"])), nbytes))

    def keep(self, probe: Probe, fields: dict, nbytes: int) -> None:
        """Keep what the pair ``probe`` found nothing for compared to: its row's compared
        fields and the bytes it compared; the least recent dropped beyond :attr:`max_bytes`."""
        if probe.key is None or probe.stored.size > self.max_bytes:
            return
        old = self._kept.pop(probe.key, None)
        if old is not None:
            self._bytes -= len(old[0])
        self._kept[probe.key] = (probe.stored.tobytes(), dict(fields, metrics=dict(fields["metrics"])), nbytes)
        self._bytes += probe.stored.size
        while self._bytes > self.max_bytes:
            _, (stored, _, _) = self._kept.popitem(last=False)
            self._bytes -= len(stored)


__all__ = ["SEEN_BYTES", "Probe", "SeenPairs"]
