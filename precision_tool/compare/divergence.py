"""Where a comparison result first goes wrong: flagged ops, and the op that introduces the error.

Pure analysis of :class:`~.result.CompareRow` lists (one result CSV, in execution order); the
``vcs`` and ``ac`` commands render what it finds.

A tensor *diverges* by the flag rule (:class:`~.verdict.FlagRule`, the same for outputs and
inputs). A tensor that does not diverge is *rounding* when its RED is within the noise a
correct op shows (:mod:`.noise`, from its dtypes, its sums and its inputs' measured REDs), else
*near* (:mod:`.verdict` names every state).

An op is *flagged* when one of its outputs diverges. Whether a flagged op *introduces* the error
or *inherits* it is decided by its replay when one ran (:class:`~.verdict.LocalCheck`, attached
by :meth:`Divergence.with_local`): beyond the replay's noise it introduces. Without a replay,
by its inputs: it introduces when none of its inputs diverges (or it has no compared input; an
op whose output turns non-finite while its inputs are finite introduces it too). The first op
that introduces the error is the one to look at first: everything downstream of it is suspect
anyway.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from .result import GOLDEN_NONFINITE_NOTE, CompareRow
from .verdict import (
    AMPLIFY_FACTOR,
    BY_INPUTS,
    BY_REPLAY,
    CLEAN,
    DIVERGES,
    INHERITS,
    INTRODUCES,
    NEAR,
    NONFINITE,
    NOT_COMPARED,
    RED,
    RED_FLOOR,
    ROUNDING,
    FlagRule,
    LocalCheck,
    cosine_flags,
    equivalent_red,
    tensor_limits,
)


@dataclass(frozen=True)
class TensorCosine:
    """The cosine of one input or output of an op.

    Attributes:
        kind: ``"input"`` or ``"output"``.
        slot: the input/output number.
        cosine: CosineSimilarity; NaN when not compared or computed as NaN.
        reason: the row's CompareFailReason (why it was not compared, or a note).
        red: RelativeEuclideanDistance; NaN when not compared.
        nonfinite: the NPU tensor holds NaN or Inf.
        limit: the largest RED rounding explains here (:mod:`.noise`); NaN when unknown.
        golden_nonfinite: the golden holds NaN or Inf.
        red_floor: a lower bound on the RED that a row without the tensors proves (msprobe's
            statistics: the relative difference of the L2 norms, which the RED is never below;
            md5: 0 for equal bytes, inf for different ones); NaN when the row has none.
    """

    kind: str
    slot: int
    cosine: float
    reason: str = ""
    red: float = math.nan
    nonfinite: bool = False
    limit: float = math.nan
    golden_nonfinite: bool = False
    red_floor: float = math.nan

    @property
    def nonfinite_side(self) -> str | None:
        """``NPU``, ``golden`` or ``both`` when a side holds NaN or Inf, else None."""
        if self.nonfinite and self.golden_nonfinite:
            return "both"
        return "NPU" if self.nonfinite else "golden" if self.golden_nonfinite else None

    @property
    def error(self) -> float:
        """The RED, or the RED an error keeping the norm has at this cosine when the result
        has no RED (a cosine-only run); NaN without either."""
        if not math.isnan(self.red):
            return self.red
        if self.red_floor == 0:  # the very same bytes
            return 0.0
        return math.nan if math.isnan(self.cosine) else equivalent_red(self.cosine)

    def state(self, rule: FlagRule) -> str:
        """The tensor's verdict (:mod:`.verdict`)."""
        if self.nonfinite_side is not None:
            return NONFINITE
        if self.diverges(rule):
            return DIVERGES
        error = self.error
        if math.isnan(error):
            return NOT_COMPARED
        return ROUNDING if math.isnan(self.limit) or error <= self.limit else NEAR

    @property
    def is_nan(self) -> bool:
        """True when there is no usable cosine."""
        return math.isnan(self.cosine)

    def at_or_below(self, threshold: float) -> bool:
        """True when the cosine is a number at or below ``threshold`` (:func:`cosine_flags`)."""
        return cosine_flags(self.cosine, threshold)

    def diverges(self, rule: FlagRule) -> bool:
        """True when ``rule`` says this tensor diverges (a row without the tensors: when its
        lower bound on the RED reaches the threshold)."""
        floor = self.red_floor
        return rule.diverges(self.cosine, self.red, self.nonfinite) or (
            not math.isnan(floor) and floor >= rule.red_threshold
        )


