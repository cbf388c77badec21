"""The work of ``ls`` (:mod:`.ls` is its arguments): type counts, graph files, op lines.

Apart from the command's spec so that building the registry (``--help``, ``help``) loads
neither the graph readers nor rich's tables.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from ..compare.lookup import fused_note, fused_tf_names, graph_file_given, graph_label, graph_refs
from ..context import Context, OpRef
from ..formats.graph_names import BUILD_FILE_FORMS, is_content_named
from ..formats.msprobe_graph import DIRECTION, msprobe_source
from ..formats.msprobe_keys import BACKWARD, FORWARD, PARAMETERS_GRAD
from ..render.fit import FitTable
from ..render.lines import OneLine, data_text, visible
from .registry import CommandResult

DIRECTIONS_SHOWN = (FORWARD, BACKWARD, PARAMETERS_GRAD)


def _keep(ref: OpRef, args) -> bool:
    """Whether the op passes every filter; ``-n`` also matches the TF ops fused into it."""
    op = ref.op
    checks = (
        (args.type, op.type),
        (args.kernel, op.kernel_name or ""),
        (args.pass_name, " ".join(op.pass_name)),
    )
    if args.name is not None and args.name.lower() not in op.name.lower() and not fused_tf_names(ref, args.name):
        return False
    return all(want is None or want.lower() in have.lower() for want, have in checks)


def _type_counts(refs: list[OpRef]) -> FitTable:
    debugs = sorted({r.debug for r in refs})
    counts = {d: Counter(r.op.type for r in refs if r.debug == d) for d in debugs}
    table = FitTable()
    table.add_column("type", style="op.type")
    for debug in debugs:
        table.add_column(debug, justify="right")
    for op_type in sorted({r.op.type for r in refs}):
        table.add_row(data_text(op_type, "op.type"), *(str(counts[d].get(op_type, 0)) for d in debugs))
    table.add_row(Text("total", style="title"), *(str(sum(counts[d].values())) for d in debugs))
    return table


def _graph_files(refs: list[OpRef]) -> FitTable:
    """One row per graph file read: debug dir, file, GE graph id, its graphs and op count."""
    table = FitTable(title="graph files")
    for column in ("debug", "file", "graph id", "graphs", "ops"):
        table.add_column(column, justify="right" if column in ("graph id", "ops") else "left")
    models: dict[tuple[str, int], list[OpRef]] = {}
    for ref in refs:
        models.setdefault((ref.debug, id(ref.model)), []).append(ref)
    for (debug, _), group in models.items():
        model = group[0].model
        names = list(dict.fromkeys(r.graph.name for r in group))
        more = f" (+{len(names) - 1} sub-graphs)" if len(names) > 1 else ""
        table.add_row(
            debug,
            data_text(model.source_path.name if model.source_path else "?", "path"),
            "-" if model.graph_id is None else str(model.graph_id),
            data_text(names[0] + more, "op.name"),
            str(len(group)),
        )
    return table


def _chosen_notes(refs: list[OpRef], graph: str | None) -> list[Text]:
    """Which file was read, for each graph file without a GE dump name: the one ``-g`` gave,
    or one a graph directory holds a GE model in under a name of the user's."""
    notes, seen = [], set()
    for ref in refs:
        path = ref.model.source_path
        if path is None or path in seen or not is_content_named(path):
            continue
        seen.add(path)
        if graph_file_given(graph):
            why = "the graph file -g gives"
        else:
            why = f"{ref.debug}'s Build graph, by its content (no ge_proto_*_Build.txt there)"
        notes.append(Text.assemble((visible(str(path)), "path"), (f": {why}", "muted")))
    return notes


