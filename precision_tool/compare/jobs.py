"""How a run's tasks become calls of the engine (:mod:`.engine`): jobs, their sizes, batches.

A job is the consecutive tasks that read one NPU dump file (its header parsed once, its bytes
read once); the plan is the jobs and what every call of them gets; small jobs travel to a
worker, or to a Dask cluster, as batches of about a number of file bytes, so a network of many
small tensors is not bound by calls.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from . import kernels
from .golden_pairing import DumpSide, FileSide, PairTask
from .metrics import Metric
from .pool_server import workers_have_numba
from .window import Unit

# A Dask call costs a round trip through the scheduler (207 calls/s measured on 2 shared cores,
# docs/scaling.md), a pool call a tenth of that: on a cluster, consecutive small jobs travel as
# one call of up to this many file bytes, so a run of many small dump files is not bound by the
# scheduler's call rate; a smaller run is cut into about CLUSTER_CALLS_PER_WORKER calls per
# worker thread, so every worker gets some.
CLUSTER_BATCH_BYTES = 64 << 20
# A pool call costs its pickled tasks and rows and a round trip through the executor's threads
# (about a millisecond of CPU all told): consecutive small jobs go to a worker as one call of
# about this many file bytes, so a network of 100 KB tensors is not bound by calls. 4 MiB calls
# still cost 0.3-0.6 s of CPU at 1.5 GB (372 calls of an msprobe pair: 2.26 -> 2.12 s with
# 32 MiB; the mixed GE network 3.23 -> 2.87 s; docs/performance.md). The run's share
# (pool_batch_bytes: at least four calls a worker) keeps the last calls spread over the workers.
POOL_BATCH_BYTES = 32 << 20
CLUSTER_CALLS_PER_WORKER = 4


def cluster_batch_bytes(data_bytes: int, workers: int) -> int:
    """The file bytes of one call on a cluster of ``workers`` threads for a run of ``data_bytes``."""
    return max(1, min(CLUSTER_BATCH_BYTES, data_bytes // (CLUSTER_CALLS_PER_WORKER * max(1, workers))))


def files_read(task: PairTask) -> tuple:
    """The files a task reads: its sides' that name one, when it is compared at all."""
    if not task.comparable:
        return ()
    left, right = task.left, task.right  # spelt out: asked several times a task, by the plan
    if isinstance(left, FileSide):
        return (left.path, right.path) if isinstance(right, FileSide) else (left.path,)
    return (right.path,) if isinstance(right, FileSide) else ()


def _task_files(tasks: Sequence[PairTask]) -> list:
    """Every file the comparable tasks read, once each, in order."""
    return list(dict.fromkeys(path for task in tasks for path in files_read(task)))


def _dump_files(task: PairTask) -> tuple:
    return tuple(side.path for side in (task.left, task.right) if isinstance(side, DumpSide))


class JobStream:
    """A run's tasks taken as they come (from a list, or from the pairing as it pairs), grouped
    into jobs, the size of every file they read found on the way: so the engine can start on
    the first jobs before the last ones are paired (:func:`~.engine.compare_tasks`).

    ``count`` and ``data_bytes`` are of the tasks taken so far; once ``ended`` they are the
    run's. A job is complete when a task of another dump file follows it, or at the end.
    """

    def __init__(self, tasks: Iterable[PairTask]) -> None:
        self._tasks = iter(tasks)
        self.sizes: dict = {}  # file path -> bytes, each file stat-ed once
        self._unsized: set = set()  # files that could not be stat-ed (the comparison says why)
        self.count = self.data_bytes = 0
        self.ended = False
        self._complete: deque[list[PairTask]] = deque()
        self._open: list[PairTask] = []
        self._key: tuple = ()

    def take(self) -> bool:
        """Take one more task; False when there is none (the last job is then complete)."""
        task = next(self._tasks, None)
        if task is None:
            if self._open:
                self._complete.append(self._open)
            self._open, self.ended = [], True
            return False
        self.count += 1
        self._size(task)
        key = _dump_files(task)
        if self._open and key and key == self._key:
            self._open.append(task)
        else:
            if self._open:
                self._complete.append(self._open)
            self._open = [task]
        self._key = key
        return True

    def _size(self, task: PairTask) -> None:
        sizes = self.sizes
        for path in files_read(task):
            if path in sizes or path in self._unsized:
                continue
            try:
                sizes[path] = size = os.stat(path).st_size
            except OSError:
                self._unsized.add(path)  # reported by the comparison
                continue
            self.data_bytes += size

    def take_until(self, enough: Callable[[], bool]) -> None:
        """Take tasks until ``enough()`` holds or there are no more."""
        while not self.ended and not enough():
            self.take()

    def take_all(self) -> None:
        """Take every task left."""
        while self.take():
            pass

    def jobs(self) -> Iterator[list[PairTask]]:
        """Every job not yet given, in order, taking tasks as they are needed."""
        while self._complete or not self.ended:
            if self._complete:
                yield self._complete.popleft()
            else:
                self.take()


