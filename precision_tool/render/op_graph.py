"""An op's neighbourhood in its graph: as a graphviz digraph (``.gv`` / ``.svg``) or a rich tree.

The neighbourhood of depth D is the op itself, its producers up to D data edges upstream, its
consumers up to D data edges downstream, and the other producers of each of those consumers
(the next MatMul's weight and bias), with every edge between those ops: data edges port to
port, control edges dashed. Each direction is followed on its own, so a sibling that only shares
a producer with the op is not part of it. This draws at least what the original precision_tool
drew (its ``_gen_sub_graph``: producers D levels up, consumers, and the consumers' producers).
``graphviz`` is imported only when a digraph is built, so the shell starts fast.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text
from rich.tree import Tree

from ..formats.graph_model import GraphDesc, Op, TensorDesc

ROOT_FILL = "#ffd54f"
MISSING_FILL = "#eeeeee"
MAX_RENDER_NODES = 1500  # dot takes minutes beyond this; the .gv is still written
_RECORD_SPECIAL = re.compile(r'([{}|<>"\\])')
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


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


def _lookup(graph: GraphDesc, name: str) -> Op | None:
    return graph.op(name) if name in graph else None


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
                hood.nodes[name] = found = _lookup(graph, name)
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
                hood.nodes[ref.src] = _lookup(graph, ref.src)
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


# --- graphviz -----------------------------------------------------------------------------------


def record_escape(text: str) -> str:
    """``text`` safe inside a record label: ``{ } | < > "`` and backslash escaped, control
    characters replaced by spaces."""
    return _RECORD_SPECIAL.sub(r"\\\1", _CONTROL_CHARS.sub(" ", text))


def string_escape(text: str) -> str:
    """``text`` safe inside a quoted DOT string that is not a record label (tooltips, titles)."""
    return _CONTROL_CHARS.sub(" ", text).replace("\\", "\\\\").replace('"', '\\"')


def short_dtype(dtype: str | None) -> str:
    """``DT_FLOAT16`` -> ``FLOAT16``; ``?`` when unknown."""
    return (dtype or "?").removeprefix("DT_")


def shape_text(shape) -> str:
    """A shape as ``[2,8,8,3]``; ``[]`` for a scalar, ``?`` when unknown."""
    return "?" if shape is None else "[" + ",".join(str(d) for d in shape) + "]"


def _port_text(kind: str, index: int, desc: TensorDesc | None) -> str:
    if desc is None:
        return f"{kind}{index}"
    return f"{kind}{index} {short_dtype(desc.dtype)} {shape_text(desc.shape)}"


def input_desc(op: Op, port: int) -> TensorDesc | None:
    """The desc of data input ``port`` of ``op`` (None when the graph has none for it)."""
    refs = op.data_inputs
    slot = refs[port].slot if port < len(refs) else None
    slot = port if slot is None else slot
    return op.input_descs[slot] if 0 <= slot < len(op.input_descs) else None


def output_count(op: Op) -> int:
    """How many output ports ``op`` has: described or consumed."""
    return max(len(op.output_descs), len(op.consumers))


def record_label(op: Op) -> str:
    """The record label of ``op``: input ports on top, name and type, output ports below."""
    ins = [f"<in{j}> " + record_escape(_port_text("in", j, input_desc(op, j)))
           for j in range(len(op.data_inputs))]
    outs = [f"<out{i}> " + record_escape(_port_text(
        "out", i, op.output_descs[i] if i < len(op.output_descs) else None))
        for i in range(output_count(op))]
    fields = [record_escape(op.name) + "\\n" + record_escape(op.type)]
    if ins:
        fields.insert(0, "{" + "|".join(ins) + "}")
    if outs:
        fields.append("{" + "|".join(outs) + "}")
    return "{" + "|".join(fields) + "}"


def node_ids(hood: Neighbourhood) -> dict[str, str]:
    """DOT node ids (``n0`` is the root): op names may hold ``:``, which DOT reads as a port."""
    return {name: f"n{k}" for k, name in enumerate(hood.nodes)}


def _add_node(dot, node_id: str, name: str, op: Op | None, is_root: bool) -> None:
    if op is None:
        label = record_escape(name) + "\\n(not in this graph)"
        dot.node(node_id, label=label, tooltip=string_escape(name), style="dashed,filled",
                 fillcolor=MISSING_FILL)
    elif is_root:
        dot.node(node_id, label=record_label(op), tooltip=string_escape(name),
                 style="filled,bold", fillcolor=ROOT_FILL, penwidth="2")
    else:
        dot.node(node_id, label=record_label(op), tooltip=string_escape(name))


def _add_edge(dot, ids: dict[str, str], hood: Neighbourhood, edge: Edge) -> None:
    src, dst = ids[edge.src], ids[edge.dst]
    if edge.control:
        dot.edge(src, dst, style="dashed", arrowhead="odot")
        return
    # compass points: out of the bottom of an output port, into the top of an input port
    src_port = f"{src}:out{edge.src_index}:s" if hood.nodes[edge.src] is not None else src
    dot.edge(src_port, f"{dst}:in{edge.dst_port}:n")


def build_digraph(hood: Neighbourhood, title: str):
    """A ``graphviz.Digraph`` of ``hood``: record nodes with per-port dtype and shape, the root
    filled, data edges ``producer:out_i -> consumer:in_j``, control edges dashed."""
    import graphviz

    dot = graphviz.Digraph(name="op_graph", comment=string_escape(title))
    dot.attr(rankdir="TB", labelloc="t", label=string_escape(title), fontsize="12")
    dot.attr("node", shape="record", fontname="Helvetica", fontsize="10")
    dot.attr("edge", fontsize="9")
    ids = node_ids(hood)
    for name, op in hood.nodes.items():
        _add_node(dot, ids[name], name, op, name == hood.root.name)
    for edge in hood.edges:
        _add_edge(dot, ids, hood, edge)
    return dot


@dataclass
class WrittenGraph:
    """What :func:`write_digraph` wrote, and why there is no SVG when there is none."""

    gv: Path
    svg: Path | None = None
    note: str | None = None

    @property
    def files(self) -> list[Path]:
        """The files written: the ``.gv``, then the ``.svg`` when there is one."""
        return [p for p in (self.gv, self.svg) if p is not None]


def write_digraph(dot, gv_path: Path, node_count: int) -> WrittenGraph:
    """Save ``dot`` as ``gv_path``, and render it to ``.svg`` beside it when the ``dot`` program
    is installed (never with a shell, never opening a viewer)."""
    import graphviz

    gv_path.write_text(dot.source, encoding="utf-8")
    written = WrittenGraph(gv_path)
    if shutil.which("dot") is None:
        written.note = "graphviz 'dot' is not installed: no SVG (the .gv is written)"
    elif node_count > MAX_RENDER_NODES:
        written.note = f"{node_count} nodes: too many to render to SVG (the .gv is written)"
    else:
        svg_path = gv_path.with_suffix(".svg")
        try:
            graphviz.render("dot", "svg", gv_path, outfile=svg_path, quiet=True)
            written.svg = svg_path
        except (graphviz.ExecutableNotFound, subprocess.CalledProcessError, OSError) as exc:
            written.note = f"dot could not render the SVG: {exc}"
    return written


# --- text tree ----------------------------------------------------------------------------------


def _op_text(arrow: str, port: str, other: str, op: Op | None, desc: TensorDesc | None) -> Text:
    text = Text.assemble((f"{port} {arrow} ", "muted"), (other, "op.name"))
    if op is not None:
        text.append(f" [{op.type}]", style="op.type")
    if desc is not None:
        text.append(f" {short_dtype(desc.dtype)} {desc.layout} {shape_text(desc.shape)}",
                    style="muted")
    return text


def _expand(child: Tree, name: str, left: int, seen: dict[str, int]) -> bool:
    """Whether to expand ``name`` under ``child`` with ``left`` levels to go: not when it was
    already expanded at least as deep (a diamond would otherwise repeat whole subtrees)."""
    if left <= 0:
        return False
    if seen.get(name, -1) >= left:
        child.label.append(" (expanded above)", style="muted")
        return False
    seen[name] = left
    return True


def _upstream(branch: Tree, hood: Neighbourhood, op: Op, left: int, seen: dict[str, int]) -> None:
    for port, ref in enumerate(op.data_inputs):
        producer = hood.nodes.get(ref.src)
        child = branch.add(_op_text("<-", f"in{port}", f"{ref.src}:{ref.index}", producer,
                                    input_desc(op, port)))
        if producer is not None and _expand(child, ref.src, left - 1, seen):
            _upstream(child, hood, producer, left - 1, seen)


def _other_inputs(branch: Tree, hood: Neighbourhood, consumer: Op, parent: str) -> None:
    """The consumer's inputs from other producers than ``parent`` (its weight, its bias)."""
    for port, ref in enumerate(consumer.data_inputs):
        if ref.src != parent:
            branch.add(_op_text("<-", f"in{port}", f"{ref.src}:{ref.index}", hood.nodes.get(ref.src),
                                input_desc(consumer, port)))


