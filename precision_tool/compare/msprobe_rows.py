"""Rows of msprobe dumps that hold no tensor data: the statistics task (each tensor's Max, Min,
Mean, Norm in dump.json) and md5 summary mode (each tensor's CRC-32), and the metrics an
msprobe comparison computes.

Such a row carries msprobe's statistics-mode numbers (``Max diff`` ... ``L2norm diff`` and the
relative ones, in percent, :mod:`.msprobe_stats`) or ``MD5Equal`` (1 or 0), and ``RedFloor``,
the lower bound on the RED the records prove (``verdict.RED_FLOOR``, :func:`red_floor`: from
the norms, means, maxima and minima); for checksums 0 when equal, inf when not.
So the verdict can say a tensor diverges from statistics alone (never that it is close: that
needs the tensors), and an op whose inputs' checksums agree and output's do not introduces a
difference.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..formats.msprobe_leaves import Tensor
from .golden_pairing import StatsSide
from .metric_data import Metric, Stats
from .msprobe_metrics import MSPROBE_METRICS
from .msprobe_stats import DIFF_COLUMNS, RELATIVE_COLUMNS, Summary, compare_summaries, md5_match
from .result import CompareRow
from .verdict import RED_FLOOR

MD5_EQUAL = "MD5Equal"


def stats_side(tensor: Tensor) -> StatsSide:
    """The record side of an msprobe tensor."""
    return StatsSide(Summary(tensor.max, tensor.min, tensor.mean, tensor.norm), tensor.md5, tensor.dtype, tensor.shape)


def _not_from_tensors(stats: Stats) -> float:
    return math.nan  # these columns come from the records (stats_row), never from tensor data


STATS_METRICS: tuple[Metric, ...] = tuple(
    Metric(name, frozenset(), _not_from_tensors) for name in (*DIFF_COLUMNS, *RELATIVE_COLUMNS, MD5_EQUAL, RED_FLOOR)
)


def _number(cell: str) -> float | None:
    text = cell.rstrip("%")
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def _numbers(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def red_floor(npu: StatsSide, bench: StatsSide) -> float:
    """The largest lower bound on ``RED = |x - y| / |y|`` that the two records prove; NaN when
    they prove none. For n elements: ``|x - y| >= | |x| - |y| |`` (norms), ``>= sqrt(n) |mean x -
    mean y|`` (Cauchy-Schwarz on the sum of differences), ``>= |max x - max y|`` and
    ``>= |min x - min y|`` (the largest difference is at least that)."""
    a, b = npu.summary, bench.summary
    if not _numbers(b.norm) or b.norm == 0:
        return math.nan
    gaps = []
    if _numbers(a.norm):
        gaps.append(abs(a.norm - b.norm))
    count = math.prod(npu.shape) if npu.shape is not None and npu.shape == bench.shape else None
    if count and _numbers(a.mean, b.mean):
        gaps.append(math.sqrt(count) * abs(a.mean - b.mean))
    gaps += [abs(x - y) for x, y in ((a.max, b.max), (a.min, b.min)) if _numbers(x, y)]
    return max(gaps) / abs(b.norm) if gaps else math.nan


def stats_metrics(npu: StatsSide, bench: StatsSide) -> tuple[dict[str, float], str]:
    """(metrics, note) of a record pair: msprobe's statistics-mode cells as numbers (a text
    cell such as ``N/A`` or ``Diff`` is left out), or the checksum verdict; and RedFloor."""
    if npu.md5 is not None and bench.md5 is not None:
        equal = md5_match(npu.md5, bench.md5) == "pass"
        return {MD5_EQUAL: 1.0 if equal else 0.0, RED_FLOOR: 0.0 if equal else math.inf}, (
            "" if equal else f"the CRC-32 checksums differ ({npu.md5} vs {bench.md5})"
        )
    cells = compare_summaries(npu.summary, bench.summary).columns()
    metrics = {name: value for name, value in ((n, _number(c)) for n, c in cells.items()) if value is not None}
    floor = red_floor(npu, bench)
    if not math.isnan(floor):
        metrics[RED_FLOOR] = floor
    return metrics, "statistics only: no cosine (the dump holds no tensor data)"


def stats_row(row: CompareRow, npu: StatsSide, bench: StatsSide) -> CompareRow:
    """``row`` (names and index) filled in from the two records."""
    metrics, note = stats_metrics(npu, bench)
    return replace(
        row.with_metrics(metrics, fail_reason=note), npu_dtype=npu.dtype, golden_dtype=bench.dtype, shape=npu.shape
    )


VERDICT_METRICS = ("CosineSimilarity", "RelativeEuclideanDistance", "MaxAbsoluteError")
"""Of msaccucmp's ten, what an msprobe comparison computes by default: the verdict's two and the
largest difference (the other seven, KL's second pass among them, are GE users' columns)."""


def metrics_for(plans, chosen: tuple[Metric, ...], asked: bool) -> tuple[Metric, ...]:
    """The metrics to compute: what was asked (``asked``), else for msprobe comparisons the
    verdict's (:data:`VERDICT_METRICS`) and msprobe's six; and the record columns when a plan
    compares records."""
    sides = [p.msprobe for p in plans if getattr(p, "msprobe", None) is not None]
    if not sides:
        return chosen
    if not asked:
        chosen = tuple(m for m in chosen if m.name in VERDICT_METRICS)
    extra = MSPROBE_METRICS if not asked else ()
    records = any(isinstance(t.left, StatsSide) for p in plans for t in p.tasks)
    names = {m.name for m in chosen}
    out = list(chosen) + [m for m in extra if m.name not in names]
    return tuple(out) + (STATS_METRICS if records else ())
