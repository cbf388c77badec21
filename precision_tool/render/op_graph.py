"""An op's neighbourhood (:mod:`precision_tool.formats.graph_query`) as a graphviz digraph.

Each op is a record node: its input ports on top and output ports below, each with the device
dtype, format and shape and the host (origin) format and shape; in the middle the name, the type
and the newest result's output cosine. Nodes are filled by that result's verdict in the one
palette (:mod:`.palette`: introduces, inherits, non-finite, beyond rounding, clean, not
compared), an introducer also with its marker and a thick border; the op itself has a bold
border. Data edges go port to port, control edges are dashed. The rich tree
of the same neighbourhood is :mod:`.op_tree`'s; writing the files is
:mod:`precision_tool.formats.digraph_files`' job. ``graphviz`` is imported only when a digraph is
built, so the shell starts fast.

Every attribute value that holds text from the data goes through :func:`dot_text` (or, for
record labels, :func:`record_escape`): made :func:`~.lines.visible`, escaped for a quoted DOT
string, and marked as no HTML-like label (``graphviz.nohtml``), so a name such as
``<script>...</script>`` or ``a" URL="javascript:...`` stays one quoted string.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..compare.divergence import OpCosines
from ..compare.verdict import CLEAN, NEAR, NONFINITE
from ..compare.verdict import NOT_COMPARED as NOT_COMPARED_STATE
from ..formats.digraph_files import MAX_RENDER_NODES
from ..formats.graph_model import Op, TensorDesc
from ..formats.graph_query import Edge, Neighbourhood, neighbourhood
from ..formats.msprobe_graph import module_chain
from ..formats.text import shape_text
from .lines import visible
from .palette import INTRODUCES, LEGEND_ORDER, swatch

MISSING_FILL = "#eeeeee"  # an op named by an edge but absent from the graph
_RECORD_SPECIAL = re.compile(r'([{}|<>"\\])')
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


# --- the newest result's verdict per op ---------------------------------------------------------


@dataclass(frozen=True)
class NodeCosine:
    """How one op is coloured: ``verdict`` (an op state of :mod:`~precision_tool.compare.verdict`,
    or ``non-finite`` / ``near`` for an op not flagged) and its lowest output cosine in the
    newest result (None when it has none)."""

    verdict: str
    cosine: float | None = None

    @property
    def fill(self) -> str:
        return swatch(self.verdict).colour

    @property
    def marker(self) -> str:
        """The state's second cue (``▲`` for an introducer), empty for clean ops."""
        return swatch(self.verdict).marker

    @property
    def introduces(self) -> bool:
        return self.verdict == INTRODUCES

    def text(self, sep: str = " ") -> str:
        """``cos 0.363075``, ``cos NaN``, or ``not compared`` (``sep`` after ``cos``: ``=`` keeps
        the value with it where text wraps between words)."""
        if self.verdict == NOT_COMPARED_STATE and self.cosine is None:
            return "not compared"
        value = "NaN" if self.cosine is None or math.isnan(self.cosine) else f"{self.cosine:.6f}"
        return f"cos{sep}{value}"


NOT_COMPARED = NodeCosine(NOT_COMPARED_STATE)


def node_state(op: OpCosines) -> str:
    """The state an op is drawn in: its verdict, with ``non-finite`` and ``near`` told apart
    among the ops not flagged (the one rule: :attr:`OpCosines.state`)."""
    state = op.state
    if state == CLEAN:
        if any(t.state(op.rule) == NONFINITE for t in op.outputs):  # a golden that is not finite
            return NONFINITE
        return NEAR if op.near else CLEAN
    return state


def node_cosine(op: OpCosines | None) -> NodeCosine:
    """The colour of an op of the newest result (None: the result does not have it)."""
    if op is None:
        return NOT_COMPARED
    worst = op.worst_output
    if worst is None and not op.flagged:
        return NodeCosine(NOT_COMPARED_STATE, math.nan if op.outputs else None)
    return NodeCosine(node_state(op), worst)


def node_cosines(hood: Neighbourhood, ops: dict[str, OpCosines]) -> dict[str, NodeCosine]:
    """Each op of ``hood`` with its colour from ``ops`` (the newest result, by NPU op name)."""
    return {name: node_cosine(ops.get(name)) for name in hood.nodes}


