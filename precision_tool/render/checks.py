"""The ``ac`` checks (fusion, casts, graph similarity) as rich renderables.

Each ``render_*`` returns one renderable: a panel of findings (:class:`~.fit.FitPanel`: its
border goes rather than a name is cut), a panel holding the one line ``nothing found: ...``, or,
when the check's data is missing, the one line ``<check>: data absent: looked for X in Y``
(:func:`absent_line`) instead of a panel. Names from the data are made
:func:`~.lines.visible` where they enter a renderable.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.console import RenderableType
from rich.text import Text

from ..checks.casts import CastCheckResult
from ..checks.fusion import FUSION_FILE_NAME, FusionCheckResult
from ..checks.graph_diff import SKIPPED_TYPES, GraphDiffResult, GraphPairDiff
from ..formats.fusion_result import FusionGraph, repeated_keys
from .fit import FitPanel, FitTable
from .lines import visible

FUSION_TITLE = "fusion check"
CAST_TITLE = "cast check"
GRAPH_DIFF_TITLE = "graph similarity"
BUILD_GRAPHS = "Build graphs (ge_proto_*_Build.txt, atc JSON or .om)"


def absent_line(title: str, looked_for: str, places: Iterable[str | Path]) -> Text:
    """``<title>: data absent: looked for <looked_for> in <place> and <place>``."""
    where = " and ".join(visible(str(p)) for p in places)
    return Text.assemble(
        (f"{title}: ", "title"), ("data absent: ", "warn"), f"looked for {looked_for} in ", (where, "path")
    )


def nothing_found(detail: str) -> Text:
    """``nothing found: <detail>``."""
    return Text.assemble(("nothing found: ", "cos.good"), detail)


def check_panel(title: str, lines: Iterable[RenderableType]) -> FitPanel:
    """A left-titled panel of ``lines``, the form every check's findings take."""
    return FitPanel(lines, title)


def _source_line(label: str, paths: Iterable[Path]) -> Text:
    return Text.assemble((f"{label}: ", "muted"), (", ".join(visible(str(p)) for p in paths), "path"))


# --- fusion -----------------------------------------------------------------------------------


def _graph_label(graph: FusionGraph, repeated: bool) -> str:
    if graph.session_id is not None:
        label = f"session {graph.session_id}, graph {graph.graph_id or '?'}"
    else:
        label = f"graph {graph.graph_id}" if graph.graph_id is not None else "graph (no id)"
    return f"{label} (entry {graph.index + 1})" if repeated else label


def _rule_table(title: str, graph: FusionGraph, section: str) -> RenderableType:
    rules = graph.effective(section)
    if not rules:
        return Text(f"{title}: no rule took effect", style="muted")
    table = FitTable(title=title)
    table.add_column("rule")
    table.add_column("effect times", justify="right")
    table.add_column("match times", justify="right")
    for rule in rules:
        table.add_row(rule.name, str(rule.effect_times), "-" if rule.match_times is None else str(rule.match_times))
    return table


def render_fusion(result: FusionCheckResult) -> RenderableType:
    """Per graph id, a graph fusion table and a UB fusion table of the rules that took effect."""
    if not result.present:
        return absent_line(FUSION_TITLE, FUSION_FILE_NAME, (p.parent for p in result.looked_in))
    lines: list[RenderableType] = [_source_line("read", [result.source])]
    lines += [Text(visible(repeat.note), style="muted") for repeat in repeated_keys(result.graphs)]
    if result.problem:
        kept = f"; showing the {len(result.graphs)} graph(s) before it" if result.graphs else ""
        lines.append(Text(f"problem: {visible(result.problem)}{kept}", style="warn"))
    if not result.found:
        # after a problem "nothing found" would claim more than was read
        if not result.problem:
            where = f"in {len(result.graphs)} graph(s)" if result.graphs else "(the file lists no graph)"
            lines.append(nothing_found(f"no fusion rule took effect {where}"))
        elif result.graphs:
            lines.append(Text("no fusion rule took effect in those graph(s)", style="muted"))
        return check_panel(FUSION_TITLE, lines)
    ids = [g.key for g in result.graphs]
    for graph in result.graphs:
        label = _graph_label(graph, ids.count(graph.key) > 1)
        lines += [
            _rule_table(f"{label}: graph fusion", graph, "graph_fusion"),
            _rule_table(f"{label}: UB fusion", graph, "ub_fusion"),
        ]
    return check_panel(FUSION_TITLE, lines)


