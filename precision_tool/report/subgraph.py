"""The graph around the op to look at first, as inline SVG with every op filled by its verdict.

The neighbourhood, the graphviz digraph and each op's colour are
:mod:`precision_tool.render.op_graph`'s -- the same ones ``ni -s`` writes: every op filled by its
state in the one palette, an introducer also with its marker and a double border, the legend as a
cluster. With graphviz's ``dot`` installed the digraph is rendered by it; the SVG it prints is then
parsed, stripped of anything active (scripts, links, event attributes) and written back with every
text made :func:`~.escape.visible`, so the page stays self-contained and inert. Nodes are compact
(:func:`compact_digraph`: name, type, marker, the verdict's fill); the ports and shapes are each
node's hover text (:func:`ports_text`: an msprobe call also names its module), and an msprobe
dump's calls sit inside their module calls (dot clusters). Without ``dot``
(or when it fails) a simple layered drawing is made here with the same fills and borders: one row
per distance from the op, upstream above, downstream below, a consumer's other inputs in the row
above it. The page's script centres the drawing on the op when the page opens.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from ..compare.result_view import ResultView
from ..formats.digraph_files import MAX_RENDER_NODES
from ..formats.graph_model import GraphDesc, Op
from ..formats.graph_query import Neighbourhood
from ..formats.msprobe_graph import module_chain
from ..render.op_graph import NodeCosine, dot_text, module_tree, node_cosines, node_ids, port_text, string_escape
from ..render.palette import css_class
from .escape import esc, visible

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
_ALLOWED_TAGS = frozenset(
    {"svg", "g", "title", "polygon", "polyline", "path", "ellipse", "text", "a", "defs", "marker", "rect", "line"}
)
BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 170, 40, 18, 48, 16
MAX_BOX_CHARS = 24


def colours(hood: Neighbourhood, view: ResultView) -> dict[str, NodeCosine]:
    """Each op of ``hood`` with its state and cosine in ``view`` (``not compared`` when the
    result lacks it): :func:`~precision_tool.render.op_graph.node_cosines`."""
    return node_cosines(hood, {r.op.name: r.op for r in view.records})


def _cos(colour: NodeCosine) -> float:
    return math.nan if colour.cosine is None else colour.cosine


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _inert(element: ET.Element) -> None:
    """Drop disallowed children and active attributes; make every text visible, recursively."""
    for child in list(element):
        if _local(child.tag) not in _ALLOWED_TAGS:
            element.remove(child)
            continue
        _inert(child)
    for key in list(element.attrib):
        name = _local(key).lower()
        if name.startswith("on") or name in ("href", "style"):
            del element.attrib[key]
        else:
            element.attrib[key] = visible(element.attrib[key])
    element.text = visible(element.text) if element.text else element.text
    element.tail = visible(element.tail) if element.tail else element.tail


def _double_border(group: ET.Element) -> None:
    """A second frame 4 units outside the node's box: dot draws record nodes with one border
    whatever their ``peripheries``, and the double border is an introducer's second cue."""
    box = next(group.iter(f"{{{SVG_NS}}}polygon"), None)
    if box is None:
        return
    points = [tuple(float(v) for v in pair.split(",")) for pair in box.get("points", "").split()]
    if not points:
        return
    xs, ys = [x for x, _ in points], [y for _, y in points]
    x0, y0, x1, y1 = min(xs) - 4, min(ys) - 4, max(xs) + 4, max(ys) + 4
    ring = ET.Element(
        f"{{{SVG_NS}}}polygon",
        {
            "class": "outer",
            "fill": "none",
            "stroke": "black",
            "points": f"{x0},{y0} {x1},{y0} {x1},{y1} {x0},{y1} {x0},{y0}",
        },
    )
    parent = next(p for p in group.iter() if box in list(p))
    parent.insert(list(parent).index(box), ring)


def sanitise_svg(svg_text: str, hood: Neighbourhood, paint: dict[str, NodeCosine]) -> str:
    """dot's SVG made inert (see the module doc); each node group gets ``data-op`` (its op
    name), ``data-cos`` and ``data-state`` (its verdict). Raises ``ET.ParseError`` on text that
    is not XML."""
    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", XLINK_NS)
    root = ET.fromstring(svg_text.encode("utf-8"))
    if _local(root.tag) != "svg":
        raise ET.ParseError("not an SVG document")
    _inert(root)
    by_id = {node_id: name for name, node_id in node_ids(hood).items()}
    for group in root.iter(f"{{{SVG_NS}}}g"):
        title = group.find(f"{{{SVG_NS}}}title")
        name = by_id.get(title.text if title is not None else "")
        if group.get("class") == "node" and name is not None:
            group.set("data-op", visible(name))
            group.set("data-cos", repr(_cos(paint[name])))
            group.set("data-state", paint[name].verdict)
            if title is not None:  # the tooltip: the op's ports and shapes, not dot's node id
                title.text = "\n".join(visible(line) for line in ports_text(name, hood.nodes[name]).split("\n"))
            if paint[name].introduces:
                _double_border(group)
    root.set("class", "subgraph dot")
    return ET.tostring(root, encoding="unicode")


