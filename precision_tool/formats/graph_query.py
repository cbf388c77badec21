"""Walks of a GE graph: the neighbourhood of an op, as the original precision_tool drew it.

The neighbourhood of depth D is the op itself, its producers up to D data edges upstream, its
consumers up to D data edges downstream, and the other producers of each of those consumers
(the next MatMul's weight and bias), with every edge between those ops: data edges port to
port, control edges. Each direction is followed on its own, so a sibling that only shares a
producer with the op is not part of it. This is at least what the original precision_tool
drew (its ``_gen_sub_graph``: producers D levels up, consumers, and the consumers' producers).
Rendering it (graphviz, a tree) is :mod:`precision_tool.render.op_graph`'s job.

Every walk is iterative (a 100k-op chain at depth 100000 needs no recursion), and a walk can be
capped: with ``max_nodes``, distances are added both ways one at a time, and the walk stops at
the last distance that keeps the ops within the cap (``depth`` is then smaller than
``requested_depth``; the root and its direct neighbours are always there).
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
    requested_depth: int = 0  # the depth asked for; ``depth`` is smaller when the cap cut it

    @property
    def capped(self) -> bool:
        """True when ``max_nodes`` stopped the walk before ``requested_depth``."""
        return self.depth < self.requested_depth


def _next_names(op: Op, step: int) -> list[str]:
    if step < 0:
        return [ref.src for ref in op.data_inputs]
    return [name for users in op.consumers for name, _ in users]


def _ring(graph: GraphDesc, frontier: list[Op], step: int, *seen: dict) -> dict[str, Op | None]:
    """The ops one data edge further from ``frontier`` (upstream: step -1), in none of ``seen``."""
    ring: dict[str, Op | None] = {}
    for op in frontier:
        for name in _next_names(op, step):
            if name not in ring and not any(name in known for known in seen):
                ring[name] = graph.get(name)
    return ring


def _side_candidates(
    graph: GraphDesc, ring: dict[str, Op | None], level: int, reached, pending: dict[str, tuple[Op | None, int]]
) -> dict[str, tuple[Op | None, int]]:
    """``pending`` without what the walks have ``reached`` now, plus the other producers of the
    downstream ops of ``ring`` (at ``level``): a consumer's weight and bias. A producer the
    walks reach later (a residual branch upstream) is theirs, not a side producer."""
    out = {name: entry for name, entry in pending.items() if not reached(name)}
    for op in ring.values():
        for ref in op.data_inputs if op is not None else ():
            if not reached(ref.src) and ref.src not in out:
                out[ref.src] = (graph.get(ref.src), level)
    return out


def _add(hood: Neighbourhood, ring: dict[str, Op | None], level: int) -> None:
    for name, op in ring.items():
        hood.nodes[name] = op
        hood.levels[name] = level


def _walk(graph: GraphDesc, hood: Neighbourhood, depth: int, max_nodes: int | None) -> None:
    """Breadth-first over data edges, a distance at a time in both directions, until ``depth``
    or until the next distance would pass ``max_nodes`` (past distance 1); then the side
    producers of the downstream ops."""
    up, down = [hood.root], [hood.root]
    side: dict[str, tuple[Op | None, int]] = {}
    for distance in range(1, depth + 1):
        above = _ring(graph, up, -1, hood.nodes)
        below = _ring(graph, down, +1, hood.nodes, above)
        reached = lambda name, above=above, below=below: name in hood.nodes or name in above or name in below  # noqa: E731
        candidates = _side_candidates(graph, below, distance, reached, side)
        grown = len(hood.nodes) + len(above) + len(below) + len(candidates)
        if max_nodes is not None and distance > 1 and grown > max_nodes:
            break
        _add(hood, above, -distance)
        _add(hood, below, distance)
        side, hood.depth = candidates, distance
        up = [op for op in above.values() if op is not None]
        down = [op for op in below.values() if op is not None]
        if not up and not down:
            hood.depth = depth  # nothing further either way: the whole depth is there
            break
    for name, (op, level) in side.items():
        hood.nodes[name], hood.levels[name] = op, level
        hood.side.add(name)


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


def neighbourhood(graph: GraphDesc, root: Op, depth: int, max_nodes: int | None = None) -> Neighbourhood:
    """The depth-``depth`` neighbourhood of ``root`` in ``graph`` (see the module docstring),
    cut to the distances that keep it within ``max_nodes`` ops when that is given.

    Nodes are in order: the root, then for each distance the ops upstream and those
    downstream, then the downstream ops' other producers.
    """
    depth = max(depth, 0)
    hood = Neighbourhood(root, 0, {root.name: root}, {root.name: 0}, requested_depth=depth)
    _walk(graph, hood, depth, max_nodes)
    _collect_edges(hood)
    return hood
