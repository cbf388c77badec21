"""The one palette's names for stylesheets: every state, tensor states included, lands on a
legend entry whose variables :func:`css_variables` defines."""

from __future__ import annotations

import re

from precision_tool.compare.verdict import OP_STATES, TENSOR_STATES
from precision_tool.render.palette import (
    LEGEND_ORDER,
    css_class,
    css_var,
    css_variables,
    legend_state,
    marked,
    swatch,
)


def test_every_state_has_a_class_and_variables_the_stylesheet_defines():
    defined = set(re.findall(r"--([a-z-]+):", css_variables()))
    for state in (*TENSOR_STATES, *OP_STATES, "no such state"):
        shown = legend_state(state)
        assert shown in LEGEND_ORDER, state
        name = css_var(state)[len("var(--") : -1]
        assert name in defined and f"{name}-text" in defined, state
        assert css_class(state) == "v-" + name
    assert (css_class("diverges"), css_class("rounding")) == ("v-introduces", "v-clean")
    assert css_class("not compared") == "v-not-compared" == css_class("no such state")


def test_marked_puts_the_second_cue_before_the_state():
    assert marked("introduces") == f"{swatch('introduces').marker} introduces" == "\u25b2 introduces"
    assert marked("clean") == "clean"  # no marker: the colour and the word
