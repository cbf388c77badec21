"""The newest comparison result, op by op: what ``ni -s`` colours a neighbourhood with.

The newest ``temp/vector_compare/{stamp}/`` directory (:func:`.result_csv.latest_result_dir`)
holds one CSV per device, sub-graph and step (those its manifest names:
:func:`.manifest.result_csvs`); each is read and judged by the flag rule
(:func:`.divergence.analyse`), and every op keeps its worst verdict over them: flagged over not,
then the lower output cosine.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PrecisionToolError
from .divergence import Divergence, OpCosines, analyse, op_key
from .manifest import result_csvs
from .result import CompareRow
from .result_csv import latest_result_dir
from .result_read import read_result_csv
from .verdict import FlagRule

Judge = Callable[[Path, list[CompareRow], FlagRule], Divergence]


def _by_inputs(path: Path, rows: list[CompareRow], rule: FlagRule) -> Divergence:
    return analyse(rows, rule)


@dataclass(frozen=True)
class NewestResult:
    """The ops of the newest result by NPU op name; ``directory`` None when there is none."""

    directory: Path | None
    ops: dict[str, OpCosines] = field(default_factory=dict)
    errors: tuple[str, ...] = ()  # CSVs of the directory that could not be read


def _worse(op: OpCosines, than: OpCosines | None) -> bool:
    if than is None or op.flagged != than.flagged:
        return than is None or op.flagged
    mine, theirs = op.worst_output, than.worst_output
    return mine is not None and (theirs is None or mine < theirs)


def newest_result(
    output_root: str | os.PathLike, rule: FlagRule, judge: Judge = _by_inputs, only: str | None = None
) -> NewestResult:
    """Every op of the newest result of the output root, judged by ``rule`` through ``judge``
    (the caller's one verdict, with replays; default: the input rule alone; see the module
    doc); a CSV that cannot be read is named in ``errors`` and the others still count.
    ``only`` (an NPU op name) judges that op's rows alone: an op's verdict rests on its own
    rows, so ``ni OP`` does not analyse a whole network for one line."""
    directory = latest_result_dir(output_root)
    if directory is None:
        return NewestResult(None)
    ops: dict[str, OpCosines] = {}
    errors = []
    for path in result_csvs(directory):
        try:
            rows = read_result_csv(path)
            if only is not None:
                rows = [row for row in rows if op_key(row)[1] == only]
            divergence = judge(path, rows, rule)
        except PrecisionToolError as exc:
            errors.append(str(exc))
            continue
        for op in divergence.dumped:
            if _worse(op, ops.get(op.name)):
                ops[op.name] = op
    return NewestResult(directory, ops, tuple(errors))
