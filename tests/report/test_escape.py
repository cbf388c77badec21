"""Escaping names for HTML, SVG and the page's JSON: properties over any text, and the hostile
names that must come out inert."""

from __future__ import annotations

import html
import json
import unicodedata
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from precision_tool.report.escape import esc, json_for_script, visible
from tests.report.synthetic import HOSTILE_NAMES

HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}
any_text = st.text(st.characters(), max_size=60)


@given(any_text)
def test_visible_leaves_no_character_that_does_not_show_as_itself(text):
    shown = visible(text)
    assert not any(unicodedata.category(c) in HIDDEN for c in shown)
    if not any(unicodedata.category(c) in HIDDEN for c in text):
        assert shown == text


@given(any_text)
def test_esc_is_plain_text_whose_unescape_is_the_visible_text(text):
    escaped = esc(text)
    assert not set(escaped) & set("<>\"'")
    assert html.unescape(escaped) == visible(text)
    # as element text and as an attribute value it parses back to the same string
    element = ET.fromstring(f'<g title="{escaped}">{escaped}</g>')
    assert element.text in (None, visible(text)) and element.get("title") == visible(text)


@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | any_text,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
        max_leaves=12,
    )
)
def test_json_for_script_cannot_close_its_element_and_parses_back(value):
    text = json_for_script(value)
    assert "<" not in text and ">" not in text and "&" not in text and text.isascii()
    json.loads(text)  # valid JSON (NaN and infinities became null)


def test_hostile_names_come_out_as_their_visible_text():
    assert visible("rtl/\u202eexe.evil") == "rtl/\\u202eexe.evil"
    assert visible("ctl/tab\there\x1b[31m") == "ctl/tab\\there\\x1b[31m"
    assert esc("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert esc("quote\"d/it's") == "quote&quot;d/it&#x27;s"
    data = json_for_script({"names": list(HOSTILE_NAMES)})
    assert "</script" not in data.lower() and "\u202e" not in data
    assert json.loads(data)["names"][0] == "<script>alert(1)</script>"
    assert json.loads(data)["names"][3] == "rtl/\\u202eexe.evil"
