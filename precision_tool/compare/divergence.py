"""Where a comparison result first goes wrong: flagged ops, and the op that introduces the error.

Pure analysis of :class:`~.result.CompareRow` lists (one result CSV, in execution order); the
``vcs`` and ``ac`` commands render what it finds.

An op is *flagged* when one of its outputs has a cosine at or below the threshold (a NaN cosine,
computed or not compared, never flags). A flagged op *introduces* the error when every input with
a cosine is above the threshold (or it has no compared input); otherwise it *inherits* an error
already present in one of its inputs. The first op that introduces the error is the one to look
at first: everything downstream of it is suspect anyway.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from .result import CompareRow


@dataclass(frozen=True)
class TensorCosine:
    """The cosine of one input or output of an op.

    Attributes:
        kind: ``"input"`` or ``"output"``.
        slot: the input/output number.
        cosine: CosineSimilarity; NaN when not compared or computed as NaN.
        reason: the row's CompareFailReason (why it was not compared, or a note).
    """

    kind: str
    slot: int
    cosine: float
    reason: str = ""

    @property
    def is_nan(self) -> bool:
        """True when there is no usable cosine."""
        return math.isnan(self.cosine)

    def at_or_below(self, threshold: float) -> bool:
        """True when the cosine is a number at or below ``threshold`` (:func:`cosine_flags`)."""
        return cosine_flags(self.cosine, threshold)


@dataclass(frozen=True)
class OpCosines:
    """One op of the result with the cosines of its inputs and outputs, judged at a threshold.

    Attributes:
        index: the op's position in execution order (the CSV's ``Index``).
        name: the NPU op name (left side).
        op_type: the NPU op type; empty when the CSV does not say.
        ground_truth: the golden op names (right side), ``*`` when none.
        inputs, outputs: the compared tensors, by slot.
        threshold: the cosine at or below which an output flags the op.
    """

    index: int
    name: str
    op_type: str
    ground_truth: str
    inputs: tuple[TensorCosine, ...]
    outputs: tuple[TensorCosine, ...]
    threshold: float

    @property
    def has_tensors(self) -> bool:
        """False for an op with no dump file (one all-NaN row without a TensorIndex)."""
        return bool(self.inputs or self.outputs)

    @property
    def flagged(self) -> bool:
        """True when an output cosine is at or below the threshold."""
        return any(t.at_or_below(self.threshold) for t in self.outputs)

    @property
    def has_nan_output(self) -> bool:
        """True when some output has no usable cosine."""
        return any(t.is_nan for t in self.outputs)

    @property
    def introduces(self) -> bool:
        """True for a flagged op whose compared inputs are all above the threshold."""
        return self.flagged and not any(t.at_or_below(self.threshold) for t in self.inputs)

    @property
    def inherits(self) -> bool:
        """True for a flagged op with an input already at or below the threshold."""
        return self.flagged and not self.introduces

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


def cosine_flags(cosine: float, threshold: float) -> bool:
    """The rule: an output cosine at or below ``threshold`` flags its op; NaN never does."""
    return not math.isnan(cosine) and cosine <= threshold


def _lowest(tensors: Iterable[TensorCosine]) -> float | None:
    values = [t.cosine for t in tensors if not t.is_nan]
    return min(values) if values else None


@dataclass(frozen=True)
class Divergence:
    """The verdict on one result: every op, the flagged ones, and the first that introduces.

    Attributes:
        threshold: the cosine threshold used.
        ops: every op of the result in execution order (ops without a dump included).
    """

    threshold: float
    ops: tuple[OpCosines, ...]

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
    def unjudged(self) -> tuple[OpCosines, ...]:
        """Ops not flagged but with an output whose cosine is NaN (shown, never flagged)."""
        return tuple(op for op in self.dumped if op.has_nan_output and not op.flagged)


def _tensor(row: CompareRow) -> TensorCosine | None:
    kind, slot = row.kind, row.slot
    if kind is None or slot is None:
        return None
    return TensorCosine(kind, slot, row.cosine, row.fail_reason)


def _group(rows: Iterable[CompareRow]) -> dict[tuple[int, str], list[CompareRow]]:
    groups: dict[tuple[int, str], list[CompareRow]] = {}
    for row in rows:
        groups.setdefault((row.index, row.npu_name or row.op_name), []).append(row)
    return groups


def _op(key: tuple[int, str], rows: list[CompareRow], threshold: float) -> OpCosines:
    tensors = [t for t in map(_tensor, rows) if t is not None]
    by_slot = lambda kind: tuple(sorted((t for t in tensors if t.kind == kind),  # noqa: E731
                                        key=lambda t: t.slot))
    first = rows[0]
    return OpCosines(index=key[0], name=key[1],
                     op_type=next((r.op_type for r in rows if r.op_type), ""),
                     ground_truth=first.ground_truth, inputs=by_slot("input"),
                     outputs=by_slot("output"), threshold=threshold)


def analyse(rows: Iterable[CompareRow], threshold: float) -> Divergence:
    """Group ``rows`` by op (Index and NPU name) and judge each op at ``threshold``.

    Ops come out in execution order (by Index; the CSV's order breaks ties).
    """
    groups = _group(rows)
    ordered = sorted(groups.items(), key=lambda item: item[0][0])  # stable: ties keep CSV order
    return Divergence(threshold, tuple(_op(key, group, threshold) for key, group in ordered))
