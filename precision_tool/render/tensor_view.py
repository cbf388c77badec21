"""Rich tables for single tensors (``pt``) and element-wise comparisons (``cp``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from rich.text import Text

from .fit import FitTable

VALUES_PER_ROW = 8


def format_value(value) -> str:
    """A number as a table shows it: integers whole, floats to 8 significant digits."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (complex, np.complexfloating)):
        return f"{complex(value):.8g}"
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return str(number)
    return f"{number:.8g}"


def format_index(flat_index: int, shape: Sequence[int]) -> str:
    """The multi-index of a flat (C-order) index, ``(0, 1, 2)``; ``[i]`` for 0-/1-D shapes."""
    if len(shape) <= 1:
        return f"[{flat_index}]"
    return "(" + ", ".join(str(int(i)) for i in np.unravel_index(flat_index, tuple(shape))) + ")"


def key_value_table(title: str, rows: Iterable[tuple[str, object]]) -> FitTable:
    """A two-column table of labelled values; a value may be a rich Text (``str`` values are
    data: made visible)."""
    table = FitTable(title=title or None, show_header=False)
    table.add_column("", style="muted")
    table.add_column("")
    for label, value in rows:
        table.add_row(label, value if isinstance(value, Text) else str(value))
    return table


def values_table(values: np.ndarray, shape: Sequence[int], total: int) -> FitTable:
    """The first values of a tensor, ``VALUES_PER_ROW`` a row, each row led by its first index."""
    table = FitTable(title=f"first {len(values)} of {total} values", title_style="")
    table.add_column("from index", style="muted")
    width = min(VALUES_PER_ROW, max(len(values), 1))
    for column in range(width):
        table.add_column(f"+{column}", justify="right")
    for start in range(0, len(values), width):
        row = [format_value(v) for v in values[start : start + width]]
        table.add_row(format_index(start, shape), *row, *[""] * (width - len(row)))
    return table


def pairs_table(title: str, pairs: Sequence, shape: Sequence[int], mark=None) -> FitTable:
    """Rows of (index, left, right, |diff|) for :class:`ElementPair`s; ``mark(pair)`` styles a row."""
    table = FitTable(title=title, title_style="")
    table.add_column("index", style="muted")
    table.add_column("left", justify="right")
    table.add_column("right", justify="right")
    table.add_column("abs diff", justify="right")
    for pair in pairs:
        style = mark(pair) if mark else None
        table.add_row(
            format_index(pair.index, shape),
            format_value(pair.left),
            format_value(pair.right),
            format_value(pair.abs_diff),
            style=style,
        )
    return table
