"""What the page's script reads of one result: every op on the curve, the flagged ops grouped
under the introducer they follow, and the full metrics of the ops the table and panel show.

Small at 100,000 ops: column arrays rather than one object per op, names front-coded (each name
as the length it shares with the previous one and the rest: a network's names share long scope
prefixes), positions and Indexes as steps from the one before, the states as codes into one
list, shared texts (evidence, causes, golden names) written once, and the full metrics (every input and output
cosine, the other metrics, GroundTruth, evidence, cause) only for ops not clean, or for every op
while the result has at most :data:`FULL_OPS`. Nothing is judged here: the states, markers and
words are the verdict's (:func:`.looks.op_state`, :mod:`precision_tool.render.palette`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..compare.result_csv import NUMERIC_METRICS
from ..compare.result_view import COSINE, RED, OpRecord, ResultView
from ..compare.verdict import INTRODUCES, NOT_COMPARED
from ..render.palette import LEGEND_ORDER, css_class, legend_state, marked
from .escape import visible
from .looks import op_state
from .plot import cosine_axis, mark_shape, quiet, red_axis
from .table import evidence

FULL_OPS = 2000  # up to this many ops every op carries its full metrics (the panel shows them)


def _num(value: float) -> float | None:
    """A metric as the CSV prints it (6 decimals, which keeps the JSON short); None for NaN."""
    if math.isnan(value):
        return None
    if math.isinf(value):
        return value  # json_for_script writes it as null too; kept for the panel's words
    return float(f"{value:.6g}") if abs(value) < 1e-4 and value != 0 else round(value, 6)


def front_code(names: list[str]) -> tuple[list[int], list[str]]:
    """Each name as (characters shared with the previous name, the rest)."""
    shared, rest, previous = [], [], ""
    for name in names:
        n, limit = 0, min(len(name), len(previous))
        while n < limit and name[n] == previous[n]:
            n += 1
        shared.append(n)
        rest.append(name[n:])
        previous = name
    return shared, rest


@dataclass(frozen=True)
class Group:
    """An introducer (None for the flagged ops before the first one) and the inheritors that
    follow it in execution order up to the next introducer."""

    introducer: OpRecord | None
    inheritors: tuple[OpRecord, ...]


def lead_groups(view: ResultView) -> list[Group]:
    """The flagged ops as the table leads with them: each introducer in execution order with
    its inheritors folded under it, then the inheritors no introducer precedes."""
    groups: list[Group] = []
    orphans: list[OpRecord] = []
    current: OpRecord | None = None
    members: list[OpRecord] = []
    for record in view.flagged:
        if record.op.introduces:
            if current is not None:
                groups.append(Group(current, tuple(members)))
            current, members = record, []
        elif current is None:
            orphans.append(record)
        else:
            members.append(record)
    if current is not None:
        groups.append(Group(current, tuple(members)))
    if orphans:
        groups.append(Group(None, tuple(orphans)))
    return groups


class _Strings:
    """Texts many ops share (evidence, causes, golden names), each written once: an op holds
    its number in :attr:`texts`."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._number: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if text not in self._number:
            self._number[text] = len(self.texts)
            self.texts.append(text)
        return self._number[text]


def _full(record: OpRecord, states: list[str], text: _Strings) -> list:
    """[GroundTruth, input cosines, output cosines, input states, output states, every worst
    output metric, evidence, cause] of one op: the table's and the panel's columns. The texts
    are numbers into :class:`_Strings`; GroundTruth is -1 when it is the op's own name; a
    tensor's state is the number of its legend entry in ``states``."""
    op = record.op

    def state(t) -> int:
        return states.index(legend_state(t.state(op.rule)))

    states_in = {t.slot: state(t) for t in op.inputs}
    states_out = {t.slot: state(t) for t in op.outputs}
    none = states.index(NOT_COMPARED)
    return [
        -1 if op.ground_truth == op.name else text(op.ground_truth),
        [[t.slot, _num(t.value(COSINE))] for t in record.inputs],
        [[t.slot, _num(t.value(COSINE))] for t in record.outputs],
        [states_in.get(t.slot, none) for t in record.inputs],
        [states_out.get(t.slot, none) for t in record.outputs],
        [_num(record.output(m)) for m in NUMERIC_METRICS],
        text(evidence(op) if op.flagged else ""),
        text(op.cause or ""),
    ]


def _deltas(values: list[int]) -> list[int]:
    """Each value less the one before it (the first as it is): positions and Indexes mostly
    step by one, so the JSON holds a run of 1s."""
    return [v - (values[k - 1] if k else 0) for k, v in enumerate(values)]


def page_data(view: ResultView) -> dict:
    """The JSON object of one result for report.js (see the module doc)."""
    records = [r for r in view.records if r.outputs]
    states = list(LEGEND_ORDER)
    shown = [op_state(r.op) for r in records]
    # coded as shown: the script's JSON holds visible text, whose escapes are longer than the
    # characters they stand for, so a prefix counted on the raw names would cut an escape
    shared, rest = front_code([visible(r.op.name) for r in records])
    types = sorted({r.op.op_type or "?" for r in records})
    type_code = {t: k for k, t in enumerate(types)}
    everyone, text = len(view.records) <= FULL_OPS, _Strings()
    full = {str(r.position): _full(r, states, text) for r, s in zip(records, shown) if everyone or not quiet(s)}
    cos_values = [r.cosine for r in records if not math.isnan(r.cosine)]
    cos, red = cosine_axis(cos_values, view.threshold), red_axis([r.output(RED) for r in records])
    return {
        "threshold": view.threshold,
        "metrics": list(NUMERIC_METRICS),
        "red": NUMERIC_METRICS.index(RED),
        "first": view.first_introducer.position
        if view.first_introducer
        else (view.focus.position if view.focus else None),
        "states": states,
        "marked": [marked(s) for s in states],
        "css": [css_class(s) for s in states],
        "introduces": states.index(INTRODUCES),
        "shape": [mark_shape(s) for s in states],
        "quiet": [quiet(s) for s in states],
        "types": types,
        "count": len(view.records),
        "cosAxis": [cos.lo, cos.hi],
        "redAxis": [red.lo, red.hi],
        "pos": _deltas([r.position for r in records]),
        "index": _deltas([r.op.index for r in records]),
        "shared": shared,
        "rest": rest,
        "type": [type_code[r.op.op_type or "?"] for r in records],
        "state": [states.index(s) if s in states else states.index(NOT_COMPARED) for s in shown],
        "cos": [_num(r.cosine) for r in records],
        "redv": [_num(r.output(RED)) for r in records],
        "full": full,
        "texts": text.texts,
        "causes": any(r.op.cause for r in view.flagged),
        "groups": [
            [g.introducer.position if g.introducer else None, [m.position for m in g.inheritors]]
            for g in lead_groups(view)
        ],
    }
