"""When a run loads numba: the line in bytes of data, whether numba may load at all, and whether
this process is the tool's own (:func:`claim_process`).

Kept apart from :mod:`.numba_load` and :mod:`.kernels` (which import numpy) and imports nothing
but the standard library, so a one-shot ``vc`` can decide to start the pool's fork server
(:mod:`.pool_server`) before its first import of numpy: the server's load is what the pool waits
for, and a tenth of a second earlier is a tenth of a second sooner.
"""

from __future__ import annotations

import os

from .heap_policy import keep_freed_memory

CHOICE_ENV = "PRECISION_TOOL_KERNELS"  # "numpy" switches numba off
_OWN = {"process": False}  # set by claim_process: no one else's numba code runs in this process


def claim_process() -> None:
    """Mark this process as the tool's own: the ``precision-tool`` CLI and its shell, and the
    pool workers they start (:mod:`.engine` passes the mark on). Only there is numba's BLAS
    probe skipped (:func:`~.numba_load.numba_kernels`): no code but these kernels compiles numba
    code in such a process (config.py is read as data, custom metrics come only through the
    API), so nothing can miss the BLAS. A program that calls the API never claims its process,
    and its numba keeps the probe. A claimed process's C heap also keeps what it frees
    (:mod:`.heap_policy`)."""
    _OWN["process"] = True
    keep_freed_memory()


def process_claimed() -> bool:
    """Whether :func:`claim_process` was called in this process (or the one it forked from)."""
    return _OWN["process"]


def switched_off() -> bool:
    """``PRECISION_TOOL_KERNELS=numpy``, or numba's JIT off (interpreted "kernels": too slow)."""
    chosen = os.environ.get(CHOICE_ENV, "").strip().lower() == "numpy"
    return chosen or os.environ.get("NUMBA_DISABLE_JIT", "0") != "0"


def numba_enabled() -> bool:
    """Whether :func:`~.numba_load.numba_kernels` would try to load numba: installed and not
    switched off (nothing is imported to tell)."""
    from importlib.util import find_spec

    return not switched_off() and find_spec("numba") is not None


def numba_pays_off(data_bytes: int, cosine_only: bool) -> bool:
    """Whether loading numba (a fixed cost once: its import and first dispatch) pays for a run.

    The kernels are several times faster per element pair than numpy, so past some size of data
    they win back numba's load; where that size lies was measured end to end (the figures are in
    docs/performance.md, "Figures behind design choices"), and the line is drawn at 250 MB of
    files, at 1 GB with cosine alone (whose numpy path is already cheap).
    """
    return data_bytes >= numba_min_bytes(cosine_only)


def numba_min_bytes(cosine_only: bool) -> float:
    """The size of data from which a run loads numba (:func:`numba_pays_off`)."""
    return 1e9 if cosine_only else 2.5e8


__all__ = [
    "CHOICE_ENV",
    "claim_process",
    "numba_enabled",
    "numba_min_bytes",
    "numba_pays_off",
    "process_claimed",
    "switched_off",
]
