"""The C heap of the tool's own processes keeps the memory it frees, up to a bound.

A comparison allocates and frees buffers of a few hundred kilobytes all the time: a golden
read whole, a small dump file, a converted tensor. glibc's malloc serves blocks that large
from fresh memory maps at first, then (its threshold moving up as they are freed) from the
heap, whose free top it hands back to the system whenever it exceeds twice that threshold.
Memory handed back and taken again is zeroed page by page by the kernel on first touch: when
the engine keeps the last goldens it read (:class:`~.sides.ReadCache`), the heap's top moves
up and down with them and a worker took about ten such page faults a tensor pair, which cost
more than the reads they saved. Fixed thresholds end that: blocks up to
:data:`HEAP_BLOCK_BYTES` come from the heap, and up to :data:`KEPT_FREE_BYTES` of free heap
is kept for the next ones.

Only the tool's own processes are set so (:func:`~.numba_line.claim_process`): a program that
calls the API keeps its own allocator's behaviour. On a C library without ``mallopt`` (musl,
macOS, Windows) nothing changes.
"""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
HEAP_BLOCK_BYTES = 16 << 20  # a small dump file read whole (sides.SMALL_DUMP_BYTES) fits
KEPT_FREE_BYTES = 64 << 20


def keep_freed_memory() -> bool:
    """Set this process's heap as the module docstring says; whether the C library took it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):  # no mallopt: not glibc
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success, 0 on error (a value out of its range)
    return bool(mallopt(M_MMAP_THRESHOLD, HEAP_BLOCK_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT_FREE_BYTES))


__all__ = ["HEAP_BLOCK_BYTES", "KEPT_FREE_BYTES", "keep_freed_memory"]
