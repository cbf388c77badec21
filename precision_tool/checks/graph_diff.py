"""Graph similarity: how the Build graphs of ``npu/debug_0`` and ``npu/debug_1`` differ.

Sub-graphs are paired in three passes, each over the graphs the previous ones left:

1. by session graph id: the ``_session_graph_id`` attribute of the graph's ops (the first op
   that has one), else the graph's own ``_session_graph_id`` attribute;
2. by graph name;
3. by order (the n-th remaining graph of debug_0 with the n-th of debug_1).

Graphs still left over are listed as unpaired. Within a pair, ops are matched by name. Ops of
the types in :data:`SKIPPED_TYPES` are left out everywhere (diffs, one-side lists and the ratio):
the compiler inserts, renames and drops them between runs, and the dtype or format of a
constant (``Const`` and ``Constant``, both spellings GE uses) is chosen by its consumer, whose own
input then shows the difference. For every other op in both graphs, each input and output whose
dtype or format (layout) differs is reported, and a changed op type too.

Similarity ratio of a pair = ops identical on both sides (same type, same dtypes and formats on
every input and output) / ops in either graph (the union of names), 1.0 for two empty graphs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..context import Context
from ..formats.graph_model import GraphDesc, Model, Op, TensorDesc

SKIPPED_TYPES = frozenset(
    {
        "TransData",
        "Cast",
        "Recv",
        "Send",
        "Variable",
        "NetOutput",
        "NoOp",
        "Assign",
        "Constant",
        "Const",
        "StreamActive",
    }
)
LEFT, RIGHT = "debug_0", "debug_1"


@dataclass(frozen=True)
class TensorDiff:
    """One input or output of an op that differs between the two graphs (None: absent there)."""

    op: str
    kind: str  # "input" or "output"
    index: int
    left_dtype: str | None
    right_dtype: str | None
    left_format: str | None
    right_format: str | None

    @property
    def changed(self) -> tuple[str, ...]:
        """What differs: ``("dtype",)``, ``("format",)``, both, or ``("presence",)``."""
        if self.left_dtype is None or self.right_dtype is None:
            return ("presence",)
        return tuple(
            name
            for name, a, b in (
                ("dtype", self.left_dtype, self.right_dtype),
                ("format", self.left_format, self.right_format),
            )
            if a != b
        )


@dataclass(frozen=True)
class TypeDiff:
    """An op whose type differs between the two graphs."""

    op: str
    left_type: str
    right_type: str


@dataclass(frozen=True)
class GraphPairDiff:
    """The differences between one graph of debug_0 and its partner in debug_1.

    ``paired_by`` says how they were paired (``"session graph id 1_1"``, ``"graph name"``,
    ``"order"``); ``compared`` is the number of op names in either graph (skipped types left
    out) and ``same`` how many of them are identical on both sides.
    """

    left_graph: str
    right_graph: str
    paired_by: str
    tensor_diffs: tuple[TensorDiff, ...] = ()
    type_diffs: tuple[TypeDiff, ...] = ()
    only_left: tuple[str, ...] = ()
    only_right: tuple[str, ...] = ()
    compared: int = 0
    same: int = 0

    @property
    def ratio(self) -> float:
        """``same / compared``; 1.0 when neither graph has an op to compare."""
        return self.same / self.compared if self.compared else 1.0

    @property
    def differs(self) -> bool:
        """Whether anything differs between the two graphs."""
        return self.same != self.compared


@dataclass(frozen=True)
class GraphDiffResult:
    """What the graph similarity check found.

    ``missing`` lists the graph directories (of ``left_dir``/``right_dir``) that hold no Build
    graph: the check needs both. ``unpaired_left``/``unpaired_right`` are graphs without a partner.
    """

    left_dir: Path
    right_dir: Path
    missing: tuple[Path, ...] = ()
    pairs: tuple[GraphPairDiff, ...] = ()
    unpaired_left: tuple[str, ...] = ()
    unpaired_right: tuple[str, ...] = ()

    @property
    def present(self) -> bool:
        """Whether both debug dirs have Build graphs."""
        return not self.missing

    @property
    def found(self) -> bool:
        """Whether any difference was found."""
        return any(p.differs for p in self.pairs) or bool(self.unpaired_left) or bool(self.unpaired_right)


def session_graph_id(graph: GraphDesc) -> str | None:
    """The graph's session graph id: its first op's ``_session_graph_id``, else the graph's."""
    found = next((op.session_graph_id for op in graph.ops if op.session_graph_id), None)
    if found is None and graph.attrs.get("_session_graph_id") not in (None, ""):
        found = str(graph.attrs["_session_graph_id"])
    return found


