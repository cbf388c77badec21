"""Before any tensor goes to a Dask cluster: does every worker have what the run needs?

A first multi-machine run is usually a misconfigured one: a worker that does not see the data
at the same path compared nothing (and, with half the workers blind, made healthy devices look
like they differ), and a worker without this package died on its first task while ``vc`` waited.
So one cheap ``client.run`` of :func:`probe` on every worker checks, before the first task:

* this package imports there, at the client's version (a worker with another version may
  compute a metric differently, and its rows would be cached as this version's);
* the optional kernels the run chose (numba, :func:`~.kernels.numba_pays_off`) load there;
* one file of every directory the run reads (dump directories, golden directories) can be
  opened there, has the size the client sees and starts with the same bytes (a worker on a
  different copy of the data at the same path is as wrong as one that sees nothing).

A worker that fails is one line naming it and what it lacks; with ``allow_partial`` the run goes
on with the workers that pass (tasks are pinned to them), unless none does.

The probe also says whether the worker's nanny set ``MALLOC_TRIM_THRESHOLD_`` (Dask's default):
glibc then keeps its mmap threshold at 128 KiB, and every numpy temporary of the kernels is
mapped and unmapped (1.5x slower numpy kernels measured); :func:`restore_malloc` puts the
threshold where glibc's own adaptive rule ends (32 MiB), in the worker process itself.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PrecisionToolError
from .numba_line import switched_off

HEAD_BYTES = 64  # bytes compared per sampled file: a dump's header differs from file to file
MAX_SAMPLES = 64  # directories sampled at most (spread over the run's files)
MALLOC_VARIABLE = "MALLOC_TRIM_THRESHOLD_"
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_MMAP_THRESHOLD = 32 << 20  # DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: where the adaptive rule stops
INSTALL = "pip install 'precision-tool[cluster]'"
UNREADABLE = "Not compared: Dask worker "  # how a row a worker could not read begins its reason
_restored: set[int] = set()  # the processes whose malloc thresholds were put back


@dataclass(frozen=True)
class Sample:
    """One file of a directory the run reads, as the client sees it."""

    path: str
    size: int
    head: bytes


@dataclass
class Report:
    """What :func:`probe` found on one worker (plain data: it travels back to the client)."""

    version: str
    numba: bool | None = None  # None: not asked
    malloc_trim: str | None = None
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


def _read_head(path: str, size: int) -> bytes:
    from ..formats.files import open_regular

    with open_regular(path, "data file") as handle:
        return handle.read(min(size, HEAD_BYTES))


def _sample_problem(sample: Sample) -> str | None:
    """Why this worker cannot use ``sample`` as the client does, or None."""
    try:
        size = os.stat(sample.path).st_size
        head = _read_head(sample.path, size)
    except (OSError, PrecisionToolError) as exc:
        return getattr(exc, "problem", None) or getattr(exc, "strerror", None) or str(exc)
    if size != sample.size:
        return f"it is {size} bytes there, {sample.size} here: another copy of the data"
    if head != sample.head:
        return "its first bytes differ from this machine's: another copy of the data"
    return None


def probe(samples: Sequence[Sample], need_numba: bool) -> Report:
    """Run on each worker (``client.run``): the version, the kernels, the sampled files."""
    from .. import __version__

    report = Report(__version__, malloc_trim=os.environ.get(MALLOC_VARIABLE))
    if need_numba and not switched_off():
        from . import kernels  # numba switched off there on purpose is no lack: numpy computes the same

        report.numba = kernels.numba_kernels() is not None
    for sample in samples:
        problem = _sample_problem(sample)
        if problem is not None:
            report.unreadable.append((sample.path, problem))
    return report


def restore_malloc() -> bool:
    """glibc's thresholds where its adaptive rule would take them, when the environment fixed
    them (``MALLOC_TRIM_THRESHOLD_``); True when changed. Run on the workers (``client.run``)."""
    if MALLOC_VARIABLE not in os.environ:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):  # not glibc
        return False
    return bool(
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) and libc.mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD)
    )


def _restore_once() -> None:
    pid = os.getpid()
    if pid not in _restored:  # each process once: a restarted worker is a new process
        _restored.add(pid)
        restore_malloc()


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):  # not in a worker (a test calling it directly)
        return "(this process)"


def _unread(task) -> str | None:
    """Why this process cannot read a file of ``task``, or None."""
    for side in (task.left, task.right):
        path = getattr(side, "path", None)
        if path is None:
            continue
        try:
            size = os.stat(path).st_size
            _read_head(str(path), size)
        except (OSError, PrecisionToolError) as exc:
            return f"{path}: {getattr(exc, 'problem', None) or getattr(exc, 'strerror', None) or exc}"
    return None


def on_worker(fn, *args):
    """What a cluster task runs: ``fn(*args)``, in a worker whose malloc thresholds were put back
    (:func:`restore_malloc`), a job's rows that failed because the worker could not read a file
    saying so (:data:`UNREADABLE`: they are counted apart, never as compared)."""
    from dataclasses import replace

    from .engine import run_job
    from .window import JobResult

    _restore_once()
    result = fn(*args)
    if fn is not run_job or not isinstance(result, JobResult):
        return result
    rows = list(result.rows)
    for k, (task, row) in enumerate(zip(args[0], rows)):
        if task.comparable and not row.compared:
            why = _unread(task)
            if why is not None:
                rows[k] = replace(row, fail_reason=f"{UNREADABLE}{_worker_address()} cannot read {why}")
    return JobResult(rows, result.nbytes)


def samples(paths: Iterable[Path]) -> list[Sample]:
    """One file per directory of ``paths`` (at most :data:`MAX_SAMPLES`, spread evenly), as
    this machine sees it; files it cannot read itself are left to the comparison to report."""
    first: dict[Path, Path] = {}
    for path in paths:
        first.setdefault(Path(path).parent, Path(path))
    chosen = list(first.values())
    if len(chosen) > MAX_SAMPLES:
        step = len(chosen) / MAX_SAMPLES
        chosen = [chosen[int(k * step)] for k in range(MAX_SAMPLES)]
    found = []
    for path in chosen:
        try:
            size = os.stat(path).st_size
            found.append(Sample(str(path), size, _read_head(str(path), size)))
        except (OSError, PrecisionToolError):
            continue
    return found


def lacks(report: Report | BaseException, version: str) -> str | None:
    """What a worker lacks, in a few words, or None when it has all the run needs."""
    if isinstance(report, BaseException):
        text = str(report)
        if "precision_tool" in text and ("No module named" in text or "ModuleNotFound" in text):
            return f"precision-tool ({INSTALL} there)"
        first = text.strip().splitlines()[0] if text.strip() else type(report).__name__
        return f"a working precision-tool: the check failed there ({first[:200]})"
    if report.version != version:
        return f"precision-tool {version} (it has {report.version})"
    if report.numba is False:
        return (
            "the numba kernels this run uses (pip install 'precision-tool[fast]' there, or start "
            "it with PRECISION_TOOL_KERNELS=numpy)"
        )
    if report.unreadable:
        path, why = report.unreadable[0]
        more = f" and {len(report.unreadable) - 1} more director(ies)" if len(report.unreadable) > 1 else ""
        return f"the data at {path}{more} ({why}); every worker must see the same paths"
    return None


def passing_workers(reports: dict, version: str, allow_partial: bool, address: str) -> list[str]:
    """The workers that have what the run needs; PrecisionToolError (one line naming the first
    worker that fails and what it lacks) unless all do, or ``allow_partial`` and some do."""
    failing = {worker: why for worker, report in reports.items() if (why := lacks(report, version)) is not None}
    good = [worker for worker in reports if worker not in failing]
    if not failing or (allow_partial and good):
        return good
    worker, why = next(iter(failing.items()))
    others = f" (and {len(failing) - 1} more of the {len(reports)} workers)" if len(failing) > 1 else ""
    then = f"; vc --allow-partial goes on with the {len(good)} that pass" if good else "; no worker passes"
    raise PrecisionToolError(f"Dask worker {worker} of {address} lacks {why}{others}{then}")


__all__ = [
    "UNREADABLE",
    "Report",
    "Sample",
    "lacks",
    "on_worker",
    "passing_workers",
    "probe",
    "restore_malloc",
    "samples",
]