@dataclass(frozen=True)
class OpCosines:
    """One op of the result with the cosines of its inputs and outputs, judged at a threshold.

    Attributes:
        index: the op's position in execution order (the CSV's ``Index``).
        name: the NPU op name (left side).
        op_type: the NPU op type; empty when the CSV does not say.
        ground_truth: the golden op names (right side), ``*`` when none.
        inputs, outputs: the compared tensors, by slot.
        rule: when a tensor diverges.
        local: the replay's evidence, when it ran (:meth:`Divergence.with_local`).
        cause: the cause ``why`` found, when it ran.
    """

    index: int
    name: str
    op_type: str
    ground_truth: str
    inputs: tuple[TensorCosine, ...]
    outputs: tuple[TensorCosine, ...]
    rule: FlagRule
    local: LocalCheck | None = None
    cause: str | None = None

    @property
    def threshold(self) -> float:
        """The cosine threshold of the rule."""
        return self.rule.cosine

    @property
    def has_tensors(self) -> bool:
        """False for an op with no dump file (one all-NaN row without a TensorIndex)."""
        return bool(self.inputs or self.outputs)

    @property
    def flagged(self) -> bool:
        """True when an output diverges."""
        return any(t.diverges(self.rule) for t in self.outputs)

    @property
    def near(self) -> bool:
        """True for an op not flagged with an output beyond rounding (:data:`~.verdict.NEAR`)."""
        return not self.flagged and any(t.state(self.rule) == NEAR for t in self.outputs)

    @property
    def has_nan_output(self) -> bool:
        """True when some output has no usable cosine."""
        return any(t.is_nan for t in self.outputs)

    @property
    def decided_by(self) -> str:
        """Which rule says whether the op introduces: ``replay`` or ``inputs``."""
        return BY_REPLAY if self.local is not None else BY_INPUTS

    @property
    def introduces(self) -> bool:
        """True for a flagged op that adds the error itself: its replay says so, or, without
        one, none of its compared inputs diverges."""
        if not self.flagged:
            return False
        if self.local is not None:
            return self.local.beyond
        return not any(t.diverges(self.rule) for t in self.inputs)

    @property
    def inherits(self) -> bool:
        """True for a flagged op that carries an error already present in an input."""
        return self.flagged and not self.introduces

    @property
    def amplifies(self) -> bool:
        """True for an inheriting op whose output diverges more than its inputs (RED
        AMPLIFY_FACTOR times the largest input RED, or non-finite from finite inputs)."""
        if not self.inherits:
            return False
        worst_in = max((t.error for t in self.inputs if not math.isnan(t.error)), default=math.nan)
        worst_out = max((t.error for t in self.outputs if not math.isnan(t.error)), default=math.nan)
        if self.nonfinite and not any(t.nonfinite for t in self.inputs):
            return True
        return not math.isnan(worst_in) and not math.isnan(worst_out) and worst_out > AMPLIFY_FACTOR * worst_in

    @property
    def state(self) -> str:
        """``introduces``, ``inherits``, ``clean`` or ``not compared`` (:mod:`.verdict`)."""
        if self.flagged:
            return INTRODUCES if self.introduces else INHERITS
        judged = [t.state(self.rule) for t in self.outputs]
        return CLEAN if any(s != NOT_COMPARED for s in judged) else NOT_COMPARED

    @property
    def worst_output_tensor(self) -> TensorCosine | None:
        """The output that decides the op's verdict: a diverging one first, then the one with
        the largest error."""
        ranked = sorted(self.outputs, key=lambda t: (not t.diverges(self.rule), -_finite(t.error)))
        return ranked[0] if ranked else None

    @property
    def nonfinite(self) -> bool:
        """True when an NPU output holds NaN or Inf."""
        return any(t.nonfinite for t in self.outputs)

    @property
    def worst_input(self) -> float | None:
        """The lowest input cosine; None when no input has one."""
        return _lowest(self.inputs)

    @property
    def worst_output(self) -> float | None:
        """The lowest output cosine; None when no output has one."""
        return _lowest(self.outputs)

    @property
    def cosine_drop(self) -> tuple[float, float] | None:
        """(worst input cosine, or 1.0 without one; worst output cosine); None without outputs."""
        worst_out = self.worst_output
        if worst_out is None:
            return None
        worst_in = self.worst_input
        return (1.0 if worst_in is None else worst_in), worst_out


def _finite(value: float) -> float:
    return -1.0 if math.isnan(value) else value


def _lowest(tensors: Iterable[TensorCosine]) -> float | None:
    values = [t.cosine for t in tensors if not t.is_nan]
    return min(values) if values else None


