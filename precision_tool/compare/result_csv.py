"""The result CSV (FORMATS.md section 6): msaccucmp's columns and formatting, written and read.

Writing: :class:`ResultWriter` streams rows into a temporary file beside the target and renames
it to the final name only when closed without error, so an interrupted run never leaves a
half-written CSV under the final name. Numbers print ``%.6f`` (computed ``nan``/``inf`` in lower
case); a metric not compared prints ``NaN``; the csv module quotes exactly as msaccucmp's file
does (``"[2,8,8,3]"`` but ``[8]``; ``""`` inside reasons) and ends lines with CRLF.

The metric columns are those of the metrics written, as msaccucmp does: all ten by default
(exactly msaccucmp's header); with ``-alg`` only the selected ones, in the order given. Metrics
that are not msaccucmp's (custom ones) become trailing columns after ``CompareFailReason``, so
msaccucmp's part of the file keeps its format.

Reading: :func:`read_result_csv` maps columns by header name, never by position; it reads
whichever metric columns a file has (a ``-alg`` file has only some), trailing columns as extra
metrics, and accepts every variant of FORMATS.md: ``OpSequence`` after ``Index``, ``OverFlow`` before the metrics, a
golden-side ``Address`` after the second ``DataType``, the older ``Index, LeftOp, RightOp,
TensorIndex, ...`` header, a UTF-8 BOM, and ``nan``/``NaN``/``Nan``/``*`` for not-a-number
(lower-case ``nan`` is a computed value; the others, and an empty cell, mean not compared).
"""

from __future__ import annotations

import csv
import math
import os
from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from precision_tool.errors import PrecisionToolError

from ..formats.atomic import create_exclusive, temp_name
from .metric_types import Metric
from .metrics import METRIC_NAMES, METRICS
from .result import CompareRow

NOT_COMPARED = "NaN"
STD_COLUMN = "StandardDeviation"
REASON_COLUMN = "CompareFailReason"
NUMERIC_METRICS = tuple(m.name for m in METRICS if not m.text)
_NAN_TEXTS = {"nan", "NaN", "Nan", "NAN", "*", ""}
_STAMP = "%Y%m%d%H%M%S"


def _split(metrics: Sequence[Metric]) -> tuple[list[Metric], list[Metric]]:
    """(msaccucmp's metrics, in the order given; the others), each name once."""
    seen: dict[str, Metric] = {}
    for metric in metrics:
        seen.setdefault(metric.name, metric)
    ours = [m for m in seen.values() if m.name in METRIC_NAMES]
    return ours, [m for m in seen.values() if m.name not in METRIC_NAMES]


def columns(*, op_sequence: bool = False, overflow: bool = False, golden_address: bool = False,
            metrics: Sequence[Metric] = METRICS) -> list[str]:
    """The header in msaccucmp's order, with the optional columns and the metrics asked for."""
    head = ["Index"] + (["OpSequence"] if op_sequence else [])
    head += ["OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType"]
    head += (["Address"] if golden_address else []) + ["TensorIndex", "Shape"]
    known, extra = _split(metrics)
    head += (["OverFlow"] if overflow else []) + [m.name for m in known]
    return head + [REASON_COLUMN] + [m.name for m in extra]


def format_value(value: float | None) -> str:
    """``%.6f`` of a computed value (``nan``, ``inf``, ``-inf`` as such); ``NaN`` for None."""
    return NOT_COMPARED if value is None else "%.6f" % value


def format_shape(shape: tuple[int, ...] | None) -> str:
    """``[d0,d1,...]``, or ``NaN`` when unknown."""
    return NOT_COMPARED if shape is None else "[" + ",".join(str(d) for d in shape) + "]"


def _text(value: object) -> str:
    return NOT_COMPARED if value is None else str(value)


def format_row(row: CompareRow, *, op_sequence: bool = False, overflow: bool = False,
               golden_address: bool = False, metrics: Sequence[Metric] = METRICS) -> list[str]:
    """The CSV cells of ``row`` for the header :func:`columns` gives with the same arguments."""
    cells = [str(row.index)] + ([_text(row.op_sequence)] if op_sequence else [])
    cells += [row.op_type, row.npu_name, _text(row.npu_dtype), _text(row.npu_address),
              row.ground_truth, _text(row.golden_dtype)]
    cells += ([_text(row.golden_address)] if golden_address else [])
    cells += [_text(row.tensor_index), format_shape(row.shape)]
    cells += [_text(row.overflow)] if overflow else []
    known, extra = _split(metrics)
    cells += [_metric_cell(row, m) for m in known] + [row.fail_reason]
    return cells + [_metric_cell(row, m) for m in extra]


