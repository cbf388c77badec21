"""The pool's fork server: workers forked from a process that loaded numba while the run was read.

numba's load (its import and its first cached kernel: about 0.6 s of CPU) is the largest fixed
cost of a run that uses the kernels. Paid in the parent, it came after planning and before the
pool, while the second core idled. A ``vc`` line that will want the kernels (its words and the
size of its data say so before anything is read) starts multiprocessing's fork server first
thing instead (:func:`start`): a fresh interpreter that imports what a worker runs
(:mod:`.pool_preload`) and loads numba (:mod:`.numba_preload`) while the parent imports, reads
the graph and plans. The pool's workers are then forked from that server with all of it loaded;
and since the server runs no thread, they are forked whatever threads the parent runs (a live
display), where the parent itself would have to spawn them.

Only the tool's own processes (the CLI) start one: a worker forked from the server holds the
tool's modules and no caller's ``__main__``, so a custom metric defined in a caller's script
could not reach it. Where the start method does not exist (Windows) nothing starts and the pool
forks or spawns as before. A worker ends when this process does, as it watches a pipe only this
process writes (:mod:`..lifetime`); the server ends once this process and every worker it
forked have (multiprocessing's rule: they all hold its "alive" pipe).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_PRELOAD = "precision_tool.compare.pool_preload"
_NUMBA_PRELOAD = "precision_tool.compare.numba_preload"
_SERVER: dict = {"context": None}  # set once by start(): a fact of this process, like its claim


@contextmanager
def single_threaded_children() -> Iterator[None]:
    """Worker processes are single-threaded by design: no BLAS/OpenMP thread pools in them
    (what they read at their start, hence set around it)."""
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


def one_blas_thread() -> None:
    """This process's BLAS and OpenMP pools of one thread, unless set otherwise, when numpy has
    not loaded yet (they read the settings at its import): for a process that multiplies no
    matrices (a one-shot ``vc``), where OpenBLAS's second thread only spins, about 0.1 s of CPU
    after the import, on the core the fork server loads numba on."""
    if "numpy" not in sys.modules:
        for name in _THREAD_VARS:
            os.environ.setdefault(name, "1")


def start() -> bool:
    """Start the fork server (once a process), loading numba in it; whether one runs. It
    returns at once: the server loads while this process goes on, and the first worker asked
    of it waits for the load to end."""
    if _SERVER["context"] is not None:
        return True
    import multiprocessing  # here: an inline run imports this module for one_blas_thread alone

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([_PRELOAD, _NUMBA_PRELOAD])
    with single_threaded_children():
        forkserver.ensure_running()
    _SERVER["context"] = context
    atexit.register(_end, forkserver._forkserver)
    return True


def _end(server) -> None:
    """At exit, the server killed and waited for rather than left to end on its own: its own
    teardown, numba loaded, takes most of a second, and waited for, its CPU and its workers'
    (which it waited for) count among this process's children's, as a forked pool's do. Its
    socket is in multiprocessing's temporary directory, which multiprocessing removes."""
    pid = getattr(server, "_forkserver_pid", None)  # multiprocessing has no public name for it
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:  # already gone and reaped
        pass


def server_context():
    """The fork server's multiprocessing context when :func:`start` started one, else None."""
    return _SERVER["context"]


def workers_have_numba() -> bool:
    """Whether the workers will come with numba's kernels loaded (a fork server runs, which
    loads them): their load is then paid whether the run uses them or not."""
    return server_context() is not None


def parent_of_workers(context) -> int | None:
    """What a worker of ``context`` is tied to (:func:`~precision_tool.lifetime.init_worker_lifetime`):
    this process, which forks it; None for a worker the fork server forks (it is tied to this
    process through its sentinel: the server itself lives as long as any worker does)."""
    return None if context.get_start_method() == "forkserver" else os.getpid()


__all__ = [
    "one_blas_thread",
    "parent_of_workers",
    "server_context",
    "single_threaded_children",
    "start",
    "workers_have_numba",
]
