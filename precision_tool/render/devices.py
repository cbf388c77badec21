"""The cross-device summary (:mod:`precision_tool.compare.devices`) as a rich table."""

from __future__ import annotations

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..compare.devices import DeviceVerdict
from .lines import one_line
from .summary import format_cosine

DEVICES_TITLE = "devices"


def _device(verdict: DeviceVerdict) -> str:
    return "?" if verdict.device is None else str(verdict.device)


def device_lines(verdicts: list[DeviceVerdict]) -> list[Text]:
    """Which device diverges first, and which differ from the majority (empty lines omitted)."""
    lines = []
    first = [v for v in verdicts if v.diverges_first]
    if first:
        op = first[0].first_introducer
        lines.append(
            Text.assemble(
                ("diverges first: ", "title"),
                (", ".join(f"device {_device(v)}" for v in first), "cos.bad"),
                f" at {one_line(op.name)} (Index {op.index})",
            )
        )
    odd = [v for v in verdicts if v.differs_from_majority]
    if odd:
        lines.append(
            Text.assemble(
                ("differ from the majority: ", "title"),
                (", ".join(f"device {_device(v)}" for v in odd), "warn"),
                " (data-parallel ranks should agree)",
            )
        )
    elif len(verdicts) > 1:
        lines.append(Text(f"all {len(verdicts)} devices agree on the first introducer", style="cos.good"))
    return lines


def device_panel(verdicts: list[DeviceVerdict]) -> Panel:
    """One row per device: its first introducer, that op's cosine drop, its lowest cosine."""
    table = Table(box=None, pad_edge=False)
    for column in ("device", "results", "first introducer", "output cosine", "lowest output cosine", ""):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        op = v.first_introducer
        drop = op.cosine_drop if op is not None else None
        marks = ", ".join(m for m, on in (("first", v.diverges_first), ("differs", v.differs_from_majority)) if on)
        table.add_row(
            _device(v),
            str(v.results),
            Text(one_line(op.name), "op.name") if op else Text("none", "muted"),
            format_cosine(drop[1]) if drop else "",
            format_cosine(v.min_output_cosine) if v.min_output_cosine is not None else "",
            Text(marks, "warn"),
        )
    return Panel(
        Group(table, *device_lines(verdicts)),
        title=Text(DEVICES_TITLE, style="title"),
        title_align="left",
        expand=False,
    )
