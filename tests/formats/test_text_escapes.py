"""String literals of the text format, unescaped in linear time
(:mod:`precision_tool.formats.proto.text_escapes`), against protobuf's own ``CUnescape`` -- the
function ``text_format.Parse`` calls, and so the independent reference."""

from __future__ import annotations

import warnings

import pytest
from google.protobuf import text_encoding
from hypothesis import example, given, settings
from hypothesis import strategies as st

from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_text_fast import model_from_text
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from precision_tool.formats.proto.text_escapes import c_unescape
from precision_tool.formats.proto.text_scalars import Unsupported, unescape

INVALID = "invalid"


def _protobuf(text: str) -> bytes | str:
    with warnings.catch_warnings():  # Python's codec warns of escapes it keeps (\q)
        warnings.simplefilter("ignore")
        try:
            return text_encoding.CUnescape(text)
        except ValueError:
            return INVALID


def _ours(text: str) -> bytes | str | None:
    try:
        return c_unescape(text)
    except ValueError:
        return INVALID


# pieces that make escapes every release reads alike: backslash runs, what may follow one,
# digits (no octal digit above 3 but in \377: \700 is above 255), names, text up to U+00FF; then
# the pieces of those they read differently
_ALIKE = [
    "\\",
    "\\\\",
    "\\\\\\",
    "x",
    "X",
    "N",
    "{",
    "}",
    "0",
    "1",
    "3",
    "8",
    "9",
    "a",
    "f",
    "A",
    "F",
    "g",
    "n",
    "t",
    "r",
    "v",
    "?",
    "q",
    "'",
    '"',
    "\n",
    " ",
    "é",
    "\u00ff",
    "\\N{LATIN SMALL LETTER A}",
    "\\N{NULL}",
    "\\N{latin small letter e with acute}",
    "\\N{LATIN CAPITAL LETTER A WITH MACRON AND GRAVE}",
    "\\N{NO SUCH}",
    "\\x4",
    "\\xAB",
    "\\377",
]
_VERSIONED = [
    "u",
    "U",
    "Ā",
    "网",
    "\U0001f600",
    "\\u0041",
    "\\u005c",
    "\\U0001F600",
    "\\400",
    "\\777",
    "\\N{GREEK SMALL LETTER ALPHA}",
]
_ALIKE_TEXT = st.lists(st.sampled_from(_ALIKE), max_size=24).map("".join)
_ANY_TEXT = st.lists(st.one_of(st.sampled_from(_ALIKE + _VERSIONED), st.text(max_size=3)), max_size=24).map("".join)


@given(_ALIKE_TEXT)
@settings(max_examples=1000, deadline=None)
@example("\\" * 3 + "xA" + "\\" * 2 + "xB")
def test_a_literal_of_the_escapes_every_release_reads_alike_is_protobufs_bytes(text):
    ours = _ours(text)
    assert ours is not None and ours == _protobuf(text)


@given(st.one_of(_ANY_TEXT, st.text()))
@settings(max_examples=500, deadline=None)
@example("\\x\\u0041\\u0041")  # a later release decodes \u first: then \x takes "AA"
def test_any_literal_is_read_as_protobuf_reads_it(text):
    ours = _ours(text)
    if ours is not None:  # None: protobuf's releases differ, and protobuf is asked
        assert ours == _protobuf(text)
    with warnings.catch_warnings():  # it asks protobuf where releases differ
        warnings.simplefilter("ignore")
        try:
            through_the_reader = unescape(text)
        except Unsupported:
            through_the_reader = INVALID
    assert through_the_reader == _protobuf(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\\\\ \\' \\\" \\a \\b \\f \\n \\r \\t \\v", b"\\ ' \" \a \b \f \n \r \t \v"),
        ("\\0\\12\\101\\1012\\377", b"\x00\nAA2\xff"),
        ("\\xA\\x41\\x414", b"\nAA4"),
        ("\\\\xA", b"\\xA"),
        ("\\\\\\xA", b"\\\n"),
        ("\\?\\q\\8\\é", b"\\?\\q\\8\\\xc3\xa9"),
        ("a\\\nb", b"ab"),
        ("\\N{LATIN SMALL LETTER E WITH ACUTE}\\N{nul}", b"\xe9\x00"),
        ("网\\t", "网\t".encode()),
        ("\\\\u0041", b"\\u0041"),
        ("\\\\Ā", "\\Ā".encode()),
        ("\\", INVALID),
        ("\\\\\\", INVALID),
        ("\\x", INVALID),
        ("\\xg", INVALID),
        ("\\N", INVALID),
        ("\\N{}", INVALID),
        ("\\N{NO SUCH NAME}", INVALID),
        ("\\N{LATIN CAPITAL LETTER A WITH MACRON AND GRAVE}", INVALID),  # a named sequence
    ],
)
def test_the_escapes_every_release_reads_alike(text, expected):
    assert _ours(text) == expected == _protobuf(text)


@pytest.mark.parametrize(
    "text",
    [
        "\\u0041",
        "\\U0001F600",
        "\\u12",
        "\\Ā",
        "\\\U0001f600",
        "\\777",
        "\\700",
        "\\N{GREEK SMALL LETTER ALPHA}",
        "\\x\\u0041\\u0041",
        "\\\\\\u0041",
    ],
)
def test_the_escapes_releases_read_differently_are_left_to_protobuf(text):
    """protobuf 4.21 keeps ``\\u0041`` as text (and ``\\777`` as ``\\u01ff``); later releases
    decode it (and refuse ``\\777``): the reader asks the protobuf at hand."""
    assert c_unescape(text) is None


def test_a_graph_string_of_200000_escaped_backslashes_is_read(tmp_path):
    """One attribute holding 200,000 backslashes: the file has 200,000 ``\\\\`` pairs in one
    string. protobuf's CUnescape takes time growing with the square of such a run (40 s for
    40,000 pairs, so some 1,000 s for these): a quadratic unescape on this path would not end
    within the suite's time. The value must come back whole, through the fast reader."""
    value = "\\" * 200_000
    desc = tensor_desc("DT_FLOAT", "ND", (1,))
    path = write_graph_text(
        build_model([OpSpec("net/a", "Relu", [], [], [desc], attrs={"note": value})]), tmp_path / "g.txt"
    )
    assert path.read_text(encoding="utf-8").count("\\\\") == 200_000
    assert model_from_text(path.read_text(encoding="utf-8")) is not None  # not protobuf's parser
    op = read_graph(path).graphs[0].ops[0]
    assert op.attrs["note"] == value