@dataclass(frozen=True)
class Divergence:
    """The verdict on one result: every op, the flagged ones, and the first that introduces.

    Attributes:
        rule: when a tensor diverges.
        ops: every op of the result in execution order (ops without a dump included).
    """

    rule: FlagRule
    ops: tuple[OpCosines, ...]

    @property
    def threshold(self) -> float:
        """The cosine threshold of the rule."""
        return self.rule.cosine

    @property
    def dumped(self) -> tuple[OpCosines, ...]:
        """The ops that have at least one compared tensor row."""
        return tuple(op for op in self.ops if op.has_tensors)

    @property
    def flagged(self) -> tuple[OpCosines, ...]:
        """The flagged ops, in execution order."""
        return tuple(op for op in self.ops if op.flagged)

    @property
    def first_introducer(self) -> OpCosines | None:
        """The first flagged op that introduces the error; None when no flagged op does."""
        return next((op for op in self.ops if op.introduces), None)

    @property
    def lowest_output(self) -> OpCosines | None:
        """The op with the lowest output cosine (the first of equals); None without cosines."""
        judged = [op for op in self.ops if op.worst_output is not None]
        return min(judged, key=lambda op: op.worst_output, default=None)

    @property
    def near(self) -> tuple[OpCosines, ...]:
        """Ops not flagged with an output beyond rounding (:attr:`OpCosines.near`)."""
        return tuple(op for op in self.dumped if op.near)

    @property
    def nonfinite(self) -> tuple[OpCosines, ...]:
        """Ops with an NPU output that holds NaN or Inf, in execution order."""
        return tuple(op for op in self.ops if op.nonfinite)

    @property
    def unjudged(self) -> tuple[OpCosines, ...]:
        """Ops not flagged with an output that has no usable cosine (not compared, or a golden
        that is not finite): shown, never flagged."""
        return tuple(op for op in self.dumped if op.has_nan_output and not op.flagged)

    @property
    def replayed(self) -> int:
        """How many flagged ops a replay judged."""
        return sum(1 for op in self.flagged if op.local is not None)

    def with_local(self, checks: Mapping[tuple[int, str], LocalCheck]) -> Divergence:
        """This analysis with the replay evidence ``checks`` (by :func:`op_key`) attached."""
        if not checks:
            return self
        return replace(
            self,
            ops=tuple(
                replace(op, local=checks[(op.index, op.name)]) if (op.index, op.name) in checks else op
                for op in self.ops
            ),
        )

    def with_causes(self, causes: Mapping[str, str]) -> Divergence:
        """This analysis with the causes ``why`` found (by NPU op name) on its flagged ops."""
        if not causes:
            return self
        return replace(
            self,
            ops=tuple(
                replace(op, cause=causes[op.name]) if op.flagged and op.name in causes else op for op in self.ops
            ),
        )


def _tensor(row: CompareRow, limit: float = math.nan) -> TensorCosine:
    return TensorCosine(
        row.kind,
        row.slot,
        row.cosine,
        row.fail_reason,
        row.metric(RED),
        row.npu_nonfinite,
        limit,
        GOLDEN_NONFINITE_NOTE in row.fail_reason,
        row.metric(RED_FLOOR),
    )


def op_key(row: CompareRow) -> tuple[int, str]:
    """The op a row belongs to: ``(Index, NPU name)``."""
    return row.index, row.npu_name or row.op_name


def _group(rows: Iterable[CompareRow]) -> dict[tuple[int, str], list[CompareRow]]:
    groups: dict[tuple[int, str], list[CompareRow]] = {}
    for row in rows:
        groups.setdefault(op_key(row), []).append(row)
    return groups


def _op(key: tuple[int, str], rows: list[CompareRow], rule: FlagRule) -> OpCosines:
    op_type = next((r.op_type for r in rows if r.op_type), "")
    limits = tensor_limits(rows, op_type)
    tensors = [_tensor(row, limits[i]) for i, row in enumerate(rows) if i in limits]

    def by_slot(kind: str) -> tuple:
        return tuple(sorted((t for t in tensors if t.kind == kind), key=lambda t: t.slot))

    first = rows[0]
    return OpCosines(
        index=key[0],
        name=key[1],
        op_type=op_type,
        ground_truth=first.ground_truth,
        inputs=by_slot("input"),
        outputs=by_slot("output"),
        rule=rule,
    )


def analyse(rows: Iterable[CompareRow], rule: FlagRule | float) -> Divergence:
    """Group ``rows`` by op (Index and NPU name) and judge each op by ``rule``.

    A plain number is the cosine threshold of a rule with the RED threshold that goes with it.
    Ops come out in execution order (by Index; the CSV's order breaks ties).
    """
    rule = rule if isinstance(rule, FlagRule) else FlagRule(float(rule))
    groups = _group(rows)
    ordered = sorted(groups.items(), key=lambda item: item[0][0])  # stable: ties keep CSV order
    return Divergence(rule, tuple(_op(key, group, rule) for key, group in ordered))