# --- casts ------------------------------------------------------------------------------------


def render_casts(result: CastCheckResult) -> RenderableType:
    """The dangerous casts grouped by dtype pair, with their op names."""
    if not result.present:
        return absent_line(CAST_TITLE, BUILD_GRAPHS, [result.graph_dir])
    lines: list[RenderableType] = [_source_line("graphs", result.graph_files)]
    if not result.found:
        lines.append(nothing_found(f"none of the {result.casts} Cast op(s) converts to a dangerous dtype"))
        return check_panel(CAST_TITLE, lines)
    graphs = {op.graph for group in result.groups for op in group.ops}
    table = FitTable(title="dangerous casts")
    table.add_column("cast")
    table.add_column("ops", justify="right")
    table.add_column("op names", style="op.name")
    for group in result.groups:
        names = [op.name if len(graphs) == 1 else f"{op.name} ({op.graph})" for op in group.ops]
        table.add_row(f"{group.src} -> {group.dst}", str(len(group.ops)), "\n".join(names))
    return check_panel(CAST_TITLE, lines + [table])


# --- graph similarity -------------------------------------------------------------------------


def _pair_line(pair: GraphPairDiff) -> Text:
    return Text.assemble(
        ("debug_0 ", "muted"),
        (visible(pair.left_graph), "op.name"),
        (" vs debug_1 ", "muted"),
        (visible(pair.right_graph), "op.name"),
        (f" (paired by {pair.paired_by}): ", "muted"),
        (f"similarity {pair.ratio:.1%}", "cos.good" if not pair.differs else "cos.bad"),
        (f" ({pair.same}/{pair.compared} ops identical)", "muted"),
    )


def _change(left: str | None, right: str | None) -> str:
    if left == right:
        return left or "-"
    return f"{left or '-'} -> {right or '-'}"


def _tensor_table(pair: GraphPairDiff) -> FitTable:
    table = FitTable(title="inputs/outputs that differ")
    for column in ("op", "tensor", "dtype", "format"):
        table.add_column(column, style="op.name" if column == "op" else None)
    for diff in pair.tensor_diffs:
        table.add_row(
            diff.op,
            f"{diff.kind} {diff.index}",
            _change(diff.left_dtype, diff.right_dtype),
            _change(diff.left_format, diff.right_format),
        )
    return table


def _names_line(label: str, names: Iterable[str]) -> Text:
    return Text.assemble((f"{label}: ", "warn"), ", ".join(visible(n) for n in names))


def _pair_lines(pair: GraphPairDiff) -> list[RenderableType]:
    lines: list[RenderableType] = [_pair_line(pair)]
    if pair.tensor_diffs:
        lines.append(_tensor_table(pair))
    lines += [_names_line("op type changed", [f"{d.op} ({d.left_type} -> {d.right_type})"]) for d in pair.type_diffs]
    if pair.only_left:
        lines.append(_names_line("only in debug_0", pair.only_left))
    if pair.only_right:
        lines.append(_names_line("only in debug_1", pair.only_right))
    return lines


def render_graph_diff(result: GraphDiffResult) -> RenderableType:
    """Per graph pair, the similarity ratio, the differing inputs/outputs and one-side ops."""
    if not result.present:
        return absent_line(GRAPH_DIFF_TITLE, BUILD_GRAPHS, result.missing)
    skipped = Text(f"skipped op types: {', '.join(sorted(SKIPPED_TYPES))}", style="muted")
    if not result.found:
        return check_panel(
            GRAPH_DIFF_TITLE,
            [
                nothing_found(
                    f"the {len(result.pairs)} graph pair(s) of debug_0 and debug_1 are identical (similarity 100.0%)"
                ),
                skipped,
            ],
        )
    lines: list[RenderableType] = []
    for pair in result.pairs:
        lines += _pair_lines(pair)
    if result.unpaired_left:
        lines.append(_names_line("graphs only in debug_0", result.unpaired_left))
    if result.unpaired_right:
        lines.append(_names_line("graphs only in debug_1", result.unpaired_right))
    return check_panel(GRAPH_DIFF_TITLE, lines + [skipped])
