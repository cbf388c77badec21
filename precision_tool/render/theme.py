"""Named styles, and the console every output goes through."""

from __future__ import annotations

import os
import sys
from typing import IO

from rich.console import Console
from rich.theme import Theme

from ..errors import OutputClosed

THEME = Theme({
    "cos.good": "green",
    "cos.bad": "bold red",
    "cos.nan": "yellow",
    "op.name": "bold cyan",
    "op.type": "magenta",
    "title": "bold",
    "muted": "dim",
    "warn": "yellow",
    "error": "bold red",
    "path": "blue",
})

PIPE_WIDTH = 160


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ToolConsole(Console):
    """A Console whose closed pipe is an :class:`~precision_tool.errors.OutputClosed` (rich's
    default is ``SystemExit(1)``, whatever the command found); see :meth:`output_lost`."""

    def on_broken_pipe(self) -> None:
        self.output_lost()
        raise OutputClosed("the reader went away", broken_pipe=True)

    def output_lost(self) -> None:
        """Print nothing from now on, and point the stream's descriptor at ``os.devnull``, so
        the interpreter's last flush at exit cannot fail again."""
        self.quiet = True
        try:
            fileno = self.file.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fileno)
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no descriptor (a StringIO): nothing to do
            pass


def make_console(file: IO[str] | None = None, width: int | None = None,
                 force_terminal: bool | None = None, stderr: bool = False) -> Console:
    """A console with the theme. Piped output gets no ANSI codes (rich decides by isatty) and a
    wide page, so long op names are not wrapped mid-line in logs and scripts. A closed pipe or a
    full disk on its stream raises :class:`~precision_tool.errors.OutputClosed`."""
    target = file or (sys.stderr if stderr else sys.stdout)
    if width is None and not force_terminal and not _isatty(target):
        width = PIPE_WIDTH
    return ToolConsole(file=file, width=width, force_terminal=force_terminal, theme=THEME,
                       stderr=stderr, highlight=False, soft_wrap=False)
