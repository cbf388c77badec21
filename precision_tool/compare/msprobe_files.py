"""What ``vc`` writes for msprobe dumps besides its result CSVs, in ``msprobe/`` of the result
directory: per rank pair the pairing it used as msprobe's tensor mapping file
(``mapping_{tag}.yaml``, for ``vc --mapping`` and ``msprobe compare -dm``), and the rows in
msprobe's own compare-result columns (``compare_result_{tag}.csv``), so users can diff them
with the results they had.

The msprobe columns are msprobe's names (``NPU Name``, ``Bench Name``, ``NPU Dtype``, ...,
``Cosine``, ``EucDist``, ..., ``NPU max`` ..., ``Result``, ``Err_message``); a metric column
holds our value when the row computed it under msprobe's name, else ``N/A``. The statistics
come from ``dump.json``.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Iterable, Sequence

from ..formats.atomic import OutputRoot
from ..formats.msprobe_leaves import Tensor
from ..formats.msprobe_mapping import mapping_text
from .result import CompareRow
from .result_csv import iter_result_csv, neutralise

MSPROBE_DIR = "msprobe"
BASIC = ["NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape",
         "Bench Tensor Shape", "NPU Requires_grad", "Bench Requires_grad"]
TENSOR_METRICS = ["Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
                  "Five Thousandths Err Ratio"]
SUMMARY = ["NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean",
           "Bench l2norm"]
EXTRACT = ["Requires_grad Consistent", "Result", "Err_message"]
HEADER = BASIC + TENSOR_METRICS + SUMMARY + EXTRACT
N_A = "N/A"


def _number(value: float | None) -> str:
    if value is None:
        return N_A
    if math.isnan(value):
        return "nan"
    return repr(float(value))


def _stats(tensor: Tensor | None) -> list[str]:
    if tensor is None:
        return [N_A] * 4
    return [_number(v) for v in (tensor.max, tensor.min, tensor.mean, tensor.norm)]


def _grad(tensor: Tensor | None) -> str:
    return N_A if tensor is None or tensor.requires_grad is None else str(tensor.requires_grad)


def _shape(tensor: Tensor | None) -> str:
    return N_A if tensor is None or tensor.shape is None else str(list(tensor.shape))


def msprobe_cells(row: CompareRow, pair) -> list[str]:
    """One row in msprobe's compare-result columns (see the module doc); ``pair`` is the row's
    :class:`~.msprobe_pairing.TensorPair`."""
    npu, bench = pair.npu, pair.bench
    consistent = N_A if npu is None or bench is None else str(npu.requires_grad == bench.requires_grad)
    metrics = [_number(row.metrics[name]) if name in row.metrics else N_A for name in TENSOR_METRICS]
    result = "" if row.compared else N_A
    return [pair.npu_name, pair.bench_name or N_A,
            npu.dtype if npu is not None and npu.dtype else N_A,
            bench.dtype if bench is not None and bench.dtype else N_A,
            _shape(npu), _shape(bench), _grad(npu), _grad(bench), *metrics,
            *_stats(npu), *_stats(bench), consistent, result, row.fail_reason]


_TEXT_COLUMNS = frozenset(i for i, name in enumerate(HEADER)
                          if name in ("NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "Err_message"))


def _csv_text(lines: Iterable[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    for cells in lines:  # names from the data could start a spreadsheet formula; numbers cannot
        writer.writerow([neutralise(cell) if i in _TEXT_COLUMNS else cell for i, cell in enumerate(cells)])
    return out.getvalue()


def msprobe_csv_text(rows: Iterable[CompareRow], sides) -> str:
    """The compare_result CSV of one rank pair (``sides``: its :class:`~.msprobe_plan.MsprobeSides`)."""
    from .msprobe_plan import tensor_names

    pairs = tensor_names(sides)
    lines = [HEADER]
    for row in rows:
        pair = pairs.get(row.tensor_index or "")
        if pair is not None:
            lines.append(msprobe_cells(row, pair))
    return _csv_text(lines)


def write_msprobe_files(root: OutputRoot, directory: Path, plans: Sequence, csvs: Sequence[Path]) -> list[Path]:
    """For each msprobe plan (its result CSV in ``csvs``): the mapping file and msprobe's
    columns, in ``directory/msprobe/``; returns the files written (none for other plans)."""
    written = []
    for plan, csv_path in zip(plans, csvs):
        sides = getattr(plan, "msprobe", None)
        if sides is None:
            continue
        where = directory / MSPROBE_DIR
        written.append(root.write_text(where / f"mapping_{plan.tag}.yaml", mapping_text(sides.pairing.mapping())))
        text = msprobe_csv_text(iter_result_csv(csv_path), sides)
        written.append(root.write_text(where / f"compare_result_{plan.tag}.csv", text))
    return written
