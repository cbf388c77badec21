"""The ``vcs`` summary of one comparison result as rich renderables.

For each flagged op, in execution order: its type and name, whether it introduces the error or
inherits it, the left (NPU) and right (GroundTruth) names, and the cosine of every input and output
coloured against the threshold; then the first operator that introduces the error and the counts.
"""

from __future__ import annotations

from rich.text import Text

from ..compare.divergence import NEAR_MARGIN, Divergence, FlagRule, OpCosines, TensorCosine, cosine_flags
from .cosine_strip import CosineStrip
from .fit import FitPanel
from .lines import visible


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
    return "cos.bad" if cosine_flags(value, threshold) else "cos.good"


def tensor_style(tensor: TensorCosine, rule: FlagRule) -> str:
    """``cos.bad`` when the tensor diverges by ``rule``, ``cos.nan`` for a NaN cosine that does
    not, ``cos.good`` otherwise."""
    if tensor.diverges(rule):
        return "cos.bad"
    return "cos.nan" if tensor.is_nan else "cos.good"


def _tensor_cells(label: str, tensors: tuple[TensorCosine, ...], rule: FlagRule) -> Text:
    line = Text.assemble((f"   {label + ':':<9}", "muted"))
    if not tensors:
        return line.append("none compared", style="muted")
    for i, tensor in enumerate(tensors):
        line.append("  " if i else "")
        line.append(f"{tensor.slot}: ", style="muted")
        line.append(format_cosine(tensor.cosine), style=tensor_style(tensor, rule))
        if tensor.diverges(rule) and not tensor.at_or_below(rule.cosine):
            why = "NaN/Inf" if tensor.nonfinite else f"RED {tensor.red:.3g}"
            line.append(f" ({why})", style="cos.bad")
    return line


def _op_lines(number: int, op: OpCosines) -> list[Text]:
    verdict = (Text("introduces the error", style="cos.bad") if op.introduces
               else Text("inherits an upstream error", style="muted"))
    head = Text.assemble(f"{number}. ", ("[", "muted"), (visible(op.op_type or "?"), "op.type"),
                         ("] ", "muted"), (visible(op.name), "op.name"), (f"  index {op.index}  ", "muted"),
                         verdict)
    return [head,
            Text.assemble(("   left (NPU):          ", "muted"), visible(op.name)),
            Text.assemble(("   right (GroundTruth): ", "muted"), visible(op.ground_truth)),
            _tensor_cells("inputs", op.inputs, op.rule),
            _tensor_cells("outputs", op.outputs, op.rule)]


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
            "that already diverges, so look upstream of ",
            (visible(flagged[0].name), "op.name"), style="warn")
    return Text.assemble(("first operator that introduces the error: ", "title"), (visible(op.name), "op.name"),
                         " (", (visible(op.op_type or "?"), "op.type"), "), ",
                         _drop_text(op, divergence.threshold))


def _drop_text(op: OpCosines, threshold: float) -> Text:
    """How the op's output diverges: the cosine from its worst input to its worst output, and
    what else the rule saw (a RED beyond the threshold, NaN/Inf)."""
    drop = op.cosine_drop
    text = Text()
    if drop is not None:
        before, after = drop
        text.append("cosine ")
        text.append(format_cosine(before), cosine_style(before, threshold))
        text.append(" -> ")
        text.append(format_cosine(after), cosine_style(after, threshold))
    extra = [f"RED {t.red:.3g}" for t in op.outputs
             if not t.nonfinite and t.diverges(op.rule) and not t.at_or_below(op.rule.cosine)]
    if op.nonfinite:
        extra.append("the NPU output holds NaN/Inf")
    if extra:
        text.append((", " if drop is not None else "") + ", ".join(extra), style="cos.bad")
    return text


def _count_lines(divergence: Divergence) -> list[Text]:
    flagged, dumped = len(divergence.flagged), len(divergence.dumped)
    style = "cos.bad" if flagged else "cos.good"
    lines = [Text(f"flagged: {flagged} of {dumped} ops ({divergence.rule.describe()})", style=style)]
    lowest = divergence.lowest_output
    if lowest is not None:
        near = divergence.near_threshold()
        line = Text.assemble(("lowest output cosine: ", "muted"),
                             (format_cosine(lowest.worst_output), cosine_style(lowest.worst_output,
                                                                                divergence.threshold)),
                             " at ", (visible(lowest.name), "op.name"))
        line.append(f"; {len(near)} op(s) not flagged within {NEAR_MARGIN:g} above "
                    f"{format_threshold(divergence.threshold)}", style="warn" if near else "muted")
        if near:
            line.append(": " + ", ".join(visible(op.name) for op in near[:3]) + (", ..." if len(near) > 3 else ""),
                        style="warn")
        lines.append(line)
    unjudged = divergence.unjudged
    if unjudged:
        names = ", ".join(visible(op.name) for op in unjudged[:5]) + (", ..." if len(unjudged) > 5 else "")
        lines.append(Text(f"{len(unjudged)} op(s) with a NaN output cosine, not judged: {names}",
                          style="cos.nan"))
    return lines


def render_summary(title: str, divergence: Divergence, limit: int) -> FitPanel:
    """The summary of one result: at most ``limit`` flagged ops (0: all), then the verdict."""
    flagged = divergence.flagged
    shown = flagged if limit == 0 else flagged[:limit]
    lines: list[Text] = []
    if not divergence.dumped:
        lines.append(Text("no compared tensors in this result", style="warn"))
    elif not flagged:
        lines.append(Text(f"no op is flagged ({divergence.rule.describe()})", style="cos.good"))
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
    return FitPanel(lines, title)
