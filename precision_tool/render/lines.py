"""Names from the data made visible, and lines that must stay one line.

Op names, file names and attribute values come from dumps other people produced: they may hold
ESC sequences (clear the screen, retitle the window), C1 controls, or Unicode bidi controls
(U+202E turns the rest of a line around, so ``evil\u202eFDP.exe`` reads as ``evil.exe PDF``).
:func:`visible` is the one rule for showing such a string anywhere (terminal, plain or rich, and
the HTML report): every character that does not show as itself becomes its Python escape
(``\x1b``, ``\u202e``), so what is on screen is what is there.

An error names a file and a problem in one line (SPEC.md, "Quality bars"), so scripts can grep
it and logs keep it whole. Rich wraps a :class:`~rich.text.Text` at the console width, so an
:class:`OneLine` renders its text as a single segment instead (a terminal still wraps it on
screen), with :func:`visible` applied (a newline inside a file name is escaped too).
"""

from __future__ import annotations

import re
import unicodedata

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Span, Text

_ASCII_HIDDEN = re.compile(r"[\x00-\x1f\x7f]")
# Cc: controls (C0, DEL, C1), Cf: format (bidi controls U+202A-202E and U+2066-2069, zero width,
# BOM), Zl/Zp: line/paragraph separators, Cs: lone surrogates (file names decoded with
# surrogateescape), Co/Cn: private use, unassigned.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def _escape_char(char: str) -> str:
    return ascii(char)[1:-1]


def _hidden(char: str) -> bool:
    return unicodedata.category(char) in _HIDDEN_CATEGORIES


def visible(text: str) -> str:
    """``text`` with every character that does not show as itself replaced by its escape
    (``\n``, ``\x1b``, ``\x9b``, ``\u202e``); printable text is returned unchanged."""
    if text.isascii():
        return _ASCII_HIDDEN.sub(lambda match: _escape_char(match.group()), text)
    return "".join(_escape_char(c) if _hidden(c) else c for c in text)


def one_line(message: str) -> str:
    """``message`` made :func:`visible`: on one line, with nothing a terminal would obey."""
    return visible(message)


def is_visible(text: str, keep: str = "") -> bool:
    """Whether ``text`` holds no hidden character other than those in ``keep``."""
    if text.isascii():
        return all(c in keep for c in _ASCII_HIDDEN.findall(text))
    return all(c in keep or not _hidden(c) for c in text)


def data_text(value: object, style: str = "") -> Text:
    """A :class:`~rich.text.Text` of a value read from the data (a name, a file name, an
    attribute), made :func:`visible`; never read as markup."""
    return Text(visible(str(value)), style=style)


def visible_text(text: Text, keep: str = "") -> Text:
    """``text`` with :func:`visible` applied to its characters (except those in ``keep``), its
    styles kept on the escaped characters; ``text`` itself when nothing needs escaping."""
    if is_visible(text.plain, keep):
        return text
    cuts = sorted({span.start for span in text.spans} | {span.end for span in text.spans})
    out = text.blank_copy()
    for piece in text.divide(cuts):
        shown = "".join(c if c in keep else visible(c) for c in piece.plain)
        spans = [Span(0, len(shown), span.style) for span in piece.spans if span.end > span.start]
        out.append_text(Text(shown, spans=spans))
    return out


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
    path stay whole when piped (hidden characters are escaped with :func:`visible`)."""

    def __init__(self, text: Text) -> None:
        self.text = visible_text(text)

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
