"""One tensor pair compared in ranges on several workers at once: partial statistics, combined.

A tensor much larger than the others would keep one worker busy while the rest wait for it
(issue 13 item 7), and a 4 GB tensor is too much for one worker's memory anyway. So the engine
(:func:`split_units`) cuts such a pair into ranges of its flat C-order elements:

* the parent opens both sides from their headers (:func:`~.sides.range_extent`: no tensor data
  is read, and a side whose opening would convert it whole is not split) and cuts the elements
  on row boundaries (:attr:`~.load.Source.unit`), so no piece reads a row another piece reads;
* round 1: one call per range (:func:`run_piece`) folds the range's blocks into partial
  :class:`~.metric_data.Stats`; the parent combines them in range order
  (:func:`~.stat_groups.combine`);
* round 2, only with KL (or another group that needs the ranges): KL normalises each side by its
  min and max, known only once every range of round 1 is in, so the ranges are folded again with
  the combined min and max, and the partial KL sums are added;
* round 3, only when a metric came out NaN or Inf and no group of round 1 counted them (cosine
  alone): the ranges count their NaN and Inf values for the row's note.

The row is then made exactly as the unsplit comparison makes it (:func:`.pair_compare.finish`,
:func:`.pair_compare.compared_row`). The sums are added in another grouping than one pass adds them,
so the values may differ in the last bits (about 1e-16 relative, far below the printed six
decimals: see the accuracy note of :mod:`.kernels`); ranges, maxima and counts are exact.

Each call holds a few blocks of its range (:data:`~.load.DEFAULT_CHUNK` elements), whatever the
tensor's size: memory is bounded by design, and the split runs the same on the local pool and on
a Dask cluster (:mod:`.cluster`): :func:`.window.stream_units` submits the rounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..errors import PrecisionToolError
from . import pair_compare
from .golden_pairing import PairTask
from .jobs import files_read
from .load import Source
from .metric_data import Range, Stats
from .row_keys import RowKeys
from .sides import ReadCache, open_side, range_extent
from .stat_groups import combine
from .window import JobResult, LostWork, Unit

SPLIT_MIN_BYTES = 64 << 20  # smaller ranges gain less than their round trips and reopening cost
SPLIT_MAX_BYTES = 1 << 30
FIRST, SECOND, COUNT, DONE = "first", "second", "count", "done"


def split_size(data_bytes: int, workers: int, setting: int = 0) -> int:
    """The bytes (both sides' files) above which a pair is compared in ranges, and about the
    bytes of each range.

    ``setting`` (SPLIT_BYTES) when it is > 0. Else derived: the run's data bytes over twice the
    workers, so a range is at most half of one worker's fair share of the run and no tensor
    keeps one worker busy after the others are done; within :data:`SPLIT_MIN_BYTES` (a range's
    round trip and header reading stay negligible) and :data:`SPLIT_MAX_BYTES` (ranges stay small
    enough to spread over many workers).
    """
    if setting > 0:
        return setting
    return min(max(math.ceil(data_bytes / (2 * max(workers, 1))), SPLIT_MIN_BYTES), SPLIT_MAX_BYTES)


def split_size_settled(data_bytes: int, workers: int, setting: int = 0) -> bool:
    """Whether a run of at least ``data_bytes`` has :func:`split_size` fixed: more bytes would
    not change it (it is set, or at :data:`SPLIT_MAX_BYTES`)."""
    return setting > 0 or split_size(data_bytes, workers, setting) == SPLIT_MAX_BYTES


def split_points(size: int, unit: int, pieces: int) -> list[int]:
    """Boundaries ``[0, ..., size]`` of at most ``pieces`` ranges of whole ``unit`` s."""
    rows = size // unit
    pieces = max(1, min(pieces, rows))
    return [rows * k // pieces * unit for k in range(pieces)] + [size]


@dataclass(frozen=True)
class PieceResult:
    """What one range hands back: partial statistics, NaN/Inf counts, or why it failed."""

    stats: Stats | None = None
    counts: list | None = None
    error: str = ""


def run_piece(
    task: PairTask,
    start: int,
    stop: int,
    phase: str,
    metrics: Sequence,
    chunk: int,
    numba: bool | None,
    ranges: tuple[Range, Range] | None = None,
) -> PieceResult:
    """Fold elements ``[start, stop)`` of a task's pair (in a worker, or inline).

    ``phase`` FIRST gives the first-pass statistics, SECOND those of the groups that need the
    ``ranges`` (KL), COUNT the NaN/Inf counts. A per-tensor problem (a file truncated or
    unreadable since it was opened) comes back as ``error``.
    """
    reads = ReadCache()
    try:
        x, y = open_side(task.left, reads), open_side(task.right, reads)
        if phase == COUNT:
            return PieceResult(counts=pair_compare.nonfinite_counts(x, y, chunk, start, stop))
        acc = pair_compare.new_accumulator(x, y, metrics, numba)
        if phase == SECOND:
            acc.stats = Stats(x_lo=ranges[0].lo, x_hi=ranges[0].hi, y_lo=ranges[1].lo, y_hi=ranges[1].hi)
        fold = acc.update if phase == FIRST else acc.update_second
        for blocks in pair_compare.pair_pieces(x, y, chunk, start, stop):
            fold(*blocks)
        return PieceResult(stats=acc.stats)
    except (PrecisionToolError, MemoryError) as exc:
        return PieceResult(error=pair_compare.failure_reason(exc, task))


class SplitCompare(Unit):
    """One task compared in ranges: the rounds of :func:`run_piece` calls, then its row."""

    def __init__(self, task: PairTask, x: Source, y: Source, bounds: list[int], job_args: tuple, row) -> None:
        self.task, self.x, self.y, self.bounds, self.row = task, x, y, bounds, row
        self.metrics, self.chunk, self.numba, _ = job_args
        self.acc = pair_compare.new_accumulator(x, y, self.metrics, self.numba)
        self.phase, self.error, self.counts = FIRST, "", None
        self.futures: list = []
        self.calls = self.pieces

    @property
    def pieces(self) -> int:
        """How many ranges the tensor is compared in."""
        return len(self.bounds) - 1

    def start(self, submit: Callable) -> int:
        return self._submit_round(submit)

    def _submit_round(self, submit: Callable) -> int:
        """Submit the current phase's calls, one per range."""
        ranges = self.acc.stats.ranges if self.phase == SECOND else None
        self.futures = [
            submit(run_piece, self.task, start, stop, self.phase, self.metrics, self.chunk, self.numba, ranges)
            for start, stop in zip(self.bounds, self.bounds[1:])
        ]
        self.in_flight = len(self.futures)
        return self.in_flight

    def advance(self, submit: Callable, result: Callable) -> int:
        if self.phase == DONE or not all(f.done() for f in self.futures):
            return 0
        collected = self.in_flight
        self._collect(result)
        return (0 if self.phase == DONE else self._submit_round(submit)) - collected

    def finish(self, submit: Callable, result: Callable) -> JobResult:
        while True:
            self._collect(result)
            if self.phase == DONE:
                return self._row()
            self._submit_round(submit)

    def _collect(self, result: Callable) -> None:
        """Wait for the round's pieces, combine them in range order and choose the next round."""
        parts = []
        for future in self.futures:
            try:
                parts.append(result(future))
            except LostWork as lost:
                parts.append(PieceResult(error=lost.reason))
        self.futures, self.in_flight = [], 0
        errors = [part.error for part in parts if part.error]
        if errors:
            self.error, self.phase = errors[0], DONE
        elif self.phase == FIRST:
            total = Stats()
            for part in parts:
                total = combine(total, part.stats, self.acc.first)
            self.acc.stats = total
            self.phase = SECOND if self.acc.needs_second_pass else self._after_metrics()
        elif self.phase == SECOND:
            for part in parts:
                for group in self.acc.second:
                    group.merge(self.acc.stats, part.stats)
            self.phase = self._after_metrics()
        else:
            self.counts = [[sum(part.counts[s][k] for part in parts) for k in (0, 1)] for s in (0, 1)]
            self.phase = DONE

    def _after_metrics(self) -> str:
        return COUNT if pair_compare.needs_count_pass(self.acc, self.acc.result()) else DONE

    def _row(self) -> JobResult:
        if self.error:
            return JobResult([pair_compare.failed_row(self.row, [self.x, self.y], self.error)], 0)
        result, note = pair_compare.finish(self.acc, self.x, self.y, lambda: self.counts)
        row = pair_compare.compared_row(self.row, self.x, self.y, result, note)
        return JobResult([row], self.x.nbytes + self.y.nbytes)


def may_split(task: PairTask, file_sizes: dict) -> bool:
    """Whether ``task``'s pair could be compared in ranges under some split size: its files
    hold more than :data:`SPLIT_MIN_BYTES` (the split size of a run is never below it unless
    set)."""
    return task.comparable and _files_bytes(task, file_sizes) > SPLIT_MIN_BYTES


def _files_bytes(task: PairTask, file_sizes: dict) -> int:
    return sum(file_sizes.get(path, 0) for path in files_read(task))


def _split(
    task: PairTask, job_args: tuple, file_sizes: dict, split_bytes: int, reads: ReadCache
) -> SplitCompare | None:
    """A SplitCompare for a task whose pair is larger than ``split_bytes``, else None."""
    if not task.comparable:
        return None
    if _files_bytes(task, file_sizes) <= split_bytes:
        return None  # the files bound the tensors' bytes: no header needs reading
    x, y = range_extent(task.left, reads), range_extent(task.right, reads)
    if x is None or y is None or x.size != y.size or x.nbytes + y.nbytes <= split_bytes:
        return None
    bounds = split_points(x.size, math.lcm(x.unit, y.unit), math.ceil((x.nbytes + y.nbytes) / split_bytes))
    if len(bounds) < 3:
        return None
    row = pair_compare.base_row(task, reads)
    if job_args[3]:  # keyed: found here, before any range of the pair is read (.row_keys)
        row = replace(row, cache_key=RowKeys.for_metrics(job_args[0]).key(task))
    return SplitCompare(task, x, y, bounds, job_args, row)


def split_units(jobs: Sequence[list[PairTask]], job_args: tuple, file_sizes: dict, split_bytes: int) -> list:
    """The jobs, with every task whose pair is larger than ``split_bytes`` taken out into a
    :class:`SplitCompare` of its own, in the same order (a job is cut around it)."""
    units: list = []
    for job in jobs:
        reads, segment = ReadCache(), []
        for task in job:
            unit = _split(task, job_args, file_sizes, split_bytes, reads)
            if unit is None:
                segment.append(task)
                continue
            if segment:
                units.append(segment)
                segment = []
            units.append(unit)
        if segment:
            units.append(segment)
    return units


__all__ = [
    "SPLIT_MAX_BYTES",
    "SPLIT_MIN_BYTES",
    "PieceResult",
    "SplitCompare",
    "may_split",
    "run_piece",
    "split_points",
    "split_size",
    "split_size_settled",
    "split_units",
]