def needs_worker(job: Sequence[PairTask]) -> bool:
    """Whether a job reads tensor data (else it runs where it is: nothing to send away)."""
    return any(task.comparable for task in job)


@dataclass(frozen=True)
class Plan:
    """A run's jobs and what every job call gets: ``job_args`` = (metrics, chunk, numba, keyed)."""

    jobs: list[list[PairTask]]
    job_args: tuple
    sizes: dict  # file path -> bytes


def uses_numba(data_bytes: int, metrics: Sequence[Metric]) -> bool:
    """Whether a run of ``data_bytes`` of files computes ``metrics`` with numba's kernels."""
    # numba's load pays for the run, or is paid already: its pool's workers come with it
    return kernels.numba_pays_off(data_bytes, kernels.needs_cosine_sums_only(metrics)) or workers_have_numba()


def plan_jobs(tasks: Iterable[PairTask], metrics: Sequence[Metric], chunk: int, keyed: bool = False) -> Plan:
    """Group the tasks into jobs and make the run's kernel choice (from its data bytes)."""
    stream = JobStream(tasks)
    stream.take_all()
    return plan_of(stream, metrics, chunk, keyed)


def plan_of(stream: JobStream, metrics: Sequence[Metric], chunk: int, keyed: bool = False) -> Plan:
    """The plan of a stream whose tasks are all taken (``stream.ended``)."""
    numba = uses_numba(stream.data_bytes, metrics)
    return Plan(list(stream.jobs()), (tuple(metrics), chunk, numba, keyed), stream.sizes)


def batch_jobs(units: Iterable, sizes: dict, batch_bytes: int) -> list:
    """Consecutive plain jobs (task lists) joined into one of up to about ``batch_bytes`` file
    bytes; split tensors (:class:`~.window.Unit`) stay where they are. Order is kept, so the
    rows are the same, in the same order; only the calls are fewer."""
    return list(batches(units, sizes, batch_bytes))


def batches(units: Iterable, sizes: dict, batch_bytes: int) -> Iterator:
    """:func:`batch_jobs` as the units come (``sizes`` must know each unit's files when it comes)."""
    pending: list[PairTask] = []
    pending_bytes = 0
    for unit in units:
        if isinstance(unit, Unit):
            if pending:
                yield pending
            yield unit
            pending, pending_bytes = [], 0
            continue
        job_bytes = sum(sizes.get(path, 0) for path in _task_files(unit))
        if pending and pending_bytes + job_bytes > batch_bytes:
            yield pending
            pending, pending_bytes = [], 0
        pending.extend(unit)
        pending_bytes += job_bytes
    if pending:
        yield pending


def pool_batch_bytes(plan: Plan, workers: int) -> int:
    """Bytes of a pool call: :data:`POOL_BATCH_BYTES`, or less so the run is at least four
    calls a worker (small runs: each job its own call, as without batching); 0 inline."""
    if workers <= 1:
        return 0
    return pool_batch_for(sum(plan.sizes.values()), workers)


def pool_batch_for(data_bytes: int, workers: int) -> int:
    """:func:`pool_batch_bytes` of a pool of ``workers`` (> 1) for a run of ``data_bytes``."""
    return max(1, min(POOL_BATCH_BYTES, data_bytes // (4 * workers)))


def pool_batch_settled(data_bytes: int, workers: int) -> bool:
    """Whether a run of at least ``data_bytes`` has :func:`pool_batch_for` fixed: more bytes
    would not change it."""
    return pool_batch_for(data_bytes, workers) == POOL_BATCH_BYTES


__all__ = [
    "CLUSTER_BATCH_BYTES",
    "CLUSTER_CALLS_PER_WORKER",
    "POOL_BATCH_BYTES",
    "JobStream",
    "Plan",
    "batch_jobs",
    "batches",
    "cluster_batch_bytes",
    "files_read",
    "needs_worker",
    "plan_jobs",
    "plan_of",
    "pool_batch_bytes",
    "pool_batch_for",
    "pool_batch_settled",
    "uses_numba",
]
