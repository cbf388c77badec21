"""What ``ni`` shows: node info of one graph op, its NPU dump and TF golden tensors, and its
neighbourhood.

Everything ``ni`` shows comes from the Build graph, the newest NPU run (the steps of
TF_DUMP_STEP, the latest launch of the op in each) and the golden directory; a part whose data
is absent says so in one line and the rest is still shown. ``-s D`` writes the depth-D
neighbourhood to ``temp/op_graph/`` (the only place ``ni`` writes).
"""

from __future__ import annotations

from functools import partial

from rich.text import Text

from ..compare.golden_pairing import golden_for
from ..compare.judged import judge_op_rows, judged_rows
from ..compare.lookup import graph_label, lookup_ops
from ..compare.newest import NewestResult, newest_result
from ..compare.tensor_summary import tensor_stats
from ..compare.verdict import FlagRule
from ..context import Context, OpRef
from ..errors import PrecisionToolError
from ..formats.digraph_files import MAX_RENDER_NODES, write_digraph
from ..formats.dump import read_dump
from ..formats.dump_names import DumpFileRef
from ..formats.dump_tensor import DumpTensor
from ..formats.graph_model import GraphDesc, Op, TensorDesc, TensorName
from ..formats.graph_query import neighbourhood
from ..formats.msprobe_graph import msprobe_source
from ..formats.text import safe_file_name
from ..formats.tree import StepDir
from ..render import node_info, op_graph, op_tree
from ..render.limits import LIST_LIMIT, head
from ..render.lines import OneLine, OneLineText, visible
from ..render.op_graph import node_state
from ..render.palette import LEGEND_ORDER, swatch
from ..render.summary import verdict_text
from .registry import CommandResult

MAX_PART_CHARS = 60
MAX_DRAWN_NODES = MAX_RENDER_NODES  # ni -s draws at most the nearest this many ops


def _origin_format(desc: TensorDesc | None) -> str | None:
    return desc.origin_format if desc is not None else None


def dump_row(tensor: DumpTensor, desc: TensorDesc | None, source: str = "") -> node_info.TensorRow:
    """Statistics of one dumped tensor in host layout; the reason instead when it is unreadable.

    ``source`` says where the tensor comes from (the producer of an input, the TF tensor of an
    output)."""
    origin = tensor.origin_format(_origin_format(desc))
    layout = tensor.format if not origin or origin == tensor.format else f"{tensor.format}->{origin}"
    row = dict(label=tensor.name, dtype=tensor.dtype_name, layout=layout)
    problem = tensor.problem
    if problem:
        return node_info.TensorRow(source=source, stats=None, note=problem, **row)
    try:
        stats = tensor_stats(tensor.host(_origin_format(desc)), tensor.dtype_name)
    except PrecisionToolError as exc:
        return node_info.TensorRow(source=source, stats=None, note=exc.problem, **row)
    return node_info.TensorRow(source=source, stats=stats, note=node_info.stats_note(stats), **row)


def _dump_renderables(graph: GraphDesc, op: Op, step: StepDir, file: DumpFileRef, limit: int | None) -> list:
    where = f"step {step.step}, device {step.device}" if step.step is not None else f"device {step.device}"
    title = f"NPU dump ({where}): {file.name.file_name}"
    try:
        dump = read_dump(file.path, file.name.file_name)
    except PrecisionToolError as exc:
        return [Text(f"{visible(title)}: cannot read it: {visible(exc.problem)}", style="warn")]
    refs = op.data_inputs
    inputs, hidden_in = head(dump.inputs, limit)  # statistics only of the tensors shown
    outputs, hidden_out = head(dump.outputs, limit)
    rows = [dump_row(t, op.input_desc(t.index), str(refs[t.index]) if t.index < len(refs) else "") for t in inputs]
    rows += [dump_row(t, op.output_desc(t.index), _output_origin(graph, op, t)) for t in outputs]
    if not rows:
        return [Text(f"{visible(title)}: no inputs or outputs in the dump", style="muted")]
    return [node_info.tensor_table(title, rows, "from / as", hidden_in + hidden_out)]


def _output_origin(graph: GraphDesc, op: Op, tensor: DumpTensor) -> str:
    source = golden_for(graph, op, "output", tensor.index)
    return str(source) if source else ""


