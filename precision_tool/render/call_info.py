"""Rich renderables for ``ni`` on an msprobe call: its header (module path, the module calls it
ran in), its stack with the user's frames first, its tensors with the ``dump.json`` statistics,
files and inferred producers and consumers, and its non-tensor arguments. Every value from the
data goes in as :class:`Text` (or a ``str`` cell, made visible), never as markup."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.text import Text

from ..compare.msprobe_calls import CallTensor
from ..formats.graph_model import Op
from ..formats.msprobe_graph import (
    DIRECTION,
    MICRO_STEP,
    MODULE_PATH,
    MODULES,
    RECOMPUTE,
    STACK,
    VALUES,
    Frame,
    MsprobeSource,
    user_frames_first,
)
from ..formats.text import shape_text
from .fit import FitTable
from .limits import head, more_note
from .lines import data_text, visible
from .node_info import number

INFERRED_NOTE = (
    "producers and consumers are inferred: an input whose dtype, shape and "
    "Max/Min/Mean/Norm equal an earlier call's output is taken to be it (msprobe "
    "records no dataflow)"
)


def _kv(grid: FitTable, key: str, value: object, style: str = "") -> None:
    if value in (None, "", ()):
        return
    grid.add_row(Text(key, style="muted"), value if isinstance(value, Text) else data_text(value, style))


def module_text(op: Op, source: MsprobeSource) -> str:
    """``layers.0.attn`` (``(the root module)`` for the model itself), or why there is none."""
    path = op.attrs.get(MODULE_PATH)
    if path is not None:
        return path or "(the root module)"
    if not source.construct.parents:
        return "unknown (no construct.json, or an empty one)"
    return "none (a call outside every module)"


def header(debug: str, graph_name: str, op: Op, source: MsprobeSource) -> FitTable:
    """The call's key, type, direction, place, rank directory and module as a key/value grid."""
    grid = FitTable(grid=True, show_header=False)
    grid.add_column()
    grid.add_column()
    _kv(grid, "call", op.name, "op.name")
    _kv(grid, "type", op.type, "op.type")
    _kv(grid, "direction", op.attrs.get(DIRECTION) or "unknown (a key outside msprobe's grammar)")
    _kv(grid, "order", f"{op.id} of {len(source.dump.calls)} calls (dump.json order)")
    _kv(grid, "rank dir", f"{graph_name}  [{debug}]  {source.rank.path if source.rank else ''}".rstrip())
    header = source.dump.header
    _kv(
        grid,
        "dump",
        ", ".join(
            f"{k} {v}"
            for k, v in (("framework", source.dump.framework), ("task", header.task), ("level", header.level))
            if v
        ),
    )
    _kv(grid, "module", module_text(op, source))
    chain = op.attrs.get(MODULES) or ()
    if chain:
        _kv(grid, "inside", " < ".join(chain), "op.name")
    recompute = op.attrs.get(RECOMPUTE)
    if recompute is not None:
        _kv(grid, "recompute", "yes" if recompute else "no")
    _kv(grid, "micro step", op.attrs.get(MICRO_STEP))
    return grid


def _frame_line(frame: Frame, muted: bool) -> Text:
    if not frame.path:
        return data_text(f"  {frame.text}", "muted" if muted else "")
    line = Text.assemble(
        "  ", (visible(frame.path), "path"), f":{frame.line} in ", (visible(frame.function), "op.name")
    )
    if frame.source and not muted:
        line.append(f"\n      {visible(frame.source)}")
    return line if not muted else Text(line.plain, style="muted")


def stack_section(op: Op, limit: int | None = None) -> Text | Group:
    """The call's stack, the user's frames first (with their source lines), then the
    libraries' (torch, MindSpore, msprobe: one line each, the first ``limit``)."""
    frames = op.attrs.get(STACK)
    if not frames:
        return Text(
            "stack: none in stack.json (msprobe writes stacks of forward calls only, and none without extra info)",
            style="muted",
        )
    user, library = user_frames_first(frames)
    lines: list = [Text(f"stack ({len(user)} of your frames first, then {len(library)} in libraries)", style="title")]
    shown, hidden = head(user, limit)
    lines += [_frame_line(frame, False) for frame in shown]
    if hidden:
        lines.append(Text(f"  {more_note(hidden, 'frames')}", style="muted"))
    shown, hidden = head(library, limit)
    lines += [_frame_line(frame, True) for frame in shown]
    if hidden:
        lines.append(Text(f"  {more_note(hidden, 'library frames')}", style="muted"))
    return Group(*lines)


def _links(op: Op, item: CallTensor) -> str:
    if item.kind == "input":
        refs = [f"{ref.src}:{ref.index}" for ref in op.data_inputs if ref.slot == item.slot]
        return ", ".join(refs) or "-"
    users = op.consumers[item.slot] if item.slot < len(op.consumers) else []
    shown, hidden = head(users, 5)
    text = ", ".join(f"{name}:{slot}" for name, slot in shown) or "-"
    return text + (f", +{hidden}" if hidden else "")


def _short_name(op: Op | None, name: str) -> str:
    """``input.0`` of ``KEY.input.0``: the call's key is the table's."""
    return name[len(op.name) + 1 :] if op is not None and name.startswith(op.name + ".") else name


def _stat(value: float | None) -> str:
    return "" if value is None else number(value)


def _file(item: CallTensor) -> Text:
    if item.path is None:
        return Text("")  # statistics only: the table says so once
    where = item.path.name
    if not item.path.is_file():
        return Text(f"{visible(where)} (missing)", style="warn")
    return data_text(where, "path")


def tensors_table(
    title: str, op: Op | None, items: Sequence[CallTensor], limit: int | None = None, links: bool = True
) -> FitTable | Text:
    """The tensors ``items`` of a call: kind and slot, msprobe name (after the call's key),
    dtype, shape, the
    ``dump.json`` statistics (and md5), the file, and (``links``) the inferred producer of an
    input or consumers of an output; the first ``limit``, then a note."""
    if not items:
        return Text(f"{title}: no tensors", style="muted")
    shown, hidden = head(items, limit)
    notes = [more_note(hidden, "tensors")]
    if all(item.path is None for item in items):
        notes.append("no tensor files: the dump holds statistics only")
    table = FitTable(title=title, caption="; ".join(n for n in notes if n) or None)
    for column in ("#", "name", "dtype", "shape"):
        table.add_column(column)
    for column in ("max", "min", "mean", "norm"):
        table.add_column(column, justify="right")
    table.add_column("md5")
    table.add_column("file")
    if links and op is not None:
        table.add_column("fed by / feeds")
    for item in shown:
        t = item.tensor
        cells = [
            item.index_name,
            data_text(_short_name(op, item.name), "op.name"),
            t.dtype or "?",
            shape_text(t.shape) if t.shape is not None else "?",
            _stat(t.max),
            _stat(t.min),
            _stat(t.mean),
            _stat(t.norm),
            t.md5 or "",
            _file(item),
        ]
        if links and op is not None:
            cells.append(data_text(_links(op, item), "op.name"))
        table.add_row(*cells)
    return table


def values_table(op: Op, limit: int | None = None) -> FitTable | None:
    """The call's non-tensor arguments (msprobe name, type and value), or None without any."""
    values = op.attrs.get(VALUES) or {}
    if not values:
        return None
    names, hidden = head(list(values), limit)
    table = FitTable(title="other arguments", caption=more_note(hidden, "arguments") or None)
    table.add_column("name")
    table.add_column("value", keep=True)
    for name in names:
        table.add_row(data_text(_short_name(op, name), "op.name"), data_text(values[name]))
    return table
