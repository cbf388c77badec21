"""Finding ops by the name a user types, in the graphs ``-g`` names: the NPU op name (exact,
then ``/``-``_`` equivalent), then the name of a TensorFlow op fused into it (users search by
the TF name: ``model/mlp/gelu/mul_3`` finds ``model/mlp/gelu/Gelu`` through its
``_datadump_original_op_names``), then a substring of either; a name that matches nothing gets
close names suggested. Every command that takes an op name (``ni``, ``ls -n``, ``why OP``) finds it
here, over a :class:`~.workspace.Workspace`, so explain/, report/ and the checks can too; what
a result row or a dump file names exactly is :meth:`.Workspace.find_op`'s.

``-g GRAPH`` names a graph file anywhere on disk (its path: a GE dump, atc's JSON under any name,
an ``.om``), a graph or model (its name), a graph file of a debug dir's ``graph/`` (its file
name, read even when the Build graphs there are others), a GE graph id (the ``31`` of
``ge_proto_00000001_graph_31_Build.txt``), or a compilation stage other than Build
(``PreRunBegin``), whose graph dumps are then read although ``ls``/``ni`` otherwise read only
the Build graphs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.graph_names import BUILD_FILE_FORMS, BUILD_STAGE, graph_stages, parse_graph_file_name
from ..formats.tree import normalise_op_name
from .workspace import OpRef, Workspace

MAX_CANDIDATES = 10
MAX_FULL_NAME_SCAN = 20000  # beyond this, close names are sought by the last part of names only


def graph_label(ref: OpRef) -> str:
    """``name`` of the op's graph, with its GE graph id when the file name gives one."""
    graph_id = ref.model.graph_id
    return ref.graph.name if graph_id is None else f"{ref.graph.name} (graph id {graph_id})"


def _stage_of(workspace: Workspace, graph: str, debug: str | None) -> str | None:
    """The stage ``graph`` names: a stage present in a graph dir, or that of a dump file name."""
    parsed = parse_graph_file_name(graph)
    if parsed is not None:
        return parsed.stage
    for name in [debug] if debug else workspace.debug_names():
        directory = workspace.data.graph_dir(name)
        if directory.is_dir() and graph in graph_stages(directory):
            return graph
    return None


def _names_graph(ref: OpRef, graph: str, stage: str | None) -> bool:
    if stage is not None and graph == stage:
        return True  # the whole stage
    file_name = ref.model.source_path.name if ref.model.source_path else None
    graph_id = ref.model.graph_id
    return graph in (ref.graph.name, ref.model.name, file_name) or (graph_id is not None and graph == str(graph_id))


def _debug_holding(workspace: Workspace, path: Path, debug: str | None) -> str:
    """The debug dir whose ``graph/`` holds ``path``, else ``debug``, else the first one (a
    graph file given by path is read with no data root too)."""
    try:
        names = workspace.debug_names()
        directories = [workspace.data.graph_dir(name).resolve() for name in names]
    except PrecisionToolError:
        names, directories = [], []
    for name, directory in zip(names, directories):
        if path.resolve().parent == directory:
            return name
    return debug or (names[0] if names else "debug_0")


def _file_refs(workspace: Workspace, path: Path, debug: str | None) -> list[OpRef]:
    model = workspace.graph_file(path)
    holder = _debug_holding(workspace, path, debug)
    return [OpRef(holder, model, g, op) for g in model.graphs for op in g.ops]


def _graph_dir_file(workspace: Workspace, name: str, debug: str | None) -> Path | None:
    """The file ``name`` in the ``graph/`` of ``debug`` (of any debug dir without one)."""
    if Path(name).name != name:
        return None  # a path, not a file name: had it been a file it would have been read
    for each in [debug] if debug else workspace.debug_names():
        path = workspace.data.graph_dir(each) / name
        if path.is_file():
            return path
    return None


def graph_file_given(graph: str | None) -> bool:
    """Whether ``-g GRAPH`` is a path to a graph file (read as it is, wherever it lies)."""
    return bool(graph) and Path(graph).expanduser().is_file()


def graph_refs(workspace: Workspace, graph: str | None = None, debug: str | None = None) -> list[OpRef]:
    """Every op of the Build graphs, or only of those ``graph`` names (see the module doc).

    Raises:
        PrecisionToolError: ``graph`` names nothing loaded, or a graph file that cannot be read.
    """
    if not graph:
        return workspace.ops(debug)
    if graph_file_given(graph):
        return _file_refs(workspace, Path(graph).expanduser(), debug)
    stage = _stage_of(workspace, graph, debug)
    refs = workspace.ops(debug, stage or BUILD_STAGE)
    kept = [r for r in refs if _names_graph(r, graph, stage)]
    if not kept and (in_dir := _graph_dir_file(workspace, graph, debug)) is not None:
        return _file_refs(workspace, in_dir, debug)
    if not kept and (stage or BUILD_STAGE) != BUILD_STAGE:
        raise PrecisionToolError(f"no graph named '{graph}' (no {stage} graph dump of that name)")
    if not kept:
        raise PrecisionToolError(f"no graph named '{graph}'")
    return kept


def _tf_names(ref: OpRef) -> list[str]:
    """The TF ops fused into the op (``_datadump_original_op_names``), other than itself."""
    return [n for n in ref.op.original_op_names or () if n != ref.op.name]


def _by_tf_name(refs: list[OpRef], test) -> list[tuple[OpRef, str]]:
    return [(r, tf) for r in refs for tf in _tf_names(r) if test(tf)]


