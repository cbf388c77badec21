"""TextFormat tokens and scalar values exactly as protobuf's own parser reads them.

The regexes mirror ``google.protobuf.text_format.Tokenizer``; numbers, enums, bools and string
escapes that are not plain are handed to protobuf's own functions (``ParseInteger``,
``ParseFloat``) or read by its rules in linear time (:mod:`.text_escapes`), so the values are
those ``text_format.Parse`` stores. What protobuf would refuse raises :class:`Unsupported` (the
caller then lets protobuf parse, and word the error).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf import text_encoding, text_format
from google.protobuf.descriptor import FieldDescriptor

from .text_escapes import c_unescape


class Unsupported(Exception):
    """The input is not something the fast reader takes; parse it with protobuf instead."""


_TOKEN = re.compile(
    r"""(?:\s|#[^\n]*)*([a-zA-Z_][0-9a-zA-Z_+-]*|(?:[0-9+-]|\.[0-9])[0-9a-zA-Z_.+-]*"""
    r"""|"[^"\n\\]*(?:\\.[^"\n\\]*)*"|'[^'\n\\]*(?:\\.[^'\n\\]*)*'|\S)?"""
)


def tokens(line: str) -> list[str]:
    """protobuf's tokens of ``line``: an identifier, a number, a string quoted with ``"`` or
    ``'`` and closed on the line, else one character; whitespace and ``#`` comments between
    are skipped. (The token is optional in the regex so that each match starts where the last
    ended: else a failed match would be tried again inside a trailing comment.)"""
    return [token for token in _TOKEN.findall(line) if token]


SIMPLE = re.compile(
    r"""\s*([a-zA-Z_][0-9a-zA-Z_+-]*)\s*:\s*(?:"([^"\n\\]*)"|([a-zA-Z_][0-9a-zA-Z_+-]*"""
    r"""|(?:[0-9+-]|\.[0-9])[0-9a-zA-Z_.+-]*))\s*"""
)
"""A line of one scalar field whose value is an escape-free ``"string"`` or one token."""

_BOOLS = {"true": True, "t": True, "1": True, "True": True, "false": False, "f": False, "0": False, "False": False}
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_INT_KINDS = {  # field type -> (signed, 64-bit)
    FieldDescriptor.TYPE_INT32: (True, False),
    FieldDescriptor.TYPE_SINT32: (True, False),
    FieldDescriptor.TYPE_SFIXED32: (True, False),
    FieldDescriptor.TYPE_INT64: (True, True),
    FieldDescriptor.TYPE_SINT64: (True, True),
    FieldDescriptor.TYPE_SFIXED64: (True, True),
    FieldDescriptor.TYPE_UINT32: (False, False),
    FieldDescriptor.TYPE_FIXED32: (False, False),
    FieldDescriptor.TYPE_UINT64: (False, True),
    FieldDescriptor.TYPE_FIXED64: (False, True),
}
STRING_TYPES = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)


def _is_decimal(token: str) -> bool:
    """Whether ``token`` (ASCII, as tokens are) is a plain decimal integer: ``0``, ``-12``;
    not ``012`` (octal to protobuf), ``+1``, ``0x1``, ``1_000``."""
    digits = token[1:] if token[0] == "-" else token
    return digits.isdigit() and (digits[0] != "0" or len(digits) == 1)


def is_identifier(token: str) -> bool:
    """Whether ``token`` is an identifier token (a field name or an enum name)."""
    first = token[0]
    return first.isascii() and (first.isalpha() or first == "_")


def _int_parser(signed: bool, long: bool) -> Callable[[str], int]:
    bits = 64 if long else 32
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)

    def parse(token: str) -> int:
        if _is_decimal(token):
            value = int(token)
            if low <= value <= high:
                return value
            raise Unsupported
        try:  # hex, octal, a + sign: protobuf's own rules
            return text_format.ParseInteger(token, is_signed=signed, is_long=long)
        except ValueError:
            raise Unsupported from None

    return parse


def _float_parser(single: bool) -> Callable[[str], float]:
    def parse(token: str) -> float:
        if token[0] in "\"'":
            raise Unsupported
        try:
            value = text_format.ParseFloat(token)
        except ValueError:
            raise Unsupported from None
        if not single or not math.isfinite(value):
            return value
        if abs(value) > _FLOAT32_MAX:  # float32 max or infinity, rounded to nearest as C does
            with np.errstate(over="ignore"):
                return float(np.float32(value))
        return float(np.float32(value))

    return parse


def _bool(token: str) -> bool:
    try:
        return _BOOLS[token]
    except KeyError:
        raise Unsupported from None


def _enum_parser(field: FieldDescriptor) -> Callable[[str], int]:
    by_name = {value.name: value.number for value in field.enum_type.values}
    is_open = not field.enum_type.is_closed

    def parse(token: str) -> int:
        number = by_name.get(token)
        if number is not None:
            return number
        if is_open and _is_decimal(token) and -(1 << 31) <= int(token) < 1 << 31:
            return int(token)
        raise Unsupported  # hex, a closed enum's number, no such name: protobuf decides

    return parse


def unescape(body: str) -> bytes:
    """The bytes of a string literal whose text between the quotes is ``body``: in linear time
    (:func:`.text_escapes.c_unescape`), by protobuf's own ``CUnescape`` only for the escapes
    its releases read differently."""
    if "\\" not in body:
        return body.encode("utf-8")
    try:
        value = c_unescape(body)
        return text_encoding.CUnescape(body) if value is None else value
    except ValueError:
        raise Unsupported from None


def _text(body: str) -> str:
    if "\\" not in body:
        return body
    try:
        return unescape(body).decode("utf-8")
    except UnicodeDecodeError:  # protobuf refuses a string field that is not UTF-8
        raise Unsupported from None


def scalar_parser(field: FieldDescriptor) -> Callable[[str], Any]:
    """token -> the value protobuf stores in ``field``; for string and bytes fields the token
    is the text between the quotes (of the literals joined, when several follow each other)."""
    kind = field.type
    if kind in _INT_KINDS:
        return _int_parser(*_INT_KINDS[kind])
    if kind in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return _float_parser(kind == FieldDescriptor.TYPE_FLOAT)
    if kind == FieldDescriptor.TYPE_BOOL:
        return _bool
    if kind == FieldDescriptor.TYPE_ENUM:
        return _enum_parser(field)
    if kind == FieldDescriptor.TYPE_STRING:
        return _text
    if kind == FieldDescriptor.TYPE_BYTES:
        return unescape
    raise Unsupported  # groups: in no schema here


def string_body(token: str) -> str:
    """The text between the quotes of string token ``token``."""
    if token[0] not in "\"'" or len(token) < 2 or token[-1] != token[0]:
        raise Unsupported
    return token[1:-1]


def skippable_value(token: str) -> bool:
    """Whether protobuf, skipping an unknown field, takes ``token`` as its value (a string,
    an identifier, an integer or a float: ``text_format._Parser._SkipFieldValue``)."""
    if token[0] in "\"'":
        return len(token) > 1 and token[-1] == token[0]
    if token[0].isalpha() or token[0] == "_":
        return True
    for parse in (
        lambda t: text_format.ParseInteger(t, True, True),
        lambda t: text_format.ParseInteger(t, False, True),
        text_format.ParseFloat,
    ):
        try:
            parse(token)
            return True
        except ValueError:
            pass
    return False
