"""What ``vc`` writes for msprobe dumps besides its result CSVs, in ``msprobe/`` of the result
directory: per rank pair the pairing it used as msprobe's tensor mapping file
(``mapping_{tag}.yaml``, for ``vc --mapping`` and ``msprobe compare -dm``), and the rows in
msprobe's own compare-result columns (``compare_result_{tag}.csv``), so users can diff them
with the results they had.

The columns are msprobe's, in its order, for the dump's task: tensor (``Cosine`` ...
``Five Thousandths Err Ratio``), statistics (``Max diff`` ... ``NormRelativeErr``) or md5
(``NPU MD5``, ``BENCH MD5``). A metric cell holds our value when the row computed it under
msprobe's name (as computed, at msprobe's precision: not the result CSV's six decimals), else
msprobe's text for it (``unsupported``, ``Nan``, ``shape unmatched``, ``N/A``); the statistics
come from ``dump.json``; ``Result`` and ``Err_message`` are msprobe's per-call verdict
(:func:`.msprobe_result.judge_api`). The lines are made from the rows as the run yields them
(:class:`MsprobeLines`), not read back from the result CSV. msprobe also lists a call's
non-tensor arguments (an ``int`` of ``input_args``, its value as each statistic): those lines
are not written here.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..formats.msprobe_leaves import Tensor
from ..formats.msprobe_mapping import mapping_text
from ..formats.output_root import OutputRoot
from .msprobe_metrics import text_cell
from .msprobe_result import ApiRow, judge_api, shape_text
from .msprobe_stats import DIFF_COLUMNS, RELATIVE_COLUMNS, Summary, compare_summaries
from .result import CompareRow
from .result_csv import neutralise

MSPROBE_DIR = "msprobe"
BASIC = [
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "NPU Requires_grad",
    "Bench Requires_grad",
]
TENSOR_METRICS = [
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
]
SUMMARY = ["NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm"]
EXTRACT = ["Requires_grad Consistent", "Result", "Err_message"]
MODE_COLUMNS = {
    "tensor": TENSOR_METRICS,
    "statistics": [*DIFF_COLUMNS, *RELATIVE_COLUMNS],
    "md5": ["NPU MD5", "BENCH MD5"],
}
N_A = "N/A"
_TEXT = frozenset({"NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "Err_message"})


def header(mode: str) -> list[str]:
    """msprobe's columns for ``mode`` (``tensor``, ``statistics``, ``md5``)."""
    summary = SUMMARY if mode != "md5" else []
    return BASIC + MODE_COLUMNS[mode] + summary + EXTRACT


