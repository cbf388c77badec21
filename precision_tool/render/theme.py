"""Named styles, and the console every output goes through."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import IO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text
from rich.theme import Theme

from ..errors import OutputClosed
from .lines import visible, visible_text
from .palette import STYLES

THEME = Theme(
    {
        **STYLES,
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
    }
)

PIPE_WIDTH = 160  # piped output without COLUMNS: a wide page for logs and scripts


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


class DataSafeConsole(ToolConsole):
    """A console that shows no character of a text as a terminal would obey it: whatever text
    reaches it unescaped (a name a renderer forgot to pass through :func:`~.lines.visible`) is
    escaped as it is rendered, newlines apart. Renderers still escape data where it enters a
    renderable, so that widths are measured on what is shown; this is the net under them."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        if isinstance(renderable, Text):
            renderable = visible_text(renderable, keep="\n")
        elif isinstance(renderable, str):
            renderable = "\n".join(visible(line) for line in renderable.split("\n"))
        return super().render(renderable, options)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def columns_setting(environ: Mapping[str, str] | None = None) -> int | None:
    """The width ``COLUMNS`` asks for, or None when it is unset or not a positive number."""
    value = (os.environ if environ is None else environ).get("COLUMNS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


def make_console(
    file: IO[str] | None = None, width: int | None = None, force_terminal: bool | None = None, stderr: bool = False
) -> Console:
    """A :class:`DataSafeConsole` with the theme. Piped output gets no ANSI codes (rich decides
    by isatty) and the width ``COLUMNS`` gives, else a wide page (:data:`PIPE_WIDTH`); tables
    and lines never break a name at that width (:mod:`.fit`), they fold rows instead. A closed
    pipe or a full disk on its stream raises :class:`~precision_tool.errors.OutputClosed`."""
    target = file or (sys.stderr if stderr else sys.stdout)
    if width is None and not force_terminal and not _isatty(target):
        width = columns_setting() or PIPE_WIDTH
    return DataSafeConsole(
        file=file,
        width=width,
        force_terminal=force_terminal,
        theme=THEME,
        stderr=stderr,
        highlight=False,
        soft_wrap=False,
    )