def ports_text(name: str, op: Op | None) -> str:
    """The hover text of a node: name and type, its module (an msprobe call), then one line
    per input and output port with its dtype, layout and shape."""
    if op is None:
        return f"{name}\n(not in this graph)"
    chain = module_chain(op)
    lines = [f"{name} [{op.type}]" + (f" in {chain[0]}" if chain else "")]
    lines += [port_text("in", j, op.input_desc(j)).replace("\n", "; ") for j in range(len(op.data_inputs))]
    lines += [port_text("out", i, op.output_desc(i)).replace("\n", "; ") for i in range(op.output_count)]
    return "\n".join(lines)


def compact_digraph(hood: Neighbourhood, title: str, paint: dict[str, NodeCosine]):
    """A ``graphviz.Digraph`` of ``hood`` with small boxes: the name (its tail when long), the
    type and the verdict's marker, filled by the verdict; an introducer with a thick border. The
    ports and shapes are the tooltip (:func:`ports_text`) and the pinned panel's, so eleven ops
    fit the width of a page instead of 1,900 px of port records."""
    import graphviz

    dot = graphviz.Digraph(name="op_graph", comment=dot_text(title))
    dot.attr(rankdir="TB", nodesep="0.25", ranksep="0.35")
    dot.attr("node", shape="box", style="filled", fontname="Helvetica", fontsize="10", margin="0.08,0.04", height="0.3")
    ids = node_ids(hood)
    for name, op in hood.nodes.items():
        colour = paint[name]
        kind = op.type if op is not None else "not in this graph"
        marker = f"{colour.marker} " if colour.marker else ""
        lines = (_short(name), f"{marker}{_short(kind, 18)}")
        label = graphviz.nohtml("\\n".join(string_escape(visible(line)) for line in lines))
        extra = {"penwidth": "3"} if colour.introduces or name == hood.root.name else {}
        dot.node(ids[name], label=label, fillcolor=colour.fill, **extra)
    for edge in hood.edges:
        dot.edge(ids[edge.src], ids[edge.dst], **({"style": "dashed"} if edge.control else {}))
    _modules(dot, module_tree(hood), ids)
    return dot


def _modules(parent, tree: dict, ids: dict[str, str], counter=None) -> None:
    """The msprobe module calls (:func:`~precision_tool.render.op_graph.module_tree`) as
    nested dashed clusters around the calls that ran in them, as ``ni -s`` draws them."""
    counter = counter if counter is not None else iter(range(1 << 30))
    for key, entry in tree.items():
        with parent.subgraph(name=f"cluster_module{next(counter)}") as cluster:
            cluster.attr(label=dot_text(key), style="rounded,dashed", color="#888888", fontsize="9", labeljust="l")
            for name in entry["ops"]:
                cluster.node(ids[name])
            _modules(cluster, entry["inner"], ids, counter)


def dot_svg(hood: Neighbourhood, title: str, paint: dict[str, NodeCosine]) -> tuple[str | None, str]:
    """(the neighbourhood rendered by ``dot``, ""), or (None, why not): no ``dot``, more than
    MAX_RENDER_NODES ops, or ``dot`` failed on the source."""
    if shutil.which("dot") is None:
        return None, "graphviz 'dot' is not installed"
    if len(hood.nodes) > MAX_RENDER_NODES:
        return None, f"{len(hood.nodes)} ops: too many for dot"
    import graphviz

    try:
        text = compact_digraph(hood, title, paint).pipe(format="svg", encoding="utf-8", quiet=True)
        return sanitise_svg(text, hood, paint), ""
    except (graphviz.ExecutableNotFound, subprocess.CalledProcessError, OSError, ET.ParseError) as exc:
        return None, f"dot could not draw it ({type(exc).__name__})"


# --- without dot --------------------------------------------------------------------------


def _short(text: str, limit: int = MAX_BOX_CHARS) -> str:
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1) :]


def _row_of(hood: Neighbourhood, name: str) -> int:
    """The row of an op: its level, one row higher for a consumer's other producer (it feeds
    that consumer from above, as every input does, rather than sitting beside it like a chain)."""
    return hood.levels[name] - (1 if name in hood.side else 0)


