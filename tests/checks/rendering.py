"""Rendering a check's panel to text, for assertions."""

from __future__ import annotations

import io

from precision_tool.render.theme import make_console


def render_text(renderable, width: int = 120) -> str:
    """``renderable`` as plain text on a ``width``-column console."""
    buffer = io.StringIO()
    make_console(file=buffer, width=width).print(renderable)
    return buffer.getvalue()


def flat(text: str) -> str:
    """``text`` on one line: panel borders dropped, runs of whitespace (wrapping) as one space."""
    return " ".join(text.replace("│", " ").split())
