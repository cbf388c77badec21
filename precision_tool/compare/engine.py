"""The streaming comparison engine: PairTasks in, CompareRows out, in execution order.

:func:`compare_tasks` groups consecutive tasks that read the same NPU dump file into one job
(the header is parsed once per job), runs the jobs on a pool of worker processes (inline with
``workers=1``), and yields each job's rows as soon as it and every job before it are done, so a
CSV can be written while the comparison runs. At most ``2 * workers`` jobs are in flight, so
memory stays bounded by a few tensors' blocks per worker whatever the dump size.

A worker opens both sides as :class:`~.load.Source` streams (host layout, C order), checks the
shapes and folds aligned blocks into an :class:`~.metrics.Accumulator` (the fused kernels of
:mod:`.kernels`); when KL is selected the blocks are folded a second time, with the ranges the
first pass found. A tensor that fits in one block is read once for both passes. The Metric
objects are sent to the workers with each job, so custom metrics compute there too.

Decisions:

* Shapes: different element counts are a shape mismatch (all ``NaN``, both shapes named).
  Equal counts with different host shapes are compared flattened in C order, as msaccucmp
  compares ND tensors flattened; the row's Shape is the NPU side's and the reason notes both.
* Per-tensor problems (unknown dtype, a layout that does not fit, an unreadable or truncated
  file, a shape no array can have, a non-numeric ``.npy``, too little memory for this pair)
  become the row's CompareFailReason; the run goes on. Anything else is a bug and propagates.
* Workers are forked when that is safe (Linux, no other thread in this process), else spawned;
  spawned workers re-import the caller's main module, so scripts need the usual
  ``if __name__ == "__main__":`` guard.
* Ctrl-C: workers ignore SIGINT; the parent cancels what is pending, terminates the workers and
  re-raises, so nothing outlives the command. The same happens when the consumer stops early.
  Workers also die with the parent however it ends (SIGKILL included; :mod:`.lifetime`).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from multiprocessing import get_context
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from ..errors import PrecisionToolError
from . import kernels
from ..lifetime import init_worker_lifetime
from .load import DEFAULT_CHUNK, Buffers, HeaderCache, Source, aligned, open_side
from .metrics import METRICS, Accumulator, Metric, MetricResult, is_scalar_shape, shape_mismatch
from .pairing import DumpSide, PairTask
from .result import CompareRow

Progress = Callable[[int, int, int], None]  # (rows done, rows total, bytes done)
_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_BUFFERS = Buffers()  # per process: workers keep theirs between jobs


@dataclass(frozen=True)
class JobResult:
    """What a job hands back: its rows and the file bytes of the tensors it compared."""

    rows: list[CompareRow]
    nbytes: int


# --- one pair --------------------------------------------------------------------------------

def _pieces(x: Source, y: Source, chunk: int) -> Iterator[tuple]:
    return aligned(x.blocks(chunk, _BUFFERS, "x"), y.blocks(chunk, _BUFFERS, "y"))


def compare_sources(x: Source, y: Source, metrics: Sequence[Metric] = METRICS,
                    chunk: int = DEFAULT_CHUNK, numba: bool | None = None) -> tuple[MetricResult, str]:
    """The metrics of two opened sides, and a note when the shapes differ but sizes match.

    A pair that fits in one block is read and converted once for both passes (KL's second pass
    reuses it); bigger pairs stream again for the second pass. ``numba`` is the run's kernel
    choice (:func:`~.kernels.numba_pays_off`; None: by the tensor's size).
    """
    if x.size != y.size:
        return shape_mismatch(x.shape, y.shape), ""
    note = ""
    if x.shape != y.shape:
        note = (f"Shapes differ (NPU {_shape(x.shape)} vs golden {_shape(y.shape)}) but the sizes "
                "match: compared flattened.")
    boolean = x.dtype.kind == "b" and y.dtype.kind == "b"
    acc = Accumulator(metrics, scalar=x.size > 0 and is_scalar_shape(x.shape), boolean=boolean,
                      size=x.size, numba=numba)
    kept, count = None, 0
    for pair in _pieces(x, y, chunk):
        acc.update(*pair)
        kept, count = pair, count + 1
    if acc.needs_second_pass:
        for pair in [kept] if count == 1 else _pieces(x, y, chunk):
            acc.update_second(*pair)
    result = acc.result()
    if not all(math.isfinite(v) for v in result.numbers.values()):
        note = " ".join(part for part in (note, _nonfinite(acc, x, y, chunk)) if part)
    return result, note


def _nonfinite(acc: Accumulator, x: Source, y: Source, chunk: int) -> str:
    """The NaN/Inf note: from the first pass's counts, or (cosine only) a pass of its own."""
    counts = acc.nonfinite_counts
    return nonfinite_text(counts) if counts is not None else nonfinite_note(x, y, chunk)


def nonfinite_note(x: Source, y: Source, chunk: int = DEFAULT_CHUNK) -> str:
    """Which side holds how many NaN and Inf values ('' when neither does).

    A pass over both sides, run only when a metric came out nan or inf and the first pass did
    not count them (cosine alone), so the row says why instead of leaving a bare ``nan``.
    """
    counts = np.zeros((2, 2), np.int64)  # [side][nan, inf]
    for pair in _pieces(x, y, chunk):
        for side, block in enumerate(pair):
            if block.dtype.kind not in "biu":  # float, complex, ml_dtypes' bfloat16 / fp8
                counts[side] += (np.count_nonzero(np.isnan(block)), np.count_nonzero(np.isinf(block)))
    return nonfinite_text(counts.tolist())


def nonfinite_text(counts) -> str:
    """The note for ``[[NPU NaN, NPU Inf], [golden NaN, golden Inf]]`` ('' when all are 0)."""
    parts = []
    for side, (nan, inf) in zip(("NPU", "golden"), counts):
        found = [f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "Inf")) if n]
        if found:
            parts.append(f"The {side} tensor holds {' and '.join(found)}.")
    return " ".join(parts)


