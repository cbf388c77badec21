"""The ``vcs`` summary of one comparison result as rich renderables.

For each flagged op, in execution order: its type and name, whether it introduces the error or
inherits it, the left (NPU) and right (GroundTruth) names, and the cosine of every input and output
coloured against the threshold; then the first operator that introduces the error and the counts.
"""

from __future__ import annotations

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from ..compare.divergence import Divergence, OpCosines, TensorCosine
from .cosine_strip import CosineStrip


def format_cosine(value: float) -> str:
    """``%.6f``, or ``NaN`` for a missing cosine."""
    return "NaN" if value != value else "%.6f" % value


def format_threshold(threshold: float) -> str:
    """The threshold as the user typed it (``0.98``, not ``0.980000``)."""
    return f"{threshold:g}"


def cosine_style(value: float, threshold: float) -> str:
    """``cos.nan`` for NaN, ``cos.bad`` at or below ``threshold``, ``cos.good`` above."""
    if value != value:
        return "cos.nan"
    return "cos.bad" if value <= threshold else "cos.good"


def _tensor_cells(label: str, tensors: tuple[TensorCosine, ...], threshold: float) -> Text:
    line = Text.assemble((f"   {label + ':':<9}", "muted"))
    if not tensors:
        return line.append("none compared", style="muted")
    for i, tensor in enumerate(tensors):
        line.append("  " if i else "")
        line.append(f"{tensor.slot}: ", style="muted")
        line.append(format_cosine(tensor.cosine), style=cosine_style(tensor.cosine, threshold))
    return line


def _op_lines(number: int, op: OpCosines) -> list[Text]:
    verdict = (Text("introduces the error", style="cos.bad") if op.introduces
               else Text("inherits an upstream error", style="muted"))
    head = Text.assemble(f"{number}. ", ("[", "muted"), (op.op_type or "?", "op.type"), ("] ", "muted"),
                         (op.name, "op.name"), (f"  index {op.index}  ", "muted"), verdict)
    return [head,
            Text.assemble(("   left (NPU):          ", "muted"), op.name),
            Text.assemble(("   right (GroundTruth): ", "muted"), op.ground_truth),
            _tensor_cells("inputs", op.inputs, op.threshold),
            _tensor_cells("outputs", op.outputs, op.threshold)]


def first_introducer_line(divergence: Divergence) -> Text | None:
    """``first operator that introduces the error: NAME (TYPE), cosine X -> Y``; None when
    nothing is flagged."""
    flagged = divergence.flagged
    if not flagged:
        return None
    op = divergence.first_introducer
    if op is None:
        return Text.assemble(
            "first operator that introduces the error: none found; every flagged op has an input "
            f"already at or below {format_threshold(divergence.threshold)}, so look upstream of ",
            (flagged[0].name, "op.name"), style="warn")
    before, after = op.cosine_drop
    return Text.assemble(("first operator that introduces the error: ", "title"), (op.name, "op.name"),
                         " (", (op.op_type or "?", "op.type"), "), cosine ",
                         (format_cosine(before), cosine_style(before, divergence.threshold)), " -> ",
                         (format_cosine(after), cosine_style(after, divergence.threshold)))


def _count_lines(divergence: Divergence) -> list[Text]:
    threshold = format_threshold(divergence.threshold)
    flagged, dumped = len(divergence.flagged), len(divergence.dumped)
    style = "cos.bad" if flagged else "cos.good"
    lines = [Text(f"flagged: {flagged} of {dumped} ops (output cosine <= {threshold})", style=style)]
    unjudged = divergence.unjudged
    if unjudged:
        names = ", ".join(op.name for op in unjudged[:5]) + (", ..." if len(unjudged) > 5 else "")
        lines.append(Text(f"{len(unjudged)} op(s) with a NaN output cosine, not judged: {names}",
                          style="cos.nan"))
    return lines


def render_summary(title: str, divergence: Divergence, limit: int) -> Panel:
    """The summary of one result: at most ``limit`` flagged ops (0: all), then the verdict."""
    flagged = divergence.flagged
    shown = flagged if limit == 0 else flagged[:limit]
    lines: list[Text] = []
    if not divergence.dumped:
        lines.append(Text("no compared tensors in this result", style="warn"))
    elif not flagged:
        lines.append(Text(f"no op has an output cosine <= {format_threshold(divergence.threshold)}",
                          style="cos.good"))
    for number, op in enumerate(shown, 1):
        lines.extend(_op_lines(number, op))
    if len(shown) < len(flagged):
        lines.append(Text(f"... {len(flagged) - len(shown)} more flagged op(s); -l 0 lists them all",
                          style="muted"))
    verdict = first_introducer_line(divergence)
    if verdict is not None:
        lines.append(verdict)
    lines.extend(_count_lines(divergence))
    lines.append(CosineStrip(divergence))  # the curve's shape; renders nothing without outputs
    return Panel(Group(*lines), title=Text(title, style="title"), title_align="left", expand=False)
