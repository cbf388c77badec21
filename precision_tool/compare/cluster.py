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

What happens when things go away:

* A worker dies (killed, out of memory, its machine lost): the scheduler gives its tasks to
  another worker, and a nanny restarts the worker (Dask's ``allowed-failures``, 3 by default,
  bounds the retries of one task). A job Dask gives up on (``KilledWorker``) becomes rows with
  the reason; the run goes on.
* The scheduler dies or the connection to it is lost: Dask cancels the futures at once; this
  is one error line (PrecisionToolError), the workers and a LocalCluster are closed. A
  scheduler that stops answering (frozen, a network partition) is noticed by a ping after
  :data:`PING_AFTER_SECONDS` without a result, answered within :data:`PING_TIMEOUT_SECONDS`, or
  that error line. Rows already written stay in the row cache, so running ``vc`` again
  computes only the rest.
* Ctrl-C, or the consumer stopping early: the futures are cancelled, the client (and a
  LocalCluster with its processes) closed, then the interrupt propagates. No Dask process or
  thread outlives the comparison.

How long Dask waits to connect is Dask's own setting (``distributed.comm.timeouts.connect``,
e.g. ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=10s``).
"""

from __future__ import annotations

import logging
import signal
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import Callable, ContextManager

from ..errors import PrecisionToolError
from .golden_pairing import FileSide, PairTask
from .window import LostWork

LOCAL_PREFIX = "local:"
POLL_SECONDS = 1.0
PING_AFTER_SECONDS = 30.0
PING_TIMEOUT_SECONDS = 10.0
WORKERS_WAIT_SECONDS = 60.0
CLOSE_SECONDS = 10.0
INSTALL = "pip install 'precision-tool[cluster]'"


def _distributed():
    try:
        import distributed
    except ImportError as exc:
        raise PrecisionToolError(f"a Dask scheduler needs dask[distributed] ({INSTALL}): {exc}") from None
    return distributed


def _absolute(side):
    if isinstance(side, FileSide) and not side.path.is_absolute():
        return replace(side, path=side.path.absolute())
    return side


def absolute_task(task: PairTask) -> PairTask:
    """The task with absolute paths: a worker elsewhere does not share this process's cwd."""
    return replace(task, left=_absolute(task.left), right=_absolute(task.right))


@contextmanager
def _quiet(level: int = logging.CRITICAL):
    """Dask's own log lines (reconnect attempts, restarted workers) would bury the one line this
    command prints about them; they are kept below ``level`` while the cluster is used."""
    logger = logging.getLogger("distributed")
    saved = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(saved)


