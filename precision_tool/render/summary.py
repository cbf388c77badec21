"""The ``vcs`` summary of one comparison result as rich renderables.

For each flagged op, in execution order: its type and name, its verdict (introduces or inherits,
and which rule decided: its replay or its inputs), the left (NPU) and right (GroundTruth) names,
and the cosine of every input and output in its tensor state's colour; then the first operator
that introduces the error and the counts. Every word and colour is the verdict's
(:mod:`precision_tool.compare.verdict`, :mod:`.palette`): nothing is decided here.
"""

from __future__ import annotations

from rich.text import Text

from ..compare.divergence import Divergence, OpCosines, TensorCosine
from ..compare.verdict import DIVERGES, INTRODUCES, NEAR, NONFINITE, FlagRule, cosine_flags
from .cosine_strip import CosineStrip
from .fit import FitPanel
from .lines import visible
from .palette import legend_state, swatch


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
    """The style of the tensor's state (:meth:`TensorCosine.state`): a diverging tensor in the
    introducer's colour, the rest in their own."""
    return swatch(legend_state(tensor.state(rule))).style


def verdict_text(op: OpCosines) -> Text:
    """``▲ introduces the error (replay: local RED 0.5 beyond its noise ...)``, ``● inherits an
    upstream error, amplifies it``: the op's verdict and which rule decided it."""
    look = swatch(op.state)
    words = "introduces the error" if op.introduces else "inherits an upstream error"
    if op.amplifies:
        words += ", amplifies it"
    text = Text(f"{look.marker} {words}", style=look.style)
    how = op.local.describe() if op.local is not None else "no replay: decided by its inputs"
    text.append(f" ({how})", style="muted")
    if op.cause:
        text.append(f"; cause: {op.cause}", style=look.style)
    return text


def _tensor_cells(label: str, tensors: tuple[TensorCosine, ...], rule: FlagRule) -> Text:
    line = Text.assemble((f"   {label + ':':<9}", "muted"))
    if not tensors:
        return line.append("none compared", style="muted")
    for i, tensor in enumerate(tensors):
        line.append("  " if i else "")
        line.append(f"{tensor.slot}: ", style="muted")
        style = tensor_style(tensor, rule)
        line.append(format_cosine(tensor.cosine), style=style)
        state = tensor.state(rule)
        if state == NONFINITE:
            line.append(f" (NaN/Inf: {tensor.nonfinite_side})", style=style)
        elif state == DIVERGES and not tensor.at_or_below(rule.cosine):
            line.append(f" (RED {tensor.red:.3g})", style=style)
        elif state == NEAR:
            line.append(
                f" ({swatch(NEAR).marker} RED {tensor.error:.3g} beyond rounding {tensor.limit:.3g})", style=style
            )
    return line


def _op_lines(number: int, op: OpCosines) -> list[Text]:
    head = Text.assemble(
        f"{number}. ",
        ("[", "muted"),
        (visible(op.op_type or "?"), "op.type"),
        ("] ", "muted"),
        (visible(op.name), "op.name"),
        (f"  index {op.index}  ", "muted"),
        verdict_text(op),
    )
    return [
        head,
        Text.assemble(("   left (NPU):          ", "muted"), visible(op.name)),
        Text.assemble(("   right (GroundTruth): ", "muted"), visible(op.ground_truth)),
        _tensor_cells("inputs", op.inputs, op.rule),
        _tensor_cells("outputs", op.outputs, op.rule),
    ]


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
            (visible(flagged[0].name), "op.name"),
            style="warn",
        )
    line = Text.assemble(
        ("first operator that introduces the error: ", "title"),
        (visible(op.name), "op.name"),
        " (",
        (visible(op.op_type or "?"), "op.type"),
        "), ",
        drop_text(op, divergence.threshold),
    )
    line.append(
        f"; {op.local.describe()}" if op.local is not None else "; no replay: decided by its inputs", style="muted"
    )
    if op.cause:
        line.append(f"; cause: {op.cause}", style=swatch(INTRODUCES).style)
    return line


def drop_text(op: OpCosines, threshold: float) -> Text:
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
    extra = [
        f"RED {t.red:.3g}"
        for t in op.outputs
        if not t.nonfinite and t.diverges(op.rule) and not t.at_or_below(op.rule.cosine)
    ]
    if op.nonfinite:
        extra.append("the NPU output holds NaN/Inf")
    if extra:
        text.append((", " if drop is not None else "") + ", ".join(extra), style="cos.bad")
    return text


def _count_lines(divergence: Divergence) -> list[Text]:
    flagged, dumped = len(divergence.flagged), len(divergence.dumped)
    style = "cos.bad" if flagged else "cos.good"
    lines = [Text(f"flagged: {flagged} of {dumped} ops ({divergence.rule.describe()})", style=style)]
    nonfinite = divergence.nonfinite
    if nonfinite:
        lines.append(
            Text(
                f"{len(nonfinite)} op(s) with a NaN/Inf NPU output, the first: {visible(nonfinite[0].name)}",
                style=swatch(NONFINITE).style,
            )
        )
    lowest = divergence.lowest_output
    if lowest is not None:
        near = divergence.near
        what = "lowest finite output cosine: " if nonfinite else "lowest output cosine: "
        line = Text.assemble(
            (what, "muted"),
            (format_cosine(lowest.worst_output), cosine_style(lowest.worst_output, divergence.threshold)),
            " at ",
            (visible(lowest.name), "op.name"),
        )
        line.append(
            f"; {len(near)} op(s) beyond rounding but not flagged", style=swatch(NEAR).style if near else "muted"
        )
        if near:
            line.append(
                ": " + ", ".join(visible(op.name) for op in near[:3]) + (", ..." if len(near) > 3 else ""),
                style=swatch(NEAR).style,
            )
        lines.append(line)
    unjudged = divergence.unjudged
    if unjudged:
        names = ", ".join(visible(op.name) for op in unjudged[:5]) + (", ..." if len(unjudged) > 5 else "")
        lines.append(Text(f"{len(unjudged)} op(s) with a NaN output cosine, not judged: {names}", style="cos.nan"))
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
        lines.append(Text(f"... {len(flagged) - len(shown)} more flagged op(s); -l 0 lists them all", style="muted"))
    verdict = first_introducer_line(divergence)
    if verdict is not None:
        lines.append(verdict)
    lines.extend(_count_lines(divergence))
    lines.append(CosineStrip(divergence))  # the curve's shape; renders nothing without outputs
    return FitPanel(lines, title)
