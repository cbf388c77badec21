"""One result CSV as the report and Model Explorer see it: each op with every metric of its
inputs and outputs.

The verdicts (flagged, introduces, inherits, and what decided) are the divergence's the view is
built from: the one verdict with its replays (``compare.judged``) when the caller passes it, else
:func:`~precision_tool.compare.divergence.analyse`'s input rule. This module only attaches the
CSV's other metrics to its ops, so every number the report shows or plots is a value read from the
CSV by :func:`~precision_tool.compare.result_read.read_result_csv`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .divergence import Divergence, OpCosines, analyse, op_key
from .result import CompareRow
from .result_csv import NUMERIC_METRICS
from .result_read import read_result_csv
from .verdict import FlagRule

COSINE = "CosineSimilarity"
RED = "RelativeEuclideanDistance"
LOWER_IS_WORSE = frozenset({COSINE})  # for every other metric a higher value is worse


@dataclass(frozen=True)
class TensorMetrics:
    """The metrics of one input or output row; a metric missing from ``metrics`` was not
    compared."""

    kind: str
    slot: int
    metrics: dict[str, float]
    reason: str = ""

    def value(self, metric: str) -> float:
        """The metric's value; NaN when not compared."""
        return self.metrics.get(metric, math.nan)


def worst(tensors: tuple[TensorMetrics, ...], metric: str) -> float:
    """The worst value of ``metric`` over ``tensors`` (lowest cosine, highest error); NaN when
    none has a number."""
    values = [v for v in (t.value(metric) for t in tensors) if not math.isnan(v)]
    if not values:
        return math.nan
    return min(values) if metric in LOWER_IS_WORSE else max(values)


@dataclass(frozen=True)
class OpRecord:
    """One op of the result: its verdict and the metrics of its tensors.

    Attributes:
        position: the op's place among the result's ops (0-based, execution order).
        op: the op as the view's divergence judged it.
        inputs, outputs: every tensor row of the op, by slot.
    """

    position: int
    op: OpCosines
    inputs: tuple[TensorMetrics, ...]
    outputs: tuple[TensorMetrics, ...]

    @cached_property
    def _worst_outputs(self) -> dict[str, float]:  # the page asks for each value several times
        return {metric: worst(self.outputs, metric) for metric in NUMERIC_METRICS}

    @property
    def cosine(self) -> float:
        """The worst output cosine (the one that flags the op); NaN without one."""
        return self.output(COSINE)

    def output(self, metric: str) -> float:
        """The worst output value of ``metric`` (NaN without one)."""
        return self._worst_outputs.get(metric, math.nan)

    @property
    def verdict(self) -> str:
        """The op's verdict, :attr:`~.divergence.OpCosines.state`: ``introduces``, ``inherits``,
        ``clean`` or ``not compared`` (:mod:`.verdict`); nothing is decided here."""
        return self.op.state


@dataclass(frozen=True)
class ResultView:
    """One result CSV read and judged at ``divergence.threshold``."""

    path: Path
    divergence: Divergence
    records: tuple[OpRecord, ...]
    row_count: int

    @property
    def threshold(self) -> float:
        return self.divergence.threshold

    @property
    def flagged(self) -> tuple[OpRecord, ...]:
        """The flagged ops in execution order."""
        return tuple(r for r in self.records if r.op.flagged)

    @property
    def first_introducer(self) -> OpRecord | None:
        """The first op that introduces the error (the divergence's), None when none does."""
        first = self.divergence.first_introducer
        return None if first is None else self.record_of(first)

    @property
    def focus(self) -> OpRecord | None:
        """The op to look at first: the first introducer, else the first flagged op."""
        flagged = self.flagged
        return self.first_introducer or (flagged[0] if flagged else None)

    def record_of(self, op: OpCosines) -> OpRecord:
        """The record holding ``op``."""
        return next(r for r in self.records if r.op is op)


def _tensor(row: CompareRow) -> TensorMetrics | None:
    if row.kind is None or row.slot is None:
        return None
    numbers = {name: row.metrics[name] for name in NUMERIC_METRICS if name in row.metrics}
    return TensorMetrics(row.kind, row.slot, numbers, row.fail_reason)


def _by_kind(tensors: list[TensorMetrics], kind: str) -> tuple[TensorMetrics, ...]:
    return tuple(sorted((t for t in tensors if t.kind == kind), key=lambda t: t.slot))


def build_view(
    path: Path, rows: list[CompareRow], rule: FlagRule | float, divergence: Divergence | None = None
) -> ResultView:
    """The view of ``rows`` (read from ``path``) judged by ``rule`` (or a cosine threshold).

    ``divergence`` is the verdict on ``rows`` when the caller has it (the report passes the one
    with replays and causes attached, ``compare.judged``); without it, :func:`analyse`'s.
    """
    divergence = analyse(rows, rule) if divergence is None else divergence
    tensors: dict[tuple[int, str], list[TensorMetrics]] = {}
    for row in rows:
        tensor = _tensor(row)
        if tensor is not None:
            tensors.setdefault(op_key(row), []).append(tensor)
    records = []
    for position, op in enumerate(divergence.ops):
        own = tensors.get((op.index, op.name), [])
        records.append(OpRecord(position, op, _by_kind(own, "input"), _by_kind(own, "output")))
    return ResultView(Path(path), divergence, tuple(records), len(rows))


def read_view(path: Path, rule: FlagRule | float) -> ResultView:
    """Read the result CSV at ``path`` and judge it by ``rule``.

    Raises:
        PrecisionToolError: the CSV cannot be read (see ``read_result_csv``).
    """
    return build_view(Path(path), read_result_csv(path), rule)