def dump_section(context: Context, ref: OpRef, limit: int | None = None) -> list:
    """The op's NPU dump tensors (latest launch per selected step dir; the first ``limit``
    inputs and outputs of each), or a line saying why not."""
    try:
        files = context.op_dumps(ref)
    except PrecisionToolError as exc:
        return [Text(f"NPU dump: none ({exc})", style="warn")]
    if not files:
        steps = context.config.tf_dump_step or "all"
        return [
            Text(
                f"NPU dump: no dump file of {visible(ref.op.name)} in the newest run "
                f"({ref.debug}, TF_DUMP_STEP={steps})",
                style="warn",
            )
        ]
    return [item for step, file in files for item in _dump_renderables(ref.graph, ref.op, step, file, limit)]


# --- TF golden ----------------------------------------------------------------------------------


def golden_targets(graph: GraphDesc, op: Op, limit: int | None = None) -> tuple[list[tuple[str, int, TensorName]], int]:
    """``(kind, slot, TF tensor)`` for every data input and output of
    ``op`` (the first ``limit`` of each): the golden tensor ``vc`` compares it with
    (:func:`~precision_tool.compare.golden_pairing.golden_for`); and how many slots were left out."""
    targets, left_out = [], 0
    for kind, count in (("input", len(op.data_inputs)), ("output", max(len(op.output_descs), 1))):
        slots, hidden = head(range(count), limit)
        left_out += hidden
        for slot in slots:
            source = golden_for(graph, op, kind, slot)
            if source is not None:
                targets.append((kind, slot, source))
    return targets, left_out


def golden_row(golden, kind: str, slot: int, source: TensorName) -> node_info.TensorRow:
    """Statistics of the golden tensor ``source`` that ``kind:slot`` is compared with; a note
    instead when it is absent or bad."""
    label = f"{kind}:{slot} = {source}"
    try:
        entry = golden.entry(*source)
        array = golden.lookup(*source)
    except PrecisionToolError as exc:
        return node_info.TensorRow(label, "", "", "", None, exc.problem)
    stats = tensor_stats(array, str(array.dtype))
    return node_info.TensorRow(label, entry.file_name, str(array.dtype), "", stats, node_info.stats_note(stats))


def golden_section(context: Context, graph: GraphDesc, op: Op, limit: int | None = None) -> list:
    """The TF golden tensors the op's inputs and outputs (the first ``limit`` of each) are
    compared with, or a line saying there are none."""
    try:
        golden = context.golden()
    except PrecisionToolError as exc:
        return [Text(f"TF golden: none ({exc})", style="warn")]
    targets, hidden = golden_targets(graph, op, limit)
    rows = [golden_row(golden, *target) for target in targets]
    return [node_info.tensor_table(f"TF golden ({golden.directory})", rows, "file", hidden)]


# --- subgraph -----------------------------------------------------------------------------------


def safe_part(text: str) -> str:
    """One dot-separated part of a file name (:func:`~precision_tool.formats.text.safe_file_name`
    with no dots of its own, at most :data:`MAX_PART_CHARS` characters)."""
    return safe_file_name(text.replace(".", "_"), limit=MAX_PART_CHARS)


def graph_file_stem(debug: str, graph: str, op_type: str, name: str, depth: int) -> str:
    """``{debug}.{graph}.{type}.{name}.{depth}``, each part made safe for a file name."""
    return ".".join([safe_part(debug), safe_part(graph), safe_part(op_type), safe_part(name), str(depth)])


def _cosines_line(newest: NewestResult, rule: FlagRule) -> Text:
    if newest.directory is None:
        return Text(
            "colours: no comparison result yet, so every op is grey (run 'vc', then 'ni -s' again)", style="warn"
        )
    legend = Text(", ").join(
        Text(f"{look.marker} {look.label}".strip(), style=look.style) for look in map(swatch, LEGEND_ORDER)
    )
    return Text.assemble(
        "colours (newest result ", (visible(str(newest.directory)), "path"), f"; flagged: {rule.describe()}): ", legend
    )


def subgraph_section(context: Context, ref: OpRef, depth: int) -> tuple[list, list]:
    """Write the depth-``depth`` neighbourhood (at most :data:`MAX_DRAWN_NODES` ops), coloured
    by the newest result; (renderables: the files, notes and the tree, written files)."""
    hood = neighbourhood(ref.graph, ref.op, depth, max_nodes=MAX_DRAWN_NODES)
    rule = FlagRule.from_config(context.config)
    newest = newest_result(context.output_dir, rule, partial(judged_rows, context))
    cosines = op_graph.node_cosines(hood, newest.ops)
    title = f"{ref.op.name} [{ref.op.type}]  depth {hood.depth}  ({ref.graph.name}, {ref.debug})"
    stem = graph_file_stem(ref.debug, ref.graph.name, ref.op.type, ref.op.name, depth)
    root = context.output
    written = write_digraph(
        root,
        op_graph.build_digraph(hood, title, cosines).source,
        root.path / "op_graph" / f"{stem}.gv",
        len(hood.nodes),
    )
    edges = sum(not e.control for e in hood.edges)
    files = ", ".join(visible(str(p)) for p in written.files)
    lines: list = [
        OneLineText(Text.assemble(f"subgraph: {len(hood.nodes)} ops, {edges} data edges -> ", (files, "path")))
    ]
    if hood.capped:
        lines.append(
            Text(
                f"depth {depth} reaches more than {MAX_DRAWN_NODES} ops: drawn to depth "
                f"{hood.depth} ({len(hood.nodes)} ops)",
                style="warn",
            )
        )
    if written.note:
        lines.append(Text(written.note, style="warn"))
    lines += [OneLine(f"warning: {error}", "warn") for error in newest.errors]
    lines += [_cosines_line(newest, rule), op_tree.neighbourhood_tree(hood, cosines)]
    return lines, written.files