@contextmanager
def _sigint_ignored():
    """SIGINT ignored while the LocalCluster starts its worker processes: they inherit the
    disposition (it survives exec, and Python then installs no handler of its own), so Ctrl-C
    in a terminal, which reaches the whole process group, leaves them alone and the parent
    closes them. (Blocking it instead does not carry over: the spawned processes unblock it.)
    A Ctrl-C during those one or two seconds of starting is lost."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)


def _local_workers(scheduler: str) -> int | None:
    if not scheduler.startswith(LOCAL_PREFIX):
        return None
    count = scheduler[len(LOCAL_PREFIX):]
    if not count.isdigit() or int(count) < 1:
        raise PrecisionToolError(f"scheduler {scheduler!r}: local:N wants N >= 1 worker processes")
    return int(count)


class Session:
    """A client of the scheduler (and the LocalCluster behind ``local:N``), with the futures
    submitted through it, so that they can all be cancelled.

    A context manager: entering starts the LocalCluster if asked, connects and waits for a
    worker; leaving cancels what is left when leaving on an exception (Ctrl-C, the consumer
    closing the stream, an error) and closes everything. ``child_env`` is the environment
    rule for worker processes started here (the engine's: single-threaded BLAS).
    """

    def __init__(self, scheduler: str, child_env: Callable[[], ContextManager] | None = None) -> None:
        self.scheduler, self.child_env = scheduler, child_env
        self.distributed = _distributed()
        self.cluster = self.client = None
        self.live: dict = {}  # key -> future, submitted and not yet collected
        self.lost = False  # the scheduler went away: nothing more is asked of it
        self._quiet = _quiet()

    def __enter__(self) -> Session:
        self._quiet.__enter__()
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
            self._quiet.__exit__(None, None, None)

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
            with env, _sigint_ignored(), dask.config.set({"distributed.nanny.pre-spawn-environ": {}}):
                # loopback only, on free ports: a scheduler runs whatever it is sent, so no one
                # else may reach it; no dashboard (its HTTP server would take port 8787)
                self.cluster = self.distributed.LocalCluster(
                    n_workers=local, threads_per_worker=1, processes=True, host="127.0.0.1",
                    scheduler_port=0, dashboard_address="127.0.0.1:0",
                    scheduler_kwargs={"dashboard": False}, silence_logs=logging.CRITICAL)
            address = self.cluster
        try:
            self.client = self.distributed.Client(address, set_as_default=False)
            self.client.wait_for_workers(1, timeout=WORKERS_WAIT_SECONDS)
        except (OSError, TimeoutError) as exc:
            raise PrecisionToolError(f"Dask scheduler {self.scheduler}: {_why(exc)}") from None
        return self

    @property
    def workers(self) -> int:
        """Worker threads of the cluster now (each runs one call at a time)."""
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, fn, *args):
        """Submit ``fn(*args)`` (never cached: the files may have changed)."""
        future = self.client.submit(fn, *args, pure=False)
        self.live[future.key] = future
        return future

    def result(self, future):
        """Wait for a future; PrecisionToolError when the scheduler is gone or does not answer,
        LostWork when Dask gave up on the job's worker."""
        waited = 0.0
        while True:
            try:
                value = future.result(timeout=POLL_SECONDS)
            except TimeoutError:
                waited += POLL_SECONDS
                if waited >= PING_AFTER_SECONDS:
                    self._ping()
                    waited = 0.0
                continue
            except self.distributed.client.FutureCancelledError as exc:
                self.lost = True
                raise PrecisionToolError(f"lost the Dask scheduler {self.scheduler} ({exc.reason}); "
                                         "the rows computed so far are reused when vc runs again") from None
            except self.distributed.KilledWorker as exc:
                self.live.pop(future.key, None)
                raise LostWork(_killed_reason(exc)) from None
            self.live.pop(future.key, None)
            return value

    def _ping(self) -> None:
        try:
            self.client.sync(self.client.scheduler.identity, callback_timeout=PING_TIMEOUT_SECONDS)
        except (OSError, TimeoutError) as exc:
            self.lost = True
            raise PrecisionToolError(f"the Dask scheduler {self.scheduler} does not answer "
                                     f"({_why(exc)})") from None

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
        _drop_offload_thread(self.distributed)


def _killed_reason(exc: BaseException) -> str:
    """The row's reason for a job on which every worker that ran it died (KilledWorker)."""
    tries = getattr(exc, "allowed_failures", None)
    last = getattr(getattr(exc, "last_worker", None), "address", None)
    detail = ", ".join(part for part in (f"{tries + 1} tries" if tries is not None else "",
                                          f"the last on {last}" if last else "") if part)
    return ("Not compared: the Dask worker computing it died and Dask gave up retrying"
            + (f" ({detail})." if detail else "."))


def _why(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _drop_offload_thread(distributed) -> None:
    """distributed keeps one "Dask-Offload" thread for its whole process once used; a fresh
    executor (whose thread starts only when used) takes its place, so that this process is
    single-threaded again after the run and the local pool can fork its workers (see engine)."""
    utils = getattr(distributed, "utils", None)
    old = getattr(utils, "_offload_executor", None)
    if old is None or not old._threads:
        return
    utils._offload_executor = type(old)(max_workers=1, thread_name_prefix="Dask-Offload")
    old.shutdown(wait=True)


__all__ = ["PING_AFTER_SECONDS", "PING_TIMEOUT_SECONDS", "Session", "absolute_task"]
