"""The streaming comparison engine: PairTasks in, CompareRows out, in execution order.

:func:`compare_tasks` groups consecutive tasks that read the same NPU dump file into one job
(the header is parsed once per job; :mod:`.jobs` makes the jobs and their batches), runs the
jobs on a pool of worker processes (inline with ``workers=1``), and yields each job's rows as
soon as it and every job before it are done, so a CSV can be written while the comparison runs. At most :data:`POOL_WINDOW` calls a worker are
in flight (a call's tasks and rows are small: the tensors stream through each worker's blocks),
so memory stays bounded by a few tensors' blocks per worker whatever the dump size (and the pairs a
call keeps: :data:`~.seen_pairs.SEEN_BYTES`).

A worker compares each pair as :mod:`.pair_compare` says: both sides opened as :class:`~.load.Source`
streams (host layout, C order), aligned blocks folded into an :class:`~.metrics.Accumulator`
(the fused kernels of :mod:`.kernels`), a second pass for KL with the ranges the first found.
A pair of the same two arrays as one the call compared before (an op's input dumped with its
producer's output bytes, paired with the producer's golden) is given that pair's outcome
(:mod:`.seen_pairs`: its stored bytes compared byte for byte, not its metrics computed again).
The Metric objects are sent to the workers with each job, so custom metrics compute there too.

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
  Workers also die with the parent however it ends (SIGKILL included; :mod:`..lifetime`).
* A tensor pair much larger than the others is compared in ranges on several workers at once
  (:mod:`.split`: partial statistics combined), so it does not serialise the run; the row is
  the same to the printed decimals.
* With a Dask scheduler (``scheduler="tcp://HOST:8786"`` or ``"local:N"``) the same jobs and
  ranges run on a Dask cluster (:mod:`.cluster`, imported only then); the in-order window
  (:func:`.window.stream_units`) is the same for the pool and the cluster.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..lifetime import init_worker_lifetime
from . import kernels
from .golden_pairing import PairTask
from .jobs import Plan, batch_jobs, cluster_batch_bytes, needs_worker, plan_jobs, pool_batch_bytes
from .load import DEFAULT_CHUNK
from .metrics import METRICS, Metric
from .pair_compare import base_row, clear_buffers, compare_sources, compare_task, nonfinite_note
from .pool_server import parent_of_workers, server_context, single_threaded_children
from .result import CompareRow
from .row_keys import RowKeys
from .seen_pairs import SeenPairs
from .sides import ReadCache
from .split import split_size, split_units
from .window import JobResult, LostWork, Unit, stream_units

if TYPE_CHECKING:  # multiprocessing loads only when a pool starts: an inline run has no use for it
    from concurrent.futures import ProcessPoolExecutor

Progress = Callable[[int, int, int], None]  # (rows done, rows total, bytes done)
# Pool calls in flight a worker. While this process writes a finished call's rows (CSV lines,
# the row cache, msprobe's table) the workers go on only with what was submitted before: with
# two calls a worker they ran dry on a large msprobe pair (the runs: docs/performance.md,
# "msprobe dumps"). Calls and rows are small, so more in flight costs no memory to speak of.
POOL_WINDOW = 6


def lost_rows(job: Sequence[PairTask], reason: str) -> JobResult:
    """The rows of a job that could not be computed: named, not compared, with ``reason``."""
    reads = ReadCache()
    return JobResult([base_row(t, reads, t.reason if not t.comparable else reason) for t in job], 0)


def run_job(
    tasks: Sequence[PairTask],
    metrics: Sequence[Metric],
    chunk: int = DEFAULT_CHUNK,
    numba: bool | None = None,
    keyed: bool = False,
) -> JobResult:
    """Compare one job's tasks (in a worker or inline); ``keyed``: each compared row carries
    its row-cache key (:func:`compare_tasks`).

    The Metric objects themselves travel to the worker (pickled by reference to their
    module-level functions), so a metric defined outside this package computes there too.
    """
    return compare_job(tasks, metrics, chunk, numba, RowKeys.for_metrics(metrics) if keyed else None)


def compare_job(
    tasks: Sequence[PairTask],
    metrics: Sequence[Metric],
    chunk: int,
    numba: bool | None,
    keys: RowKeys | None,
    reads: ReadCache | None = None,
    seen: SeenPairs | None = None,
) -> JobResult:
    """:func:`run_job` with the keys' maker given, the cache of what was read and the pairs
    compared (an inline run shares one of each: each directory of its files is resolved once,
    a golden that the next job reads again is not read twice, and a consumer's input is not
    compared again after its producer's output: :mod:`.seen_pairs`)."""
    reads = ReadCache() if reads is None else reads
    seen = SeenPairs(tasks=tasks) if seen is None else seen
    rows, total = [], 0
    for task in tasks:
        row, nbytes = compare_task(task, metrics, chunk, reads, numba, keys, seen)
        rows.append(row)
        total += nbytes
    return JobResult(rows, total)


class JobUnit(Unit):
    """One job as a unit of the window: one call of :func:`run_job` (here, when it reads no
    tensor data); a job whose worker is lost for good becomes rows with the reason."""

    def __init__(self, job: list[PairTask], job_args: tuple) -> None:
        self.job, self.job_args = job, job_args
        self.calls = int(needs_worker(job))
        self.future = self.done = None

    def start(self, submit: Callable) -> int:
        if self.calls:
            self.future = submit(run_job, self.job, *self.job_args)
        else:  # no tensor data to read: not worth a round trip
            self.done = run_job(self.job, *self.job_args)
        self.in_flight = self.calls
        return self.calls

    def finish(self, submit: Callable, result: Callable) -> JobResult:
        if self.future is None:
            return self.done
        try:
            return result(self.future)
        except LostWork as lost:
            return lost_rows(self.job, lost.reason)


def _mp_context():
    """The fork server's when one was started (:mod:`.pool_server`); else fork (instant start)
    on Linux when this process runs no other thread; else spawn.

    Forking a multi-threaded process can deadlock the child on a lock some other thread held,
    so a live display or a threaded caller gets the slower but always safe spawn (about half a
    second: each worker imports numpy and the readers again).
    """
    from multiprocessing import get_context

    if server_context() is not None:
        return server_context()
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return get_context("fork")
    return get_context("spawn")


def _init_worker(parent_pid: int | None, claimed: bool = False) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    init_worker_lifetime(parent_pid)  # ... and however it ends, we end with it
    if claimed:  # a worker of the tool's own process is its own too (a spawned one must be told)
        kernels.claim_process()


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


def compare_tasks(
    tasks: Iterable[PairTask],
    metrics: Sequence[Metric] = METRICS,
    workers: int = 1,
    chunk: int = DEFAULT_CHUNK,
    progress: Progress | None = None,
    scheduler: str | None = None,
    split_bytes: int = 0,
    pool_min_bytes: int = 0,
    keyed: bool = False,
) -> Iterator[CompareRow]:
    """Compare every task; yields one CompareRow per task, in task (execution) order.

    Args:
        tasks: from :mod:`.golden_pairing` or :mod:`.dir_pairing`, in execution order.
        metrics: the metrics to compute. Defaults to all ten.
        workers: worker processes; 1 runs everything in this process. Defaults to 1.
        chunk: elements per streamed block. Defaults to :data:`~.load.DEFAULT_CHUNK`.
        progress: called as ``progress(rows done, rows total, bytes done)`` after each job,
            bytes being both sides' file bytes of the tensors compared so far.
        scheduler: a Dask scheduler (``tcp://HOST:8786``, or ``local:N`` for a LocalCluster of
            N processes), or a :class:`~.cluster.ClusterSpec`, to run the jobs on instead of
            local workers (:mod:`.cluster`).
        split_bytes: pairs larger than this (both sides' bytes) are compared in ranges of about
            this size on several workers (:mod:`.split`); 0 derives it from the data and the
            workers (:func:`~.split.split_size`). Inline runs (one worker) do not split.
        pool_min_bytes: a run reading fewer file bytes than this is compared inline (starting
            workers would cost more than they save); a cluster run is never. Defaults to 0.
        keyed: each compared row carries its row-cache key
            (:attr:`~.result.CompareRow.cache_key`), its files identified by whoever reads
            them as they are opened (:mod:`.row_keys`). Defaults to False.

    Stopping early (an exception in ``progress``, Ctrl-C, or closing the generator) ends the
    worker processes (and cancels a cluster's futures) before the exception propagates.
    """
    tasks = list(tasks)
    if scheduler:
        from . import cluster  # dask is imported only here

        tasks = [cluster.absolute_task(task) for task in tasks]  # workers elsewhere: no shared cwd
    plan = plan_jobs(tasks, metrics, chunk, keyed)
    if not scheduler and sum(plan.sizes.values()) < pool_min_bytes:  # the plan's sizes: one stat a file
        workers = 1
    tracker = _Tracker(len(tasks), progress)
    try:
        if scheduler:
            yield from _on_cluster(scheduler, plan, split_bytes, tracker)
        else:
            yield from _compare_here(plan, workers, split_bytes, tracker)
    finally:
        clear_buffers()


def _units(plan: Plan, workers: int, split_bytes: int, batch_bytes: int = 0) -> list[Unit]:
    """The plan's jobs as units, tensors too large for one call split out (:mod:`.split`),
    small jobs joined into calls of ``batch_bytes`` when that is given."""
    units = plan.jobs
    if workers > 1:
        units = split_units(
            plan.jobs, plan.job_args, plan.sizes, split_size(sum(plan.sizes.values()), workers, split_bytes)
        )
    if batch_bytes:
        units = batch_jobs(units, plan.sizes, batch_bytes)
    return [unit if isinstance(unit, Unit) else JobUnit(unit, plan.job_args) for unit in units]


def _compare_here(plan: Plan, workers: int, split_bytes: int, tracker: _Tracker) -> Iterator[CompareRow]:
    """The plan on this machine: inline, or on a pool of ``workers`` processes."""
    units = _units(plan, workers, split_bytes, pool_batch_bytes(plan, workers))
    pooled = min(workers, sum(unit.calls for unit in units))
    if pooled <= 1:
        metrics, chunk, numba, keyed = plan.job_args
        keys = RowKeys.for_metrics(metrics) if keyed else None  # one for the run, as the parent's would be
        reads, seen = ReadCache(), SeenPairs(tasks=[task for job in plan.jobs for task in job])
        for job in plan.jobs:
            yield from tracker.emit(compare_job(job, metrics, chunk, numba, keys, reads, seen))
    else:
        yield from _pooled(units, plan.job_args, pooled, tracker)


def _on_cluster(scheduler, plan: Plan, split_bytes: int, tracker: _Tracker) -> Iterator[CompareRow]:
    """The plan on the Dask cluster of ``scheduler`` (an address or a ClusterSpec), its workers
    checked first: the same units and window as the pool."""
    from .cluster import Session

    with Session(scheduler, single_threaded_children) as session:
        session.check(plan.sizes, bool(plan.job_args[2]))
        batch = cluster_batch_bytes(sum(plan.sizes.values()), session.workers)
        units = _units(plan, session.workers, split_bytes, batch)
        yield from stream_units(units, session.submit, 2 * session.workers, tracker.emit, session.result)


def _pooled(units: list, job_args: tuple, workers: int, tracker: _Tracker) -> Iterator[CompareRow]:
    from concurrent.futures import ProcessPoolExecutor

    window = POOL_WINDOW * workers
    context = _mp_context()
    if context.get_start_method() == "fork" and job_args[2]:
        # load numba and the compiled kernels once, here: forked workers inherit them instead of
        # each importing numba (a quarter to half a second, and its memory, per worker)
        kernels.numba_kernels()
    with single_threaded_children():
        executor = ProcessPoolExecutor(
            workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(parent_of_workers(context), kernels.process_claimed()),
        )
        try:
            yield from stream_units(units, executor.submit, window, tracker.emit)
        except BaseException:
            _terminate(executor)
            raise
        executor.shutdown(wait=True)


__all__ = [
    "DEFAULT_CHUNK",
    "POOL_WINDOW",
    "JobResult",
    "JobUnit",
    "compare_sources",
    "compare_task",
    "compare_tasks",
    "lost_rows",
    "nonfinite_note",
    "run_job",
]
