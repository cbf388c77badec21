"""What ``ni KEY`` shows of an msprobe call (the NPU side of an msprobe data root, or its bench
side with ``-d bench``): the call, its module and stack, its tensors with the ``dump.json``
statistics and files, and its bench counterpart (:func:`~precision_tool.compare.msprobe_calls.
bench_counterpart`) with that call's tensors. ``-a`` is as for a graph op; ``-s D`` is
:mod:`.ni_report`'s, over the inferred edges."""

from __future__ import annotations

from rich.text import Text

from ..compare.msprobe_calls import bench_counterpart, call_tensors
from ..compare.workspace import MSPROBE_BENCH
from ..context import Context, OpRef
from ..errors import PrecisionToolError
from ..formats.msprobe_graph import msprobe_source
from ..render import call_info, node_info
from ..render.limits import LIST_LIMIT
from ..render.lines import OneLine, visible


def _tensor_tables(ref: OpRef, limit: int | None, title: str, links: bool = True) -> list:
    try:
        items = call_tensors(ref.model, ref.op)
    except PrecisionToolError as exc:
        return [OneLine(f"{title}: {exc}", "warn")]
    inputs = [i for i in items if i.kind == "input"]
    outputs = [i for i in items if i.kind == "output"]
    return [
        call_info.tensors_table(f"{title} inputs", ref.op, inputs, limit, links),
        call_info.tensors_table(f"{title} outputs", ref.op, outputs, limit, links),
    ]


def bench_section(context: Context, ref: OpRef, limit: int | None) -> list:
    """The bench call ``ref`` is compared with, and its tensors; or a line saying why none."""
    if ref.debug == MSPROBE_BENCH:
        return []
    found = bench_counterpart(context, ref)
    if found.ref is None:
        return [Text(f"bench: none ({visible(found.note)}; looked for {visible(found.how)})", style="warn")]
    bench = found.ref
    line = Text.assemble(
        ("bench: ", "title"),
        (visible(bench.op.name), "op.name"),
        f" in {visible(bench.graph.name)}",
        (f"  ({visible(found.how)})", "muted"),
    )
    return [line, *_tensor_tables(bench, limit, "bench", links=False)]


def call_report(args, context: Context, ref: OpRef, verdict: Text | None) -> list:
    """What ``ni`` shows of one msprobe call, but its neighbourhood (``-s``, which ``ni``
    draws for calls and graph ops alike). ``verdict`` is the call's line of the newest result
    (``ni``'s, shared with graph ops)."""
    limit = None if args.full else LIST_LIMIT
    source = msprobe_source(ref.model)
    assert source is not None  # only msprobe calls come here
    out: list = [call_info.header(ref.debug, ref.graph.name, ref.op, source)]
    if verdict is not None and ref.debug != MSPROBE_BENCH:  # a result judges the NPU side's calls
        out.append(verdict)
    out.append(call_info.stack_section(ref.op, limit))
    out += _tensor_tables(ref, limit, "dump.json")
    out.append(Text(call_info.INFERRED_NOTE, style="muted"))
    values = call_info.values_table(ref.op, limit)
    if values is not None:
        out.append(values)
    out += bench_section(context, ref, limit)
    out += [OneLine(f"warning: {problem}", "warn") for problem in source.problems]
    if args.all_attrs:
        out.append(node_info.attributes_table(ref.op, limit))
    return out
