"""An op's neighbourhood (:mod:`precision_tool.formats.graph_query`) rendered: as a graphviz
digraph of record nodes with per-port dtype and shape, data edges port to port and control
edges dashed, or as a rich tree. ``graphviz`` is imported only when a digraph is built, so the
shell starts fast; writing the files is :mod:`precision_tool.formats.digraph_files`' job.
"""

from __future__ import annotations

import re

from rich.text import Text
from rich.tree import Tree

from ..formats.digraph_files import MAX_RENDER_NODES
from ..formats.graph_model import Op, TensorDesc
from ..formats.graph_query import Edge, Neighbourhood, neighbourhood
from ..formats.text import shape_text

ROOT_FILL = "#ffd54f"
MISSING_FILL = "#eeeeee"
_RECORD_SPECIAL = re.compile(r'([{}|<>"\\])')
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


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


def _port_text(kind: str, index: int, desc: TensorDesc | None) -> str:
    if desc is None:
        return f"{kind}{index}"
    return f"{kind}{index} {short_dtype(desc.dtype)} {shape_text(desc.shape)}"


def record_label(op: Op) -> str:
    """The record label of ``op``: input ports on top, name and type, output ports below."""
    ins = [f"<in{j}> " + record_escape(_port_text("in", j, op.input_desc(j)))
           for j in range(len(op.data_inputs))]
    outs = [f"<out{i}> " + record_escape(_port_text(
        "out", i, op.output_desc(i)))
        for i in range(op.output_count)]
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
                                    op.input_desc(port)))
        if producer is not None and _expand(child, ref.src, left - 1, seen):
            _upstream(child, hood, producer, left - 1, seen)


def _other_inputs(branch: Tree, hood: Neighbourhood, consumer: Op, parent: str) -> None:
    """The consumer's inputs from other producers than ``parent`` (its weight, its bias)."""
    for port, ref in enumerate(consumer.data_inputs):
        if ref.src != parent:
            branch.add(_op_text("<-", f"in{port}", f"{ref.src}:{ref.index}", hood.nodes.get(ref.src),
                                consumer.input_desc(port)))


def _downstream(branch: Tree, hood: Neighbourhood, op: Op, left: int, seen: dict[str, int]) -> None:
    for index, users in enumerate(op.consumers):
        desc = op.output_desc(index)
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


__all__ = ["Edge", "MAX_RENDER_NODES", "Neighbourhood", "build_digraph", "neighbourhood",
           "neighbourhood_tree", "node_ids", "record_label", "shape_text"]
