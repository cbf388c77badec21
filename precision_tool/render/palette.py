"""The one palette of the verdict: a colour, a terminal style, a marker and a legend word per
state (:mod:`precision_tool.compare.verdict`), used by the terminal, the SVG subgraphs, the
report and Model Explorer alike.

The colours are Okabe and Ito's set for colour-blind readers (vermillion, orange, yellow,
bluish green, reddish purple, grey), and no state is told by colour alone: an introducer also
carries a marker (``▲``) and a thick border, an op that inherits ``●``, one beyond rounding
``◆``, a non-finite one ``✕``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compare.verdict import CLEAN, DIVERGES, INHERITS, INTRODUCES, NEAR, NONFINITE, NOT_COMPARED, ROUNDING


@dataclass(frozen=True)
class Swatch:
    """How one state looks.

    Attributes:
        colour: ``#rrggbb``, for fills and the report's marks.
        text_colour: a darker shade of the same hue where the colour is text on white.
        style: the rich style name of the state (defined in :data:`~.theme.THEME`).
        marker: the second cue, beside the colour.
        label: the legend's words.
    """

    colour: str
    text_colour: str
    style: str
    marker: str
    label: str


PALETTE: dict[str, Swatch] = {
    INTRODUCES: Swatch("#D55E00", "#A84A00", "verdict.introduces", "▲", "introduces the error"),
    INHERITS: Swatch("#E69F00", "#9A6A00", "verdict.inherits", "●", "inherits it"),
    NONFINITE: Swatch("#CC79A7", "#9A4F7A", "verdict.nonfinite", "✕", "NaN or Inf"),
    NEAR: Swatch("#F0E442", "#7A7200", "verdict.near", "◆", "beyond rounding, not flagged"),
    CLEAN: Swatch("#009E73", "#00704F", "verdict.clean", "", "within rounding"),
    NOT_COMPARED: Swatch("#BBBBBB", "#666666", "verdict.none", "", "not compared"),
}
PALETTE[ROUNDING] = PALETTE[CLEAN]  # a tensor within rounding looks like a clean op
LEGEND_ORDER = (INTRODUCES, INHERITS, NONFINITE, NEAR, CLEAN, NOT_COMPARED)
# tensor states shown as the legend entry of the same look: a diverging tensor in the
# introducer's colour (as ``vcs`` prints it), one within rounding as a clean op
_SHOWN_AS = {DIVERGES: INTRODUCES, ROUNDING: CLEAN}

# rich styles of the states: the colour itself on a terminal (its own background is dark or
# light, so the full colour reads on either)
STYLES = {swatch.style: ("bold " if state == INTRODUCES else "") + swatch.colour for state, swatch in PALETTE.items()}


def swatch(state: str) -> Swatch:
    """The look of ``state`` (an op or tensor state); unknown states look not compared."""
    return PALETTE.get(state, PALETTE[NOT_COMPARED])


def marked(state: str) -> str:
    """``▲ introduces``: the state's marker (its cue besides the colour) and the state itself."""
    return f"{swatch(state).marker} {state}".strip()


def css_variables() -> str:
    """``:root { --introduces: #D55E00; ... }``: the palette for a stylesheet."""
    names = "; ".join(
        f"--{_css(state)}: {PALETTE[state].colour}; --{_css(state)}-text: {PALETTE[state].text_colour}"
        for state in LEGEND_ORDER
    )
    return ":root { " + names + "; }"


def _css(state: str) -> str:
    return state.replace(" ", "-")


def css_var(state: str, text: bool = False) -> str:
    """``var(--introduces)`` (``text``: ``var(--introduces-text)``, the shade for text on
    white): the variable of ``state``'s legend entry in :func:`css_variables`."""
    return f"var(--{_css(legend_state(state))}{'-text' if text else ''})"


def legend_state(state: str) -> str:
    """The legend entry ``state`` (an op or tensor state) is shown as: itself for the states
    of :data:`LEGEND_ORDER`, ``introduces`` for a diverging tensor, ``clean`` for one within
    rounding, ``not compared`` for anything else."""
    state = _SHOWN_AS.get(state, state)
    return state if state in LEGEND_ORDER else NOT_COMPARED


def css_class(state: str) -> str:
    """The CSS class of ``state``'s legend entry (:func:`legend_state`): ``v-introduces``,
    ``v-not-compared``..., each coloured by the variables of :func:`css_variables`."""
    return "v-" + _css(legend_state(state))
