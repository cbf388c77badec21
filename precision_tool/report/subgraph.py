"""The graph around the op to look at first, as inline SVG with every op coloured by its cosine.

The neighbourhood and the graphviz digraph are :mod:`precision_tool.render.op_graph`'s (the
same ones ``ni -s`` writes); this module only fills each node by its worst output cosine. With
graphviz's ``dot`` installed the digraph is rendered by it; the SVG it prints is then parsed,
stripped of anything active (scripts, links, event attributes) and written back with every text
made :func:`~.escape.visible`, so the page stays self-contained and inert. Without ``dot`` (or
when it fails) a simple layered drawing is made here: one row per distance from the op,
upstream above, downstream below.
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
from ..render.op_graph import build_digraph, node_ids
from .escape import esc, visible
from .table import cosine_class

FILLS = {"good": "#c8e6c9", "bad": "#ef9a9a", "nan": "#fff59d", "none": "#eeeeee"}
SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
_ALLOWED_TAGS = frozenset({"svg", "g", "title", "polygon", "polyline", "path", "ellipse", "text",
                           "a", "defs", "marker", "rect", "line"})
BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 210, 46, 24, 56, 16
MAX_BOX_CHARS = 30


@dataclass(frozen=True)
class NodeColour:
    """How one op of the neighbourhood is drawn: its worst output cosine and class."""

    cosine: float
    css: str  # good / bad / nan / none (no compared output in this result)

    @property
    def fill(self) -> str:
        return FILLS[self.css]


def colours(hood: Neighbourhood, view: ResultView) -> dict[str, NodeColour]:
    """Each op of ``hood`` with its cosine in ``view`` (``none`` when the result lacks it)."""
    by_name = {r.op.name: r for r in view.records}
    out = {}
    for name in hood.nodes:
        record = by_name.get(name)
        if record is None or not record.outputs:
            out[name] = NodeColour(math.nan, "none")
        else:
            out[name] = NodeColour(record.cosine, cosine_class(record.cosine, view.threshold))
    return out


# --- with dot -----------------------------------------------------------------------------


def _dot_source(hood: Neighbourhood, title: str, paint: dict[str, NodeColour]):
    dot = build_digraph(hood, title)
    ids = node_ids(hood)
    for name, colour in paint.items():
        if hood.nodes[name] is None:
            continue  # keeps op_graph's dashed "not in this graph" look
        style = "filled,bold" if name == hood.root.name else "filled"
        dot.node(ids[name], style=style, fillcolor=colour.fill)  # DOT merges repeated node attrs
    return dot


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


def sanitise_svg(svg_text: str, hood: Neighbourhood, paint: dict[str, NodeColour]) -> str:
    """dot's SVG made inert (see the module doc); each node group gets ``data-op`` (its op
    name) and ``data-cos``. Raises ``ET.ParseError`` on text that is not XML."""
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
            group.set("data-cos", repr(paint[name].cosine))
            group.set("data-css", paint[name].css)
    root.set("class", "subgraph dot")
    return ET.tostring(root, encoding="unicode")


def dot_svg(hood: Neighbourhood, title: str, paint: dict[str, NodeColour]) -> tuple[str | None, str]:
    """(the neighbourhood rendered by ``dot``, ""), or (None, why not): no ``dot``, more than
    MAX_RENDER_NODES ops, or ``dot`` failed on the source."""
    if shutil.which("dot") is None:
        return None, "graphviz 'dot' is not installed"
    if len(hood.nodes) > MAX_RENDER_NODES:
        return None, f"{len(hood.nodes)} ops: too many for dot"
    import graphviz

    try:
        text = _dot_source(hood, title, paint).pipe(format="svg", encoding="utf-8", quiet=True)
        return sanitise_svg(text, hood, paint), ""
    except (graphviz.ExecutableNotFound, subprocess.CalledProcessError, OSError, ET.ParseError) as exc:
        return None, f"dot could not draw it ({type(exc).__name__})"


# --- without dot --------------------------------------------------------------------------


def _short(text: str, limit: int = MAX_BOX_CHARS) -> str:
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1):]


def _layout(hood: Neighbourhood) -> dict[str, tuple[float, float]]:
    """Top-left corner of each op's box: one row per level, rows centred."""
    rows: dict[int, list[str]] = {}
    for name in hood.nodes:
        rows.setdefault(hood.levels[name], []).append(name)
    widest = max(len(names) for names in rows.values())
    full = widest * (BOX_W + GAP_X) - GAP_X
    places = {}
    for row, level in enumerate(sorted(rows)):
        names = rows[level]
        start = MARGIN + (full - (len(names) * (BOX_W + GAP_X) - GAP_X)) / 2
        for k, name in enumerate(names):
            places[name] = (start + k * (BOX_W + GAP_X), MARGIN + row * (BOX_H + GAP_Y))
    return places


