"""Named styles, and the console every output goes through."""

from __future__ import annotations

import sys
from typing import IO

from rich.console import Console
from rich.theme import Theme

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


def make_console(file: IO[str] | None = None, width: int | None = None,
                 force_terminal: bool | None = None, stderr: bool = False) -> Console:
    """A console with the theme. Piped output gets no ANSI codes (rich decides by isatty) and a
    wide page, so long op names are not wrapped mid-line in logs and scripts."""
    target = file or (sys.stderr if stderr else sys.stdout)
    if width is None and not force_terminal and not _isatty(target):
        width = PIPE_WIDTH
    return Console(file=file, width=width, force_terminal=force_terminal, theme=THEME,
                   stderr=stderr, highlight=False, soft_wrap=False)
