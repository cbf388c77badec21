"""How the page shows the one verdict: each op's state, its marker, the legend, and the
stylesheet rules that colour them.

Nothing is judged here. An op's state is the one ``ni -s`` draws
(:func:`~precision_tool.render.op_graph.node_cosine`: the verdict, with ``near`` and
``non-finite`` told apart among the ops not flagged), its colour, marker and words are the
palette's (:mod:`precision_tool.render.palette`), and the colours reach the page only as the CSS
variables :func:`~precision_tool.render.palette.css_variables` writes, so the page, the terminal,
``ni -s`` and Model Explorer cannot drift apart.
"""

from __future__ import annotations

from ..compare.divergence import OpCosines
from ..compare.verdict import INTRODUCES
from ..render.op_graph import node_cosine
from ..render.palette import LEGEND_ORDER, css_class, css_var, css_variables, swatch
from .escape import esc


def op_state(op: OpCosines | None) -> str:
    """The state ``op`` is shown in (``not compared`` for None: the result lacks the op)."""
    return node_cosine(op).verdict


def state_css() -> str:
    """The palette's variables and, per legend state, the rules of its class: text in the
    state's text shade, swatches and plot marks filled with its colour."""
    rules = [css_variables()]
    for state in LEGEND_ORDER:
        name, fill, text = css_class(state), css_var(state), css_var(state, text=True)
        rules.append(
            f".{name} {{ color: {text}; }} i.swatch.{name} {{ background: {fill}; }} "
            f"svg.plot .pt.{name} {{ fill: {fill}; }} svg.plot .pt.cross.{name} {{ stroke: {fill}; }}"
        )
    return "\n".join(rules)


def legend_html(note: str = "", graph: bool = False) -> str:
    """One entry per state (swatch, marker, words), then ``note``; ``graph``: the swatches are
    boxes, the introducer's with the double border the drawing gives it."""
    items = []
    for state in LEGEND_ORDER:
        look = swatch(state)
        shape = " box" + (" double" if state == INTRODUCES else "") if graph else ""
        items.append(
            f'<span data-state="{esc(state)}"><i class="swatch{shape} {css_class(state)}"></i>'
            f"{esc(f'{look.marker} {look.label}'.strip())}</span>"
        )
    tail = f'<span class="muted">{note}</span>' if note else ""
    return f'<p class="legend">{"".join(items)}{tail}</p>'
