"""Rich renderables for ``ni``: an op's header, its inputs and outputs, dump and golden
statistics, and its attributes. Every value from the data goes in as :class:`Text`, so names
holding ``[`` are never read as markup."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from ..compare.tensor_summary import TensorStats
from ..formats.graph_model import Op, TensorDesc
from ..formats.text import shape_text
from .fit import FitTable
from .limits import head, more_note
from .lines import data_text
from .op_graph import short_dtype

MAX_VALUE_CHARS = 100  # a list shows the items that fit in this, each whole
MAX_STRING_CHARS = 1000  # longer strings are data blobs, not names: cut
MAX_LIST_ITEMS = 12


@dataclass(frozen=True)
class TensorRow:
    """One dumped or golden tensor as ``ni`` shows it; ``stats`` is None when it is unreadable."""

    label: str  # "input:0", "output:0", or the golden tensor "name:0"
    source: str  # file name (golden) or the graph producer / origin (dump)
    dtype: str
    layout: str  # "NC1HWC0->NHWC" for dumps, "" for golden
    stats: TensorStats | None
    note: str = ""


def number(value: float) -> str:
    """A statistic as shown: 6 significant digits, ``nan`` / ``inf`` spelled out."""
    if math.isnan(value):
        return "nan"
    return f"{value:.6g}"


def _kv(grid: FitTable, key: str, value: Any, style: str = "") -> None:
    if value in (None, "", []):
        return
    text = value if isinstance(value, Text) else data_text(value, style)
    grid.add_row(Text(key, style="muted"), text)


def header(debug: str, graph_name: str, model_name: str, op: Op, graph_id: int | None = None) -> FitTable:
    """Name, type, id, graph (and its GE graph id), kernel and fusion facts of ``op`` as a
    key/value grid."""
    grid = FitTable(grid=True, show_header=False)
    grid.add_column()
    grid.add_column()
    _kv(grid, "op", op.name, "op.name")
    _kv(grid, "type", op.type, "op.type")
    _kv(grid, "id", op.id)
    graph = graph_name if graph_name == model_name or not model_name else f"{graph_name} (model {model_name})"
    _kv(grid, "graph", f"{graph}  [{debug}]")
    _kv(grid, "graph id", graph_id)
    _kv(grid, "kernel name", op.kernel_name)
    _kv(grid, "kernel lib", op.kernel_lib)
    _kv(grid, "stream id", op.stream_id)
    _kv(grid, "session graph", op.session_graph_id)
    _kv(grid, "PassName", ", ".join(op.pass_name))
    if op.original_op_names is not None:
        names = ", ".join(op.original_op_names)
        _kv(grid, "OriginalOp", names or "(none: inserted by the NPU compiler)")
    _kv(grid, "original types", ", ".join(op.original_op_types))
    if op.is_multiop:
        _kv(grid, "multi-op", "yes")
    return grid


def _desc_cells(desc: TensorDesc | None) -> list[Text]:
    if desc is None:
        return [Text("?", style="muted")] * 5
    origin_shape = shape_text(desc.origin_shape) if desc.origin_shape is not None else ""
    return [
        data_text(short_dtype(desc.dtype)),
        data_text(desc.layout or "?"),
        Text(shape_text(desc.shape)),
        data_text(desc.origin_format or ""),
        Text(origin_shape),
    ]


def _io_table(title: str, first: str) -> FitTable:
    table = FitTable(title=title)
    table.add_column("#", justify="right")
    table.add_column(first)
    for column in ("dtype", "format", "shape", "origin format", "origin shape"):
        table.add_column(column)
    return table


def inputs_table(op: Op, limit: int | None = None) -> FitTable | Text:
    """Every data input (the first ``limit``, then a note): producer ``src:idx``, dtype,
    format, shape, origin format and shape."""
    refs = op.data_inputs
    if not refs:
        return Text("inputs: none", style="muted")
    table = _io_table("inputs", "producer")
    shown, hidden = head(refs, limit)
    for port, ref in enumerate(shown):
        table.add_row(str(port), data_text(f"{ref.src}:{ref.index}", "op.name"), *_desc_cells(op.input_desc(port)))
    table.caption = more_note(hidden, "inputs") or None
    return table


def control_line(op: Op, limit: int | None = None) -> Text | None:
    """The control-edge inputs of ``op`` (the first ``limit``) on one line, or None when it has
    none."""
    if not op.control_inputs:
        return None
    shown, hidden = head(op.control_inputs, limit)
    more = f", {more_note(hidden)}" if hidden else ""
    return data_text("control inputs: " + ", ".join(ref.src for ref in shown) + more, "muted")


def outputs_table(op: Op, limit: int | None = None) -> FitTable | Text:
    """Every output (the first ``limit``, then a note): dtype, format, shapes, the TF tensor it
    stands for, its consumers."""
    count = max(len(op.output_descs), len(op.consumers))
    if not count:
        return Text("outputs: none", style="muted")
    table = _io_table("outputs", "origin name:index")
    table.add_column("consumers")
    indexes, hidden = head(range(count), limit)
    table.caption = more_note(hidden, "outputs") or None
    for index in indexes:
        desc = op.output_desc(index)
        origin = desc.origin(index) if desc is not None else None
        users, more = head(op.consumers[index] if index < len(op.consumers) else [], limit)
        consumers = ", ".join(f"{name}:{slot}" for name, slot in users) or "-"
        consumers += f", {more_note(more)}" if more else ""
        table.add_row(str(index), data_text(str(origin or "")), *_desc_cells(desc), data_text(consumers, "op.name"))
    return table


def tensor_table(title: str, rows: list[TensorRow], source_header: str, hidden: int = 0) -> FitTable:
    """Statistics of dumped or golden tensors: shape, dtype, max, min, mean, and a note;
    columns with nothing in them (no layout, no note) are left out; ``hidden`` tensors left out
    are counted below the table."""
    table = FitTable(title=title, caption=more_note(hidden, "tensors") or None)
    for column in ("tensor", source_header, "dtype", "format", "shape"):
        table.add_column(column)
    for column in ("max", "min", "mean"):
        table.add_column(column, justify="right")
    table.add_column("note", style="warn")
    for row in rows:
        stats = row.stats
        cells = [number(stats.max), number(stats.min), number(stats.mean)] if stats else ["", "", ""]
        shape = shape_text(stats.shape) if stats else ""
        table.add_row(row.label, row.source, row.dtype, row.layout, shape, *cells, row.note)
    return table


def stats_note(stats: TensorStats) -> str:
    """``"3 NaN, 1 Inf"`` (max/min/mean are over the finite values), or empty."""
    parts = [f"{count} {what}" for count, what in ((stats.nan, "NaN"), (stats.inf, "Inf")) if count]
    if stats.shape and not math.prod(stats.shape):
        parts.append("empty tensor")
    return ", ".join(parts) + (" (stats over finite values)" if parts and stats.nan + stats.inf else "")


def _short_list(value: list | tuple) -> str:
    """The first items that fit in :data:`MAX_VALUE_CHARS` (at most :data:`MAX_LIST_ITEMS`,
    at least one), each whole (a name in a list is never cut), then how many there are."""
    items: list[str] = []
    for item in value[:MAX_LIST_ITEMS]:
        text = short_value(item)
        if items and sum(len(i) + 2 for i in items) + len(text) > MAX_VALUE_CHARS:
            break
        items.append(text)
    more = f", ... ({len(value)} items)" if len(items) < len(value) else ""
    return "[" + ", ".join(items) + more + "]"


def short_value(value: Any) -> str:
    """An attribute value on one line: long lists show their first items whole and their
    length, bytes their size; a string longer than :data:`MAX_STRING_CHARS` (a blob, not a
    name) is cut and says how long it is."""
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, (list, tuple)):
        return _short_list(value)
    if isinstance(value, TensorDesc):
        text = f"TensorDesc({short_dtype(value.dtype)} {value.layout} {shape_text(value.shape)})"
    elif isinstance(value, str):
        text = repr(value) if not value or value != value.strip() else value
    else:
        text = str(value)
    text = " ".join(text.split())  # newlines and tabs from the data
    if len(text) <= MAX_STRING_CHARS:
        return text
    return f"{text[:MAX_STRING_CHARS]}... ({len(text)} characters)"


def attribute_rows(op: Op, limit: int | None = None) -> tuple[list[tuple[str, str]], int]:
    """``(key, shortened value)`` for every op attribute (sorted), then every input and output
    desc attribute (``input[0].origin_format``...), each group sorted; of the first ``limit``
    input and output descs only. Also how many descs were left out."""
    rows = [(key, short_value(op.attrs[key])) for key in sorted(op.attrs)]
    left_out = 0
    for kind, all_descs in (("input", op.input_descs), ("output", op.output_descs)):
        descs, hidden = head(all_descs, limit)
        left_out += hidden
        for index, desc in enumerate(descs):
            rows += [(f"{kind}[{index}].{key}", short_value(desc.attrs[key])) for key in sorted(desc.attrs)]
    return rows, left_out


def attributes_table(op: Op, limit: int | None = None) -> FitTable | Text:
    """All attributes of ``op`` and of its tensor descs (of the first ``limit`` inputs and
    outputs), sorted, values shortened."""
    rows, hidden = attribute_rows(op, limit)
    if not rows:
        return Text("attributes: none", style="muted")
    table = FitTable(title="attributes", caption=more_note(hidden, "tensor descs") or None)
    table.add_column("attribute")
    table.add_column("value", keep=True)
    for key, value in rows:
        table.add_row(data_text(key, "muted"), value)
    return table