def _matches(refs: list[OpRef], name: str) -> tuple[list[OpRef], str | None]:
    """The ops ``name`` designates, best tier first: the NPU name exactly, then ``/``-``_``
    equivalent, then a TF op fused into the op (its name exactly or equivalent), then a
    substring of NPU names, then of fused TF names. The second item is the TF name matched,
    when the op was found by one."""
    exact = [r for r in refs if r.op.name == name]
    if exact:
        return exact, None
    key = normalise_op_name(name)
    same = [r for r in refs if normalise_op_name(r.op.name) == key]
    if same:
        return same, None
    fused = _by_tf_name(refs, lambda tf: tf == name) or _by_tf_name(refs, lambda tf: normalise_op_name(tf) == key)
    if fused:
        return [r for r, _ in fused], fused[0][1]
    lowered = key.lower()
    inside = [r for r in refs if lowered in normalise_op_name(r.op.name).lower()]
    if inside:
        return inside, None
    fused = _by_tf_name(refs, lambda tf: lowered in normalise_op_name(tf).lower())
    tf_names = {tf for _, tf in fused}
    return [r for r, _ in fused], (fused[0][1] if len(tf_names) == 1 else None)


def fused_note(tf_name: str, op_name: str) -> str:
    """``model/mlp/gelu/mul_3 is fused into model/mlp/gelu/Gelu``."""
    return f"{tf_name} is fused into {op_name}"


@dataclass(frozen=True)
class Lookup:
    """What a name designates: one op per graph holding it (in one debug dir), the other debug
    dirs holding it too, and the TF op name it was found by when it is fused into the op."""

    refs: list[OpRef]
    other_debugs: list[str]
    tf_name: str | None = None

    @property
    def note(self) -> str | None:
        """``... is fused into ...`` when the op was found by a TF name fused into it."""
        return None if self.tf_name is None else fused_note(self.tf_name, self.refs[0].op.name)


def close_names(refs: list[OpRef], name: str, count: int = 5) -> list[str]:
    """NPU and fused TF op names that look like ``name`` (a typo, a wrong scope), each TF name
    with the op it is fused into: ``model/mlp/gelu/mul_3 (fused into model/mlp/gelu/Gelu)``."""
    shown: dict[str, str] = {}
    for ref in refs:
        shown.setdefault(ref.op.name, ref.op.name)
        for tf in _tf_names(ref):
            shown.setdefault(tf, f"{tf} (fused into {ref.op.name})")
    by_base: dict[str, list[str]] = {}
    for full in shown:
        by_base.setdefault(full.rsplit("/", 1)[-1], []).append(full)
    near = difflib.get_close_matches(name.rsplit("/", 1)[-1], list(by_base), n=count, cutoff=0.6)
    candidates = [full for base in near for full in by_base[base]]
    if len(shown) <= MAX_FULL_NAME_SCAN:
        candidates = difflib.get_close_matches(name, list(shown), n=count, cutoff=0.6) + candidates
    ranked = sorted(dict.fromkeys(candidates), key=lambda full: -difflib.SequenceMatcher(None, name, full).ratio())
    return [shown[full] for full in ranked[:count]]


def _no_match(refs: list[OpRef], name: str) -> PrecisionToolError:
    near = close_names(refs, name)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return PrecisionToolError(f"no operator matches '{name}'{hint}")


def lookup_ops(workspace: Workspace, name: str, graph: str | None = None, debug: str | None = None) -> Lookup:
    """Every op ``name`` designates in one debug dir, one per graph holding it, and the other
    debug dirs that hold it too (shown with ``-d``). ``name`` may be the NPU op name or the name
    of a TF op fused into it (``_datadump_original_op_names``).

    Raises:
        PrecisionToolError: nothing matches (the error suggests close names), or several ops of
            different names do (the error lists them: the possible operators).
    """
    refs = graph_refs(workspace, graph, debug)
    if not refs:
        raise PrecisionToolError(
            f"no Build graph ({BUILD_FILE_FORMS}) under {workspace.data.npu} to look '{name}' up in"
        )
    found, tf_name = _matches(refs, name)
    if not found:
        raise _no_match(refs, name)
    shown = sorted({r.op.name for r in found})
    if len(shown) > 1:
        more = f" (and {len(shown) - MAX_CANDIDATES} more)" if len(shown) > MAX_CANDIDATES else ""
        what = f"'{name}' is fused into several operators" if tf_name else f"'{name}' is ambiguous"
        raise PrecisionToolError(f"{what}; possible operators: {', '.join(shown[:MAX_CANDIDATES])}{more}")
    first_debug = found[0].debug
    here = list({(r.graph.name, id(r.model)): r for r in found if r.debug == first_debug}.values())
    others = sorted({r.debug for r in found} - {first_debug})
    return Lookup(here, others, tf_name)


def lookup_op(workspace: Workspace, name: str, graph: str | None = None, debug: str | None = None) -> OpRef:
    """The first op ``name`` designates (see :func:`lookup_ops`)."""
    return lookup_ops(workspace, name, graph, debug).refs[0]


def fused_tf_names(ref: OpRef, text: str) -> list[str]:
    """The TF ops fused into ``ref``'s op whose names contain ``text`` (case-insensitive), for
    ``ls -n``: a user searching by TensorFlow name finds the fused NPU op."""
    lowered = text.lower()
    return [tf for tf in _tf_names(ref) if lowered in tf.lower()]
