"""The shell: interactive on a terminal, line by line from a pipe or file otherwise.

Both run every line through :func:`precision_tool.commands.dispatch.execute_line`, the one error
boundary; prompt_toolkit is imported only when there is a terminal.
"""

from __future__ import annotations

import sys
from typing import IO

from ..commands import build_registry
from ..commands.dispatch import run_lines
from ..context import Context
from ..status import ExitStatus


def run_shell(context: Context, stdin: IO[str] | None = None) -> ExitStatus:
    """The shell on ``stdin`` (default: standard input): the prompt on a terminal, else each
    line as a command. A closed standard input (``<&-``) is an empty one."""
    registry = build_registry()
    stdin = stdin or sys.stdin
    if stdin is None or not _isatty(stdin):
        return run_lines(_lines(stdin), registry, context)
    from .session import interactive_loop

    return interactive_loop(registry, context)


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):  # closed, or a descriptor that is not there
        return False


def _lines(stream: IO[str] | None):
    """The lines of ``stream``; none when it is absent or cannot be read (EOF, as it were)."""
    if stream is None:
        return
    try:
        yield from stream
    except (OSError, ValueError):  # EBADF, a closed file
        return
