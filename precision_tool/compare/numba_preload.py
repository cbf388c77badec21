"""Loads numba's kernels in the pool's fork server (:mod:`.pool_server`), for a run that will
use them: its workers are forked with them loaded. Imported for that alone; a numba that is
missing or fails leaves the numpy path, as in any process (:func:`~.numba_load.numba_kernels`).
"""

from __future__ import annotations

from .numba_load import numba_kernels

numba_kernels()
