"""Finding ops by the name a user types (exact, then ``/``-``_`` equivalent, then substring),
in the graphs ``-g`` names.

``-g GRAPH`` names a graph or model (its name), a graph dump file (its file name), a GE graph id
(the ``31`` of ``ge_proto_00000001_graph_31_Build.txt``), or a compilation stage other than
Build (``PreRunBegin``), whose graph dumps are then read although ``ls``/``ni`` otherwise read
only the Build graphs.
"""

from __future__ import annotations

from ..context import Context, OpRef
from ..errors import PrecisionToolError
from ..formats.graph_names import BUILD_FILE_FORMS, BUILD_STAGE, graph_stages, parse_graph_file_name
from ..formats.tree import normalise_op_name

MAX_CANDIDATES = 10


def graph_label(ref: OpRef) -> str:
    """``name`` of the op's graph, with its GE graph id when the file name gives one."""
    graph_id = ref.model.graph_id
    return ref.graph.name if graph_id is None else f"{ref.graph.name} (graph id {graph_id})"


def _stage_of(context: Context, graph: str, debug: str | None) -> str | None:
    """The stage ``graph`` names: a stage present in a graph dir, or that of a dump file name."""
    parsed = parse_graph_file_name(graph)
    if parsed is not None:
        return parsed.stage
    for name in [debug] if debug else context.debug_names():
        directory = context.data.graph_dir(name)
        if directory.is_dir() and graph in graph_stages(directory):
            return graph
    return None


def _names_graph(ref: OpRef, graph: str, stage: str | None) -> bool:
    if stage is not None and graph == stage:
        return True  # the whole stage
    file_name = ref.model.source_path.name if ref.model.source_path else None
    graph_id = ref.model.graph_id
    return graph in (ref.graph.name, ref.model.name, file_name) or (
        graph_id is not None and graph == str(graph_id))


def graph_refs(context: Context, graph: str | None = None, debug: str | None = None) -> list[OpRef]:
    """Every op of the Build graphs, or only of those ``graph`` names (see the module doc).

    Raises:
        PrecisionToolError: ``graph`` names nothing loaded.
    """
    if not graph:
        return context.ops(debug)
    stage = _stage_of(context, graph, debug)
    refs = context.ops(debug, stage or BUILD_STAGE)
    kept = [r for r in refs if _names_graph(r, graph, stage)]
    if not kept and (stage or BUILD_STAGE) != BUILD_STAGE:
        raise PrecisionToolError(f"no graph named '{graph}' (no {stage} graph dump of that name)")
    if not kept:
        raise PrecisionToolError(f"no graph named '{graph}'")
    return kept


def _matches(refs: list[OpRef], name: str) -> list[OpRef]:
    exact = [r for r in refs if r.op.name == name]
    if exact:
        return exact
    key = normalise_op_name(name)
    same = [r for r in refs if normalise_op_name(r.op.name) == key]
    if same:
        return same
    lowered = key.lower()
    return [r for r in refs if lowered in normalise_op_name(r.op.name).lower()]


def find_ops(context: Context, name: str, graph: str | None = None,
             debug: str | None = None) -> tuple[list[OpRef], list[str]]:
    """Every op ``name`` designates in one debug dir, one per graph holding it, and the other
    debug dirs that hold it too (shown with ``-d``).

    Raises:
        PrecisionToolError: nothing matches, or several ops of different names do (the error
            lists them: the possible operators).
    """
    refs = graph_refs(context, graph, debug)
    if not refs:
        raise PrecisionToolError(f"no Build graph ({BUILD_FILE_FORMS}) under {context.data.npu} "
                                 f"to look '{name}' up in")
    found = _matches(refs, name)
    distinct = {(r.debug, r.graph.name, r.op.name): r for r in found}
    if not distinct:
        raise PrecisionToolError(f"no operator matches '{name}'")
    shown = sorted({r.op.name for r in found})
    if len(shown) > 1:
        more = f" (and {len(shown) - MAX_CANDIDATES} more)" if len(shown) > MAX_CANDIDATES else ""
        raise PrecisionToolError(
            f"'{name}' is ambiguous; possible operators: {', '.join(shown[:MAX_CANDIDATES])}{more}")
    first_debug = found[0].debug
    here = list({(r.graph.name, id(r.model)): r for r in found if r.debug == first_debug}.values())
    others = sorted({r.debug for r in found} - {first_debug})
    return here, others


def find_op(context: Context, name: str, graph: str | None = None, debug: str | None = None) -> OpRef:
    """The first op ``name`` designates (see :func:`find_ops`)."""
    return find_ops(context, name, graph, debug)[0][0]
