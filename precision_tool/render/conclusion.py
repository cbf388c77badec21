"""The end of ``ac``: one line per part, the root cause first, so the conclusion is what stays
on screen when the details above have scrolled away."""

from __future__ import annotations

from rich.text import Text

from ..checks.casts import CastCheckResult
from ..checks.fusion import FusionCheckResult
from ..checks.graph_diff import GraphDiffResult
from ..checks.overflow import OverflowCheckResult
from ..compare.divergence import Divergence
from .fit import FitPanel
from .lines import visible
from .summary import first_introducer_line

CONCLUSION_TITLE = "conclusion"


def _line(label: str, text: str, style: str = "") -> Text:
    return Text.assemble((f"{label}: ", "title"), (visible(text), style))


def comparison_lines(divergences: list[Divergence]) -> list[Text]:
    """The first introducer (or why there is none) and the flagged count of each result."""
    lines: list[Text] = []
    for divergence in divergences:
        verdict = first_introducer_line(divergence)
        if verdict is not None:
            lines.append(verdict)
    flagged = sum(len(d.flagged) for d in divergences)
    dumped = sum(len(d.dumped) for d in divergences)
    rule = divergences[0].rule.describe() if divergences else ""
    lines.append(
        _line("comparison", f"{flagged} of {dumped} ops flagged ({rule})", "cos.bad" if flagged else "cos.good")
    )
    return lines


def overflow_line(result: OverflowCheckResult) -> Text:
    """Which ops the Opdebug files say overflowed, and the new Inf/NaN tensors."""
    parts = []
    if result.absent:
        parts.append(f"no Opdebug files in {result.looked_in}")
    else:
        overflowed = [f for f in result.findings if f.overflowed]
        names = result.overflowed_ops  # the first to overflow first
        where = f" in {', '.join(names)}" if names else ""
        parts.append(
            f"{len(overflowed)} of {result.debug_files} Opdebug file(s) report an overflow"
            f"{where} (run {result.run} of {result.looked_in})"
            if overflowed
            else f"no overflow in {result.debug_files} Opdebug file(s)"
        )
    if result.nonfinite:
        first = result.nonfinite[0]
        parts.append(
            f"{len(result.nonfinite)} NPU tensor(s) hold Inf/NaN where golden does not, first {first.tensor_index}"
        )
    return _line("overflow", "; ".join(parts), "cos.bad" if result.flagged else "muted")


def fusion_line(result: FusionCheckResult) -> Text:
    """How many fusion rules took effect, in how many graphs."""
    if not result.present:
        return _line("fusion", "no fusion_result.json", "muted")
    rules = sum(len(g.effective("graph_fusion")) + len(g.effective("ub_fusion")) for g in result.graphs)
    text = f"{rules} rule(s) took effect in {len(result.graphs)} graph(s) ({result.source})"
    if not result.graphs and not result.problem:
        text = f"no fusion rule took effect: the file lists no graph ({result.source})"
    if result.problem:
        text += f"; the file is damaged: {result.problem}"
    return _line("fusion", text, "warn" if result.problem else "")


def casts_line(result: CastCheckResult) -> Text:
    """The dangerous casts by dtype pair."""
    if not result.present:
        return _line("casts", f"no Build graph in {result.graph_dir}", "muted")
    if not result.found:
        return _line("casts", f"no dangerous cast among {result.casts} Cast op(s)", "cos.good")
    pairs = ", ".join(f"{g.src} -> {g.dst} ({len(g.ops)})" for g in result.groups)
    return _line("casts", f"dangerous: {pairs}", "cos.bad")


def graph_diff_line(result: GraphDiffResult) -> Text:
    """How similar the debug_0 and debug_1 graphs are."""
    if not result.present:
        return _line("graph similarity", "needs Build graphs in both debug_0 and debug_1", "muted")
    compared = sum(p.compared for p in result.pairs)
    same = sum(p.same for p in result.pairs)
    ratio = same / compared if compared else 1.0
    unpaired = len(result.unpaired_left) + len(result.unpaired_right)
    text = f"{ratio:.1%} of {compared} ops identical in {len(result.pairs)} graph pair(s)"
    if unpaired:
        text += f", {unpaired} graph(s) without a partner"
    return _line("graph similarity", text, "warn" if result.found else "cos.good")


def conclusion_panel(lines: list[Text]) -> FitPanel:
    """The final panel: the lines in order (the caller puts the root cause first)."""
    return FitPanel(lines, CONCLUSION_TITLE)
