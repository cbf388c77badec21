"""The engine's jobs on a Dask distributed cluster (``vc --scheduler``, setting SCHEDULER).

Imported only when a scheduler is given; Dask is an optional extra
(``pip install 'precision-tool[cluster]'``). The engine sends the local pool's units through a
:class:`Session` (the jobs of :func:`.engine.run_job`, the ranges of :mod:`.split`), in the same
in-order window (:func:`.window.stream_units`): at most two calls per worker thread in flight,
rows back in execution order, so the CSVs are written as the run goes and the parent's memory
stays bounded. Dask does the scheduling; nothing here is a scheduler.

* ``tcp://HOST:8786`` (any Dask address): an existing cluster. Its workers must see the dump
  and golden files at the same paths (shared storage): tasks carry absolute paths. They need
  this package installed (and a custom metric's module importable), as any Dask task does.
* ``local:N``: a ``LocalCluster`` of N single-threaded worker processes (with nannies) on this
  machine, started for the run and closed after it.

Before the first task, every worker is checked (:mod:`.cluster_preflight`: this package at
this version, the kernels the run uses, the data at the same paths); a worker that fails is one
line naming it and what it lacks, or, with ``allow_partial``, left out of the run.

What happens when things go away:

* A worker dies (killed, out of memory, its machine lost): the scheduler gives its tasks to
  another worker, and a nanny restarts the worker (Dask's ``allowed-failures``, 3 by default,
  bounds the retries of one task). A job Dask gives up on (``KilledWorker``) becomes rows with
  the reason; the run goes on.
* The scheduler dies or the connection to it is lost: Dask cancels the futures at once; this
  is one error line (PrecisionToolError), the workers and a LocalCluster are closed. A
  scheduler that stops answering (frozen, a network partition) is noticed when it is asked
  which workers it has (every :data:`WORKERS_EVERY_SECONDS`, and a ping after
  :data:`PING_AFTER_SECONDS` without a result), answered within :data:`PING_TIMEOUT_SECONDS`, or
  that error line. Rows already written stay in the row cache, so running ``vc`` again
  computes only the rest. These errors are :class:`ClusterStopped`: the run was interrupted
  (``vc`` marks it so, for ``vc --resume``), its data is not at fault.
* Every worker gone for :data:`GONE_SECONDS` (or every worker the run may use), or no result at
  all for the ``timeout`` (setting CLUSTER_TIMEOUT): the same, one line, never a silent wait.
* A row whose files the worker could not read while this machine can is not compared, and its
  reason says which worker could not read what (:data:`~.cluster_preflight.UNREADABLE`).
* Ctrl-C, or the consumer stopping early: the futures are cancelled, the client (and a
  LocalCluster with its processes) closed, then the interrupt propagates. No Dask process or
  thread outlives the comparison.

How long Dask waits to connect is Dask's own setting (``distributed.comm.timeouts.connect``,
e.g. ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=10s``); so are its security settings (``tls://``
addresses with ``distributed.comm.tls.*``: the client takes them from Dask's configuration).
Dask's own log lines go to the log file of the spec (under the output root), never to the
terminal, where they would bury the one line (:mod:`.dask_process`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace

from ..errors import ClusterStopped, PrecisionToolError
from .dask_process import DaskLog, drop_offload_thread, sigint_ignored
from .golden_pairing import FileSide, PairTask
from .window import LostWork

LOCAL_PREFIX = "local:"
POLL_SECONDS = 1.0
PING_AFTER_SECONDS = 30.0
PING_TIMEOUT_SECONDS = 10.0
WORKERS_WAIT_SECONDS = 60.0
GONE_SECONDS = 30.0  # a nanny restarts a worker in seconds: longer without any is a lost cluster
# What a wait for Dask that got no answer raises: TimeoutError, or UnboundLocalError from
# distributed.utils.sync, which returns its never-assigned local ``result`` when the coroutine it
# waits on is cancelled (CancelledError is no Exception, so it records no error): seen once under
# load as "cannot access local variable 'result'". Either way the watch decides what happens next.
NO_ANSWER = (TimeoutError, UnboundLocalError)
WORKERS_EVERY_SECONDS = 3.0  # how often the scheduler is asked which workers it has
CLOSE_SECONDS = 10.0
DEFAULT_TIMEOUT = 300.0
LOG_DIR = "cluster_logs"
# the loggers Dask configures with handlers of their own (each straight to stderr), and asyncio's
_LOGGERS = ("distributed", "tornado", "bokeh", "asyncio")
INSTALL = "pip install 'precision-tool[cluster]'"


@dataclass(frozen=True)
class ClusterSpec:
    """Where and how a run uses a Dask cluster.

    Attributes:
        address: the scheduler (``tcp://HOST:8786``, ``tls://...``) or ``local:N``.
        allow_partial: go on with the workers that pass the preflight check.
        timeout: seconds without any result before the run stops (setting CLUSTER_TIMEOUT).
        log_root: an OutputRoot whose ``cluster_logs/`` gets Dask's log lines; None drops them.
    """

    address: str
    allow_partial: bool = False
    timeout: float = DEFAULT_TIMEOUT
    log_root: object = None


def _distributed():
    try:
        import distributed
    except ImportError as exc:
        raise PrecisionToolError(f"a Dask scheduler needs dask[distributed] ({INSTALL}): {exc}") from None
    return distributed


def _absolute(side):
    if isinstance(side, FileSide) and not os.path.isabs(side.path):
        return replace(side, path=os.path.join(os.getcwd(), side.path))  # as Path.absolute: not normalised
    return side


def absolute_task(task: PairTask) -> PairTask:
    """The task with absolute paths: a worker elsewhere does not share this process's cwd."""
    return replace(task, left=_absolute(task.left), right=_absolute(task.right))


def _local_workers(scheduler: str) -> int | None:
    if not scheduler.startswith(LOCAL_PREFIX):
        return None
    count = scheduler[len(LOCAL_PREFIX) :]
    if not count.isdigit() or int(count) < 1:
        raise PrecisionToolError(f"scheduler {scheduler!r}: local:N wants N >= 1 worker processes")
    return int(count)


class Session:
    """A client of the scheduler (and the LocalCluster behind ``local:N``), with the futures
    submitted through it, so that they can all be cancelled.

    A context manager: entering starts the LocalCluster if asked, connects and waits for a
    worker; leaving cancels what is left when leaving on an exception (Ctrl-C, the consumer
    closing the stream, an error) and closes everything. ``child_env`` is the environment
    rule for worker processes started here (the engine's: single-threaded BLAS). ``spec`` is a
    :class:`ClusterSpec` or just the scheduler's address.
    """

    def __init__(self, spec: ClusterSpec | str, child_env: Callable[[], AbstractContextManager] | None = None) -> None:
        self.spec = spec if isinstance(spec, ClusterSpec) else ClusterSpec(spec)
        self.scheduler, self.child_env = self.spec.address, child_env
        self.distributed = _distributed()
        self.cluster = self.client = None
        self.live: dict = {}  # key -> future, submitted and not yet collected
        self.lost = False  # the scheduler went away: nothing more is asked of it
        self.allowed: list[str] | None = None  # the workers tasks may run on; None: any
        self.log = DaskLog(self.spec.log_root)
        self._collected = self._seen_done = 0
        self._last_progress = self._last_asked = time.monotonic()
        self._none_since: float | None = None  # since when the scheduler has had no worker for us

    def __enter__(self) -> Session:
        self.log.__enter__()
        try:
            return self.open()
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, kind, value, traceback) -> None:
        try:
            if kind is not None:
                self.cancel()
            self.close()
        finally:
            self.log.__exit__(None, None, None)

    def open(self) -> Session:
        """Start the LocalCluster if asked, connect, and wait for a worker."""
        local = _local_workers(self.scheduler)
        address = self.scheduler
        if local is not None:
            import dask

            env = self.child_env() if self.child_env is not None else nullcontext()
            # Dask's nannies set MALLOC_TRIM_THRESHOLD_=65536 in their workers, which turns off
            # glibc's adaptive mmap threshold: every numpy temporary of the numpy kernels is then
            # mapped and unmapped, measured slower (docs/performance.md); the workers'
            # environment is child_env's
            with env, sigint_ignored(), dask.config.set({"distributed.nanny.pre-spawn-environ": {}}):
                # loopback only, on free ports: a scheduler runs whatever it is sent, so no one
                # else may reach it; no dashboard (its HTTP server would take port 8787)
                self.cluster = self.distributed.LocalCluster(
                    n_workers=local,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    scheduler_port=0,
                    dashboard_address="127.0.0.1:0",
                    scheduler_kwargs={"dashboard": False},
                    silence_logs=logging.CRITICAL,
                )
            address = self.cluster
        self._check_tls()
        try:
            self.client = self.distributed.Client(address, set_as_default=False)
            self.client.wait_for_workers(1, timeout=WORKERS_WAIT_SECONDS)
        except (OSError, TimeoutError) as exc:
            raise PrecisionToolError(f"Dask scheduler {self.scheduler}: {_why(exc)}{self.log.note()}") from None
        return self

    def _check_tls(self) -> None:
        """A ``tls://`` scheduler without Dask's TLS settings here is one line, before a client
        is made (Dask's own error is a TypeError, and the half-made client's traceback)."""
        if not self.scheduler.startswith(("tls://", "wss://")):
            return
        if self.distributed.Security().get_connection_args("client").get("ssl_context") is None:
            raise PrecisionToolError(
                f"Dask scheduler {self.scheduler}: a tls:// scheduler needs Dask's TLS settings here "
                "(distributed.comm.tls.ca-file, .client.cert and .client.key, e.g. "
                "DASK_DISTRIBUTED__COMM__TLS__CA_FILE=ca.pem: see docs/cluster.md)"
            )

    def check(self, files, need_numba: bool) -> None:
        """The preflight check (:mod:`.cluster_preflight`) of every worker, before any task:
        one line naming a worker that lacks what the run needs, unless ``allow_partial`` (the
        tasks then go to the workers that pass only)."""
        from .. import __version__
        from .cluster_preflight import passing_workers, probe, samples

        try:
            reports = self.client.run(probe, samples(files), need_numba, on_error="return")
        except (OSError, TimeoutError) as exc:
            raise self._stopped(f"lost the Dask scheduler {self.scheduler} ({_why(exc)})") from None
        try:
            good = passing_workers(reports, __version__, self.spec.allow_partial, self.scheduler)
        except PrecisionToolError as exc:
            raise PrecisionToolError(f"{exc}{self.log.note()}") from None
        if len(good) < len(reports):
            self.allowed = good

    @property
    def workers(self) -> int:
        """Worker threads the run may use now (each runs one call at a time)."""
        threads = self.client.nthreads()
        return max(1, sum(n for w, n in threads.items() if self.allowed is None or w in self.allowed))

    def submit(self, fn, *args):
        """Submit ``fn(*args)`` (never cached: the files may have changed), through the
        worker-side wrapper (:func:`~.cluster_preflight.on_worker`), to the allowed workers."""
        from .cluster_preflight import on_worker

        where = {} if self.allowed is None else {"workers": self.allowed, "allow_other_workers": False}
        future = self.client.submit(on_worker, fn, *args, pure=False, **where)
        self.live[future.key] = future
        return future

    def result(self, future):
        """Wait for a future; ClusterStopped when the scheduler is gone or does not answer, the
        workers are gone or nothing finishes for the timeout; LostWork when Dask gave up on the
        job's worker."""
        waited = 0.0
        while True:
            try:
                value = future.result(timeout=POLL_SECONDS)
            except NO_ANSWER:
                waited += POLL_SECONDS
                if waited >= PING_AFTER_SECONDS:
                    self._ping()
                    waited = 0.0
                self._watch()
                continue
            except self.distributed.client.FutureCancelledError as exc:
                self.lost = True
                raise self._stopped(f"lost the Dask scheduler {self.scheduler} ({exc.reason})") from None
            except self.distributed.KilledWorker as exc:
                self._collect(future)
                raise LostWork(_killed_reason(exc)) from None
            self._collect(future)
            return value

    def _collect(self, future) -> None:
        if self.live.pop(future.key, None) is not None:
            self._collected += 1

    def _watch(self) -> None:
        """No silent wait: some result within the timeout, some worker within GONE_SECONDS."""
        now = time.monotonic()
        done = self._collected + sum(1 for f in self.live.values() if f.done())
        if done != self._seen_done:
            self._seen_done, self._last_progress = done, now
        if now - self._last_asked >= WORKERS_EVERY_SECONDS:
            self._last_asked = now
            workers = self._identity().get("workers", {})
            if any(self.allowed is None or w in self.allowed for w in workers):
                self._none_since = None
            elif self._none_since is None:
                self._none_since = now - WORKERS_EVERY_SECONDS  # gone since the ask before, at least
        gone = now - self._none_since if self._none_since is not None else 0.0
        stalled = now - self._last_progress >= self.spec.timeout
        if self._none_since is not None and (gone >= min(GONE_SECONDS, self.spec.timeout) or stalled):
            which = "every Dask worker the run may use" if self.allowed is not None else "every Dask worker"
            raise self._stopped(f"{which} of {self.scheduler} is gone (none for {gone:.0f} s)")
        if stalled:
            raise self._stopped(
                f"no result from the Dask workers of {self.scheduler} for "
                f"{now - self._last_progress:.0f} s (setting CLUSTER_TIMEOUT)"
            )

    def _stopped(self, message: str) -> ClusterStopped:
        return ClusterStopped(f"{message}; the rows computed so far are kept{self.log.note()}")

    def _identity(self) -> dict:
        """The scheduler's identity (its workers among it), asked with a timeout: Dask's own
        ``scheduler_info`` waits for a frozen scheduler forever."""
        try:
            return self.client.sync(self.client.scheduler.identity, n_workers=-1, callback_timeout=PING_TIMEOUT_SECONDS)
        except (OSError, *NO_ANSWER) as exc:
            self.lost = True
            raise self._stopped(f"the Dask scheduler {self.scheduler} does not answer ({_why(exc)})") from None

    def _ping(self) -> None:
        self._identity()

    def cancel(self) -> None:
        """Cancel every future not yet collected (when the scheduler still listens)."""
        futures, self.live = list(self.live.values()), {}
        if futures and not self.lost and self.client is not None and self.client.status == "running":
            try:
                self.client.cancel(futures, force=True)
            except Exception:  # noqa: BLE001 -- closing follows, and it ends them all anyway
                pass

    def close(self) -> None:
        """Close the client and the LocalCluster; leaves no Dask thread behind."""
        for closable in (self.client, self.cluster):
            if closable is not None:
                try:
                    closable.close(timeout=CLOSE_SECONDS)
                except Exception:  # noqa: BLE001 -- a lost scheduler: nothing left to close
                    pass
        self.client = self.cluster = None
        drop_offload_thread(self.distributed)


def _killed_reason(exc: BaseException) -> str:
    """The row's reason for a job on which every worker that ran it died (KilledWorker)."""
    tries = getattr(exc, "allowed_failures", None)
    last = getattr(getattr(exc, "last_worker", None), "address", None)
    detail = ", ".join(
        part
        for part in (f"{tries + 1} tries" if tries is not None else "", f"the last on {last}" if last else "")
        if part
    )
    return "Not compared: the Dask worker computing it died and Dask gave up retrying" + (
        f" ({detail})." if detail else "."
    )


def _why(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


__all__ = [
    "ClusterSpec",
    "ClusterStopped",
    "PING_AFTER_SECONDS",
    "PING_TIMEOUT_SECONDS",
    "Session",
    "absolute_task",
]