# --- the command --------------------------------------------------------------------------------


def verdict_line(context: Context, ref: OpRef) -> Text | None:
    """The op's verdict in the newest result (the one every view gives), None without one."""
    rule = FlagRule.from_config(context.config)
    newest = newest_result(context.output_dir, rule, partial(judge_op_rows, context), only=ref.op.name)
    judged = newest.ops.get(ref.op.name)
    if newest.directory is None:
        return None
    if judged is None:
        return Text(f"verdict: not in the newest result ({visible(str(newest.directory))})", style="muted")
    look = swatch(node_state(judged))
    text = Text.assemble(("verdict: ", "title"))
    text.append_text(
        verdict_text(judged) if judged.flagged else Text(f"{look.marker} {look.label}".strip(), style=look.style)
    )
    return text.append(f"  (newest result {visible(str(newest.directory))})", style="muted")


def _graph_op_info(args, context: Context, ref: OpRef, verdict: Text | None, limit: int | None) -> list:
    """What ``ni`` shows of a graph op, but its neighbourhood."""
    op = ref.op
    out: list = [node_info.header(ref.debug, ref.graph.name, ref.model.name, op, ref.model.graph_id)]
    if verdict is not None:
        out.append(verdict)
    out.append(node_info.inputs_table(op, limit))
    control = node_info.control_line(op, limit)
    if control is not None:
        out.append(control)
    out.append(node_info.outputs_table(op, limit))
    out += dump_section(context, ref, limit)
    out += golden_section(context, ref.graph, op, limit)
    if args.all_attrs:
        out.append(node_info.attributes_table(op, limit))
    return out


def _node_info(args, context: Context, ref: OpRef) -> tuple[list, list]:
    """Everything ``ni`` shows of one op; (renderables, files written)."""
    limit = None if args.full else LIST_LIMIT
    verdict = verdict_line(context, ref)
    if msprobe_source(ref.model) is not None:  # a call of an msprobe dump: no GE graph facts
        from .ni_msprobe import call_report

        out = call_report(args, context, ref, verdict)
    else:
        out = _graph_op_info(args, context, ref, verdict, limit)
    files = []
    if args.depth is not None:
        lines, files = subgraph_section(context, ref, args.depth)
        out += lines
    return out, files


def _matches_line(name: str, refs: list[OpRef]) -> Text:
    graphs = ", ".join(graph_label(r) for r in refs)
    return Text(
        f"{len(refs)} graphs of {refs[0].debug} hold {visible(name)}: {visible(graphs)}; each is shown "
        "below (-g GRAPH shows one)",
        style="warn",
    )


def node_report(args, context: Context, name: str) -> CommandResult:
    """Node info of the op ``name`` (of every graph holding it); ``-a`` all attributes; ``-s D``
    its neighbourhood."""
    found = lookup_ops(context, name, graph=args.graph, debug=args.debug)
    refs, other_debugs = found.refs, found.other_debugs
    out: list = [Text(visible(found.note), style="warn")] if found.note else []
    if len(refs) > 1:
        out.append(_matches_line(refs[0].op.name, refs))
    files: list = []
    for number, ref in enumerate(refs, 1):
        if len(refs) > 1:
            out.append(
                Text(
                    f"-- {number}/{len(refs)}: {visible(ref.op.name)} in {visible(graph_label(ref))} [{ref.debug}] --",
                    style="title",
                )
            )
        shown, written = _node_info(args, context, ref)
        out += shown
        files += written
    if other_debugs:
        flags = ", ".join(f"-d {d}" for d in other_debugs)
        out.append(
            Text(f"{visible(refs[0].op.name)} is also in {', '.join(other_debugs)} ({flags} shows it)", style="muted")
        )
    return CommandResult(out, files=files)
