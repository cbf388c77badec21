"""The report page: one self-contained HTML document, its style and script inlined.

Nothing is fetched: the page's Content-Security-Policy allows no source at all (``default-src
'none'``), inline styles, and only the one inline script whose SHA-256 it names -- so even a name
that escaped escaping could neither run a script nor load anything. The data the script reads is
JSON in ``<script type="application/json">`` blocks (never executed), written by
:func:`~.escape.json_for_script`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path

from .. import __version__
from ..compare.result_view import ResultView
from ..compare.verdict import CLEAN, INHERITS, INTRODUCES, NEAR, NONFINITE, NOT_COMPARED
from ..formats.output_root import stamp_time
from ..render.palette import css_class, swatch
from ..render.summary import drop_text
from .data import page_data
from .escape import esc, json_for_script
from .looks import legend_html, state_css
from .plot import plot_svg
from .table import evidence, flagged_table


@dataclass
class Subgraph:
    """The drawn neighbourhood of a result's focus op, or why there is none."""

    svg: str | None = None
    how: str = ""  # "dot" or "layered"
    caption: str = ""
    note: str = ""


@dataclass
class ResultPart:
    """One result CSV in the page: its view (None when it could not be read) and extras."""

    path: Path
    view: ResultView | None = None
    error: str = ""
    subgraph: Subgraph = field(default_factory=Subgraph)


@dataclass
class PageInput:
    """Everything the page shows."""

    data_root: Path
    parts: Sequence[ResultPart]
    checks_html: str
    explorer_html: str = ""
    generated: datetime = field(default_factory=lambda: datetime.now().replace(microsecond=0))


SCRIPTS = ("core.js", "plot.js", "table.js", "graph.js", "report.js")  # one script, in this order


def asset(name: str) -> str:
    """The text of ``assets/<name>`` shipped with the package."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def script_hash(script: str) -> str:
    """The CSP source for an inline script: ``'sha256-<base64>'``."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def verdict_html(view: ResultView) -> str:
    """The line naming the first operator that introduces the error (or why there is none):
    what flagged it (the cosine drop, a RED, NaN/Inf: ``vcs``'s words), what decided that it
    introduces (its replay, or its inputs) and, when ``why`` ran, the cause; in its colour."""
    flagged = view.flagged
    if not view.divergence.dumped:
        return f'<p class="verdict-line {css_class(NOT_COMPARED)}">no compared tensors in this result</p>'
    if not flagged:
        return (
            f'<p class="verdict-line {css_class(CLEAN)}">no op is flagged ({esc(view.divergence.rule.describe())})</p>'
        )
    first = view.first_introducer
    if first is None:
        return (
            f'<p class="verdict-line {css_class(INHERITS)}">first operator that introduces the '
            f"error: none found; every flagged op has an input that already diverges, so look "
            f'upstream of <b class="name">{esc(flagged[0].op.name)}</b></p>'
        )
    op = first.op
    how = drop_text(op, view.threshold).plain
    cause = f'<span class="cause {css_class(INTRODUCES)}">; cause: {esc(op.cause)}</span>' if op.cause else ""
    return (
        f'<p class="verdict-line">first operator that introduces the error: '
        f'<b class="name">{esc(op.name)}</b> ({esc(op.op_type or "?")}), Index {op.index}, '
        f'<span class="{css_class(INTRODUCES)}">{esc(swatch(INTRODUCES).marker)} {esc(how)}</span>'
        f'<span class="evidence">; {esc(evidence(op))}</span>{cause}</p>'
    )


def _names(ops, limit: int) -> str:
    shown = ", ".join(f'<span class="name">{esc(op.name)}</span>' for op in ops[:limit])
    return shown + (", ..." if len(ops) > limit else "")


def _count(ops, state: str, words: str) -> str:
    text = f"{len(ops)} {words}"
    return f'<span class="{css_class(state)}">{text}</span>' if ops else text


def count_items(view: ResultView) -> list[tuple[str, str]]:
    """(label, HTML) of the counts ``vcs`` prints, from the same properties of the verdict:
    flagged (introduce / inherit, how many a replay judged), NaN/Inf NPU outputs, beyond
    rounding but not flagged, not judged."""
    divergence, flagged = view.divergence, view.flagged
    introduce = sum(r.op.introduces for r in flagged)
    nonfinite, near, unjudged = divergence.nonfinite, divergence.near, divergence.unjudged
    return [
        (
            "flagged",
            f"{len(flagged)} of {len(divergence.dumped)} ops are flagged "
            f"({esc(divergence.rule.describe())}): {introduce} introduce(s) the "
            f"error, {len(flagged) - introduce} inherit(s) it; a replay decided which for "
            f"{divergence.replayed} of them, their inputs for the rest",
        ),
        (
            "non-finite",
            _count(nonfinite, NONFINITE, "op(s) with a NaN/Inf NPU output")
            + (f', the first: <span class="name">{esc(nonfinite[0].name)}</span>' if nonfinite else ""),
        ),
        (
            "near",
            _count(near, NEAR, "op(s) beyond rounding but not flagged") + (f": {_names(near, 3)}" if near else ""),
        ),
        (
            "not judged",
            f"{len(unjudged)} op(s) with a NaN output cosine, not judged"
            + (f": {_names(unjudged, 5)}" if unjudged else ""),
        ),
    ]


def _stamp_text(path: Path) -> str:
    try:
        when = stamp_time(path.parent.name)  # vc's result directory
    except ValueError:
        return ""
    return when.strftime(" (compared %Y-%m-%d %H:%M:%S)")


