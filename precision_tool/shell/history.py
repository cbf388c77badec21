"""The shell's persistent history, in the user's data dir, and never a reason to crash.

``$XDG_DATA_HOME/precision_tool/history`` when XDG_DATA_HOME is set, else
``~/.precision_tool_history``. A location that cannot be written (read-only home, a file where a
directory should be, no home at all) gives an in-memory history for the session instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from prompt_toolkit.history import FileHistory, History, InMemoryHistory

log = logging.getLogger("precision_tool")


def history_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the history lives; None when there is neither XDG_DATA_HOME nor a home directory."""
    environ = os.environ if environ is None else environ
    if environ.get("XDG_DATA_HOME"):
        return Path(environ["XDG_DATA_HOME"]) / "precision_tool" / "history"
    home = environ.get("HOME")
    if not home:
        try:
            home = str(Path.home())
        except (RuntimeError, KeyError):
            return None
    return Path(home) / ".precision_tool_history"


class SafeFileHistory(FileHistory):
    """A FileHistory that turns read and write failures into a debug log line: the history
    file going away mid-session (full disk, unmounted home) must not end the shell."""

    def load_history_strings(self):
        try:
            yield from list(super().load_history_strings())
        except OSError as exc:
            log.debug("cannot read history %s: %s", self.filename, exc)

    def store_string(self, string: str) -> None:
        try:
            super().store_string(string)
        except OSError as exc:
            log.debug("cannot write history %s: %s", self.filename, exc)


def open_history(path: Path | None = None) -> History:
    """A file history at ``path`` (default :func:`history_path`), created private (0600);
    an in-memory one when that file cannot be created or appended to."""
    path = history_path() if path is None else path
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
    except OSError as exc:
        log.debug("history not kept: %s: %s", path, exc)
        return InMemoryHistory()
    return SafeFileHistory(os.fspath(path))
