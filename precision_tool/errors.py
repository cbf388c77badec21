"""The project's one exception type for problems with the user's input.

Anything the user can cause (a truncated dump, an unknown dtype, a typo in a name) raises
``PrecisionToolError`` with a message that names the file and the problem. Every other exception
is a bug in the tool.
"""

from __future__ import annotations

import os


class PrecisionToolError(Exception):
    """A problem with the user's data or input, reported as one readable line."""

    def __init__(self, message: str, path: str | os.PathLike | None = None):
        self.path = None if path is None else os.fspath(path)
        self.problem = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class ClusterStopped(PrecisionToolError):
    """The Dask cluster went away or stopped answering (:mod:`.compare.cluster`): the run was
    interrupted, not refused; what was computed is kept (the row cache) and the run can be
    resumed. Here, not beside the cluster's code, so that a local run need not import that."""


class OutputClosed(Exception):
    """The tool's own output went away: the reader of a pipe left (``| head``), or the disk
    standard output goes to is full. Not the user's data, not a bug: the run stops, quietly for
    a closed pipe, with one line on standard error otherwise."""

    def __init__(self, message: str, broken_pipe: bool):
        self.broken_pipe = broken_pipe
        super().__init__(message)

    def line(self) -> str:
        """The one line on standard error (a closed pipe has none)."""
        return f"error: cannot write the output: {self}"
