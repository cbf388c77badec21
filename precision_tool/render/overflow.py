"""The overflow check (:mod:`precision_tool.checks.overflow`) as one rich renderable.

A panel with one block per Opdebug file (status in words, task id, the op that overflowed and a
table of its inputs and outputs) and the list of NPU tensors holding Inf/NaN where golden does
not. When neither part has data, the one line ``overflow check: data absent: looked for X in Y``.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from ..checks.overflow import NonFiniteTensor, OverflowCheckResult, OverflowFinding, TensorReport
from ..formats.text import shape_text
from .checks import absent_line, check_panel, nothing_found
from .fit import FitTable
from .lines import data_text, visible
from .node_info import number

OVERFLOW_TITLE = "overflow check"
MAX_NONFINITE_ROWS = 20
NONFINITE_LABEL = "Inf/NaN against golden (debug_0)"


def _where(finding: OverflowFinding) -> str:
    step = finding.step
    parts = [
        f"device {step.device}" if step.device is not None else "",
        str(step.model_name or ""),
        f"step {step.step}" if step.step is not None else "",
    ]
    return ", ".join(p for p in parts if p)


def _inf_nan(stats) -> Text:
    if stats is None:
        return Text("?", style="muted")
    if stats.finite:
        return Text("no", style="cos.good")
    return Text(f"yes ({stats.inf} inf, {stats.nan} nan)", style="cos.bad")


def _tensor_table(tensors: tuple[TensorReport, ...]) -> FitTable:
    table = FitTable()
    for column in ("tensor", "shape", "dtype", "max", "min", "mean", "Inf/NaN", "note"):
        table.add_column(
            column,
            justify="right" if column in ("max", "min", "mean") else "left",
            style="muted" if column == "note" else None,
        )
    for t in tensors:
        s = t.stats
        values = [number(v) for v in (s.max, s.min, s.mean)] if s else ["", "", ""]
        table.add_row(t.name, shape_text(t.shape) if s else "", t.dtype, *values, _inf_nan(s), t.note)
    return table


def _status_lines(finding: OverflowFinding) -> list[RenderableType]:
    payload = finding.payload
    if not payload.overflowed:
        return [Text("  no overflow reported (status words 0)", style="cos.good")]
    lines: list[RenderableType] = []
    for unit in payload.units:
        if unit.overflowed:
            lines.append(Text.assemble("  ", (unit.words(), "cos.bad")))
    culprit = payload.culprit
    extra = (
        f", kernel_code {culprit.kernel_code:#x}, block_idx {culprit.block_idx}"
        if culprit.kernel_code is not None
        else ""
    )
    lines.append(
        Text(
            f"  task id {payload.task_id}, stream id {payload.stream_id} (from the {culprit.unit} info words){extra}",
            style="muted",
        )
    )
    return lines


def _op_lines(finding: OverflowFinding) -> list[RenderableType]:
    if finding.op is None:
        return [Text(f"  op: not found: {visible(finding.op_problem)}", style="warn")] if finding.op_problem else []
    op = finding.op
    line = Text.assemble(
        "  op: ",
        (visible(op.op_type), "op.type"),
        " ",
        (visible(op.op_name), "op.name"),
        ("  (", "muted"),
        (visible(op.file_name), "path"),
        (")", "muted"),
    )
    if op.has_inf_nan:
        line.append("  holds Inf/NaN", style="cos.bad")
    return [line, _tensor_table(op.tensors)]


def _finding_lines(number_: int, finding: OverflowFinding) -> list[RenderableType]:
    head = Text.assemble(
        (f"[{number_}] ", "title"), (visible(finding.file_name), "path"), (f"  ({visible(_where(finding))})", "muted")
    )
    if finding.payload is None:
        return [head, Text(f"  cannot decode: {visible(finding.problem)}", style="warn")]
    return [head, *_status_lines(finding), *_op_lines(finding)]


def _debug_lines(result: OverflowCheckResult) -> list[RenderableType]:
    if not result.present:
        return [absent_line(OVERFLOW_TITLE, result.absent, [result.looked_in])]
    if not result.found:
        return [nothing_found(f"no Opdebug file in the newest run of {result.looked_in}")]
    shown, total = len(result.shown), result.debug_files
    limited = f", the first {shown} (limit {result.limit}; -l 0 shows all)" if shown < total else ""
    lines: list[RenderableType] = [
        Text(f"run {result.run}: {total} Opdebug file(s){limited}, oldest first", style="muted")
    ]
    for index, finding in enumerate(result.shown, start=1):
        lines += _finding_lines(index, finding)
    return lines


def _nonfinite_table(items: tuple[NonFiniteTensor, ...]) -> FitTable:
    table = FitTable(title="NPU tensors holding Inf/NaN where golden does not")
    for column in ("#", "op type", "tensor", "NPU Inf/NaN", "golden"):
        table.add_column(column)
    for item in items[:MAX_NONFINITE_ROWS]:
        table.add_row(
            str(item.position),
            data_text(item.op_type, "op.type"),
            data_text(item.tensor_index, "op.name"),
            _inf_nan(item.npu),
            data_text(item.golden_path.name, "path"),
        )
    return table


def _nonfinite_lines(result: OverflowCheckResult) -> list[RenderableType]:
    if result.nonfinite_absent:
        return [Text(f"{NONFINITE_LABEL}: not checked: {result.nonfinite_absent}", style="muted")]
    if not result.nonfinite:
        return [
            Text.assemble(
                f"{NONFINITE_LABEL}: ", nothing_found("no NPU tensor holds Inf/NaN where its golden does not")
            )
        ]
    lines: list[RenderableType] = [_nonfinite_table(result.nonfinite)]
    hidden = len(result.nonfinite) - MAX_NONFINITE_ROWS
    if hidden > 0:
        lines.append(Text(f"... and {hidden} more", style="muted"))
    return lines


def render_overflow(result: OverflowCheckResult) -> RenderableType:
    """The panel of the overflow check; the one ``data absent`` line when there are no overflow
    dumps and no NPU tensor holds Inf/NaN where golden does not."""
    if not result.present and not result.nonfinite:
        return absent_line(OVERFLOW_TITLE, result.absent, [result.looked_in])
    return check_panel(OVERFLOW_TITLE, [*_debug_lines(result), *_nonfinite_lines(result)])
