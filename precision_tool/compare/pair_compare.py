"""One tensor pair, compared: its sides streamed in aligned blocks, its metrics, its row.

What every way of running the comparison shares (:mod:`.engine`'s jobs, :mod:`.split`'s
ranges): a worker opens both sides as :class:`~.load.Source` streams (host layout, C order),
checks the sizes and folds aligned blocks into an :class:`~.metrics.Accumulator` (the fused
kernels of :mod:`.kernels`); when KL is selected the blocks are folded a second time, with the
ranges the first pass found. A tensor that fits in one block is read once for both passes.
The decisions (shapes, per-tensor problems as reasons, NaN/Inf notes) are in :mod:`.engine`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import numpy as np

from ..errors import PrecisionToolError
from .golden_pairing import DumpSide, PairTask, StatsSide
from .load import CONVERSION_PLANS, DEFAULT_CHUNK, Buffers, Source, aligned
from .metrics import METRICS, Accumulator, Metric, MetricResult, is_scalar_shape, shape_mismatch
from .result import CompareRow
from .row_keys import RowKeys
from .seen_pairs import SeenPairs
from .sides import ReadCache, open_side

_BUFFERS = Buffers()  # per process: workers keep theirs between jobs


def clear_buffers() -> None:
    """Drop this process's block buffers and conversion plans (after a run: a worker keeps
    them between jobs)."""
    _BUFFERS.clear()
    CONVERSION_PLANS.clear()


def pair_pieces(x: Source, y: Source, chunk: int, start: int = 0, stop: int | None = None) -> Iterator[tuple]:
    """Aligned blocks of elements ``[start, stop)`` of both sides (this process's buffers)."""
    return aligned(x.blocks(chunk, _BUFFERS, "x", start, stop), y.blocks(chunk, _BUFFERS, "y", start, stop))


def new_accumulator(x: Source, y: Source, metrics: Sequence[Metric], numba: bool | None) -> Accumulator:
    """The Accumulator for a pair of equal-size sides (scalar and bool decided from them)."""
    boolean = x.dtype.kind == "b" and y.dtype.kind == "b"
    return Accumulator(
        metrics, scalar=x.size > 0 and is_scalar_shape(x.shape), boolean=boolean, size=x.size, numba=numba
    )


def _shape_note(x: Source, y: Source) -> str:
    if x.shape == y.shape:
        return ""
    return f"Shapes differ (NPU {_shape(x.shape)} vs golden {_shape(y.shape)}) but the sizes match: compared flattened."


def _finite(result: MetricResult) -> bool:
    return all(math.isfinite(v) for v in result.numbers.values())


def needs_count_pass(acc: Accumulator, result: MetricResult) -> bool:
    """Whether the NaN/Inf note needs a pass of its own: a metric is not finite and the first
    pass did not count them (cosine alone)."""
    return not _finite(result) and acc.nonfinite_counts is None


def finish(acc: Accumulator, x: Source, y: Source, count_nonfinite: Callable[[], list]) -> tuple[MetricResult, str]:
    """The metrics accumulated, and the row's note (shapes, NaN/Inf counts); ``count_nonfinite``
    gives the counts when :func:`needs_count_pass`."""
    note, result = _shape_note(x, y), acc.result()
    if not _finite(result):
        counts = acc.nonfinite_counts
        text = nonfinite_text(counts if counts is not None else count_nonfinite())
        note = " ".join(part for part in (note, text) if part)
    return result, note


def compare_sources(
    x: Source, y: Source, metrics: Sequence[Metric] = METRICS, chunk: int = DEFAULT_CHUNK, numba: bool | None = None
) -> tuple[MetricResult, str]:
    """The metrics of two opened sides, and a note when the shapes differ but sizes match.

    A pair that fits in one block is read and converted once for both passes (KL's second pass
    reuses it); bigger pairs stream again for the second pass. ``numba`` is the run's kernel
    choice (:func:`~.kernels.numba_pays_off`; None: by the tensor's size).
    """
    if x.size != y.size:
        return shape_mismatch(x.shape, y.shape), ""
    acc = new_accumulator(x, y, metrics, numba)
    kept, count = None, 0
    for pair in pair_pieces(x, y, chunk):
        acc.update(*pair)
        kept, count = pair, count + 1
    if acc.needs_second_pass:
        for pair in [kept] if count == 1 else pair_pieces(x, y, chunk):
            acc.update_second(*pair)
    return finish(acc, x, y, lambda: nonfinite_counts(x, y, chunk))


def nonfinite_counts(
    x: Source, y: Source, chunk: int = DEFAULT_CHUNK, start: int = 0, stop: int | None = None
) -> list[list[int]]:
    """``[[NPU NaN, NPU Inf], [golden NaN, golden Inf]]`` of elements ``[start, stop)``."""
    counts = np.zeros((2, 2), np.int64)  # [side][nan, inf]
    for pair in pair_pieces(x, y, chunk, start, stop):
        for side, block in enumerate(pair):
            if block.dtype.kind not in "biu":  # float, complex, ml_dtypes' bfloat16 / fp8
                counts[side] += (np.count_nonzero(np.isnan(block)), np.count_nonzero(np.isinf(block)))
    return counts.tolist()


def nonfinite_note(x: Source, y: Source, chunk: int = DEFAULT_CHUNK) -> str:
    """Which side holds how many NaN and Inf values ('' when neither does).

    A pass over both sides, run only when a metric came out nan or inf and the first pass did
    not count them (cosine alone), so the row says why instead of leaving a bare ``nan``.
    """
    return nonfinite_text(nonfinite_counts(x, y, chunk))


def nonfinite_text(counts) -> str:
    """The note for ``[[NPU NaN, NPU Inf], [golden NaN, golden Inf]]`` ('' when all are 0)."""
    parts = []
    for side, (nan, inf) in zip(("NPU", "golden"), counts):
        found = [f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "Inf")) if n]
        if found:
            parts.append(f"The {side} tensor holds {' and '.join(found)}.")
    return " ".join(parts)


