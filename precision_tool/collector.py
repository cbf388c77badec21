"""The cyclic garbage collector paused while the tool makes many small objects that hold no
cycles: a graph (millions of ops and tensor descriptions), a run's plan and its rows.

The collector's repeated passes over such objects while they are made can free nothing, and
they cost: a graph's load took twice as long with them (docs/performance.md), and a 1.5 GB
msprobe comparison spent 0.17 s of its parent's time in 412 passes (one of 74 ms over all of
it) that found 710 objects in all. Reference counting still frees whatever such objects drop.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FREEZE_MIN_OBJECTS = 50_000
"""A paused stretch that leaves this many new objects freezes them (see :func:`gc_paused`): the
first pass over them would cost about 12 ms (0.25 us an object: `vc` of the 1.5 GB GE bench
network left 141,000, and its pass took 36 ms at the end of the run, when nothing else ran)."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the block, and kept off what it made when that is a lot.

    After a block that left at least :data:`FREEZE_MIN_OBJECTS` objects, everything alive is
    frozen (``gc.freeze``: moved where collections do not look), else the first pass after the
    collector is enabled again would walk them all once more. Objects without cycles are still
    freed by reference counting when dropped. Nested blocks leave it to the outermost.
    """
    enabled = gc.isenabled()
    gc.disable()
    big = False
    try:
        yield
        big = gc.get_count()[0] >= FREEZE_MIN_OBJECTS  # allocations since the last collection
    finally:
        if enabled:
            if big:
                gc.freeze()
            gc.enable()


__all__ = ["FREEZE_MIN_OBJECTS", "gc_paused"]
