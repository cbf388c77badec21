"""What the pool's fork server (:mod:`.pool_server`) imports before it forks a worker: the
modules a job runs, so every worker starts with them loaded. Imported for that alone.

The process is marked as the tool's own (:func:`~.numba_line.claim_process`), as the CLI that
started it is, so numba's BLAS probe is skipped there too.
"""

from __future__ import annotations

from ..formats import msprobe_dump, npy_file, torch_file  # noqa: F401  (msprobe dumps' tensors)
from . import engine  # noqa: F401  (every job: the engine imports what a job runs)
from .numba_line import claim_process

claim_process()