def _lines(text: str) -> str:
    """Multi-line hover text escaped line by line (a newline stays a newline)."""
    return "\n".join(esc(line) for line in text.split("\n"))


def _layout(hood: Neighbourhood) -> dict[str, tuple[float, float]]:
    """Top-left corner of each op's box: one row per level, rows centred."""
    rows: dict[int, list[str]] = {}
    for name in hood.nodes:
        rows.setdefault(_row_of(hood, name), []).append(name)
    widest = max(len(names) for names in rows.values())
    full = widest * (BOX_W + GAP_X) - GAP_X
    places = {}
    for row, level in enumerate(sorted(rows)):
        names = rows[level]
        start = MARGIN + (full - (len(names) * (BOX_W + GAP_X) - GAP_X)) / 2
        for k, name in enumerate(names):
            places[name] = (start + k * (BOX_W + GAP_X), MARGIN + row * (BOX_H + GAP_Y))
    return places


def _box(name: str, op: Op | None, corner: tuple[float, float], colour: NodeCosine, is_root: bool) -> str:
    x, y = corner
    kind = op.type if op is not None else "not in this graph"
    css = "node root" if is_root else "node"
    inner = (
        f'<rect class="inner" x="{x + 3:.1f}" y="{y + 3:.1f}" width="{BOX_W - 6}" '
        f'height="{BOX_H - 6}" rx="2" fill="none"/>'
        if colour.introduces
        else ""
    )
    marker = f"{colour.marker} " if colour.marker else ""
    return (
        f'<g class="{css} {css_class(colour.verdict)}" data-op="{esc(name)}" data-cos="{_cos(colour)!r}" '
        f'data-state="{esc(colour.verdict)}"><title>{_lines(ports_text(name, op))}</title>'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{BOX_W}" height="{BOX_H}" rx="4" '
        f'fill="{colour.fill}"/>{inner}'
        f'<text x="{x + BOX_W / 2:.1f}" y="{y + 18:.1f}" text-anchor="middle">'
        f"{esc(_short(name))}</text>"
        f'<text class="sub" x="{x + BOX_W / 2:.1f}" y="{y + 35:.1f}" text-anchor="middle">'
        f"{esc(marker + _short(kind, 18))}</text></g>"
    )


def _edge(src: tuple[float, float], dst: tuple[float, float], control: bool, marker: str) -> str:
    x1, y1 = src[0] + BOX_W / 2, src[1] + BOX_H
    x2, y2 = dst[0] + BOX_W / 2, dst[1]
    if y2 <= y1:  # same row or upwards: leave from the side
        x1, y1, x2, y2 = src[0] + BOX_W, src[1] + BOX_H / 2, dst[0], dst[1] + BOX_H / 2
    css = "edge control" if control else "edge"
    return f'<path class="{css}" d="M{x1:.1f},{y1:.1f} L{x2:.1f},{y2:.1f}" marker-end="url(#{marker})"/>'


def layered_svg(hood: Neighbourhood, paint: dict[str, NodeCosine], section: int) -> str:
    """The neighbourhood drawn without graphviz: boxes in rows by distance, straight edges."""
    places = _layout(hood)
    width = max(x for x, _ in places.values()) + BOX_W + MARGIN
    height = max(y for _, y in places.values()) + BOX_H + MARGIN
    marker = f"arrow-{section}"
    body = [
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>'
    ]
    body += [_edge(places[e.src], places[e.dst], e.control, marker) for e in hood.edges]
    body += [_box(name, op, places[name], paint[name], name == hood.root.name) for name, op in hood.nodes.items()]
    return (
        f'<svg class="subgraph layered" xmlns="{SVG_NS}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}">' + "".join(body) + "</svg>"
    )


@dataclass(frozen=True)
class DrawnGraph:
    """The SVG of a neighbourhood, how it was drawn (``dot`` or ``layered``), and why not by
    dot when it was not (empty when dot was not asked for)."""

    svg: str
    how: str
    note: str = ""


def subgraph_svg(
    graph: GraphDesc, hood: Neighbourhood, view: ResultView, section: int, use_dot: bool = True
) -> DrawnGraph:
    """``hood`` filled by ``view``'s verdict: by dot when ``use_dot`` and it can, else layered."""
    paint = colours(hood, view)
    title = f"{hood.root.name} [{hood.root.type}]  depth {hood.depth}  ({graph.name})"
    if use_dot:
        svg, why = dot_svg(hood, title, paint)
        if svg is not None:
            return DrawnGraph(svg, "dot")
        return DrawnGraph(layered_svg(hood, paint, section), "layered", why)
    return DrawnGraph(layered_svg(hood, paint, section), "layered")