def _shape(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _header_facts(side, reads: ReadCache) -> tuple[str | None, tuple[int, ...] | None]:
    """(dtype name, host shape) of a side from its header alone, or Nones."""
    if not isinstance(side, DumpSide):
        return None, None
    try:
        t = reads.tensor(side)
    except PrecisionToolError:
        return None, None
    return t.dtype_name, None if t.defect or t.original_defect else t.original_shape or t.shape


def _task_fields(task: PairTask) -> dict:
    """The row's fields that come from the task alone."""
    return dict(
        index=task.index,
        op_type=task.op_type,
        npu_name=task.npu_name,
        npu_address=None,
        ground_truth=task.ground_truth,
        tensor_index=task.tensor_index,
    )


def base_row(task: PairTask, reads: ReadCache, fail_reason: str = "") -> CompareRow:
    """A task's row before comparing: names, and dtypes and shape from the headers."""
    dtype, shape = _header_facts(task.left, reads)
    golden_dtype, _ = _header_facts(task.right, reads)
    return CompareRow(
        **_task_fields(task), npu_dtype=dtype, golden_dtype=golden_dtype, shape=shape, fail_reason=fail_reason
    )


def not_compared_row(task: PairTask, reads: ReadCache) -> CompareRow:
    """The row of a task that is not compared: its reason."""
    return base_row(task, reads, task.reason)


def failed_row(row: CompareRow, sides: Sequence[Source], reason: str) -> CompareRow:
    """The row of a comparison that failed with ``reason`` after opening ``sides``."""
    if sides:
        row = _with_side(row, sides[0], is_left=True)
    return row.with_metrics({}, fail_reason=reason)


def compared_row(row: CompareRow, x: Source, y: Source, result: MetricResult, note: str) -> CompareRow:
    """The row of a comparison that computed ``result`` (the sides' notes joined to ``note``)."""
    return replace(row, **_compared_fields(x, y, result, note))


def _compared_fields(x: Source, y: Source, result: MetricResult, note: str) -> dict:
    reason = " ".join(part for part in (x.note, y.note, note, result.fail_reason) if part)
    return dict(
        npu_dtype=x.dtype_name,
        shape=tuple(x.shape),
        golden_dtype=y.dtype_name,
        metrics=dict(result.numbers),
        std_text=result.std_text,
        fail_reason=reason,
    )


@functools.cache
def _stats_row() -> Callable:
    """:func:`.msprobe_rows.stats_row`, imported at the first statistics task: a GE run never
    loads msprobe's statistics modules. Kept by the cache because an import statement run again
    costs about 1 us here (a statistics task's row takes tens), against 0.07 for this call."""
    from .msprobe_rows import stats_row

    return stats_row


def compare_task(
    task: PairTask,
    metrics: Sequence[Metric],
    chunk: int,
    reads: ReadCache,
    numba: bool | None = None,
    keys: RowKeys | None = None,
    seen: SeenPairs | None = None,
) -> tuple[CompareRow, int]:
    """One row for one task, and the bytes compared (0 when nothing was). ``keys``: the
    compared row carries its row-cache key, its files identified as they are opened
    (:mod:`.row_keys`). ``seen``: the pairs compared before in this call; a pair of the same
    arrays as one of them is given its outcome, not compared again (:mod:`.seen_pairs`)."""
    if not task.comparable:
        return not_compared_row(task, reads), 0
    if isinstance(task.left, StatsSide):  # msprobe records: no tensor data to read
        return _stats_row()(base_row(task, reads), task.left, task.right), 0
    identities = keys.identities if keys is not None else None
    probe = seen.probe(task, reads, identities) if seen is not None else None
    if probe is not None and probe.found is not None:
        fields, nbytes = probe.found
        return CompareRow(
            **_task_fields(task), **fields, cache_key=keys.key(task) if keys is not None else None
        ), nbytes
    sides: list[Source] = []
    try:
        for side in (task.left, task.right):
            sides.append(open_side(side, reads, identities))
        x, y = sides
        key = keys.key(task) if keys is not None else None
        if probe is not None and probe.by_contents:  # not a GE pair: looked up by what it holds
            result, note = _compared_once(x, y, metrics, chunk, numba, seen)
        else:
            result, note = compare_sources(x, y, metrics, chunk, numba)
    except (PrecisionToolError, MemoryError) as exc:
        return failed_row(base_row(task, reads), sides, failure_reason(exc, task)), 0
    # the row made once (base_row's header facts are all replaced by the sides' own)
    fields, nbytes = _compared_fields(x, y, result, note), x.nbytes + y.nbytes
    if probe is not None and probe.key is not None:  # a GE pair: its row's fields kept
        seen.keep(probe, fields, nbytes)
    return CompareRow(**_task_fields(task), **fields, cache_key=key), nbytes


def _compared_once(
    x: Source, y: Source, metrics: Sequence[Metric], chunk: int, numba: bool | None, seen: SeenPairs
) -> tuple[MetricResult, str]:
    """:func:`compare_sources`, or the outcome of a pair of the same two arrays compared before
    in the call (:meth:`~.seen_pairs.SeenPairs.contents`)."""
    probe = seen.contents(x, y)
    if probe.found is not None:
        return probe.found
    result, note = compare_sources(x, y, metrics, chunk, numba)
    seen.keep(probe, result, note)
    return result, note


def failure_reason(exc: Exception, task: PairTask) -> str:
    """The CompareFailReason of a pair that could not be compared."""
    if isinstance(exc, MemoryError):  # confined to this pair: the next one may well fit
        return f"not enough memory to compare {task.tensor_index or task.npu_name}"
    return str(exc)


def _with_side(row: CompareRow, source: Source, is_left: bool) -> CompareRow:
    if is_left:
        return replace(row, npu_dtype=source.dtype_name, shape=tuple(source.shape))
    return replace(row, golden_dtype=source.dtype_name)


__all__ = [
    "base_row",
    "clear_buffers",
    "compare_sources",
    "compare_task",
    "compared_row",
    "failed_row",
    "failure_reason",
    "finish",
    "needs_count_pass",
    "new_accumulator",
    "nonfinite_counts",
    "nonfinite_note",
    "nonfinite_text",
    "not_compared_row",
    "pair_pieces",
]
