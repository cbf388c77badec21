"""Loads numba's kernels in the pool's fork server (:mod:`.pool_server`), for a run that will
use them: its workers are forked with them loaded. Imported for that alone; a numba that is
missing or fails leaves the numpy path, as in any process (:func:`~.numba_load.numba_kernels`).

The server's last preload: what it loaded is then frozen (``gc.freeze``), so the collector's
passes in the workers forked from it never walk numba's and the tool's modules, and the
collector, off since :mod:`.pool_preload`, is turned on again.
"""

from __future__ import annotations

import gc

from .numba_load import numba_kernels

try:
    numba_kernels()
finally:  # the collector :mod:`.pool_preload` turned off, on again for the workers
    gc.freeze()
    gc.enable()
