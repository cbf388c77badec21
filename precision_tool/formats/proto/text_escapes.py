r"""The string literals of protobuf's text format, unescaped in linear time.

protobuf's Python ``text_encoding.CUnescape`` (what ``text_format.Parse`` calls for every
string) first pads one-digit hex escapes (``\xA``) with a regular expression that, on a run of
backslashes not followed by ``x``, starts again at each backslash of the run: its time grows
with the square of the run's length. :func:`c_unescape` gives the same bytes in time linear in
the length of the text.

What the text format takes, as protobuf's Python parser reads it (it hands the escapes to
Python's ``unicode_escape`` codec, so these are that codec's rules, not C's):

* ``\\ \' \" \a \b \f \n \r \t \v``: the byte each stands for; a backslash before a newline:
  nothing;
* ``\NNN``: one to three octal digits, up to ``\377``;
* ``\xH``, ``\xHH``: one or two hex digits (a third is text: ``\x414`` is ``A4``);
* ``\N{name}``: the character of that Unicode name, as one byte (up to U+00FF);
* a backslash before any other character (``\?``, ``\q``, ``\8``, ``\é``): both are kept;
* invalid (ValueError): a lone backslash at the end, ``\x`` without a hex digit, ``\N`` without
  the ``{name}`` of a character.

Text between escapes is its UTF-8 bytes. Where protobuf's releases read a literal differently
-- ``\u``/``\U`` escapes, a backslash before a character above U+00FF, an escape of a value
above 255 (``\777``, ``\N{GREEK SMALL LETTER ALPHA}``): text in 4.21, decoded or refused in
later ones -- :func:`c_unescape` returns None, and the caller asks the protobuf at hand.
protobuf's printers, GE's among them, write none of those: they escape bytes in octal.
"""

from __future__ import annotations

import re
import unicodedata

# A backslash run of odd length ending in a one-digit hex escape: the first backslash of a run
# is found by the look-behind, so no match is tried again inside a run (each backslash of the
# text is looked at a bounded number of times).
_LONE_HEX_DIGIT = re.compile(rb"(?<!\\)((?:\\\\)*\\x)([0-9a-fA-F])(?![0-9a-fA-F])")
# one escape: the backslash and what it takes (any byte, the newline too); or a lone backslash
# at the very end
_ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{2})|N\{([^}]*)\}|(.)|\Z)", re.DOTALL)
# an escape that protobuf's releases read differently (the look-behind as above): later ones
# decode ``\u``/``\U`` before any other escape, so one there decides even after an invalid one
_VERSIONED = re.compile(rb"(?<!\\)(?:\\\\)*\\(?:[uU]|[\xc4-\xff])")
_SIMPLE = {
    ord(k): v
    for k, v in {
        "\\": b"\\",
        "'": b"'",
        '"': b'"',
        "a": b"\a",
        "b": b"\b",
        "f": b"\f",
        "n": b"\n",
        "r": b"\r",
        "t": b"\t",
        "v": b"\v",
        "\n": b"",
    }.items()
}
_INVALID_AFTER_BACKSLASH = frozenset(b"xN")  # not followed by what they need
_VERSIONED_AFTER_BACKSLASH = frozenset(b"uU")  # escapes protobuf's releases read differently
_FIRST_ABOVE_LATIN_1 = "\u0100".encode("utf-8")[0]  # 0xC4: UTF-8 lead bytes from here on


class _Versioned(Exception):
    """The literal is one protobuf's releases read differently."""


def c_unescape(text: str) -> bytes | None:
    r"""The bytes of the string literal whose text between the quotes is ``text``, as protobuf's
    text format reads it (see the module doc); None where protobuf's releases differ.

    Raises:
        ValueError: ``text`` is not a valid literal (a lone final backslash, ``\x`` without
            a hex digit, ``\N`` without a known ``{name}``).
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no file decoded as UTF-8 holds one
        return None
    if b"\\" not in data:
        return data
    if b"x" in data:
        data = _LONE_HEX_DIGIT.sub(rb"\g<1>0\g<2>", data)
    try:
        return _ESCAPE.sub(_escaped, data)
    except _Versioned:
        return None
    except ValueError:
        if _VERSIONED.search(data):
            return None
        raise


def _escaped(match: re.Match) -> bytes:
    """The bytes one escape of :data:`_ESCAPE` stands for (see the module doc)."""
    octal, hexadecimal, name, other = match.groups()
    if octal is not None:
        return _byte(int(octal, 8))
    if hexadecimal is not None:
        return bytes((int(hexadecimal, 16),))
    if name is not None:
        return _byte(ord(_named(name)))
    if other is None:
        raise ValueError("a lone backslash at the end of the string")
    code = other[0]
    if code in _SIMPLE:
        return _SIMPLE[code]
    if code in _INVALID_AFTER_BACKSLASH:
        raise ValueError(f"truncated \\{chr(code)} escape")
    if code in _VERSIONED_AFTER_BACKSLASH or code >= _FIRST_ABOVE_LATIN_1:
        raise _Versioned
    return match.group(0)  # kept as it is, backslash and all


def _named(name: bytes) -> str:
    try:
        character = unicodedata.lookup(name.decode("ascii"))
    except (KeyError, UnicodeDecodeError):
        raise ValueError(f"unknown Unicode character name {name!r}") from None
    if len(character) != 1:  # a named sequence: not one character
        raise ValueError(f"{name!r} names a sequence of characters")
    return character


def _byte(value: int) -> bytes:
    if value > 0xFF:
        raise _Versioned
    return bytes((value,))