def _cell(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return str(value)


def _summary(tensor: Tensor | None) -> Summary | None:
    return None if tensor is None else Summary(tensor.max, tensor.min, tensor.mean, tensor.norm)


def _metric_values(mode: str, row: CompareRow, pair) -> list:
    """The row's metric columns for ``mode``: in tensor mode the numbers, where a column has
    none msprobe's text (:func:`~.msprobe_metrics.text_cell`; the judge reads numbers and
    skips texts); else the cells."""
    if mode == "tensor":
        return [_tensor_value(row, pair, name) for name in TENSOR_METRICS]
    if mode == "statistics":
        return list(compare_summaries(_summary(pair.npu), _summary(pair.bench)).columns().values())
    return [pair.npu.md5 or N_A, pair.bench.md5 if pair.bench is not None and pair.bench.md5 else N_A]


def _tensor_value(row: CompareRow, pair, name: str) -> float | str:
    if name in row.metrics:
        return float(row.metrics[name])
    return text_cell(name, row.fail_reason) if pair.bench is not None else N_A


def _identity(pair) -> tuple[str, str, str, str, str, str]:
    """Both sides' names, dtypes and shapes as msprobe's columns spell them (N/A for no bench)."""
    npu, bench = pair.npu, pair.bench
    return (
        pair.npu_name,
        pair.bench_name or N_A,
        npu.dtype or N_A,
        bench.dtype if bench is not None and bench.dtype else N_A,
        shape_text(npu.shape),
        shape_text(bench.shape) if bench is not None else N_A,
    )


def _facts(pair) -> tuple[tuple[str, ...], tuple, tuple | None]:
    """What a pair's line and its Result judge's row both show, worked out once: the
    identity (:func:`_identity`) and each side's summary cells (None: no bench)."""
    bench = pair.bench
    return _identity(pair), _summary(pair.npu).cells(), _summary(bench).cells() if bench is not None else None


def _api_row(pair, facts: tuple, cells: dict[str, str]) -> ApiRow:
    npu, bench = pair.npu, pair.bench
    identity, summary, bench_summary = facts
    bench_summary = bench_summary if bench_summary is not None else (N_A,) * 4
    return ApiRow(
        *identity,
        npu.requires_grad,
        bench.requires_grad if bench is not None else None,
        summary[0],
        summary[1],
        bench_summary[0],
        bench_summary[1],
        cells.get("NormRelativeErr", N_A),
        cells.get("Cosine", N_A),
        cells.get("One Thousandth Err Ratio", N_A),
        npu.md5 or N_A,
        bench.md5 if bench is not None and bench.md5 else N_A,
    )


def _lines(mode: str, rows: Sequence[tuple[CompareRow, object]]) -> list[list[str]]:
    """The lines of one call's rows, its Result and Err_message judged over all of them."""
    cells = [dict(zip(MODE_COLUMNS[mode], _metric_values(mode, row, pair))) for row, pair in rows]
    facts = [_facts(pair) for _, pair in rows]
    verdicts = judge_api([_api_row(pair, f, c) for (_, pair), f, c in zip(rows, facts, cells)], mode)
    lines = []
    for (_, pair), (identity, summary, bench_summary), metric_cells, verdict in zip(rows, facts, cells, verdicts):
        npu, bench = pair.npu, pair.bench
        consistent = N_A if bench is None else str(npu.requires_grad == bench.requires_grad)
        stats = (
            []
            if mode == "md5"
            else [_cell(v) for v in summary]
            + ([_cell(v) for v in bench_summary] if bench_summary is not None else [N_A] * 4)
        )
        lines.append(
            [
                *identity,
                _cell(npu.requires_grad),
                _cell(bench.requires_grad) if bench is not None else N_A,
                *(repr(v) if isinstance(v, float) else v for v in metric_cells.values()),
                *stats,
                consistent,
                verdict.result,
                verdict.err_message,  # msprobe's judge replaces the comparison's messages
            ]
        )
    return lines


def _csv_text(head: list[str], lines: Iterable[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(head)
    text = [i for i, name in enumerate(head) if name in _TEXT]
    for cells in lines:  # names from the data could start a spreadsheet formula; numbers cannot
        writer.writerow([neutralise(c) if i in text else c for i, c in enumerate(cells)])
    return out.getvalue()


def dump_mode(sides) -> str:
    """``tensor``, ``statistics`` or ``md5``: what the NPU dump holds."""
    if sides.npu.has_md5:
        return "md5"
    return "tensor" if (sides.npu.header.task or "tensor") == "tensor" else "statistics"


class MsprobeLines:
    """msprobe's compare-result lines of one rank pair (``sides``: its
    :class:`~.msprobe_plan.MsprobeSides`), built as its rows arrive (:meth:`add`): msprobe
    judges a call over all its tensors, so a call's lines are made once its last row has come,
    while the run still compares, and only the calls whose rows did not all come wait for
    :meth:`text`. Lines keep the order of the calls' first rows."""

    def __init__(self, sides) -> None:
        from .msprobe_plan import tensor_names

        self._pairs, self._mode = tensor_names(sides), dump_mode(sides)
        self._expected = Counter(pair.npu_call.key.text for pair in self._pairs.values())
        self._calls: dict[str, list[tuple[CompareRow, object]]] = {}
        self._lines: dict[str, list[list[str]]] = {}

    def add(self, row: CompareRow) -> None:
        pair = self._pairs.get(row.tensor_index or "")
        if pair is None:
            return
        call = pair.npu_call.key.text
        rows = self._calls.setdefault(call, [])
        rows.append((row, pair))
        if len(rows) == self._expected[call]:
            self._lines[call] = _lines(self._mode, rows)

    def text(self) -> str:
        """The CSV of every row added."""
        lines = (
            line
            for call, rows in self._calls.items()
            for line in (self._lines[call] if len(rows) == self._expected[call] else _lines(self._mode, rows))
        )
        return _csv_text(header(self._mode), lines)


def msprobe_lines(plans: Sequence) -> list[MsprobeLines | None]:
    """A collector for each msprobe plan of ``plans`` (None for the others)."""
    return [MsprobeLines(plan.msprobe) if getattr(plan, "msprobe", None) is not None else None for plan in plans]


def msprobe_csv_text(rows: Iterable[CompareRow], sides) -> str:
    """The compare_result CSV of one rank pair's ``rows``."""
    lines = MsprobeLines(sides)
    for row in rows:
        lines.add(row)
    return lines.text()


def write_msprobe_files(
    root: OutputRoot, directory: Path, plans: Sequence, collected: Sequence[MsprobeLines | None]
) -> list[Path]:
    """For each msprobe plan (its rows' lines in ``collected``, from :func:`msprobe_lines`): the
    mapping file and msprobe's columns, in ``directory/msprobe/``; returns the files written."""
    written = []
    for plan, lines in zip(plans, collected):
        if lines is None:
            continue
        where = directory / MSPROBE_DIR
        written.append(
            root.write_text(where / f"mapping_{plan.tag}.yaml", mapping_text(plan.msprobe.pairing.mapping()))
        )
        written.append(root.write_text(where / f"compare_result_{plan.tag}.csv", lines.text()))
    return written