def _downstream(branch: Tree, hood: Neighbourhood, op: Op, left: int, seen: dict[str, int]) -> None:
    for index, users in enumerate(op.consumers):
        desc = op.output_descs[index] if index < len(op.output_descs) else None
        for name, slot in users:
            consumer = hood.nodes.get(name)
            child = branch.add(_op_text("->", f"out{index}", f"{name}:in{slot}", consumer, desc))
            if consumer is None:
                continue
            _other_inputs(child, hood, consumer, op.name)
            if _expand(child, name, left - 1, seen):
                _downstream(child, hood, consumer, left - 1, seen)


def neighbourhood_tree(hood: Neighbourhood) -> Tree:
    """``hood`` as a rich tree: the root, its producers (upstream) and consumers (downstream)."""
    root = hood.root
    tree = Tree(Text.assemble((root.name, "op.name"), (f" [{root.type}]", "op.type")))
    up = tree.add(Text(f"upstream (producers, depth {hood.depth})", style="title"))
    down = tree.add(Text(f"downstream (consumers, depth {hood.depth})", style="title"))
    if hood.depth > 0:
        _upstream(up, hood, root, hood.depth, {root.name: hood.depth})
        _downstream(down, hood, root, hood.depth, {root.name: hood.depth})
    controls = [e.src for e in hood.edges if e.control and e.dst == root.name]
    if controls:
        tree.add(Text("control inputs: " + ", ".join(controls), style="muted"))
    return tree
