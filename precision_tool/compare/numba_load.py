"""Loading the numba kernels (:mod:`.kernels_numba`) once a process, checked before use.

numba's load is a run's largest fixed cost (its import, its registries, the first cached
kernel's dispatch: about a second of CPU, half that in the tool's own processes, where a
cached kernel loads without the registries: :func:`_lean_cache_loads`); :mod:`.kernels`
decides when a run pays it. The compiled kernels are cached in a private directory
(:func:`numba_cache_dir`), never inside the user's data. What the kernels read and write is
spelled here too (:func:`kernel_operand`, :data:`FUSED_FIELDS`). In the tool's own processes
(:func:`~.numba_line.claim_process`) numba's probe for BLAS, which imports scipy.linalg, is
skipped.
"""

from __future__ import annotations

import importlib
import os
import stat
import sys
import tempfile
import warnings
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from pathlib import Path

import numpy as np

from .numba_line import process_claimed, switched_off

FUSED_FIELDS = (  # the fused kernel's output, slot by slot
    "count",
    "sum_xy",
    "sum_xx",
    "sum_yy",
    "sum_x",
    "sum_y",
    "m2_x",
    "m2_y",
    "max_abs",
    "sum_abs",
    "sum_sq",
    "rel_sum",
    "rel_max",
    "x_lo",
    "x_hi",
    "y_lo",
    "y_hi",
    "nan_x",
    "nan_y",
    "inf_x",
    "inf_y",
)
DISTANCE_FIELDS = ("sum_xy", "sum_xx", "sum_yy", "sum_abs", "sum_sq", "max_abs")  # the distance kernel's


def kernel_operand(block: np.ndarray) -> np.ndarray | None:
    """``block`` as the kernels read it, or None for dtypes they do not read (see kernels_numba).

    float32/float64 as they are; float16 as uint16 bits, bfloat16 as int16 bits (widened by the
    CPU). Everything else (integers, bool, fp8...) is converted to float64 a piece at a time.
    """
    if block.dtype == np.float32 or block.dtype == np.float64:
        return block
    if block.dtype == np.float16:
        return block.view(np.uint16)
    if block.dtype.name == "bfloat16":
        return block.view(np.int16)
    return None


def numba_cache_dir() -> Path | None:
    """A private directory for numba's compiled kernels, outside any data; None if none is.

    ``$NUMBA_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/precision_tool/numba`` (``~/.cache``
    by default), else one under the system's temporary directory. numba loads what it finds
    there, so a directory is used only when it is a real directory (no link), owned by this
    user and writable by nobody else: another user of a shared server cannot plant kernels.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    user = os.getuid() if hasattr(os, "getuid") else "user"
    for candidate in (
        Path(base) / "precision_tool" / "numba",
        Path(tempfile.gettempdir()) / f"precision_tool-numba-{user}",
    ):
        try:
            candidate.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            continue
        if _private_dir(candidate):
            return candidate
    return None


def _private_dir(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o022:
        return False
    return not hasattr(os, "getuid") or info.st_uid == os.getuid()


@lru_cache(maxsize=1)
def numba_kernels():
    """The compiled-kernel module, or None when numba is off, missing or broken (once per process)."""
    if switched_off():
        return None
    _use_cache_dir(numba_cache_dir())
    try:
        claimed = process_claimed()
        with _probes_hidden() if claimed else nullcontext():
            if claimed:
                _lean_cache_loads()
            kernels_numba = importlib.import_module(".kernels_numba", __package__)
            _check(kernels_numba)
    except ModuleNotFoundError as exc:
        if exc.name not in ("numba", "llvmlite"):  # not installed: the numpy path, silently
            _warn(exc)
        return None
    except Exception as exc:  # numba or LLVM failing to compile or run here
        _warn(exc)
        return None
    return kernels_numba


def _lean_cache_loads() -> None:
    """A cached kernel loaded without numba's lowering registries, in a claimed process only.

    Before each load from its cache numba refreshes its CPU target, and the first refresh of a
    process imports and installs every implementation numba compiles with (numpy's, CPython's,
    typed containers': 0.25-0.4 s, most of the fork server's load, which a 500 MB run waits
    for). A cached kernel is machine code: loading and running it needs the runtime (NRT) that
    the refresh also starts, and the helper symbols the target installs when it is made, not
    those implementations. So a load starts the runtime alone; a kernel that is not in the
    cache is compiled as usual, and numba's compiler refreshes the target in full first. Left
    as it is when numba's cache is not built as this expects (another numba)."""
    from numba.core import caching
    from numba.core.runtime import rtsys

    cache = caching.Cache
    expected = ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
    if not all(hasattr(cache, name) for name in expected) or not hasattr(rtsys, "initialize"):
        return

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)  # what a cached kernel needs of the refresh
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    cache.load_overload = load_overload


def _use_cache_dir(cache: Path | None) -> None:
    """Point numba at ``cache`` unless the user chose a directory (``$NUMBA_CACHE_DIR``).

    numba reads its environment once, at its import: when a caller imported numba first, the
    setting must go into numba's config too, else the kernels would be cached beside the
    package's source (its ``__pycache__``) instead.
    """
    if cache is None or os.environ.get("NUMBA_CACHE_DIR"):
        return
    os.environ["NUMBA_CACHE_DIR"] = str(cache)
    if "numba" in sys.modules:
        from numba.core import config

        config.CACHE_DIR = str(cache)


@contextmanager
def _probes_hidden():
    """scipy and cffi hidden while numba loads, in a claimed process only
    (:func:`~.numba_line.claim_process`): numba keeps for the process what it finds.

    - scipy: numba's first compile or cache load imports scipy.linalg (0.3-0.6 s of a run) only
      to learn whether BLAS is there for the ``np.convolve`` and ``np.correlate`` it compiles;
    - cffi: numba's typing imports cffi and its C parser (0.03 s of the fork server's load, on
      the path of a 500 MB run) to type cffi functions.

    These kernels use neither. Both import as usual afterwards; a module already imported is
    not hidden."""
    hidden = [name for name in _HIDDEN_WHILE_LOADING if name not in sys.modules]
    for name in hidden:  # its import raises ModuleNotFoundError (an ImportError), as numba expects
        sys.modules[name] = None
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


_HIDDEN_WHILE_LOADING = ("scipy", "cffi")


def _warn(exc: BaseException) -> None:
    warnings.warn(f"numba kernels unavailable ({type(exc).__name__}: {exc}); using numpy", RuntimeWarning, stacklevel=3)


def _check(module) -> None:
    """Run the kernels once on known data, so a broken numba fails here and not mid-run.

    Every float16 and bfloat16 bit pattern must widen exactly as numpy and ml_dtypes widen it.
    """
    import ml_dtypes

    patterns = np.arange(1 << 16, dtype=np.uint16)
    for dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        out = np.empty(patterns.size)
        module.widen(kernel_operand(patterns.view(dtype)), out)
        with np.errstate(invalid="ignore"):
            expected = patterns.view(dtype).astype(np.float64)
        if not np.array_equal(out, expected, equal_nan=True):
            raise RuntimeError(f"the kernels widen {dtype} differently from numpy")
    x = np.array([1.0, -2.0, 3.0], np.float32)
    out = np.zeros(len(FUSED_FIELDS))
    module.fused(x, x, out)
    if out[0] != 3 or out[1] != 14.0:
        raise RuntimeError("the fused kernel gave wrong sums on a check")


__all__ = [
    "FUSED_FIELDS",
    "kernel_operand",
    "numba_cache_dir",
    "numba_kernels",
]
