"""The result CSV (FORMATS.md section 6): msaccucmp's columns and formatting, written and read.

Writing: :class:`ResultWriter` streams rows into a temporary file beside the target and renames
it to the final name only when closed without error (through the output root, never through a
link), so an interrupted run or a full disk never leaves a half-written CSV under any name. Numbers print ``%.6f`` (computed ``nan``/``inf`` in lower
case); a metric not compared prints ``NaN``; the csv module quotes exactly as msaccucmp's file
does (``"[2,8,8,3]"`` but ``[8]``; ``""`` inside reasons) and ends lines with CRLF. A text
cell that a spreadsheet would run as a formula (an op named ``=HYPERLINK(...)``) gets a leading
apostrophe (:func:`neutralise`), which the reader takes off again (:func:`restore`).

The metric columns are those of the metrics written, as msaccucmp does: all ten by default
(exactly msaccucmp's header); with ``-alg`` only the selected ones, in the order given. Metrics
that are not msaccucmp's (custom ones) become trailing columns after ``CompareFailReason``, so
msaccucmp's part of the file keeps its format.

Reading is :mod:`.result_read`'s.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from precision_tool.errors import PrecisionToolError

from ..formats.held_dir import PendingFile
from ..formats.output_root import STAMP, OutputRoot
from ..formats.text import shape_text
from .manifest import result_csvs
from .metric_data import Metric
from .metric_table import METRIC_NAMES
from .metrics import METRICS
from .result import CompareRow

NOT_COMPARED = "NaN"
STD_COLUMN = "StandardDeviation"
REASON_COLUMN = "CompareFailReason"
NUMERIC_METRICS = tuple(m.name for m in METRICS if not m.text)


def _split(metrics: Sequence[Metric]) -> tuple[list[Metric], list[Metric]]:
    """(msaccucmp's metrics, in the order given; the others), each name once."""
    seen: dict[str, Metric] = {}
    for metric in metrics:
        seen.setdefault(metric.name, metric)
    ours = [m for m in seen.values() if m.name in METRIC_NAMES]
    return ours, [m for m in seen.values() if m.name not in METRIC_NAMES]


def columns(
    *,
    op_sequence: bool = False,
    overflow: bool = False,
    golden_address: bool = False,
    metrics: Sequence[Metric] = METRICS,
    named_sides: bool = False,
) -> list[str]:
    """The header in msaccucmp's order, with the optional columns and the metrics asked for.

    msaccucmp names both sides' columns ``DataType`` (and ``Address``); ``named_sides`` names
    them ``NPUDataType``/``NPUAddress`` and ``GroundTruthDataType``/``GroundTruthAddress``
    instead, for tables whose column names must be unique (``to_pandas()``).
    """
    npu, golden = ("NPU", "GroundTruth") if named_sides else ("", "")
    head = ["Index"] + (["OpSequence"] if op_sequence else [])
    head += ["OpType", "NPUDump", f"{npu}DataType", f"{npu}Address", "GroundTruth", f"{golden}DataType"]
    head += ([f"{golden}Address"] if golden_address else []) + ["TensorIndex", "Shape"]
    known, extra = _split(metrics)
    head += (["OverFlow"] if overflow else []) + [m.name for m in known]
    return head + [REASON_COLUMN] + [m.name for m in extra]


VALUE_FORMAT = "%.6f"  # msaccucmp's six decimals


def format_value(value: float | None) -> str:
    """``%.6f`` of a computed value (``nan``, ``inf``, ``-inf`` as such); ``NaN`` for None."""
    return NOT_COMPARED if value is None else VALUE_FORMAT % value


def format_shape(shape: tuple[int, ...] | None) -> str:
    """``[d0,d1,...]``, or ``NaN`` when unknown."""
    return shape_text(shape, unknown=NOT_COMPARED)


# A cell a spreadsheet would run as a formula: = + - @ tab or CR first, after any apostrophes.
_FORMULA = re.compile(r"^'*[=+\-@\t\r]")
_FORMULA_FIRST = frozenset("'=+-@\t\r")  # what _FORMULA's match can start with


def neutralise(text: str) -> str:
    """``text`` as a cell no spreadsheet runs as a formula: text starting with ``= + - @``, a tab
    or a CR (after any apostrophes) gets one leading apostrophe more, as OWASP's "CSV Injection"
    advice has it; :func:`restore` undoes it exactly (the apostrophes before the character keep
    the mapping one-to-one, so a name that really starts with ``'=`` survives too)."""
    if not text or text[0] not in _FORMULA_FIRST:  # most cells: no pattern to run
        return text
    return "'" + text if _FORMULA.match(text) else text


def restore(cell: str) -> str:
    """The text :func:`neutralise` made ``cell`` from."""
    return cell[1:] if cell[:1] == "'" and _FORMULA.match(cell) else cell


def line_text(cells: list) -> str | None:
    """``cells`` (text) as the csv writer writes them with its default dialect (``,`` between
    cells, a cell holding ``,``, ``"``, CR or LF quoted, its quotes doubled, CRLF at the end);
    None for a line of fewer than two cells or with a cell that is no text: the writer's turn.

    The writer looks for its line terminator's characters in every character of every cell
    (``PyUnicode_FindChar`` once a character in CPython 3.11): 49,000 instructions a result row,
    8% of a 1.5 GB run's main process. Here the joined line is looked at once (``in`` and
    ``count`` at C speed), and a cell alone only when the line holds a comma too many or a
    quote, CR or LF: 19,500."""
    if len(cells) < 2:  # the writer quotes a lone empty cell
        return None
    try:
        joined = ",".join(cells)
    except TypeError:  # no text: the writer converts it
        return None
    if '"' in joined or "\n" in joined or "\r" in joined:
        return ",".join([_quoted(cell) for cell in cells]) + "\r\n"
    if joined.count(",") == len(cells) - 1:  # no cell holds a comma: the line as joined
        return joined + "\r\n"
    return ",".join(['"' + cell + '"' if "," in cell else cell for cell in cells]) + "\r\n"  # a shape's commas


def _quoted(cell: str) -> str:
    """A cell as the csv writer writes it: quoted when it holds ``,``, ``"``, CR or LF, with its
    quotes doubled."""
    if '"' in cell:
        return '"' + cell.replace('"', '""') + '"'
    if "," in cell or "\n" in cell or "\r" in cell:
        return '"' + cell + '"'
    return cell


def _text(value: object) -> str:
    return NOT_COMPARED if value is None else neutralise(str(value))


def row_layout(
    *,
    op_sequence: bool = False,
    overflow: bool = False,
    golden_address: bool = False,
    metrics: Sequence[Metric] = METRICS,
    spreadsheet_safe: bool = True,
) -> RowLayout:
    """How a file's rows are written, worked out once: :meth:`RowLayout.cells` gives a row's
    cells for the header :func:`columns` gives with the same arguments. Text from the data
    (names, types, reasons) goes through :func:`neutralise` unless ``spreadsheet_safe`` is
    False (a DataFrame wants the names themselves)."""
    known, extra = _split(metrics)
    return RowLayout(op_sequence, overflow, golden_address, tuple(known), tuple(extra), spreadsheet_safe)


_NUMBER, _STD, _TEXT = 0, 1, 2  # how a metric's cell is made (_kinds)


def _kinds(metrics: Sequence[Metric]) -> tuple[tuple[str, int], ...]:
    return tuple((m.name, _STD if m.name == STD_COLUMN else _TEXT if m.text else _NUMBER) for m in metrics)


@dataclass(frozen=True)
class RowLayout:
    """What :func:`row_layout` worked out: the optional columns, the metrics split as
    :func:`columns` orders them, whether text is neutralised, and how each metric's cell is
    made (``known_kinds``, ``extra_kinds``: its name and kind, derived from ``known`` and
    ``extra`` once, so that a row's cells are made in one pass)."""

    op_sequence: bool
    overflow: bool
    golden_address: bool
    known: tuple[Metric, ...]
    extra: tuple[Metric, ...]
    spreadsheet_safe: bool = True
    known_kinds: tuple[tuple[str, int], ...] = field(init=False, repr=False, compare=False)
    extra_kinds: tuple[tuple[str, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "known_kinds", _kinds(self.known))
        object.__setattr__(self, "extra_kinds", _kinds(self.extra))

    def cells(self, row: CompareRow) -> list[str]:
        text = _text if self.spreadsheet_safe else (lambda v: NOT_COMPARED if v is None else str(v))
        cells = [str(row.index)] + ([text(row.op_sequence)] if self.op_sequence else [])
        cells += [
            text(row.op_type),
            text(row.npu_name),
            text(row.npu_dtype),
            text(row.npu_address),
            text(row.ground_truth),
            text(row.golden_dtype),
        ]
        cells += [text(row.golden_address)] if self.golden_address else []
        cells += [text(row.tensor_index), format_shape(row.shape)]
        cells += [text(row.overflow)] if self.overflow else []
        cells += _metric_cells(row, self.known_kinds) + [text(row.fail_reason)]
        return cells + _metric_cells(row, self.extra_kinds) if self.extra_kinds else cells


def _metric_cells(row: CompareRow, kinds: tuple[tuple[str, int], ...]) -> list[str]:
    """The cells of the metrics ``kinds`` names: a number as :func:`format_value` writes it, the
    StandardDeviation text, a text metric as it is, ``NaN`` for one not computed (one pass, no
    call a cell: ten cells a row, a row a tensor)."""
    values, std = row.metrics, row.std_text
    return [
        std
        if kind == _STD
        else NOT_COMPARED
        if (value := values.get(name)) is None
        else VALUE_FORMAT % value
        if kind == _NUMBER
        else str(value)
        for name, kind in kinds
    ]


RESULTS_DIR = "vector_compare"


def result_path(output_root: str | os.PathLike, when: datetime, tag: str | None = None) -> Path:
    """``{output_root}/vector_compare/{YYYYmmddHHMMSS}/result_{YYYYmmddHHMMSS}[_{tag}].csv``
    (the output root is ``temp/`` of the data root by default)."""
    stamp = when.strftime(STAMP)
    name = f"result_{stamp}" + (f"_{tag}" if tag else "") + ".csv"
    return Path(output_root) / RESULTS_DIR / stamp / name


def latest_result_dir(output_root: str | os.PathLike) -> Path | None:
    """The newest ``vector_compare/{stamp}`` directory of the output root holding a CSV, or None."""
    base = Path(output_root) / RESULTS_DIR
    dirs = [d for d in base.iterdir() if d.is_dir() and any(d.glob("*.csv"))] if base.is_dir() else []
    return max(dirs, key=lambda d: d.name, default=None)


def newest_result_csvs(output_root: str | os.PathLike) -> list[Path]:
    """The CSVs of the newest result directory of the output root.

    Raises:
        PrecisionToolError: there is none (the message suggests running ``vc``).
    """
    newest = latest_result_dir(output_root)
    if newest is None:
        where = Path(output_root) / RESULTS_DIR
        raise PrecisionToolError(f"no comparison result under {where}; run 'vc' (or 'ac -c') first")
    return result_csvs(newest)


class ResultWriter:
    """Streams CompareRows to a CSV that appears under its final name only on success.

    Use as a context manager: an exception inside the block removes the temporary file and
    leaves nothing under ``path``. ``root`` is the output root ``path`` lies in (default: its
    directory), written as :class:`~precision_tool.formats.output_root.OutputRoot` writes; a full
    disk, met at any row or only when the file is closed, is a PrecisionToolError and leaves no
    file under any name. Flags add the optional msaccucmp columns; ``metrics`` are the metrics
    computed (their columns only, see the module docstring). Defaults to the ten.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        root: OutputRoot | None = None,
        op_sequence: bool = False,
        overflow: bool = False,
        golden_address: bool = False,
        metrics: Sequence[Metric] = METRICS,
    ) -> None:
        self.path = Path(path)
        self.root = OutputRoot(self.path.parent) if root is None else root
        self.flags = {
            "op_sequence": op_sequence,
            "overflow": overflow,
            "golden_address": golden_address,
            "metrics": tuple(metrics),
        }
        self.rows_written = 0
        self._pending: PendingFile | None = None
        self._layout = row_layout(**self.flags)  # once, not a row

    def open(self) -> ResultWriter:
        """Create the directory and the temporary file, and write the header."""
        # newline="": the csv module ends rows with CRLF itself, as msaccucmp's files do
        self._pending = self.root.begin(self.path, newline="")
        self._writer = csv.writer(self._pending.handle)
        self._writerow(columns(**self.flags))
        return self

    def _writerow(self, cells: list[str]) -> None:
        try:
            text = line_text(cells)
            if text is None:  # a lone cell: the writer quotes it when empty
                self._writer.writerow(cells)
            else:
                self._pending.handle.write(text)
        except OSError as exc:  # a full disk: drop the file, say so in one line
            pending, self._pending = self._pending, None
            raise pending.failed(exc) from None

    def write(self, row: CompareRow) -> None:
        """Append one row."""
        if self._pending is None:
            raise ValueError("ResultWriter.write before open()")
        self._writerow(self._layout.cells(row))
        self.rows_written += 1

    def write_rows(self, rows: Iterable[CompareRow]) -> None:
        """Append rows as they come."""
        for row in rows:
            self.write(row)

    def close(self) -> Path:
        """Finish the file and move it to its final name; returns that path."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.commit()
        return self.path

    def abort(self) -> None:
        """Drop the temporary file; nothing appears under the final name."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.discard()

    def __enter__(self) -> ResultWriter:
        return self.open()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_result_csv(
    path: str | os.PathLike, rows: Iterable[CompareRow], *, root: OutputRoot | None = None, **flags
) -> Path:
    """Write ``rows`` to ``path`` (atomically, see :class:`ResultWriter`); returns the path."""
    with ResultWriter(path, root=root, **flags) as writer:
        writer.write_rows(rows)
    return writer.path
