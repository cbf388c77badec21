"""Walks of a GE graph: the neighbourhood of an op, as the original precision_tool drew it.

The neighbourhood of depth D is the op itself, its producers up to D data edges upstream, its
consumers up to D data edges downstream, and the other producers of each of those consumers
(the next MatMul's weight and bias), with every edge between those ops: data edges port to
port, control edges. Each direction is followed on its own, so a sibling that only shares a
producer with the op is not part of it. This is at least what the original precision_tool
drew (its ``_gen_sub_graph``: producers D levels up, consumers, and the consumers' producers).
Rendering it (graphviz, a tree) is :mod:`precision_tool.render.op_graph`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .graph_model import GraphDesc, Op


@dataclass(frozen=True)
class Edge:
    """``src:src_index -> dst:dst_port`` (data input ``dst_port`` of dst), or a control edge."""

    src: str
    src_index: int
    dst: str
    dst_port: int
    control: bool = False


@dataclass
class Neighbourhood:
    """The ops around ``root``: ``nodes`` maps a name to its op (None when the graph lacks it)
    and ``levels`` to its signed distance (negative upstream, 0 the root, positive downstream;
    a consumer's other producer, listed in ``side``, has the level of the consumer it feeds)."""

    root: Op
    depth: int
    nodes: dict[str, Op | None] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    side: set[str] = field(default_factory=set)


def _walk(graph: GraphDesc, hood: Neighbourhood, step: int) -> None:
    """Breadth-first over data edges, upstream (step -1) or downstream (step +1)."""
    frontier = [hood.root]
    for distance in range(1, hood.depth + 1):
        reached = []
        for op in frontier:
            if step < 0:
                names = [ref.src for ref in op.data_inputs]
            else:
                names = [name for users in op.consumers for name, _ in users]
            for name in names:
                if name in hood.nodes:
                    continue
                hood.nodes[name] = found = graph.get(name)
                hood.levels[name] = step * distance
                if found is not None:
                    reached.append(found)
        frontier = reached


def _side_producers(graph: GraphDesc, hood: Neighbourhood) -> None:
    """Add the producers of every downstream op that the walks did not reach."""
    downstream = [(name, op) for name, op in hood.nodes.items()
                  if op is not None and hood.levels[name] > 0]
    for name, op in downstream:
        for ref in op.data_inputs:
            if ref.src not in hood.nodes:
                hood.nodes[ref.src] = graph.get(ref.src)
                hood.levels[ref.src] = hood.levels[name]
                hood.side.add(ref.src)


def _collect_edges(hood: Neighbourhood) -> None:
    for op in hood.nodes.values():
        if op is None:
            continue
        for port, ref in enumerate(op.data_inputs):
            if ref.src in hood.nodes:
                hood.edges.append(Edge(ref.src, ref.index, op.name, port))
        for ref in op.control_inputs:
            if ref.src in hood.nodes:
                hood.edges.append(Edge(ref.src, -1, op.name, -1, control=True))


def neighbourhood(graph: GraphDesc, root: Op, depth: int) -> Neighbourhood:
    """The depth-``depth`` neighbourhood of ``root`` in ``graph`` (see the module docstring).

    Nodes are in order: the root, then upstream ops by distance, then downstream ones, then
    the downstream ops' other producers.
    """
    hood = Neighbourhood(root, max(depth, 0), {root.name: root}, {root.name: 0})
    _walk(graph, hood, -1)
    _walk(graph, hood, +1)
    _side_producers(graph, hood)
    _collect_edges(hood)
    return hood
