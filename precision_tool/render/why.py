"""``why``'s explanations as rich renderables: one panel per op, a panel for ``ac``, and JSON.

Names and evidence come from the data: they are shown as plain text (never markup) with
control characters escaped.
"""

from __future__ import annotations

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from .lines import one_line
from .summary import format_cosine


def _replay_line(e) -> Text:
    replay = e.replay
    line = Text("replay: ", style="muted")
    if not replay.supported:
        return line.append(one_line(replay.reason), style="warn")
    line.append(one_line(replay.reason))
    if replay.npu is not None:
        line.append(f": NPU vs replay cosine {format_cosine(replay.npu.cosine)}")
        if replay.golden is not None:
            line.append(f", golden vs replay cosine {format_cosine(replay.golden.cosine)}")
    return line


def _head(e) -> Text:
    head = Text.assemble(("cause: ", "muted"), (e.cause, "cos.good" if not e.is_defect else "cos.bad"))
    if e.stats is not None:
        nonfinite = e.stats.nonfinite_mismatch
        head.append(
            f"   output {e.output} vs golden: cosine {format_cosine(e.stats.cosine)}, "
            f"relative error {e.stats.red:.3g}"
            + (f" (finite values), {nonfinite} non-finite mismatch(es)" if nonfinite else ""),
            style="muted",
        )
    return head


def explanation_lines(e) -> list[Text]:
    """The lines of one explanation: the cause, every cause that held, the replay, notes."""
    lines = [_head(e)]
    for number, cause in enumerate(e.causes, 1):
        lines.append(
            Text.assemble(
                f"  {number}. ",
                (cause.name, "title"),
                (f" (explains {cause.score:.0%})  ", "muted"),
                one_line(cause.evidence),
            )
        )
    lines.append(_replay_line(e))
    lines += [Text(f"  note: {one_line(note)}", style="muted") for note in e.replay.notes]
    lines += [Text(f"note: {one_line(note)}", style="warn") for note in e.notes]
    return lines


def _title(e) -> Text:
    return Text.assemble(
        ("[", "muted"), (one_line(e.op_type or "?"), "op.type"), ("] ", "muted"), (one_line(e.op), "op.name")
    )


def render_why(explanations) -> list:
    """One panel per explanation, or a line when there is nothing to explain."""
    if not explanations:
        return [Text("why: no operator introduces error in the newest result", style="cos.good")]
    return [Panel(Group(*explanation_lines(e)), title=_title(e), title_align="left", expand=True) for e in explanations]


def why_panel(explanations) -> Panel | Text:
    """``ac``'s why panel: each first introducer with its ranked causes and the replay."""
    if not explanations:
        return Text("why: no operator introduces error in the newest result", style="cos.good")
    parts: list = []
    for e in explanations:
        parts.append(Text.assemble(_title(e), "  ", *(_head(e),)))
        parts += explanation_lines(e)[1:]
    return Panel(Group(*parts), title="why: the causes of the error", title_align="left")


def cause_line(e) -> Text:
    """One line for ``ac``'s conclusion: the op, its most likely cause and that cause's evidence."""
    return Text.assemble(
        ("cause: ", "title"),
        (one_line(e.op), "op.name"),
        ": ",
        (e.cause, "cos.bad" if e.is_defect else "cos.good"),
        " -- ",
        one_line(e.causes[0].evidence),
    )