def summary_html(view: ResultView) -> str:
    """The verdict, the counts, and which result the section describes."""
    items = count_items(view) + [
        ("result", f'<span class="name">{esc(view.path)}</span>{esc(_stamp_text(view.path))}'),
        ("rows", f"{view.row_count} CSV rows, {len(view.records)} ops"),
    ]
    rows = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in items)
    return verdict_html(view) + f'<dl class="summary">{rows}</dl>'


PLOT_NOTE = (
    f"in the curve {swatch(INTRODUCES).marker} marks an introducer, {swatch(NEAR).marker} an "
    f"op beyond rounding, {swatch(NONFINITE).marker} at the bottom a NaN cosine, a hollow "
    f"mark a RED of 0 (log axis), a gap ops not compared; hover for the op, click to pin "
    f"it; once the curve is clicked the wheel zooms (Ctrl+wheel at any time), drag pans, "
    f"dragging the strip below chooses a window, the arrow keys step op by op, n and p "
    f"jump to the next and previous introducer, 0 shows all"
)


def _subgraph_html(part: ResultPart, k: int) -> str:
    sub = part.subgraph
    head = f"<h3>Subgraph: {esc(sub.caption)}</h3>" if sub.caption else "<h3>Subgraph</h3>"
    note = f'<p class="muted">{esc(sub.note)}</p>' if sub.note else ""
    if sub.svg is None:
        return head + (note or '<p class="muted">nothing flagged: no subgraph to show</p>')
    legend = legend_html(
        f"each op filled by its verdict in this result, an introducer with a double border; drawn by {esc(sub.how)}",
        graph=True,
    )
    tools = (
        f'<div class="graph-tools" data-for="subgraph-{k}"><button type="button" data-zoom="1.25">+'
        f'</button><button type="button" data-zoom="0.8">\u2212</button><button type="button" '
        f'data-zoom="0">fit</button><button type="button" data-zoom="centre">centre the op</button>'
        f'<span class="muted">Ctrl+wheel zooms (the wheel alone once the drawing is clicked), drag '
        f"pans; hover a node for its ports and shapes</span></div>"
    )
    return head + legend + note + tools + f'<div class="subgraph-wrap" id="subgraph-{k}" tabindex="0">{sub.svg}</div>'


def result_html(part: ResultPart, k: int) -> str:
    """The section of one result CSV."""
    title = f'<h2 id="result-{k}">{esc(part.path.name)}</h2>'
    if part.view is None:
        return f'<section class="result error">{title}<p class="error">error: {esc(part.error)}</p></section>'
    view = part.view
    return (
        f'<section class="result" data-section="{k}">{title}'
        f'<div id="summary-{k}">{summary_html(view)}</div>'
        f'<h3 id="curve-{k}">Output cosine along execution order</h3>{legend_html(PLOT_NOTE)}'
        f'<div class="plot-wrap">{plot_svg(view, k)}'
        f'<div class="tooltip" id="tip-{k}" hidden></div></div>'
        f'<h3 id="table-{k}">Flagged ops ({len(view.flagged)})</h3>{flagged_table(view, k)}'
        f'<div id="graph-{k}">{_subgraph_html(part, k)}</div>'
        f'<div class="selected idle" id="sel-{k}" aria-live="polite">click the plot, a table row or a '
        f"graph node for an op's metrics</div>"
        f"</section>"
        f'<script type="application/json" id="data-{k}">{json_for_script(page_data(view))}</script>'
    )


def _nav(parts: Sequence[ResultPart], explorer: bool) -> str:
    """The bar that stays at the top: per result its summary, curve, table and subgraph."""
    links = []
    for k, part in enumerate(parts):
        prefix = f"{esc(part.path.name)}: " if len(parts) > 1 else ""
        if part.view is None:
            links.append(f'<a href="#result-{k}">{prefix or esc(part.path.name)}</a>')
            continue
        links += [
            f'<a href="#summary-{k}">{prefix}summary</a>',
            f'<a href="#curve-{k}">curve</a>',
            f'<a href="#table-{k}">table</a>',
            f'<a href="#graph-{k}">subgraph</a>',
        ]
    links.append('<a href="#checks">checks</a>')
    if explorer:
        links.append('<a href="#model-explorer">Model Explorer</a>')
    return "<nav>" + "".join(links) + "</nav>"


def render_page(page: PageInput) -> str:
    """The whole HTML document."""
    script, style = "\n".join(asset(name) for name in SCRIPTS), asset("report.css")
    csp = f"default-src 'none'; style-src 'unsafe-inline'; script-src {script_hash(script)}"
    sections = "".join(result_html(p, k) for k, p in enumerate(page.parts))
    explorer = (
        f'<section id="model-explorer"><h2>Model Explorer</h2>{page.explorer_html}</section>'
        if page.explorer_html
        else ""
    )
    meta = (
        f"generated {page.generated:%Y-%m-%d %H:%M:%S} by PrecisionTool {esc(__version__)} "
        f'from the data root <span class="name">{esc(page.data_root)}</span>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>PrecisionTool report</title><style>{state_css()}\n{style}</style></head><body>"
        f'<header><h1>PrecisionTool report</h1><p class="meta">{meta}</p>'
        f"</header>{_nav(page.parts, bool(page.explorer_html))}{sections}"
        f'<section id="checks"><h2>Checks</h2>{page.checks_html}</section>{explorer}'
        f"<script>{script}</script></body></html>\n"
    )
