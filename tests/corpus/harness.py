"""Running corpus checks: one command through the real registry and error boundary, a hang
guard, the outcome assertions, a simulation of unreadable files for root, and snapshots."""

from __future__ import annotations

import builtins
import errno
import io
import os
import signal
import stat
from contextlib import contextmanager
from pathlib import Path

from precision_tool.compare.result_csv import latest_result_dir
from precision_tool.compare.result_read import read_result_csv
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command

from .base import ERROR, FINE, ROW, Check

CHECK_TIMEOUT_S = 60  # far above what any check takes; only a hang gets near it
WIDTH = 400


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so the shell's boundary cannot swallow it."""


@contextmanager
def hang_guard(seconds: int = CHECK_TIMEOUT_S):
    """Fail with :class:`Hang` when the block runs longer than ``seconds``."""

    def alarm(signum, frame):
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def new_context(root: Path):
    """A context on ``root`` with a wide console. Workers: one per core (the corpus tensors
    are far too small for vc to start a pool; the 100k-op graph is parsed in parallel)."""
    return make_context(root, width=WIDTH)


def run_check(context, buffer: io.StringIO, check: Check) -> tuple[ExitStatus, str]:
    """Run one check's command line; (status, what it printed)."""
    start = buffer.tell()
    with hang_guard():
        status = run_command(context, check.line)
    return status, buffer.getvalue()[start:]


def csv_rows(root: Path) -> list:
    """The rows of every CSV of the newest ``vc`` result under ``root``."""
    newest = latest_result_dir(root / "temp")
    assert newest is not None, "vc wrote no CSV"
    return [row for path in sorted(newest.glob("*.csv")) for row in read_result_csv(path)]


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def assert_outcome(check: Check, status: ExitStatus, output: str, root: Path, base: bool) -> None:
    """The outcome ``check`` asks for (see :class:`~.base.Check`)."""
    where = f"{check.line!r} printed:\n{output}"
    assert "Traceback" not in output and "internal error" not in output, where
    flat = " ".join(output.split())
    if check.outcome == ERROR:
        assert status == ExitStatus.ERROR, where
        lines = error_lines(output)
        assert len(lines) == 1, where
        assert check.text in lines[0] and check.names in lines[0], where
        return
    assert status in (ExitStatus.OK, ExitStatus.FLAGGED), where
    assert not error_lines(output), where
    if check.outcome == FINE:
        assert check.text in flat, where
        return
    assert check.outcome == ROW
    rows = csv_rows(root)
    assert any(check.text in row.fail_reason for row in rows), (where, [r.fail_reason for r in rows])
    if base:  # the intact op after the broken one was still compared: the run went on
        assert any(row.op_name == "net/add" and row.is_output and row.compared for row in rows), rows


# --- unreadable files when running as root ----------------------------------------------------


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _mode_000(file) -> bool:
    if not isinstance(file, (str, bytes, os.PathLike)):
        return False
    try:
        return stat.S_IMODE(os.stat(file).st_mode) == 0
    except OSError:
        return False


@contextmanager
def as_if_not_root(monkeypatch):
    """Make opening a mode-000 file fail as it does for anyone but root (root reads anything),
    whether through a file object or a bare descriptor (``os.open``: the readers that read a
    small file whole)."""
    real_open, real_os_open = builtins.open, os.open

    def refused(file) -> PermissionError:
        return PermissionError(errno.EACCES, "Permission denied", os.fsdecode(file))

    def guarded(file, *args, **kwargs):
        if _mode_000(file):
            raise refused(file)
        return real_open(file, *args, **kwargs)

    def guarded_descriptor(file, *args, **kwargs):
        if _mode_000(file):
            raise refused(file)
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded)
    monkeypatch.setattr(os, "open", guarded_descriptor)
    try:
        yield
    finally:
        monkeypatch.undo()


# --- snapshots --------------------------------------------------------------------------------


def snapshot(top: Path, data_root: Path | None = None) -> dict[str, tuple]:
    """Path -> (kind and mode, size, mtime) of everything under ``top`` (links not followed),
    leaving out the data root's ``temp/``. The data root's own mtime is left out too: creating
    ``temp/`` in it changes it."""
    temp = data_root / "temp" if data_root else None
    found = {}
    for directory, dirs, files in os.walk(top, followlinks=False):
        here = Path(directory)
        dirs[:] = [d for d in dirs if here / d != temp]
        for name in [*dirs, *files]:
            path = here / name
            info = os.lstat(path)
            mtime = None if path == data_root else info.st_mtime_ns
            found[str(path.relative_to(top))] = (info.st_mode, info.st_size, mtime)
    return found
