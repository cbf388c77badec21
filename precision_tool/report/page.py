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
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Mapping, Sequence

from .. import __version__
from ..compare.result_csv import NUMERIC_METRICS
from ..compare.result_view import COSINE, RED, OpRecord, ResultView
from ..render.summary import format_cosine
from .escape import esc, json_for_script
from .plot import plot_svg, x_axis
from .table import cosine_class, flagged_table


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
    causes: Mapping[str, str] = field(default_factory=dict)


@dataclass
class PageInput:
    """Everything the page shows."""

    data_root: Path
    parts: Sequence[ResultPart]
    checks_html: str
    explorer_html: str = ""
    generated: datetime = field(default_factory=lambda: datetime.now().replace(microsecond=0))


def asset(name: str) -> str:
    """The text of ``assets/<name>`` shipped with the package."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def script_hash(script: str) -> str:
    """The CSP source for an inline script: ``'sha256-<base64>'``."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _cos(value: float, threshold: float) -> str:
    return f'<span class="{cosine_class(value, threshold)}">{format_cosine(value)}</span>'


def verdict_html(view: ResultView) -> str:
    """The line naming the first operator that introduces the error (or why there is none)."""
    flagged, threshold = view.flagged, view.threshold
    if not view.divergence.dumped:
        return '<p class="verdict-line nan">no compared tensors in this result</p>'
    if not flagged:
        return f'<p class="verdict-line good">no op is flagged ({esc(view.divergence.rule.describe())})</p>'
    first = view.first_introducer
    if first is None:
        return (f'<p class="verdict-line nan">first operator that introduces the error: none found; '
                f'every flagged op has an input that already diverges, '
                f'so look upstream of <b class="name">{esc(flagged[0].op.name)}</b></p>')
    drop = first.op.cosine_drop
    how = (f'cosine {_cos(drop[0], threshold)} &rarr; {_cos(drop[1], threshold)}' if drop
           else '<span class="bad">the NPU output holds NaN/Inf</span>')
    return (f'<p class="verdict-line">first operator that introduces the error: '
            f'<b class="name">{esc(first.op.name)}</b> ({esc(first.op.op_type or "?")}), '
            f'Index {first.op.index}, {how}</p>')


def _stamp_text(path: Path) -> str:
    try:
        when = datetime.strptime(path.parent.name, "%Y%m%d%H%M%S")  # vc's result directory
    except ValueError:
        return ""
    return when.strftime(" (compared %Y-%m-%d %H:%M:%S)")



def summary_html(view: ResultView) -> str:
    """The verdict, the counts, and which result the section describes."""
    flagged = view.flagged
    introduces = sum(r.op.introduces for r in flagged)
    unjudged = len(view.divergence.unjudged)
    items = [("flagged", f"{len(flagged)} of {len(view.divergence.dumped)} ops are flagged "
                         f"({esc(view.divergence.rule.describe())}): {introduces} introduce(s) the "
                         f"error, {len(flagged) - introduces} inherit(s) it"),
             ("not judged", f"{unjudged} op(s) with a NaN output cosine"),
             ("result", f'<span class="name">{esc(view.path)}</span>{esc(_stamp_text(view.path))}'),
             ("rows", f"{view.row_count} CSV rows, {len(view.records)} ops")]
    rows = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in items)
    return verdict_html(view) + f'<dl class="summary">{rows}</dl>'


def op_data(view: ResultView) -> dict:
    """What the page's script needs of each op with a compared output (see report.js)."""
    xs = x_axis(view)
    red = NUMERIC_METRICS.index(RED)

    def entry(r: OpRecord) -> list:
        return [r.position, r.op.index, round(xs.x(r.op.index), 2), r.op.name, r.op.op_type or "?",
                r.verdict, r.op.ground_truth, [t.value(COSINE) for t in r.inputs],
                [t.value(COSINE) for t in r.outputs], [r.output(m) for m in NUMERIC_METRICS]]
    return {"threshold": view.threshold, "metrics": list(NUMERIC_METRICS), "red": red,
            "ops": [entry(r) for r in view.records if r.outputs]}


LEGEND = ('<p class="legend"><span><i style="background:var(--good)"></i>above the threshold</span>'
          '<span><i style="background:var(--bad)"></i>at or below</span>'
          '<span><i style="background:var(--nan)"></i>NaN (not judged)</span>'
          '<span class="muted">hover for the op, click to pin it; lower panel: log axis, '
          'hollow = 0</span></p>')


def _subgraph_html(part: ResultPart, k: int) -> str:
    sub = part.subgraph
    head = f"<h3>Subgraph: {esc(sub.caption)}</h3>" if sub.caption else "<h3>Subgraph</h3>"
    note = f'<p class="muted">{esc(sub.note)}</p>' if sub.note else ""
    if sub.svg is None:
        return head + (note or '<p class="muted">nothing flagged: no subgraph to show</p>')
    legend = ('<p class="legend muted">filled by worst output cosine: green above the threshold, '
              f'red at or below, yellow NaN, grey not in this result; drawn by {esc(sub.how)}</p>')
    return head + legend + note + f'<div class="subgraph-wrap" id="subgraph-{k}">{sub.svg}</div>'


def result_html(part: ResultPart, k: int) -> str:
    """The section of one result CSV."""
    title = f'<h2 id="result-{k}">{esc(part.path.name)}</h2>'
    if part.view is None:
        return (f'<section class="result error">{title}<p class="error">error: {esc(part.error)}</p>'
                f'</section>')
    view = part.view
    return (f'<section class="result" data-section="{k}">{title}{summary_html(view)}'
            f'<h3>Output cosine along execution order</h3>{LEGEND}'
            f'<div class="plot-wrap">{plot_svg(view, k)}'
            f'<div class="tooltip" id="tip-{k}" hidden></div></div>'
            f'<div class="selected" id="sel-{k}">click the plot, a table row or a graph node for an '
            f'op\'s metrics</div>'
            f'<h3>Flagged ops ({len(view.flagged)})</h3>{flagged_table(view, k, part.causes)}'
            f'{_subgraph_html(part, k)}</section>'
            f'<script type="application/json" id="data-{k}">{json_for_script(op_data(view))}</script>')


def _nav(parts: Sequence[ResultPart], explorer: bool) -> str:
    links = [f'<a href="#result-{k}">{esc(p.path.name)}</a>' for k, p in enumerate(parts)]
    links.append('<a href="#checks">checks</a>')
    if explorer:
        links.append('<a href="#model-explorer">Model Explorer</a>')
    return "<nav>" + "".join(links) + "</nav>"


def render_page(page: PageInput) -> str:
    """The whole HTML document."""
    script, style = asset("report.js"), asset("report.css")
    csp = f"default-src 'none'; style-src 'unsafe-inline'; script-src {script_hash(script)}"
    sections = "".join(result_html(p, k) for k, p in enumerate(page.parts))
    explorer = (f'<section id="model-explorer"><h2>Model Explorer</h2>{page.explorer_html}</section>'
                if page.explorer_html else "")
    meta = (f'generated {page.generated:%Y-%m-%d %H:%M:%S} by PrecisionTool {esc(__version__)} '
            f'from the data root <span class="name">{esc(page.data_root)}</span>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>PrecisionTool report</title><style>{style}</style></head><body>"
            f'<header><h1>PrecisionTool report</h1><p class="meta">{meta}</p>'
            f"{_nav(page.parts, bool(page.explorer_html))}</header>{sections}"
            f'<section id="checks"><h2>Checks</h2>{page.checks_html}</section>{explorer}'
            f"<script>{script}</script></body></html>\n")