def _take_pairs(left: list[GraphDesc], right: list[GraphDesc], key, label) -> list:
    """Pair graphs of ``left`` and ``right`` with equal, non-None ``key``; removes them (by
    identity: two graphs can be equal)."""
    by_key: dict[str, GraphDesc] = {}
    for graph in right:
        by_key.setdefault(key(graph), graph)
    pairs, taken = [], set()
    for graph in left:
        partner = by_key.pop(key(graph), None) if key(graph) is not None else None
        if partner is not None:
            pairs.append((graph, partner, label(graph)))
            taken.update((id(graph), id(partner)))
    left[:] = [g for g in left if id(g) not in taken]
    right[:] = [g for g in right if id(g) not in taken]
    return pairs


def pair_graphs(left: list[GraphDesc], right: list[GraphDesc]):
    """``(pairs, unpaired left, unpaired right)``; pairs are ``(left, right, paired_by)`` in the
    order of ``left`` (see the module doc for the passes)."""
    order = {id(g): n for n, g in enumerate(left)}
    left, right = list(left), list(right)
    pairs = _take_pairs(left, right, session_graph_id, lambda g: f"session graph id {session_graph_id(g)}")
    pairs += _take_pairs(left, right, lambda g: g.name, lambda g: "graph name")
    count = min(len(left), len(right))
    pairs += [(a, b, "order") for a, b in zip(left[:count], right[:count])]
    pairs.sort(key=lambda p: order[id(p[0])])
    return pairs, left[count:], right[count:]


def _desc_diffs(name: str, kind: str, left: list[TensorDesc], right: list[TensorDesc]) -> list[TensorDiff]:
    diffs = []
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        if a is None or b is None or a.dtype != b.dtype or a.layout != b.layout:
            diffs.append(TensorDiff(name, kind, index, a and a.dtype, b and b.dtype, a and a.layout, b and b.layout))
    return diffs


def _compared_ops(graph: GraphDesc) -> dict[str, Op]:
    return {op.name: op for op in graph.ops if op.type not in SKIPPED_TYPES}


def diff_graphs(left: GraphDesc, right: GraphDesc, paired_by: str = "") -> GraphPairDiff:
    """The differences between two graphs (see the module doc), in left's execution order."""
    left_ops, right_ops = _compared_ops(left), _compared_ops(right)
    skipped_right = {op.name for op in right.ops if op.type in SKIPPED_TYPES}
    skipped_left = {op.name for op in left.ops if op.type in SKIPPED_TYPES}
    tensors: list[TensorDiff] = []
    types: list[TypeDiff] = []
    same = 0
    for name, a in left_ops.items():
        b = right_ops.get(name)
        if b is None:
            continue
        found = _desc_diffs(name, "input", a.input_descs, b.input_descs) + _desc_diffs(
            name, "output", a.output_descs, b.output_descs
        )
        tensors += found
        if a.type != b.type:
            types.append(TypeDiff(name, a.type, b.type))
        same += not found and a.type == b.type
    only_left = tuple(n for n in left_ops if n not in right_ops and n not in skipped_right)
    only_right = tuple(n for n in right_ops if n not in left_ops and n not in skipped_left)
    compared = len(left_ops.keys() | right_ops.keys()) - len(
        (left_ops.keys() & skipped_right) | (right_ops.keys() & skipped_left)
    )
    return GraphPairDiff(
        left.name, right.name, paired_by, tuple(tensors), tuple(types), only_left, only_right, compared, same
    )


def _graphs(models: list[Model]) -> list[GraphDesc]:
    return [graph for model in models for graph in model.graphs]


def check_graph_diff(context: Context, left: str = LEFT, right: str = RIGHT) -> GraphDiffResult:
    """Compare the Build graphs of debug dirs ``left`` and ``right`` (debug_0 and debug_1).

    Data absent (``missing``) when either has no Build graph. Unreadable graph files raise
    PrecisionToolError.
    """
    dirs = context.data.graph_dir(left), context.data.graph_dir(right)
    sides = context.models(left), context.models(right)
    missing = tuple(d for d, models in zip(dirs, sides) if not models)
    if missing:
        return GraphDiffResult(*dirs, missing)
    pairs, lonely_left, lonely_right = pair_graphs(_graphs(sides[0]), _graphs(sides[1]))
    return GraphDiffResult(
        *dirs,
        (),
        tuple(diff_graphs(a, b, how) for a, b, how in pairs),
        tuple(g.name for g in lonely_left),
        tuple(g.name for g in lonely_right),
    )
