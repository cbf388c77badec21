"""Running planned comparisons, and the public :func:`compare` for notebooks and scripts.

:func:`run_comparisons` streams the rows of planned comparisons (:class:`~.plan.Comparison`) in
execution order (``vc`` writes them to its CSVs as they come); :func:`compare` plans, runs and
collects everything into a :class:`CompareResult`::

    import precision_tool as pt
    result = pt.compare("precision_data")
    result.first_divergence()          # the first op that introduces the error, or None
    result.to_pandas()                 # one DataFrame row per CSV row (NPUDataType, GroundTruthDataType...)
    result.write_csv("out.csv")
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..collector import gc_paused
from ..config import Config, check_setting
from ..formats.output_root import OutputRoot
from .engine import compare_tasks
from .golden_pairing import PairTask
from .metrics import METRICS, Metric, select_metrics
from .plan import Comparison, plan_comparisons
from .result import CompareRow
from .result_csv import NOT_COMPARED, columns, row_layout, write_result_csv
from .row_cache import RowCache, cached_rows
from .row_keys import metric_identities
from .verdict import NOT_COMPARED as NOT_COMPARED_STATE
from .verdict import FlagRule
from .workspace import Workspace

if TYPE_CHECKING:
    from .divergence import Divergence, OpCosines

POOL_MIN_BYTES = 32 << 20  # below this, starting worker processes costs more than it saves
Progress = Callable[[int, int, int], None]  # (rows done, rows total, bytes done)


def run_comparisons(
    comparisons: Sequence[Comparison],
    metrics: Sequence[Metric],
    workers: int,
    progress: Progress | None = None,
    cache: RowCache | None = None,
    stats: dict | None = None,
    scheduler: str | None = None,
    split_bytes: int = 0,
) -> Iterator[tuple[int, CompareRow]]:
    """The rows of every comparison, each with the position of its comparison, from one run of
    the engine: one pool for every device, sub-graph and step, so the workers stay busy from
    the first comparison's tasks to the last one's. Each comparison's rows come in its
    execution order. Workers start only when the data is big enough to pay for them, and as
    soon as the tasks paired so far show it: a comparison's tasks may still be pairing
    (:class:`~.paired_tasks.PairedTasks`), and are taken as the engine needs them.

    With ``cache``, rows an earlier run computed from the same files and metrics are reused and
    only the others are computed (and stored); ``stats`` gets the ``reused``/``computed`` counts.
    With ``scheduler`` (a Dask address, or ``local:N``) the rows are computed on that cluster
    (:mod:`.cluster`), whatever the data's size. ``split_bytes``: see
    :func:`~.engine.compare_tasks` (0: derived).
    """
    owners: deque[int] = deque()  # the comparison of each task taken and not yet given a row

    def tasks() -> Iterator[PairTask]:  # as the pairing makes them (a Comparison's PairedTasks)
        for k, comparison in enumerate(comparisons):
            for task in comparison.tasks:
                owners.append(k)
                yield task

    def compute(todo: Iterable[PairTask], keyed: bool) -> Iterator[CompareRow]:
        return compare_tasks(
            todo,
            metrics,
            workers=workers,
            progress=progress,
            scheduler=scheduler,
            split_bytes=split_bytes,
            pool_min_bytes=POOL_MIN_BYTES,
            keyed=keyed,
        )

    # a cluster's workers may see other devices and paths: its keys are found here, up front
    rows = cached_rows(tasks(), metric_identities(metrics), cache, compute, stats, keys_where_read=not scheduler)
    return ((owners.popleft(), row) for row in rows)  # one row per task, in task order: its task was taken


@dataclass
class ComparisonResult:
    """The rows of one comparison (one CSV's worth), in execution order."""

    comparison: Comparison
    rows: list[CompareRow]
    metrics: tuple[Metric, ...] = METRICS  # the CSV's metric columns, in this order
    workspace: Workspace | None = None  # where the replays read the dumps; None: no replay
    _verdicts: dict = field(default_factory=dict, repr=False, compare=False)  # by rule

    @property
    def label(self) -> str:
        """What the comparison is (``device 0, ge_default_..., step 0``)."""
        return self.comparison.label

    def divergence(self, rule: FlagRule | float) -> Divergence:
        """The flagged ops and the first that introduces the error, judged by ``rule`` (a
        :class:`~.verdict.FlagRule`, or a cosine threshold): the one verdict every view
        gives, the flagged ops replayed (:mod:`.judged`) when the result knows its data."""
        rule = rule if isinstance(rule, FlagRule) else FlagRule(float(rule))
        key = (rule, len(self.rows))
        if key not in self._verdicts:
            from .divergence import analyse  # the verdict and the replays: imported when it is asked for
            from .judged import judge_rows
            from .msprobe_replay import comparison_dumps

            self._verdicts[key] = (
                analyse(self.rows, rule)
                if self.workspace is None
                else judge_rows(self.workspace, self.rows, rule, comparison_dumps(self.comparison))
            )
        return self._verdicts[key]

    def row_verdicts(self, rule: FlagRule) -> list[tuple[str, str]]:
        """(tensor state, op state) of each row, in row order (:mod:`.verdict`)."""
        from .divergence import op_key

        ops = {(op.index, op.name): op for op in self.divergence(rule).ops}
        return [_row_verdict(ops.get(op_key(row)), row) for row in self.rows]

    def write_csv(self, path: str | os.PathLike, root: OutputRoot | None = None) -> Path:
        """Write the rows as a msaccucmp-format CSV at ``path`` (in ``root``, default its
        directory: never through a link below it); returns the path."""
        return write_result_csv(
            path, self.rows, root=root, golden_address=self.comparison.npu_vs_npu, metrics=self.metrics
        )


@dataclass
class CompareResult:
    """What :func:`compare` found: one part per comparison (device, sub-graph, step).

    Attributes:
        parts: one :class:`ComparisonResult` per comparison, in plan order.
        rule: the configured flag rule, used when :meth:`flagged` is given no threshold.
        notes: warnings about the pairing (for example: no Build graph, paired by name).
    """

    parts: list[ComparisonResult]
    rule: FlagRule
    notes: list[str] = field(default_factory=list)

    def _rule(self, threshold: float | None) -> FlagRule:
        return self.rule if threshold is None else FlagRule(threshold, self.rule.red)

    @property
    def rows(self) -> list[CompareRow]:
        """Every row, part after part, each part in execution order."""
        return [row for part in self.parts for row in part.rows]

    def flagged(self, threshold: float | None = None) -> list[OpCosines]:
        """The flagged ops (see :mod:`.divergence`), at the configured cosine threshold or at
        ``threshold``."""
        rule = self._rule(threshold)
        return [op for part in self.parts for op in part.divergence(rule).flagged]

    def first_divergence(self, threshold: float | None = None) -> OpCosines | None:
        """The first op that introduces the error (its replay, or without one its inputs, say
        the error is its own), in the first part that has one; None when no op does."""
        rule = self._rule(threshold)
        for part in self.parts:
            found = part.divergence(rule).first_introducer
            if found is not None:
                return found
        return None

    def to_pandas(self):
        """A ``pandas.DataFrame``: one row per CSV row, with the CSV's columns (the metrics asked
        for, custom ones after CompareFailReason, as floats, NaN when not compared; text cells
        the CSV writes as ``NaN`` are None), except that each side's ``DataType`` and ``Address``
        is named by its side: ``NPUDataType``, ``NPUAddress``, ``GroundTruthDataType`` (and
        ``GroundTruthAddress`` NPU against NPU), so every column name is one column; then
        ``Verdict`` (the row's tensor state: diverges, non-finite, near, rounding, not compared)
        and ``OpVerdict`` (its op's: introduces, inherits, clean, not compared)."""
        import pandas as pd

        golden_address = any(p.comparison.npu_vs_npu for p in self.parts)
        metrics = self.parts[0].metrics if self.parts else METRICS
        header = columns(golden_address=golden_address, metrics=metrics, named_sides=True)
        numbers = {m.name for m in metrics if not m.text}
        numeric = {i for i, name in enumerate(header) if name in numbers}
        records = []
        layout = row_layout(golden_address=golden_address, metrics=metrics, spreadsheet_safe=False)
        for row in self.rows:
            cells = layout.cells(row)
            records.append(
                [float(c) if i in numeric else (None if c == NOT_COMPARED else c) for i, c in enumerate(cells)]
            )
        frame = pd.DataFrame.from_records(records, columns=header)
        frame["Index"] = frame["Index"].astype(int)
        verdicts = [v for part in self.parts for v in part.row_verdicts(self.rule)]
        frame["Verdict"] = [tensor for tensor, _ in verdicts]  # the one verdict, as every view shows it
        frame["OpVerdict"] = [op for _, op in verdicts]
        return frame

    def write_csv(self, path: str | os.PathLike) -> list[Path]:
        """Write the result as msaccucmp-format CSVs; returns the paths written.

        With one part, ``path`` is the CSV file. With several, ``path`` is a directory (created)
        that gets one ``result_{tag}.csv`` per part.
        """
        path = Path(path)
        if len(self.parts) == 1:
            return [self.parts[0].write_csv(path)]
        root = OutputRoot(path)  # created, and nothing in it written through a link
        return [
            part.write_csv(path / f"result_{part.comparison.tag}_{i}.csv", root) for i, part in enumerate(self.parts)
        ]


def _row_verdict(op: OpCosines | None, row: CompareRow) -> tuple[str, str]:
    if op is None or row.kind is None:
        return NOT_COMPARED_STATE, op.state if op is not None else NOT_COMPARED_STATE
    tensors = op.inputs if row.kind == "input" else op.outputs
    tensor = next((t for t in tensors if t.slot == row.slot), None)
    return (tensor.state(op.rule) if tensor is not None else NOT_COMPARED_STATE), op.state


@gc_paused()  # its plan and rows: many small objects and no cycles (precision_tool.collector)
def compare(
    data_root: str | os.PathLike | None = None,
    *,
    left: str | None = None,
    right: str | None = None,
    steps: str | None = None,
    devices: str | None = None,
    metrics: str | Iterable[str | int | Metric] | None = None,
    workers: int | None = None,
    graph: str | None = None,
    config: Config | None = None,
    scheduler: str | None = None,
    mapping: str | None = None,
) -> CompareResult:
    """Compare a data root (NPU ``debug_0`` against ``tf/dump``), or two directories.

    ``compare(LEFT, right=RIGHT)`` compares the two directories ``LEFT`` and ``RIGHT`` (two
    msprobe dumps: ``compare("dump_npu", right="dump_gpu")``).

    Nothing is written: call :meth:`CompareResult.write_csv` for the CSV.

    Args:
        data_root: the data root (``precision_data``). Defaults to the config's DATA_ROOT_DIR.
        left, right: two dump directories to compare instead (NPU vs npy, NPU vs NPU, npy vs npy).
        steps: the steps to compare, as TF_DUMP_STEP (``"0"``, ``"0|5"``, ``""`` for all).
            Defaults to the config's TF_DUMP_STEP.
        devices: the devices (ranks) to compare, ``"0,3-5"``. Defaults to every device.
        metrics: metric names, msaccucmp ``-alg`` indexes, or :class:`~.metrics.Metric`
            objects (custom metrics included). Defaults to all ten.
        workers: worker processes. Defaults to the config's WORKERS (0: one per core).
        graph: the Build graph to pair with. Defaults to the one named like each step's model.
        config: settings to start from. Defaults to the built-in defaults.
        mapping: msprobe dumps: a tensor mapping file (msprobe's ``-dm`` YAML) whose pairs win.
        scheduler: a Dask scheduler to compute on (``"tcp://HOST:8786"``, or ``"local:N"`` for a
            LocalCluster of N processes). Defaults to the config's SCHEDULER ('': local processes).

    Raises:
        PrecisionToolError: bad input (no dumps, unknown metric, graph or directory).
    """
    config = config or Config()
    if right is not None and left is None and data_root is not None:  # compare(LEFT, right=RIGHT)
        left, data_root = os.fspath(data_root), None
    changes = {}
    if data_root is not None:
        changes["data_root_dir"] = Path(data_root)
    if workers is not None:
        changes["workers"] = int(workers)
    if scheduler is not None:
        changes["scheduler"] = check_setting("SCHEDULER", scheduler, "compare(scheduler=...)")
    config = replace(config, **changes)
    workspace = Workspace(config)
    chosen = select_metrics(metrics)
    plans = plan_comparisons(
        workspace, left=left, right=right, graph=graph, steps=steps, devices=devices, mapping=mapping
    )
    if any(plan.msprobe is not None for plan in plans):  # msprobe's metrics: imported only then
        from .msprobe_rows import metrics_for

        chosen = metrics_for(plans, chosen, asked=metrics is not None)
    parts = [ComparisonResult(plan, [], chosen, workspace) for plan in plans]
    for owner, row in run_comparisons(
        plans, chosen, config.worker_count, scheduler=config.scheduler, split_bytes=config.split_bytes
    ):
        parts[owner].rows.append(row)
    return CompareResult(parts, FlagRule.from_config(config), [n for p in plans for n in p.notes])
