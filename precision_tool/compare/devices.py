"""Across devices: which rank diverges first, and which ranks disagree with the rest.

A data-parallel job runs the same graph on every device (rank) with different batches, so a
defect in a kernel shows on every rank at the same op: their first introducers agree. A rank
whose first introducer is another op (or that has none while the others do) is worth a look on
its own: bad input data on that rank, a faulty card, a rank-specific collective. Pure analysis of
each result's :class:`~.divergence.Divergence`, grouped by the device its CSV compares.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .divergence import Divergence, OpCosines


@dataclass(frozen=True)
class DeviceVerdict:
    """What the results of one device say.

    Attributes:
        device: the device id (None: the CSVs do not say).
        results: how many result CSVs (sub-graphs, steps) it has.
        first_introducer: the first op that introduces the error on it, None when none does.
        min_output_cosine: the lowest output cosine of any of its ops, None without one.
        differs_from_majority: its first introducer is not the one most devices have.
        diverges_first: it is among the devices whose first introducer comes earliest in
            execution order.
    """

    device: int | None
    results: int
    first_introducer: OpCosines | None
    min_output_cosine: float | None
    differs_from_majority: bool = False
    diverges_first: bool = False

    @property
    def signature(self) -> str | None:
        """What devices must share to agree: the first introducer's name."""
        return self.first_introducer.name if self.first_introducer is not None else None


def _verdict(device: int | None, divergences: list[Divergence]) -> DeviceVerdict:
    first = next((d.first_introducer for d in divergences if d.first_introducer is not None), None)
    lows = [d.lowest_output.worst_output for d in divergences if d.lowest_output is not None]
    return DeviceVerdict(device, len(divergences), first, min(lows) if lows else None)


def device_verdicts(results: Iterable[tuple[int | None, Divergence]]) -> list[DeviceVerdict]:
    """One verdict per device, in device order, from ``(device, divergence)`` of each result.

    The majority is the most common first introducer (ties: the one of the lowest device); with
    a single device nothing differs from it.
    """
    by_device: dict[int | None, list[Divergence]] = {}
    for device, divergence in results:
        by_device.setdefault(device, []).append(divergence)
    order = sorted(by_device, key=lambda d: (d is None, d if d is not None else 0))
    verdicts = [_verdict(device, by_device[device]) for device in order]
    if len(verdicts) < 2:
        return verdicts
    counts = Counter(v.signature for v in verdicts)
    best = max(counts.values())
    majority = next(v.signature for v in verdicts if counts[v.signature] == best)
    indices = [v.first_introducer.index for v in verdicts if v.first_introducer is not None]
    earliest = min(indices, default=None)
    return [
        DeviceVerdict(
            v.device,
            v.results,
            v.first_introducer,
            v.min_output_cosine,
            differs_from_majority=v.signature != majority,
            diverges_first=v.first_introducer is not None and v.first_introducer.index == earliest,
        )
        for v in verdicts
    ]
