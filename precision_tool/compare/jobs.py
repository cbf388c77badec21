"""How a run's tasks become calls of the engine (:mod:`.engine`): jobs, their sizes, batches.

A job is the consecutive tasks that read one NPU dump file (its header parsed once, its bytes
read once); the plan is the jobs and what every call of them gets; small jobs travel to a
worker, or to a Dask cluster, as batches of about a number of file bytes, so a network of many
small tensors is not bound by calls.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
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


def _task_files(tasks: Sequence[PairTask]) -> list:
    """Every file the comparable tasks read, once each, in order."""
    files = (side.path for t in tasks if t.comparable for side in (t.left, t.right) if isinstance(side, FileSide))
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


def file_sizes(tasks: Sequence[PairTask]) -> dict:
    """The size of every file the comparable tasks read (each once): what the run will stream."""
    sizes = {}
    for path in _task_files(tasks):
        try:
            sizes[path] = os.stat(path).st_size
        except OSError:
            continue  # reported by the comparison
    return sizes


def needs_worker(job: Sequence[PairTask]) -> bool:
    """Whether a job reads tensor data (else it runs where it is: nothing to send away)."""
    return any(task.comparable for task in job)


@dataclass(frozen=True)
class Plan:
    """A run's jobs and what every job call gets: ``job_args`` = (metrics, chunk, numba, keyed)."""

    jobs: list[list[PairTask]]
    job_args: tuple
    sizes: dict  # file path -> bytes


def plan_jobs(tasks: Sequence[PairTask], metrics: Sequence[Metric], chunk: int, keyed: bool = False) -> Plan:
    """Group the tasks into jobs and make the run's kernel choice (from its data bytes)."""
    sizes = file_sizes(tasks)
    # numba's load pays for the run, or is paid already: its pool's workers come with it
    numba = kernels.numba_pays_off(sum(sizes.values()), kernels.needs_cosine_sums_only(metrics)) or workers_have_numba()
    return Plan(group_jobs(tasks), (tuple(metrics), chunk, numba, keyed), sizes)


def batch_jobs(units: Sequence, sizes: dict, batch_bytes: int) -> list:
    """Consecutive plain jobs (task lists) joined into one of up to about ``batch_bytes`` file
    bytes; split tensors (:class:`~.window.Unit`) stay where they are. Order is kept, so the
    rows are the same, in the same order; only the calls are fewer."""
    batched: list = []
    pending: list[PairTask] = []
    pending_bytes = 0
    for unit in units:
        if isinstance(unit, Unit):
            batched += [pending, unit] if pending else [unit]
            pending, pending_bytes = [], 0
            continue
        job_bytes = sum(sizes.get(path, 0) for path in _task_files(unit))
        if pending and pending_bytes + job_bytes > batch_bytes:
            batched.append(pending)
            pending, pending_bytes = [], 0
        pending.extend(unit)
        pending_bytes += job_bytes
    return batched + ([pending] if pending else [])


def pool_batch_bytes(plan: Plan, workers: int) -> int:
    """Bytes of a pool call: :data:`POOL_BATCH_BYTES`, or less so the run is at least four
    calls a worker (small runs: each job its own call, as without batching); 0 inline."""
    if workers <= 1:
        return 0
    return max(1, min(POOL_BATCH_BYTES, sum(plan.sizes.values()) // (4 * workers)))


__all__ = [
    "CLUSTER_BATCH_BYTES",
    "CLUSTER_CALLS_PER_WORKER",
    "POOL_BATCH_BYTES",
    "Plan",
    "batch_jobs",
    "cluster_batch_bytes",
    "file_sizes",
    "group_jobs",
    "needs_worker",
    "plan_jobs",
    "pool_batch_bytes",
]