def _metric_cell(row: CompareRow, metric: Metric) -> str:
    if metric.name == STD_COLUMN:
        return row.std_text
    value = row.metrics.get(metric.name)
    if metric.text:
        return NOT_COMPARED if value is None else str(value)
    return format_value(value)


def result_path(data_root: str | os.PathLike, when: datetime, tag: str | None = None) -> Path:
    """``{data_root}/temp/vector_compare/{YYYYmmddHHMMSS}/result_{YYYYmmddHHMMSS}[_{tag}].csv``."""
    stamp = when.strftime(_STAMP)
    name = f"result_{stamp}" + (f"_{tag}" if tag else "") + ".csv"
    return Path(data_root) / "temp" / "vector_compare" / stamp / name


def latest_result_dir(data_root: str | os.PathLike) -> Path | None:
    """The newest ``temp/vector_compare/{stamp}`` directory holding a CSV, or None."""
    base = Path(data_root) / "temp" / "vector_compare"
    dirs = [d for d in base.iterdir() if d.is_dir() and any(d.glob("*.csv"))] if base.is_dir() else []
    return max(dirs, key=lambda d: d.name, default=None)


class ResultWriter:
    """Streams CompareRows to a CSV that appears under its final name only on success.

    Use as a context manager: an exception inside the block removes the temporary file and
    leaves nothing under ``path``. Flags add the optional msaccucmp columns; ``metrics`` are the
    metrics computed (their columns only, see the module docstring). Defaults to the ten.
    """

    def __init__(self, path: str | os.PathLike, *, op_sequence: bool = False,
                 overflow: bool = False, golden_address: bool = False,
                 metrics: Sequence[Metric] = METRICS) -> None:
        self.path = Path(path)
        self.flags = {"op_sequence": op_sequence, "overflow": overflow,
                      "golden_address": golden_address, "metrics": tuple(metrics)}
        self.rows_written = 0
        self._handle = None
        self._temp: Path | None = None

    def open(self) -> ResultWriter:
        """Create the directory and the temporary file, and write the header."""
        temp = temp_name(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # not mkstemp: the result gets the user's usual permissions
            self._handle = create_exclusive(temp, binary=False, newline="")
        except OSError as exc:
            raise PrecisionToolError(f"cannot write the result: {exc.strerror}", self.path) from None
        self._temp = temp
        self._writer = csv.writer(self._handle)
        self._writer.writerow(columns(**self.flags))
        return self

    def write(self, row: CompareRow) -> None:
        """Append one row."""
        if self._handle is None:
            raise ValueError("ResultWriter.write before open()")
        self._writer.writerow(format_row(row, **self.flags))
        self.rows_written += 1

    def write_rows(self, rows: Iterable[CompareRow]) -> None:
        """Append rows as they come."""
        for row in rows:
            self.write(row)

    def close(self) -> Path:
        """Finish the file and move it to its final name; returns that path."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            os.replace(self._temp, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the temporary file; nothing appears under the final name."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            self._temp.unlink(missing_ok=True)

    def __enter__(self) -> ResultWriter:
        return self.open()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_result_csv(path: str | os.PathLike, rows: Iterable[CompareRow], **flags) -> Path:
    """Write ``rows`` to ``path`` (atomically, see :class:`ResultWriter`); returns the path."""
    with ResultWriter(path, **flags) as writer:
        writer.write_rows(rows)
    return writer.path


# --- reading -----------------------------------------------------------------------------

class _Header:
    """Where each field of a CompareRow lives in one CSV's header."""

    def __init__(self, names: list[str], path: Path, require: Sequence[str] = ()) -> None:
        positions: dict[str, list[int]] = {}
        for i, name in enumerate(n.strip() for n in names):
            positions.setdefault(name, []).append(i)
        self.positions, self.path = positions, path
        self.old = "LeftOp" in positions and "NPUDump" not in positions
        for required in ("Index", "TensorIndex", "LeftOp" if self.old else "NPUDump"):
            if required not in positions:
                raise PrecisionToolError(f"not a comparison result: no {required} column", path)
        for name in require:
            if name not in positions:
                raise PrecisionToolError(f"no {name} column (a vc -alg result without it?)", path)
        if not any(name in positions for name in METRIC_NAMES):
            raise PrecisionToolError("not a comparison result: no CosineSimilarity column, "
                                     "nor any other metric's", path)
        reason = self.at(REASON_COLUMN)
        stripped = [n.strip() for n in names]
        # custom metrics: the columns after CompareFailReason
        self.extra = [] if reason is None else [(n, i) for i, n in enumerate(stripped) if i > reason and n]
        names = ("LeftOp", "RightOp") if self.old else ("NPUDump", "GroundTruth")
        fields = [("Index", 0), ("OpType", 0), (names[0], 0), ("DataType", 0), ("Address", 0),
                  (names[1], 0), ("DataType", 1), ("TensorIndex", 0), ("Shape", 0),
                  (STD_COLUMN, 0), ("CompareFailReason", 0), ("Address", 1), ("OverFlow", 0),
                  ("OpSequence", 0)] + [(name, 0) for name in NUMERIC_METRICS]
        # one position per field, found once: _row runs once per line of files of 100k lines
        self.plan = [self.at(name, nth) for name, nth in fields]

    def at(self, name: str, nth: int = 0) -> int | None:
        """The position of the ``nth`` column called ``name``, None when absent."""
        found = self.positions.get(name, [])
        return found[nth] if len(found) > nth else None


def _optional(text: str | None) -> str | None:
    return None if text is None or text in _NAN_TEXTS else text


def _number(text: str | None, column: str, where: str, path: Path) -> float | None:
    if text is None or (text in _NAN_TEXTS and text != "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        raise PrecisionToolError(f"{where}: {column} is {text!r}, not a number", path) from None


def _optional_number(text: str | None) -> float | None:
    if text is None or (text in _NAN_TEXTS and text != "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_shape(text: str | None) -> tuple[int, ...] | None:
    """``[d0,d1,...]`` (or a bare ``d0,...``) as a tuple; None when absent or not a shape."""
    if text is None or text in _NAN_TEXTS:
        return None
    inner = text.strip().strip("[]()").strip()
    try:
        return tuple(int(part) for part in inner.split(",")) if inner else ()
    except ValueError:
        return None


def _integer(text: str | None, column: str, where: str, path: Path) -> int | None:
    value = _number(text, column, where, path)
    if value is None or math.isnan(value) or value != int(value):
        if text is not None and text not in _NAN_TEXTS:
            raise PrecisionToolError(f"{where}: {column} is {text!r}, not an integer", path)
        return None
    return int(value)


def _row(cells: list[str], h: _Header, where: str) -> CompareRow:
    n = len(cells)
    (index, op_type, npu_name, npu_dtype, npu_address, ground_truth, golden_dtype, tensor_index,
     shape, std, reason, golden_address, overflow, op_sequence, *numbers) = [
        cells[p].strip() if p is not None and p < n else None for p in h.plan]
    index = _integer(index, "Index", where, h.path)
    if index is None:
        raise PrecisionToolError(f"{where}: the Index is missing", h.path)
    metrics = {}
    for name, text in zip(NUMERIC_METRICS, numbers):
        value = _number(text, name, where, h.path)
        if value is not None:
            metrics[name] = value
    for name, at in h.extra:  # another tool's trailing columns need not be numbers: skip those
        value = _optional_number(cells[at].strip() if at < n else None)
        if value is not None:
            metrics.setdefault(name, value)
    return CompareRow(
        index=index, op_type=op_type or "", npu_name=npu_name or "",
        npu_dtype=_optional(npu_dtype), npu_address=_optional(npu_address),
        ground_truth=ground_truth or "*", golden_dtype=_optional(golden_dtype),
        tensor_index=_optional(tensor_index), shape=parse_shape(shape), metrics=metrics,
        std_text=std or NOT_COMPARED, fail_reason=reason or "",
        golden_address=_optional(golden_address), overflow=_optional(overflow),
        op_sequence=_integer(op_sequence, "OpSequence", where, h.path))


def iter_result_csv(path: str | os.PathLike, require: Sequence[str] = ()) -> Iterator[CompareRow]:
    """The rows of a result CSV (ours or msaccucmp's), one at a time.

    ``require`` names columns the caller cannot do without (e.g. ``CosineSimilarity``).

    Raises:
        PrecisionToolError: the file cannot be read, a required column (Index, TensorIndex,
            NPUDump or LeftOp, at least one metric, ``require``) is missing, or a cell is malformed.
    """
    path = Path(path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle)
            header = _Header(next(reader, []), path, require)
            for cells in reader:
                if any(cell.strip() for cell in cells):
                    yield _row(cells, header, f"line {reader.line_num}")
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise PrecisionToolError(f"cannot read the result CSV: {exc}", path) from None


def read_result_csv(path: str | os.PathLike, require: Sequence[str] = ()) -> list[CompareRow]:
    """All rows of a result CSV; see :func:`iter_result_csv`."""
    return list(iter_result_csv(path, require))