# --- escaping -------------------------------------------------------------------------------


def record_escape(text: str) -> str:
    """``text`` safe inside a record label: made visible (``\\x1b``, ``\\u202e``), then
    ``{ } | < > "`` and backslash escaped."""
    return _RECORD_SPECIAL.sub(r"\\\1", visible(text))


def string_escape(text: str) -> str:
    """``text`` safe inside a quoted DOT string: backslash and ``"`` escaped, control characters
    replaced by spaces."""
    return _CONTROL_CHARS.sub(" ", text).replace("\\", "\\\\").replace('"', '\\"')


def dot_text(text: str):
    """An attribute value from the data: visible, escaped, and never read as an HTML-like
    ``<...>`` label (graphviz then always writes it quoted)."""
    import graphviz

    return graphviz.nohtml(string_escape(visible(text)))


def short_dtype(dtype: str | None) -> str:
    """``DT_FLOAT16`` -> ``FLOAT16``; ``?`` when unknown."""
    return (dtype or "?").removeprefix("DT_")


# --- the digraph ------------------------------------------------------------------------------


def device_text(desc: TensorDesc) -> str:
    """``FLOAT16 NC1HWC0 [4,2,12,12,16]``: the tensor as the NPU stores it."""
    return f"{short_dtype(desc.dtype)} {desc.layout or '?'} {shape_text(desc.shape)}"


def host_text(desc: TensorDesc) -> str:
    """``host NHWC [4,12,12,24]``: the origin (host) view; empty when the graph gives none."""
    parts = [part for part in (desc.origin_format, shape_text(desc.origin_shape, "")) if part]
    return "host " + " ".join(parts) if parts else ""


def port_text(kind: str, index: int, desc: TensorDesc | None) -> str:
    """``in0 FLOAT16 NC1HWC0 [4,2,12,12,16]``, then (a second line) ``host NHWC [4,12,12,24]``
    when the graph gives the origin view; raw text, escaped by the caller."""
    if desc is None:
        return f"{kind}{index}"
    host = host_text(desc)
    return f"{kind}{index} {device_text(desc)}" + (f"\n{host}" if host else "")


def _field(text: str) -> str:
    return "\\n".join(record_escape(line) for line in text.split("\n"))


def record_label(op: Op, cosine: NodeCosine | None = None) -> str:
    """The record label of ``op``: input ports on top, name, type and cosine, output ports below."""
    ins = [f"<in{j}> " + _field(port_text("in", j, op.input_desc(j))) for j in range(len(op.data_inputs))]
    outs = [f"<out{i}> " + _field(port_text("out", i, op.output_desc(i))) for i in range(op.output_count)]
    middle = [record_escape(op.name), record_escape(op.type)]
    if cosine is not None:
        if cosine.verdict != NOT_COMPARED_STATE:
            middle.append(record_escape(f"{cosine.marker} {cosine.verdict}".strip()))
        middle.append(record_escape(cosine.text()))
    fields = ["\\n".join(middle)]
    if ins:
        fields.insert(0, "{" + "|".join(ins) + "}")
    if outs:
        fields.append("{" + "|".join(outs) + "}")
    return "{" + "|".join(fields) + "}"


def node_ids(hood: Neighbourhood) -> dict[str, str]:
    """DOT node ids (``n0`` is the root): op names may hold ``:``, which DOT reads as a port."""
    return {name: f"n{k}" for k, name in enumerate(hood.nodes)}


def _add_node(dot, node_id: str, name: str, op: Op | None, is_root: bool, cosine: NodeCosine | None) -> None:
    import graphviz

    if op is None:
        label = graphviz.nohtml(string_escape(visible(name)) + "\\n(not in this graph)")
        dot.node(
            node_id, label=label, tooltip=dot_text(name), shape="box", style="dashed,filled", fillcolor=MISSING_FILL
        )
        return
    introducer = cosine is not None and cosine.introduces
    style = "filled,bold" if is_root or introducer else "filled"
    fill = cosine.fill if cosine is not None else MISSING_FILL
    extra = {"penwidth": "3"} if is_root or introducer else {}
    if introducer:  # the second cue besides the fill and the marker: a thick dark border (dot
        extra["color"] = swatch(INTRODUCES).text_colour  # draws no double border on records)
    dot.node(
        node_id,
        label=graphviz.nohtml(record_label(op, cosine)),
        tooltip=dot_text(name),
        style=style,
        fillcolor=fill,
        **extra,
    )


