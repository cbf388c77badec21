"""The flagged ops of one result as a sortable HTML table.

One row per flagged op in execution order: Index, type, name, its verdict (introduces or
inherits, with its marker, and what decided: the replay's evidence or the input rule), the cosine
of every input and output in the colour of its tensor state, the worst output value of every
other metric, the golden names, and -- when ``why`` found them (:attr:`OpCosines.cause`) -- a
cause. Every word and colour is the verdict's (:mod:`.looks`). Numbers print as the CSV writes
them; ``data-sort`` holds the exact value, so the page's script sorts by number, NaN last. Every
name is escaped (:func:`.escape.esc`).
"""

from __future__ import annotations

from ..compare.divergence import FlagRule, OpCosines, TensorCosine
from ..compare.result_csv import NUMERIC_METRICS
from ..compare.result_view import COSINE, OpRecord, ResultView, TensorMetrics, worst
from ..compare.verdict import CLEAN, NOT_COMPARED
from ..render.palette import css_class, marked
from .escape import esc, number, sort_key
from .looks import op_state

OTHER_METRICS = tuple(m for m in NUMERIC_METRICS if m != COSINE)
SHORT = {"MaxAbsoluteError": "MaxAbsErr", "AccumulatedRelativeError": "AccRelErr",
         "RelativeEuclideanDistance": "RelEuclid", "KullbackLeiblerDivergence": "KL",
         "MeanAbsoluteError": "MeanAbsErr", "RootMeanSquareError": "RMSE",
         "MaxRelativeError": "MaxRelErr", "MeanRelativeError": "MeanRelErr"}


def evidence(op: OpCosines) -> str:
    """What decided whether ``op`` introduces: its replay's evidence, or the input rule."""
    return op.local.describe() if op.local is not None else "no replay: decided by its inputs"


def _th(label: str, kind: str, title: str = "") -> str:
    tip = f' title="{esc(title)}"' if title else ""
    return f'<th data-type="{kind}"{tip}><button type="button">{esc(label)}</button></th>'


def _num_td(value: float) -> str:
    return f'<td data-sort="{sort_key(value)}">{number(value)}</td>'


def _cosines_td(tensors: tuple[TensorMetrics, ...], judged: tuple[TensorCosine, ...],
                rule: FlagRule) -> str:
    if not tensors:
        return '<td data-sort="">none compared</td>'
    states = {t.slot: t.state(rule) for t in judged}
    cells = " ".join(f'<span class="{css_class(states.get(t.slot, NOT_COMPARED))}">{t.slot}: '
                     f'{number(t.value(COSINE))}</span>' for t in tensors)
    return f'<td data-sort="{sort_key(worst(tensors, COSINE))}">{cells}</td>'


def _row(number_: int, record: OpRecord, with_causes: bool) -> str:
    op = record.op
    state = op_state(op)
    cells = [f'<td data-sort="{number_}">{number_}</td>', f'<td data-sort="{op.index}">{op.index}</td>',
             f"<td>{esc(op.op_type or '?')}</td>", f'<td class="name">{esc(op.name)}</td>',
             f'<td class="verdict {css_class(state)}" data-state="{esc(state)}">{esc(marked(state))}'
             f'<span class="evidence">{esc(evidence(op))}</span></td>',
             _cosines_td(record.inputs, op.inputs, op.rule), _cosines_td(record.outputs, op.outputs, op.rule)]
    cells += [_num_td(record.output(metric)) for metric in OTHER_METRICS]
    cells.append(f'<td class="name">{esc(op.ground_truth)}</td>')
    if with_causes:
        cells.append(f'<td class="cause">{esc(op.cause or "")}</td>')
    return f'<tr data-pos="{record.position}" data-state="{esc(state)}">' + "".join(cells) + "</tr>"


def flagged_table(view: ResultView, section: int) -> str:
    """The table of ``view``'s flagged ops (a paragraph when none is flagged); a "cause" column
    when ``why``'s causes are on its ops. ``section`` is the result's number in the page (the
    table's id)."""
    flagged = view.flagged
    if not flagged:
        return f'<p class="{css_class(CLEAN)}">no op is flagged ({esc(view.divergence.rule.describe())})</p>'
    with_causes = any(r.op.cause for r in flagged)
    head = [_th("#", "num", "execution order among the flagged ops"), _th("Index", "num"),
            _th("type", "text"), _th("op", "text"),
            _th("verdict", "text", "introduces or inherits the error, and what decided it"),
            _th("input cosines", "num", "sorts by the worst input"),
            _th("output cosines", "num", "sorts by the worst output")]
    head += [_th(SHORT.get(m, m), "num", f"worst output {m}") for m in OTHER_METRICS]
    head.append(_th("GroundTruth", "text"))
    if with_causes:
        head.append(_th("cause", "text"))
    rows = [_row(n, r, with_causes) for n, r in enumerate(flagged, 1)]
    return (f'<div class="table-wrap"><table class="flagged sortable" id="flagged-{section}">'
            f'<thead><tr>{"".join(head)}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
