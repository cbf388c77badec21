"""Lines that must stay one line: error messages, whatever the console width or the text.

An error names a file and a problem in one line (SPEC.md, "Quality bars"), so scripts can grep
it and logs keep it whole. Rich wraps a :class:`~rich.text.Text` at the console width, so an
:class:`OneLine` renders its text as a single segment instead (a terminal still wraps it on
screen), and control characters in it (a newline inside a file name) are escaped.
"""

from __future__ import annotations

import re

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(message: str) -> str:
    """``message`` with control characters escaped as Python writes them (``\\n``, ``\\x1b``)."""
    return _CONTROL.sub(lambda match: ascii(match.group())[1:-1], message)


class OneLine:
    """A renderable: ``text`` on one line, never wrapped or folded, in ``style``."""

    def __init__(self, text: str, style: str = "error") -> None:
        self.text = one_line(text)
        self.style = style

    def __str__(self) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment(self.text, console.get_style(self.style, default=""))
        yield Segment.line()


class OneLineText:
    """A styled :class:`~rich.text.Text` on one line, never wrapped: summary lines that end in a
    path stay whole when piped (the caller escapes control characters with :func:`one_line`)."""

    def __init__(self, text) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text.plain

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.text.render(console, end="\n")


class RawLines:
    """Text printed exactly as given, line by line, never wrapped, styled or cropped: JSON
    for scripts, which must parse whatever the console width."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.text.splitlines():
            yield Segment(line)
            yield Segment.line()
