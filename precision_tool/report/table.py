"""The flagged ops of one result as a sortable HTML table.

One row per flagged op in execution order: Index, type, name, whether it introduces or
inherits the error, the cosine of every input and output, the worst output value of every other
metric, the golden names, and -- when the caller has them (``why``'s per-op causes) -- a cause.
Numbers print as the CSV writes them; ``data-sort`` holds the exact value, so the page's script
sorts by number, NaN last. Every name is escaped (:func:`.escape.esc`).
"""

from __future__ import annotations

from typing import Mapping

from ..compare.result_csv import NUMERIC_METRICS
from ..compare.result_view import COSINE, OpRecord, ResultView, TensorMetrics, worst
from ..render.summary import cosine_style
from .escape import esc, number, sort_key

OTHER_METRICS = tuple(m for m in NUMERIC_METRICS if m != COSINE)
SHORT = {"MaxAbsoluteError": "MaxAbsErr", "AccumulatedRelativeError": "AccRelErr",
         "RelativeEuclideanDistance": "RelEuclid", "KullbackLeiblerDivergence": "KL",
         "MeanAbsoluteError": "MeanAbsErr", "RootMeanSquareError": "RMSE",
         "MaxRelativeError": "MaxRelErr", "MeanRelativeError": "MeanRelErr"}


def cosine_class(value: float, threshold: float) -> str:
    """``nan``, ``bad`` (at or below ``threshold``) or ``good``: the class the page colours a
    cosine with, by the terminal's rule (:func:`~precision_tool.render.summary.cosine_style`)."""
    return cosine_style(value, threshold).removeprefix("cos.")


def _th(label: str, kind: str, title: str = "") -> str:
    tip = f' title="{esc(title)}"' if title else ""
    return f'<th data-type="{kind}"{tip}><button type="button">{esc(label)}</button></th>'


def _num_td(value: float, threshold: float | None = None) -> str:
    css = f' class="{cosine_class(value, threshold)}"' if threshold is not None else ""
    return f'<td{css} data-sort="{sort_key(value)}">{number(value)}</td>'


def _cosines_td(tensors: tuple[TensorMetrics, ...], threshold: float) -> str:
    if not tensors:
        return '<td data-sort="">none compared</td>'
    cells = " ".join(f'<span class="{cosine_class(t.value(COSINE), threshold)}">{t.slot}: '
                     f'{number(t.value(COSINE))}</span>' for t in tensors)
    return f'<td data-sort="{sort_key(worst(tensors, COSINE))}">{cells}</td>'


def _row(number_: int, record: OpRecord, threshold: float, cause: str | None,
         with_causes: bool) -> str:
    op = record.op
    verdict = "introduces" if op.introduces else "inherits"
    cells = [f'<td data-sort="{number_}">{number_}</td>', f'<td data-sort="{op.index}">{op.index}</td>',
             f"<td>{esc(op.op_type or '?')}</td>", f'<td class="name">{esc(op.name)}</td>',
             f'<td class="verdict {verdict}">{verdict}</td>',
             _cosines_td(record.inputs, threshold), _cosines_td(record.outputs, threshold)]
    cells += [_num_td(record.output(metric)) for metric in OTHER_METRICS]
    cells.append(f'<td class="name">{esc(op.ground_truth)}</td>')
    if with_causes:
        cells.append(f'<td class="cause">{esc(cause or "")}</td>')
    return f'<tr data-pos="{record.position}">' + "".join(cells) + "</tr>"


def flagged_table(view: ResultView, section: int, causes: Mapping[str, str] | None = None) -> str:
    """The table of ``view``'s flagged ops (a paragraph when none is flagged).

    Args:
        view: the result.
        section: the result's number in the page (the table's id).
        causes: op name -> cause text (e.g. from ``why``); adds a "cause" column when given.
    """
    flagged = view.flagged
    if not flagged:
        return (f'<p class="good">no op has an output cosine &lt;= {view.threshold:g}</p>')
    causes = dict(causes or {})
    with_causes = bool(causes)
    head = [_th("#", "num", "execution order among the flagged ops"), _th("Index", "num"),
            _th("type", "text"), _th("op", "text"), _th("verdict", "text"),
            _th("input cosines", "num", "sorts by the worst input"),
            _th("output cosines", "num", "sorts by the worst output")]
    head += [_th(SHORT.get(m, m), "num", f"worst output {m}") for m in OTHER_METRICS]
    head.append(_th("GroundTruth", "text"))
    if with_causes:
        head.append(_th("cause", "text"))
    rows = [_row(n, r, view.threshold, causes.get(r.op.name), with_causes)
            for n, r in enumerate(flagged, 1)]
    return (f'<div class="table-wrap"><table class="flagged sortable" id="flagged-{section}">'
            f'<thead><tr>{"".join(head)}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