def _shape(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _header_facts(side, headers: HeaderCache) -> tuple[str | None, tuple[int, ...] | None]:
    """(dtype name, host shape) of a side from its header alone, or Nones."""
    if not isinstance(side, DumpSide):
        return None, None
    try:
        t = headers.tensor(side)
    except PrecisionToolError:
        return None, None
    return t.dtype_name, None if t.defect or t.original_defect else t.original_shape or t.shape


def _base_row(task: PairTask, headers: HeaderCache, fail_reason: str = "") -> CompareRow:
    dtype, shape = _header_facts(task.left, headers)
    golden_dtype, _ = _header_facts(task.right, headers)
    return CompareRow(index=task.index, op_type=task.op_type, npu_name=task.npu_name,
                      npu_dtype=dtype, npu_address=None, ground_truth=task.ground_truth,
                      golden_dtype=golden_dtype, tensor_index=task.tensor_index, shape=shape,
                      fail_reason=fail_reason)


def _not_compared_row(task: PairTask, headers: HeaderCache) -> CompareRow:
    return _base_row(task, headers, task.reason)


def compare_task(task: PairTask, metrics: Sequence[Metric], chunk: int,
                 headers: HeaderCache, numba: bool | None = None) -> tuple[CompareRow, int]:
    """One row for one task, and the bytes compared (0 when nothing was)."""
    if not task.comparable:
        return _not_compared_row(task, headers), 0
    row = _base_row(task, headers)
    sides: list[Source] = []
    try:
        for side in (task.left, task.right):
            sides.append(open_side(side, headers))
        x, y = sides
        result, note = compare_sources(x, y, metrics, chunk, numba)
    except (PrecisionToolError, MemoryError) as exc:
        if sides:
            row = _with_side(row, sides[0], is_left=True)
        return row.with_metrics({}, fail_reason=_failure(exc, task)), 0
    row = _with_side(_with_side(row, x, is_left=True), y, is_left=False)
    reason = " ".join(part for part in (x.note, y.note, note, result.fail_reason) if part)
    return row.with_metrics(result.numbers, result.std_text, reason), x.nbytes + y.nbytes


def _failure(exc: Exception, task: PairTask) -> str:
    """The CompareFailReason of a pair that could not be compared."""
    if isinstance(exc, MemoryError):  # confined to this pair: the next one may well fit
        return f"not enough memory to compare {task.tensor_index or task.npu_name}"
    return str(exc)


def _with_side(row: CompareRow, source: Source, is_left: bool) -> CompareRow:
    if is_left:
        return replace(row, npu_dtype=source.dtype_name, shape=tuple(source.shape))
    return replace(row, golden_dtype=source.dtype_name)


# --- jobs ------------------------------------------------------------------------------------

def _task_files(tasks: Sequence[PairTask]) -> list:
    """Every file the comparable tasks read, once each, in order."""
    files = (side.path for t in tasks if t.comparable for side in (t.left, t.right) if side is not None)
    return list(dict.fromkeys(files))


def _dump_files(task: PairTask) -> tuple:
    return tuple(side.path for side in (task.left, task.right) if isinstance(side, DumpSide))


def group_jobs(tasks: Iterable[PairTask]) -> list[list[PairTask]]:
    """Consecutive tasks that read the same NPU dump file(s) form one job; others are alone."""
    jobs: list[list[PairTask]] = []
    last = None
    for task in tasks:
        key = _dump_files(task)
        if jobs and key and key == last:
            jobs[-1].append(task)
        else:
            jobs.append([task])
        last = key
    return jobs


def run_job(tasks: Sequence[PairTask], metrics: Sequence[Metric], chunk: int = DEFAULT_CHUNK,
            numba: bool | None = None) -> JobResult:
    """Compare one job's tasks (in a worker or inline).

    The Metric objects themselves travel to the worker (pickled by reference to their
    module-level functions), so a metric defined outside this package computes there too.
    """
    headers = HeaderCache()
    rows, total = [], 0
    for task in tasks:
        row, nbytes = compare_task(task, metrics, chunk, headers, numba)
        rows.append(row)
        total += nbytes
    return JobResult(rows, total)


def _data_bytes(tasks: Sequence[PairTask]) -> int:
    """Bytes of every file the comparable tasks read (each once): what the run will stream."""
    total = 0
    for path in _task_files(tasks):
        try:
            total += os.stat(path).st_size
        except OSError:
            continue  # reported by the comparison
    return total


def _cosine_only(metrics: Sequence[Metric]) -> bool:
    return all(group.name in ("xy", "xx", "yy") for metric in metrics for group in metric.groups)


def _needs_worker(job: Sequence[PairTask]) -> bool:
    return any(task.comparable for task in job)


def _mp_context():
    """Fork (instant start) on Linux when this process runs no other thread; else spawn.

    Forking a multi-threaded process can deadlock the child on a lock some other thread held,
    so a live display or a threaded caller gets the slower but always safe spawn (about half a
    second: each worker imports numpy and the readers again).
    """
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return get_context("fork")
    return get_context("spawn")


def _init_worker(parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    init_worker_lifetime(parent_pid)  # ... and however it ends, we end with it


@contextmanager
def _single_threaded_children():
    """Worker processes are single-threaded by design: no BLAS/OpenMP thread pools in them."""
    saved = {name: os.environ.get(name) for name in _THREAD_VARS}
    os.environ.update({name: "1" for name in _THREAD_VARS})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _terminate(executor: ProcessPoolExecutor) -> None:
    """End the workers now and cancel what is pending (Python < 3.14 has no public way).

    The workers are killed first, so even a long tensor stops at once; then the executor's
    own thread sees them gone, fails what was pending and reaps them, and shutdown waits for it.
    """
    stop = getattr(executor, "terminate_workers", None)
    if stop is not None:
        stop()
    else:
        for process in list((getattr(executor, "_processes", None) or {}).values()):
            if process.is_alive():
                process.terminate()
    executor.shutdown(wait=True, cancel_futures=True)


class _Tracker:
    """Counts rows and bytes and calls the progress callback."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.progress = total, progress
        self.rows = self.bytes = 0

    def emit(self, result: JobResult) -> Iterator[CompareRow]:
        for row in result.rows:
            self.rows += 1
            yield row
        self.bytes += result.nbytes
        if self.progress is not None:
            self.progress(self.rows, self.total, self.bytes)


def compare_tasks(tasks: Iterable[PairTask], metrics: Sequence[Metric] = METRICS, workers: int = 1,
                  chunk: int = DEFAULT_CHUNK, progress: Progress | None = None) -> Iterator[CompareRow]:
    """Compare every task; yields one CompareRow per task, in task (execution) order.

    Args:
        tasks: from :mod:`.pairing` or :mod:`.pair_dirs`, in execution order.
        metrics: the metrics to compute. Defaults to all ten.
        workers: worker processes; 1 runs everything in this process. Defaults to 1.
        chunk: elements per streamed block. Defaults to :data:`~.load.DEFAULT_CHUNK`.
        progress: called as ``progress(rows done, rows total, bytes done)`` after each job,
            bytes being both sides' file bytes of the tensors compared so far.

    Stopping early (an exception in ``progress``, Ctrl-C, or closing the generator) ends the
    worker processes before the exception propagates.
    """
    tasks = list(tasks)
    metrics = tuple(metrics)
    numba = kernels.numba_pays_off(_data_bytes(tasks), _cosine_only(metrics))
    jobs = group_jobs(tasks)
    tracker = _Tracker(len(tasks), progress)
    pooled = min(workers, sum(1 for job in jobs if _needs_worker(job)))
    try:
        if pooled <= 1:
            for job in jobs:
                yield from tracker.emit(run_job(job, metrics, chunk, numba))
        else:
            yield from _pooled(jobs, (metrics, chunk, numba), pooled, tracker)
    finally:
        _BUFFERS.clear()


def _pooled(jobs: list[list[PairTask]], job_args: tuple, workers: int,
            tracker: _Tracker) -> Iterator[CompareRow]:
    window = 2 * workers
    queue: deque[Future | JobResult] = deque()
    in_flight = 0
    remaining = iter(jobs)
    context = _mp_context()
    if context.get_start_method() == "fork" and job_args[2]:
        # load numba and the compiled kernels once, here: forked workers inherit them instead of
        # each importing numba (a quarter to half a second, and its memory, per worker)
        kernels.numba_kernels()
    with _single_threaded_children():
        executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker,
                                       initargs=(os.getpid(),))
        try:
            while True:
                while in_flight < window and len(queue) < 8 * window:
                    job = next(remaining, None)
                    if job is None:
                        break
                    if _needs_worker(job):
                        queue.append(executor.submit(run_job, job, *job_args))
                        in_flight += 1
                    else:  # no tensor data to read: not worth a round trip
                        queue.append(run_job(job, *job_args))
                if not queue:
                    break
                head = queue.popleft()
                if isinstance(head, Future):
                    in_flight -= 1
                    head = head.result()
                yield from tracker.emit(head)
        except BaseException:
            _terminate(executor)
            raise
        executor.shutdown(wait=True)


__all__ = ["DEFAULT_CHUNK", "JobResult", "compare_sources", "compare_task", "compare_tasks",
           "group_jobs", "nonfinite_note", "run_job"]
