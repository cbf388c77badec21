"""What a Dask session does to this process, kept in bounds (:mod:`.cluster`): Dask's log lines
go to a file under the output root, never to the terminal (:class:`DaskLog`); the LocalCluster's
worker processes start with SIGINT ignored, so a Ctrl-C reaches the parent only
(:func:`sigint_ignored`); and the thread distributed keeps for its whole process is dropped
after the run (:func:`drop_offload_thread`), so the local pool can fork again.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from contextlib import contextmanager

from ..errors import PrecisionToolError

LOG_DIR = "cluster_logs"
# the loggers Dask configures with handlers of their own (each straight to stderr), and asyncio
_LOGGERS = ("distributed", "tornado", "bokeh", "asyncio")


def _dask_loggers() -> list[logging.Logger]:
    """Dask's loggers: its configuration gives several (``distributed.client`` among them) a
    stderr handler of their own, so each is redirected, not only their parent."""
    names = [name for name in list(logging.root.manager.loggerDict) if name.split(".")[0] in _LOGGERS]
    return [logging.getLogger(name) for name in dict.fromkeys([*_LOGGERS, *names])]


class DaskLog:
    """Dask's log lines (reconnect attempts, restarted workers, a lost scheduler's traceback) in
    a file under the output root while the cluster is used, not on the terminal, where they
    would bury the one line this command prints; dropped when there is no output root, and
    after the session (see ``__exit__``)."""

    def __init__(self, root=None) -> None:
        self.root, self.pending, self.path, self._saved = root, None, None, []

    def __enter__(self) -> DaskLog:
        if self.root is not None:
            name = f"dask-{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}.log"
            self.pending = self.root.begin(self.root.path / LOG_DIR / name)
            self.path = self.pending.path
            handler: logging.Handler = logging.StreamHandler(self.pending.handle)
            handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        else:
            handler = logging.NullHandler()
        for logger in _dask_loggers():
            self._saved.append((logger, logger.handlers[:], logger.propagate))
            logger.handlers, logger.propagate = [handler], False
        return self

    def __exit__(self, *exc) -> None:
        # Dask's handlers are not put back: a client closed on a lost scheduler still logs its
        # reconnect's traceback from its loop thread a moment later, and that too is Dask's, not
        # the user's; the next session sends them to its own file again
        quiet = logging.NullHandler()
        for logger, _, _ in self._saved:
            logger.handlers = [quiet]
        self._saved = []
        if self.pending is not None:
            try:
                self.pending.commit()
            except PrecisionToolError:  # a full disk: the log is lost, the run's own line is not
                self.path = None
            self.pending = None

    def note(self) -> str:
        """`` (Dask's log: PATH)`` when there is a log file, else nothing."""
        return f" (Dask's log: {self.path})" if self.path is not None else ""


@contextmanager
def sigint_ignored():
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


def drop_offload_thread(distributed) -> None:
    """distributed keeps one "Dask-Offload" thread for its whole process once used; a fresh
    executor (whose thread starts only when used) takes its place, so that this process is
    single-threaded again after the run and the local pool can fork its workers (see engine)."""
    utils = getattr(distributed, "utils", None)
    old = getattr(utils, "_offload_executor", None)
    if old is None or not old._threads:
        return
    utils._offload_executor = type(old)(max_workers=1, thread_name_prefix="Dask-Offload")
    old.shutdown(wait=True)


__all__ = ["LOG_DIR", "DaskLog", "drop_offload_thread", "sigint_ignored"]
