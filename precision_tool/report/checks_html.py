"""``ac``'s four checks in the page: the same panels the terminal shows, as coloured HTML.

The checks (:mod:`precision_tool.checks`) and their renderers (:mod:`precision_tool.render`)
are ``ac``'s own; the panels are recorded by a rich console and exported as HTML with inline
styles (rich escapes the text), then every character that does not show as itself is made
visible (:func:`~.escape.visible`). A check whose data cannot be read is one error line, as in
``ac``; the other checks still run.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

from rich.console import Console, RenderableType

from ..checks.casts import check_casts
from ..checks.fusion import check_fusion
from ..checks.graph_diff import check_graph_diff
from ..checks.overflow import check_overflow
from ..context import Context
from ..errors import PrecisionToolError
from ..render.checks import render_casts, render_fusion, render_graph_diff
from ..render.lines import OneLine
from ..render.overflow import render_overflow
from ..render.theme import PIPE_WIDTH, THEME
from .escape import visible

CHECK_NAMES = ("overflow check", "fusion check", "cast check", "graph similarity")


def _one(name: str, check: Callable[[], object], render: Callable[[object], RenderableType]) -> RenderableType:
    try:
        return render(check())
    except PrecisionToolError as exc:
        return OneLine(f"{name}: error: {exc}")


def run_checks(context: Context, limit: int | None = None) -> list[RenderableType]:
    """The four checks on ``context``'s data root, each as its terminal renderable (overflow:
    at most ``limit`` Opdebug files, defaulting to the config's vcs limit)."""
    limit = context.config.vcs_limit if limit is None else limit
    return [
        _one(CHECK_NAMES[0], lambda: check_overflow(context, limit), render_overflow),
        _one(CHECK_NAMES[1], lambda: check_fusion(context), render_fusion),
        _one(CHECK_NAMES[2], lambda: check_casts(context), render_casts),
        _one(CHECK_NAMES[3], lambda: check_graph_diff(context), render_graph_diff),
    ]


def _visible_lines(text: str) -> str:
    return "\n".join(visible(line) for line in text.split("\n"))


def renderable_html(renderable: RenderableType, width: int = PIPE_WIDTH) -> str:
    """``renderable`` as the HTML of a ``<pre>`` block's content, coloured with inline styles."""
    console = Console(
        record=True,
        file=io.StringIO(),
        width=width,
        theme=THEME,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        soft_wrap=False,
    )
    console.print(renderable)
    return _visible_lines(console.export_html(inline_styles=True, code_format="{code}"))


def checks_html(renderables: Sequence[RenderableType]) -> str:
    """One ``<pre class="check">`` per check renderable."""
    if not renderables:
        return '<p class="muted">no checks were run</p>'
    return "".join(f'<pre class="check">{renderable_html(r)}</pre>' for r in renderables)
