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
    line as a command."""
    registry = build_registry()
    stdin = stdin or sys.stdin
    if not stdin.isatty():
        return run_lines(stdin, registry, context)
    from .session import interactive_loop

    return interactive_loop(registry, context)
