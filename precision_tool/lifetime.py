"""Worker processes never outlive the command that started them; SIGTERM and SIGHUP stop it.

Worker side (:func:`init_worker_lifetime`, from a pool's initializer): the stop signals get
their default action back (a forked worker inherits the parent's Python handlers, which would
turn the parent's ``terminate()`` into an exception the worker survives), and the worker is
tied to its parent's life:

* Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (prctl(2)), so the kernel kills the worker the
  moment the parent ends, SIGKILL included. The parent may have died between ``fork`` and the
  ``prctl`` call, in which case no signal will come: the worker then checks that its parent is
  still the process that started it, and exits when it is not.
* A worker forked by the pool's fork server (:mod:`.compare.pool_server`), and any worker
  elsewhere: a watchdog thread waits on ``multiprocessing.parent_process().sentinel`` (a pipe
  whose other end only the parent and later-forked siblings hold, or the parent's process handle
  on Windows) and exits the worker when it fires; without a sentinel it polls ``getppid``.

Parent side (:func:`stop_on_signals`): inside the block SIGTERM and SIGHUP raise
:class:`Stopped`, a KeyboardInterrupt, in the main thread, so every cleanup Ctrl-C runs runs
too (the engine ends its workers, the CSV's temporary file is removed, the result directory is
marked interrupted). When the block has ended the signal is raised again under the handler that
was there before: by default the process then ends by that signal, as whoever sent it expects.
A stop signal that was ignored when the command started (SIGHUP under ``nohup``) stays ignored,
in the command and in its workers.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
POLL_S = 0.5  # the getppid watchdog's period, where there is no sentinel to wait on


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: the command stops as on Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


# --- workers ---------------------------------------------------------------------------------


def init_worker_lifetime(parent_pid: int | None) -> None:
    """In a new worker: default stop signals, and death with the command ``parent_pid`` that
    forked it (module doc). None: a fork server forked it (:mod:`.compare.pool_server`), whose
    life the kernel's death signal would follow, and which lives as long as any worker does;
    such a worker watches its sentinel, a pipe from the command, instead."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # under nohup hangups stay ignored
            signal.signal(signum, signal.SIG_DFL)
    if parent_pid is None:
        watch_parent(None)
        return
    if not _death_signal():
        watch_parent(parent_pid)
    if os.getppid() != parent_pid:  # orphaned before the death signal was armed
        os._exit(1)


def _death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent ends; False where that cannot be."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def watch_parent(parent_pid: int | None) -> threading.Thread:
    """Start a daemon thread that ends this process as soon as its parent has ended."""
    import multiprocessing  # here, in a worker: the parent's stop_on_signals has no use for it

    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    polled = os.getppid() if parent_pid is None else parent_pid
    target = (_wait_for_sentinel, (sentinel,)) if sentinel is not None else (_poll_parent, (polled,))
    thread = threading.Thread(target=target[0], args=target[1], daemon=True, name="precision-tool-parent-watch")
    thread.start()
    return thread


def _wait_for_sentinel(sentinel) -> None:
    import multiprocessing.connection

    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _poll_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(POLL_S)
    os._exit(1)


# --- the parent ------------------------------------------------------------------------------


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP as Ctrl-C inside the block, then delivered again (module doc).

    Only the first signal raises; more that come while the command cleans up are remembered,
    not raised into the cleanup. Outside the main thread (where Python cannot install handlers)
    the block runs unchanged.
    """
    # a signal ignored when the command started stays ignored: under nohup a hangup is no stop
    watched = [signum for signum in STOP_SIGNALS if signal.getsignal(signum) is not signal.SIG_IGN]
    if threading.current_thread() is not threading.main_thread() or not watched:
        yield
        return
    owner, received = os.getpid(), []

    def handler(signum, frame):
        if os.getpid() != owner:  # a just-forked worker, before its initializer ran: die
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        received.append(signum)
        if len(received) == 1:
            raise Stopped(signum)

    previous = {signum: signal.signal(signum, handler) for signum in watched}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, signal.SIG_DFL if old is None else old)  # None: set outside Python
        if received:
            _flush_stdio()
            signal.raise_signal(received[0])


def _flush_stdio() -> None:
    """What was printed reaches its reader before the signal ends the process."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