def _add_edge(dot, ids: dict[str, str], hood: Neighbourhood, edge: Edge) -> None:
    src, dst = ids[edge.src], ids[edge.dst]
    if edge.control:
        dot.edge(src, dst, style="dashed", arrowhead="odot")
        return
    # compass points: out of the bottom of an output port, into the top of an input port
    src_port = f"{src}:out{edge.src_index}:s" if hood.nodes[edge.src] is not None else src
    dot.edge(src_port, f"{dst}:in{edge.dst_port}:n")


def build_digraph(hood: Neighbourhood, title: str, cosines: dict[str, NodeCosine] | None = None, legend: bool = True):
    """A ``graphviz.Digraph`` of ``hood``: record nodes with per-port device and host views, the
    root in bold, each node filled by ``cosines`` (grey without) with a legend of the colours
    (unless ``legend`` is False: a page that has its own), data edges
    ``producer:out_i -> consumer:in_j``, control edges dashed."""
    import graphviz

    dot = graphviz.Digraph(name="op_graph", comment=dot_text(title))
    dot.attr(rankdir="TB", labelloc="t", label=dot_text(title), fontsize="12")
    dot.attr("node", shape="record", fontname="Helvetica", fontsize="10")
    dot.attr("edge", fontsize="9")
    ids = node_ids(hood)
    for name, op in hood.nodes.items():
        _add_node(
            dot,
            ids[name],
            name,
            op,
            name == hood.root.name,
            None if cosines is None else cosines.get(name, NOT_COMPARED),
        )
    for edge in hood.edges:
        _add_edge(dot, ids, hood, edge)
    _add_modules(dot, hood, ids)
    if cosines is not None and legend:
        _add_legend(dot)
    return dot


def module_tree(hood: Neighbourhood) -> dict:
    """The msprobe module calls the ops of ``hood`` ran in, as a tree: module call key ->
    ``{"ops": [op names], "inner": {key: ...}}``, outermost modules at the top; empty for a GE
    graph (its ops run in no module)."""
    tree: dict = {}
    for name, op in hood.nodes.items():
        chain = module_chain(op) if op is not None else ()
        if not chain:
            continue
        level = tree
        for key in reversed(chain[1:]):
            level = level.setdefault(key, {"ops": [], "inner": {}})["inner"]
        level.setdefault(chain[0], {"ops": [], "inner": {}})["ops"].append(name)
    return tree


def _add_modules(dot, hood: Neighbourhood, ids: dict[str, str]) -> None:
    """Each module call as a cluster around the calls that ran in it (nested as the modules
    are), so an msprobe neighbourhood shows the module tree around its dataflow."""
    counter = iter(range(1 << 30))

    def add(parent, tree: dict) -> None:
        for key, entry in tree.items():
            with parent.subgraph(name=f"cluster_module{next(counter)}") as cluster:
                cluster.attr(label=dot_text(key), style="rounded,dashed", color="#888888", fontsize="9", labeljust="l")
                for name in entry["ops"]:
                    cluster.node(ids[name])
                add(cluster, entry["inner"])

    add(dot, module_tree(hood))


def _add_legend(dot) -> None:
    """One small node per state, filled with its colour and named with its marker and words."""
    with dot.subgraph(name="cluster_legend") as legend:
        legend.attr(label="verdict", fontsize="10", style="dashed", color="#999999")
        for k, state in enumerate(LEGEND_ORDER):
            look = swatch(state)
            legend.node(
                f"legend{k}",
                label=dot_text(f"{look.marker} {look.label}".strip()),
                shape="box",
                style="filled",
                fillcolor=look.colour,
                fontsize="9",
            )


__all__ = [
    "Edge",
    "MAX_RENDER_NODES",
    "Neighbourhood",
    "NodeCosine",
    "build_digraph",
    "device_text",
    "dot_text",
    "host_text",
    "neighbourhood",
    "node_cosines",
    "node_ids",
    "record_label",
    "shape_text",
]
