"""The flagged ops of one result as a table that leads: the introducers first, in execution
order, each with its cause (``why``'s, when it ran) and the inheritors that follow it folded
under it (:func:`.data.lead_groups`).

Only the frame is written here: the head, the filter and an empty body. The page's script
renders the rows from the result's data (:mod:`.data`) a few hundred at a time as the table
scrolls into view, so a result with 30,000 flagged ops is as light to open as one with 30.
Shown in the row: Index, the op's name (a sticky first column that never breaks a name), type,
verdict (marker, state and what decided), output cosines, RED and the cause; every other metric,
the input cosines and GroundTruth are in the pinned panel a click on the row fills. Every word
and colour is the verdict's (:mod:`.looks`). On a phone each row is a card.
"""

from __future__ import annotations

from ..compare.divergence import OpCosines
from ..compare.result_view import ResultView
from ..compare.verdict import CLEAN, INHERITS, INTRODUCES
from ..render.palette import css_class, marked
from .escape import esc

ROWS_AT_ONCE = 200  # rows the script adds each time the end of the table scrolls into view


def evidence(op: OpCosines) -> str:
    """What decided whether ``op`` introduces: its replay's evidence, or the input rule."""
    return op.local.describe() if op.local is not None else "no replay: decided by its inputs"


def _th(label: str, kind: str, key: str, title: str = "", css: str = "") -> str:
    tip = f' title="{esc(title)}"' if title else ""
    cls = f' class="{css}"' if css else ""
    return f'<th data-type="{kind}" data-key="{key}"{cls}{tip}><button type="button">{esc(label)}</button></th>'


def _controls(section: int, view: ResultView) -> str:
    states = "".join(f'<option value="{esc(s)}">{esc(marked(s))}</option>' for s in (INTRODUCES, INHERITS))
    introduce = sum(r.op.introduces for r in view.flagged)
    return (
        f'<div class="table-tools"><input type="search" id="filter-{section}" '
        f'placeholder="filter by name or type" aria-label="filter the flagged ops by name or type">'
        f'<select id="state-{section}" aria-label="show ops of one verdict">'
        f'<option value="">introducers, inheritors folded</option>{states}</select>'
        f'<span class="muted" id="count-{section}">{introduce} introducer(s) of '
        f"{len(view.flagged)} flagged ops</span></div>"
    )


def flagged_table(view: ResultView, section: int) -> str:
    """The frame of ``view``'s flagged table (a paragraph when none is flagged); a "cause"
    column when ``why``'s causes are on its ops. ``section`` is the result's number in the page
    (the table's id)."""
    flagged = view.flagged
    if not flagged:
        return f'<p class="{css_class(CLEAN)}">no op is flagged ({esc(view.divergence.rule.describe())})</p>'
    head = [
        _th("op", "text", "name", css="name"),
        _th("Index", "num", "index"),
        _th("type", "text", "type"),
        _th("verdict", "text", "state", "introduces or inherits the error, and what decided it"),
        _th("output cosines", "num", "cos", "sorts by the worst output"),
        _th("RED", "num", "red", "worst output RelativeEuclideanDistance"),
    ]
    if any(r.op.cause for r in flagged):
        head.append(_th("cause", "text", "cause", "the cause why found"))
    return (
        f'{_controls(section, view)}<div class="table-wrap" id="table-wrap-{section}">'
        f'<table class="flagged sortable" id="flagged-{section}" data-rows="{ROWS_AT_ONCE}">'
        f"<thead><tr>{''.join(head)}</tr></thead><tbody></tbody></table>"
        f'<noscript><p class="muted">the table is drawn by the page\'s script; the result CSV '
        f"holds the same rows</p></noscript></div>"
    )