def _op_line(ref: OpRef, with_graph: bool, name: str | None) -> Text:
    passes = ",".join(ref.op.pass_name)
    where = f"{ref.debug}, {graph_label(ref)}" if with_graph else ref.debug
    line = Text.assemble(
        ("[", "muted"),
        (visible(ref.op.type), "op.type"),
        ("]", "muted"),
        (f"[{visible(passes)}]" if passes else "", "muted"),
        " ",
        (visible(ref.op.name), "op.name"),
        (f"  ({visible(where)})", "muted"),
    )
    if name is not None and name.lower() not in ref.op.name.lower():
        fused = "; ".join(fused_note(tf, ref.op.name) for tf in fused_tf_names(ref, name))
        line.append(f"  {visible(fused)}", style="warn")
    return line


# --- msprobe dumps: calls by type per rank directory ------------------------------------------


def _call_counts(refs: list[OpRef]) -> FitTable:
    """Calls per type (``Functional.linear``, ``Module.Attention``), one column per rank dir."""
    ranks = list(dict.fromkeys(r.graph.name for r in refs))
    counts = {rank: Counter(r.op.type for r in refs if r.graph.name == rank) for rank in ranks}
    table = FitTable()
    table.add_column("type", style="op.type")
    for rank in ranks:
        table.add_column(rank, justify="right")
    for op_type in sorted({r.op.type for r in refs}):
        table.add_row(data_text(op_type, "op.type"), *(str(counts[k].get(op_type, 0)) for k in ranks))
    table.add_row(Text("total", style="title"), *(str(sum(counts[k].values())) for k in ranks))
    return table


def _dumps_read(refs: list[OpRef]) -> FitTable:
    """One row per rank directory read: its framework, task, level and calls by direction."""
    table = FitTable(title="msprobe dumps read")
    for column in ("side", "rank dir", "framework", "task", "level", *DIRECTIONS_SHOWN):
        table.add_column(column, justify="right" if column in DIRECTIONS_SHOWN else "left")
    models: dict[int, list[OpRef]] = {}
    for ref in refs:
        models.setdefault(id(ref.model), []).append(ref)
    for group in models.values():
        source = msprobe_source(group[0].model)
        header = source.dump.header
        by_direction = Counter(r.op.attrs.get(DIRECTION) for r in group)
        table.add_row(
            group[0].debug,
            data_text(group[0].graph.name, "path"),
            source.dump.framework or "?",
            header.task or "?",
            header.level or "?",
            *(str(by_direction.get(d, 0)) for d in DIRECTIONS_SHOWN),
        )
    return table


def _msprobe_counts(refs: list[OpRef]) -> list:
    lines: list = [Text("calls per type (msprobe dump)", style="title"), _call_counts(refs), _dumps_read(refs)]
    sources = list({id(r.model): msprobe_source(r.model) for r in refs}.values())
    lines += [OneLine(f"warning: {p}", "warn") for source in sources for p in source.problems]
    return lines


def list_ops(args, context: Context) -> CommandResult:
    """Type counts per debug dir and the graph files read, or (with filters) one line per op;
    on an msprobe data root, calls per type and rank directory, and the dumps read."""
    refs = graph_refs(context, args.graph, args.debug)
    if not refs and context.is_msprobe:
        return CommandResult([Text(f"no calls in the msprobe dump under {context.data.npu}", style="warn")])
    if not refs:
        return CommandResult([Text(f"no Build graph ({BUILD_FILE_FORMS}) under {context.data.npu}", style="warn")])
    msprobe = msprobe_source(refs[0].model) is not None
    if not any((args.type, args.name, args.pass_name, args.kernel)):
        if msprobe:
            return CommandResult(_msprobe_counts(refs))
        return CommandResult(
            [
                Text("op types per NPU debug dir", style="title"),
                _type_counts(refs),
                _graph_files(refs),
                *_chosen_notes(refs, args.graph),
            ]
        )
    kept = [r for r in refs if _keep(r, args)]
    with_graph = len({(r.debug, r.graph.name) for r in refs}) > len({r.debug for r in refs})
    lines = [_op_line(r, with_graph, args.name) for r in kept]
    lines.append(Text(f"{len(kept)} op(s)", style="muted"))
    return CommandResult(lines)


__all__ = ["list_ops"]
