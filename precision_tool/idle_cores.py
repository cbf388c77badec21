"""How many cores other programs leave idle: whether a second process would get a core of its
own.

Linux's ``/proc/stat`` is read twice, some time apart; what this process itself ran in between
counts as idle, so the watch can run while it works (reading the file that the workers would
share) instead of sleeping. Elsewhere the load average stands in.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

LOOK = 0.1
"""Seconds the machine is watched at least."""


@dataclass(frozen=True)
class CpuMark:
    """The machine's and this process's CPU counters at one moment (see :func:`cpu_mark`)."""

    wall: float
    own: float  # this process's CPU seconds
    total: int  # all cores' ticks
    idle: int  # their idle and I/O-wait ticks


def _ticks() -> tuple[int, int]:
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(t) for t in stat.readline().split()[1:9]]
    return sum(ticks), ticks[3] + ticks[4]


def cpu_mark() -> CpuMark | None:
    """The counters now; None where ``/proc/stat`` cannot be read."""
    try:
        total, idle = _ticks()
    except (OSError, ValueError, IndexError):
        return None
    return CpuMark(time.monotonic(), time.process_time(), total, idle)


def free_cores(since: CpuMark | None = None) -> float:
    """How many cores sat idle, not counting this process's own work, from ``since`` (a
    :func:`cpu_mark`; by default now) until at least :data:`LOOK` seconds after it."""
    cores = os.cpu_count() or 1
    start = since or cpu_mark()
    if start is not None:
        wait = LOOK - (time.monotonic() - start.wall)
        if wait > 0:
            time.sleep(wait)
        end = cpu_mark()
        if end is not None and end.total > start.total:
            own = (end.own - start.own) * os.sysconf("SC_CLK_TCK")
            idle = (end.idle - start.idle + own) / (end.total - start.total)
            return cores * min(1.0, max(0.0, idle))
    try:
        return max(0.0, cores - os.getloadavg()[0])
    except OSError:
        return float(cores)