def _box(name: str, op: Op | None, corner: tuple[float, float], colour: NodeColour,
         is_root: bool) -> str:
    x, y = corner
    kind = op.type if op is not None else "not in this graph"
    cos = "" if colour.css == "none" else f" \u00b7 cos {colour.cosine:.6f}"
    css = "node root" if is_root else "node"
    return (f'<g class="{css}" data-op="{esc(name)}" data-cos="{colour.cosine!r}" '
            f'data-css="{colour.css}"><title>{esc(name)} [{esc(kind)}]</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{BOX_W}" height="{BOX_H}" rx="4" '
            f'fill="{colour.fill}"/>'
            f'<text x="{x + BOX_W / 2:.1f}" y="{y + 18:.1f}" text-anchor="middle">'
            f'{esc(_short(name))}</text>'
            f'<text class="sub" x="{x + BOX_W / 2:.1f}" y="{y + 35:.1f}" text-anchor="middle">'
            f'{esc(_short(kind, 18))}{cos}</text></g>')


def _edge(src: tuple[float, float], dst: tuple[float, float], control: bool, marker: str) -> str:
    x1, y1 = src[0] + BOX_W / 2, src[1] + BOX_H
    x2, y2 = dst[0] + BOX_W / 2, dst[1]
    if y2 <= y1:  # same row or upwards: leave from the side
        x1, y1, x2, y2 = src[0] + BOX_W, src[1] + BOX_H / 2, dst[0], dst[1] + BOX_H / 2
    css = "edge control" if control else "edge"
    return (f'<path class="{css}" d="M{x1:.1f},{y1:.1f} L{x2:.1f},{y2:.1f}" '
            f'marker-end="url(#{marker})"/>')


def layered_svg(hood: Neighbourhood, paint: dict[str, NodeColour], section: int) -> str:
    """The neighbourhood drawn without graphviz: boxes in rows by distance, straight edges."""
    places = _layout(hood)
    width = max(x for x, _ in places.values()) + BOX_W + MARGIN
    height = max(y for _, y in places.values()) + BOX_H + MARGIN
    marker = f"arrow-{section}"
    body = [f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>']
    body += [_edge(places[e.src], places[e.dst], e.control, marker) for e in hood.edges]
    body += [_box(name, op, places[name], paint[name], name == hood.root.name)
             for name, op in hood.nodes.items()]
    return (f'<svg class="subgraph layered" xmlns="{SVG_NS}" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}">' + "".join(body) + "</svg>")


@dataclass(frozen=True)
class DrawnGraph:
    """The SVG of a neighbourhood, how it was drawn (``dot`` or ``layered``), and why not by
    dot when it was not (empty when dot was not asked for)."""

    svg: str
    how: str
    note: str = ""


def subgraph_svg(graph: GraphDesc, hood: Neighbourhood, view: ResultView, section: int,
                 use_dot: bool = True) -> DrawnGraph:
    """``hood`` coloured by ``view``: by dot when ``use_dot`` and it can, else layered."""
    paint = colours(hood, view)
    title = f"{hood.root.name} [{hood.root.type}]  depth {hood.depth}  ({graph.name})"
    if use_dot:
        svg, why = dot_svg(hood, title, paint)
        if svg is not None:
            return DrawnGraph(svg, "dot")
        return DrawnGraph(layered_svg(hood, paint, section), "layered", why)
    return DrawnGraph(layered_svg(hood, paint, section), "layered")
