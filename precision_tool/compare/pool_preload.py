"""What the pool's fork server (:mod:`.pool_server`) imports before it forks a worker: the
modules a job runs, so every worker starts with them loaded. Imported for that alone.

The process is marked as the tool's own (:func:`~.numba_line.claim_process`), as the CLI that
started it is, so numba's BLAS probe is skipped there too. The collector is off from here to
the end of :mod:`.numba_preload`, which freezes what was loaded and turns it on again: the
imports make hundreds of thousands of objects, none of them garbage, and the collector's
passes over them were 25-30 ms of the server's load, which a 500 MB run waits for.
"""

from __future__ import annotations

import gc

gc.disable()  # before the imports below (numba_preload enables it again)

from ..formats import msprobe_dump, npy_file, torch_file  # noqa: E402, F401  (msprobe dumps' tensors)
from ..formats.dump import load_header_parser  # noqa: E402

# every job (the engine imports what a job runs), and msprobe's statistics rows (imported at their use)
from . import engine, msprobe_rows  # noqa: E402, F401
from .numba_line import claim_process  # noqa: E402

claim_process()
load_header_parser()  # what every GE dump's first header read would import, in each worker
