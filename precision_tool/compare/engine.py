"""The streaming comparison engine: PairTasks in, CompareRows out, in execution order.

:func:`compare_tasks` groups consecutive tasks that read the same NPU dump file into one job
(the header is parsed once per job; :mod:`.jobs` makes the jobs and their batches), runs the
jobs on a pool of worker processes (inline with ``workers=1``), and yields each job's rows as
soon as it and every job before it are done, so a CSV can be written while the comparison runs.
The tasks may still be coming from the pairing: the pool starts once those taken settle what the
run's size decides (:func:`_settled`), and the rest are taken as the workers need them. At most
:data:`POOL_WINDOW` calls a worker are in flight (a call's tasks and rows are small: the tensors stream through each worker's blocks),
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
from .jobs import (
    JobStream,
    Plan,
    batch_jobs,
    batches,
    cluster_batch_bytes,
    needs_worker,
    plan_of,
    pool_batch_bytes,
    pool_batch_for,
    pool_batch_settled,
    uses_numba,
)
from .load import DEFAULT_CHUNK
from .metrics import METRICS, Metric
from .pair_compare import base_row, clear_buffers, compare_sources, compare_task, nonfinite_note
from .pool_server import parent_of_workers, server_context, single_threaded_children
from .result import CompareRow
from .row_keys import RowKeys
from .seen_pairs import SeenPairs
from .sides import ReadCache
from .split import may_split, split_size, split_size_settled, split_units
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
    """Counts rows and bytes and calls the progress callback (its total: ``count()``, the tasks
    taken so far: the run's once the pairing is done)."""

    def __init__(self, count: Callable[[], int], progress: Progress | None) -> None:
        self.count, self.progress = count, progress
        self.rows = self.bytes = 0

    def emit(self, result: JobResult) -> Iterator[CompareRow]:
        for row in result.rows:
            self.rows += 1
            yield row
        self.bytes += result.nbytes
        if self.progress is not None:
            self.progress(self.rows, self.count(), self.bytes)


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
        tasks: from :mod:`.golden_pairing` or :mod:`.dir_pairing`, in execution order; an
            iterator is taken as it comes: the pool starts once the tasks taken settle the
            run's choices (:func:`_settled`), while the rest are still being paired.
        metrics: the metrics to compute. Defaults to all ten.
        workers: worker processes; 1 runs everything in this process. Defaults to 1.
        chunk: elements per streamed block. Defaults to :data:`~.load.DEFAULT_CHUNK`.
        progress: called as ``progress(rows done, rows total, bytes done)`` after each job,
            bytes being both sides' file bytes of the tensors compared so far, and the total
            the tasks taken so far (the run's once every task is taken).
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
    if scheduler:
        from . import cluster  # dask is imported only here

        tasks = [cluster.absolute_task(task) for task in tasks]  # workers elsewhere: no shared cwd
    stream = JobStream(tasks)
    tracker = _Tracker(lambda: stream.count, progress)
    try:
        if scheduler:
            stream.take_all()
            yield from _on_cluster(scheduler, plan_of(stream, metrics, chunk, keyed), split_bytes, tracker)
        else:
            yield from _compare_here(
                stream, tuple(metrics), chunk, keyed, workers, split_bytes, pool_min_bytes, tracker
            )
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


def _settled(stream: JobStream, metrics: Sequence[Metric], workers: int, pool_min_bytes: int) -> bool:
    """Whether the bytes taken so far fix what the run's bytes choose, as more could not change
    it: a pool (at least ``pool_min_bytes``), its calls' bytes (:func:`~.jobs.pool_batch_for`)
    and numba (:func:`~.jobs.uses_numba`). The split size may still move: see
    :func:`_streamed_units`."""
    known = stream.data_bytes
    return known >= pool_min_bytes and pool_batch_settled(known, workers) and uses_numba(known, metrics)


def _streamed_units(stream: JobStream, job_args: tuple, workers: int, split_bytes: int) -> Iterator[Unit]:
    """The units of a settled stream (:func:`_settled`), made as its tasks are taken: the same
    as :func:`_units` of its whole plan. Only the split size may still depend on bytes not yet
    taken (:func:`~.split.split_size_settled`): a job that may hold a pair to split
    (:func:`~.split.may_split`) then takes every task first, so the pair is cut as the whole
    plan would cut it."""

    def split_jobs() -> Iterator:
        size = split_size(stream.data_bytes, workers, split_bytes)
        final = split_size_settled(stream.data_bytes, workers, split_bytes)
        for job in stream.jobs():
            if not final and any(may_split(task, stream.sizes) for task in job):
                stream.take_all()
                size, final = split_size(stream.data_bytes, workers, split_bytes), True
            yield from split_units([job], job_args, stream.sizes, size)

    for unit in batches(split_jobs(), stream.sizes, pool_batch_for(stream.data_bytes, workers)):
        yield unit if isinstance(unit, Unit) else JobUnit(unit, job_args)


def _compare_here(
    stream: JobStream,
    metrics: tuple[Metric, ...],
    chunk: int,
    keyed: bool,
    workers: int,
    split_bytes: int,
    pool_min_bytes: int,
    tracker: _Tracker,
) -> Iterator[CompareRow]:
    """The tasks on this machine: inline, or on a pool of ``workers`` processes, started as soon
    as the tasks taken settle the run's choices (the rest taken as the workers need them)."""
    if workers > 1:
        stream.take_until(lambda: _settled(stream, metrics, workers, pool_min_bytes))
    else:
        stream.take_all()
    if not stream.ended:  # all the workers: the run holds four calls a worker at least
        job_args = (metrics, chunk, uses_numba(stream.data_bytes, metrics), keyed)
        yield from _pooled(_streamed_units(stream, job_args, workers, split_bytes), job_args, workers, tracker)
        return
    plan = plan_of(stream, metrics, chunk, keyed)
    if stream.data_bytes < pool_min_bytes:  # the plan's sizes: one stat a file
        workers = 1
    units = _units(plan, workers, split_bytes, pool_batch_bytes(plan, workers))
    pooled = min(workers, sum(unit.calls for unit in units))
    if pooled <= 1:
        keys = RowKeys.for_metrics(metrics) if keyed else None  # one for the run, as the parent's would be
        reads, seen = ReadCache(), SeenPairs(tasks=[task for job in plan.jobs for task in job])
        for job in plan.jobs:
            yield from tracker.emit(compare_job(job, metrics, chunk, plan.job_args[2], keys, reads, seen))
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
