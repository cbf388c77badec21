"""Reading the result CSV (FORMATS.md section 6) that :mod:`.result_csv` writes, and msaccucmp's.

:func:`read_result_csv` maps columns by header name, never by position; it reads whichever
metric columns a file has (a ``-alg`` file has only some), trailing columns as extra metrics,
and accepts every variant of FORMATS.md: ``OpSequence`` after ``Index``, ``OverFlow`` before the
metrics, a golden-side ``Address`` after the second ``DataType``, the older ``Index, LeftOp,
RightOp, TensorIndex, ...`` header, a UTF-8 BOM, and ``nan``/``NaN``/``Nan``/``*`` for
not-a-number (lower-case ``nan`` is a computed value; the others, and an empty cell, mean not
compared). A cell of any length the writer writes is read back (a fused op's GroundTruth can
pass the csv module's field limit; :mod:`~precision_tool.formats.csv_records` reads it, the
limit untouched), and a text cell the writer neutralised is restored
(:func:`~.result_csv.restore`).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from precision_tool.errors import PrecisionToolError

from ..formats.csv_records import csv_records
from ..formats.files import open_regular
from .metric_table import METRIC_NAMES
from .result import CompareRow
from .result_csv import NOT_COMPARED, NUMERIC_METRICS, REASON_COLUMN, STD_COLUMN, restore

_NAN_TEXTS = {"nan", "NaN", "Nan", "NAN", "*", ""}


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
            raise PrecisionToolError(
                "not a comparison result: no CosineSimilarity column, nor any other metric's", path
            )
        reason = self.at(REASON_COLUMN)
        stripped = [n.strip() for n in names]
        # custom metrics: the columns after CompareFailReason
        self.extra = [] if reason is None else [(n, i) for i, n in enumerate(stripped) if i > reason and n]
        names = ("LeftOp", "RightOp") if self.old else ("NPUDump", "GroundTruth")
        fields = [
            ("Index", 0),
            ("OpType", 0),
            (names[0], 0),
            ("DataType", 0),
            ("Address", 0),
            (names[1], 0),
            ("DataType", 1),
            ("TensorIndex", 0),
            ("Shape", 0),
            (STD_COLUMN, 0),
            ("CompareFailReason", 0),
            ("Address", 1),
            ("OverFlow", 0),
            ("OpSequence", 0),
        ] + [(name, 0) for name in NUMERIC_METRICS]
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
    (
        index,
        op_type,
        npu_name,
        npu_dtype,
        npu_address,
        ground_truth,
        golden_dtype,
        tensor_index,
        shape,
        std,
        reason,
        golden_address,
        overflow,
        op_sequence,
        *numbers,
    ) = [restore(cells[p].strip()) if p is not None and p < n else None for p in h.plan]
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
        index=index,
        op_type=op_type or "",
        npu_name=npu_name or "",
        npu_dtype=_optional(npu_dtype),
        npu_address=_optional(npu_address),
        ground_truth=ground_truth or "*",
        golden_dtype=_optional(golden_dtype),
        tensor_index=_optional(tensor_index),
        shape=parse_shape(shape),
        metrics=metrics,
        std_text=std or NOT_COMPARED,
        fail_reason=reason or "",
        golden_address=_optional(golden_address),
        overflow=_optional(overflow),
        op_sequence=_integer(op_sequence, "OpSequence", where, h.path),
    )


def iter_result_csv(path: str | os.PathLike, require: Sequence[str] = ()) -> Iterator[CompareRow]:
    """The rows of a result CSV (ours or msaccucmp's), one at a time.

    ``require`` names columns the caller cannot do without (e.g. ``CosineSimilarity``).

    Raises:
        PrecisionToolError: the file cannot be read, a required column (Index, TensorIndex,
            NPUDump or LeftOp, at least one metric, ``require``) is missing, or a cell is malformed.
    """
    path = Path(path)
    try:
        # a regular file, or one line: a FIFO given as -f, or left in a result directory, never waits
        with io.TextIOWrapper(open_regular(path, "result CSV"), encoding="utf-8-sig", newline="") as handle:
            records = csv_records(handle)  # a GroundTruth cell may be over csv's field limit
            header = _Header(next(records, (0, []))[1], path, require)
            for line, cells in records:
                if any(cell.strip() for cell in cells):
                    yield _row(cells, header, f"line {line}")
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise PrecisionToolError(f"cannot read the result CSV: {exc}", path) from None


def read_result_csv(path: str | os.PathLike, require: Sequence[str] = ()) -> list[CompareRow]:
    """All rows of a result CSV; see :func:`iter_result_csv`."""
    return list(iter_result_csv(path, require))
