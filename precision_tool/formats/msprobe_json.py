"""The JSON files of an msprobe rank directory, read as far as they go.

msprobe rewrites ``dump.json`` (and ``stack.json``, ``construct.json``) whole with
``json.dump(..., indent=1)`` every thousand calls and at ``stop()``; a run killed while it
writes leaves a file cut at any byte. Such a file is read here up to the cut: the document is
one JSON object, scanned member by member with :meth:`json.JSONDecoder.raw_decode` (and, for
``dump.json``, the members of its ``data`` object one by one), so every member complete before
the cut is kept and the cut itself is one problem line. A file that is whole takes one
:func:`json.loads`. Python's ``json`` writes and reads the bare ``NaN``, ``Infinity`` and
``-Infinity`` statistics of a tensor holding them.

A cut is told from damage by where the decoder stopped: at the end of the text, inside a string
that never ends, or on a partial literal or number that the end of the text cut (``tr``,
``-Infin``, ``1e``). Anything else is damage, reported with its character offset; what was
read before it is kept too.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import PrecisionToolError
from .files import open_regular

MAX_DUMP_JSON_BYTES = 2 << 30  # a few KiB a call: millions of calls; past this, not one step's
MAX_STACK_JSON_BYTES = 1 << 30
MAX_CONSTRUCT_JSON_BYTES = 256 << 20  # one short line per module and API call
HEADER_BYTES = 64 << 10  # msprobe writes task, level, framework, dump_data_dir before data
TAIL_BYTES = 4 << 10  # ... but older files (and tests) put framework after data

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\r\n]*")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_TAIL = re.compile(r"[-+.eE0-9]{1,40}")  # what is left of a number the cut split
_TAIL_FRAMEWORK = re.compile(r'"framework"\s*:\s*"([A-Za-z_]+)"\s*[,}]')


@dataclass(frozen=True)
class Members:
    """The members of a JSON object, read as far as they go.

    ``stop`` is the character offset after the object, or after its last whole member when
    the scan stopped early: ``cut`` when the text ended first, ``damage`` (the decoder's
    complaint and its offset) when it stopped on something that is no JSON.
    """

    items: dict[str, Any]
    stop: int
    cut: bool = False
    damage: str | None = None
    nested: dict[str, Members] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether the whole object was read."""
        return not self.cut and self.damage is None


class _Stop(Exception):
    """The scan cannot go on: ``cut`` when the text ended, else damage at ``pos``."""

    def __init__(self, pos: int, cut: bool, why: str):
        super().__init__(why)
        self.pos, self.cut, self.why = pos, cut, why

    def members(self, items: dict[str, Any], end: int, nested: dict | None = None) -> Members:
        damage = None if self.cut else f"{self.why} at character {self.pos}"
        return Members(items, end, self.cut, damage, nested or {})


def decode_text(data: bytes, kind: str, path: str | os.PathLike | None) -> str:
    """``data`` as text: UTF-8 (a BOM is dropped); a character the cut split at the very end is
    left off, since the scan will report the cut.

    Raises:
        PrecisionToolError: the bytes are not UTF-8 before the end.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.end == len(data):
            return data[: exc.start].decode("utf-8-sig")
        raise PrecisionToolError(f"{kind} is not UTF-8 text (byte {exc.start})", path) from None


def parse_members(text: str, nested: str | None = None) -> Members:
    """The members of the JSON object ``text``, every whole one even when the text is cut or
    damaged later; the member ``nested``, when it is an object, is read the same way into
    ``Members.nested`` (and left out of ``items``).

    Raises:
        ValueError: the text is no JSON object at all (its message says what it is).
    """
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):  # a cut, damage, or an integer of 4300+ digits
        return _scan_object(text, nested)
    if not isinstance(whole, dict):
        raise ValueError(f"the top level is {_kind(whole)}, not an object")
    inner = whole.get(nested) if nested is not None else None
    if not isinstance(inner, dict):
        return Members(whole, len(text))
    del whole[nested]
    return Members(whole, len(text), nested={nested: Members(inner, len(text))})


def _scan_object(text: str, nested: str | None) -> Members:
    pos = _SPACE.match(text).end()
    if pos >= len(text):
        return Members({}, pos, cut=True)
    if text[pos] != "{":
        raise ValueError(f"not a JSON object (character {pos} is {text[pos]!r})")
    items: dict[str, Any] = {}
    inner: dict[str, Members] = {}
    end = pos + 1
    try:
        pos = _SPACE.match(text, pos + 1).end()
        while not _at(text, pos, "}"):
            key, pos = _decode(text, pos, want_string=True)
            pos = _expect(text, pos, ":")
            if key == nested and _at(text, pos, "{"):
                inner[key] = _scan_inner(text, pos)
                if not inner[key].complete:
                    got = inner[key]
                    return Members(items, got.stop, got.cut, got.damage, inner)
                pos = inner[key].stop
            else:
                items[key], pos = _decode(text, pos)
            end = pos
            pos = _after_member(text, pos)
        end = pos + 1
        after = _SPACE.match(text, end).end()
        if after < len(text):
            raise _Stop(after, False, "extra data after the object")
    except _Stop as stop:
        return stop.members(items, end, inner)
    return Members(items, end, nested=inner)


def _scan_inner(text: str, pos: int) -> Members:
    """The object starting at ``text[pos]``, member by member; ``stop`` is the offset after it
    (after its last whole member when it does not end)."""
    items: dict[str, Any] = {}
    end = pos + 1
    try:
        pos = _SPACE.match(text, pos + 1).end()
        while not _at(text, pos, "}"):
            key, pos = _decode(text, pos, want_string=True)
            pos = _expect(text, pos, ":")
            items[key], pos = _decode(text, pos)
            end = pos
            pos = _after_member(text, pos)
        return Members(items, pos + 1)
    except _Stop as stop:
        return stop.members(items, end)


def _at(text: str, pos: int, char: str) -> bool:
    if pos >= len(text):
        raise _Stop(pos, True, "the text ends")
    return text[pos] == char


def _expect(text: str, pos: int, char: str) -> int:
    pos = _SPACE.match(text, pos).end()
    if not _at(text, pos, char):
        raise _Stop(pos, False, f"expected {char!r}")
    return _SPACE.match(text, pos + 1).end()


def _after_member(text: str, pos: int) -> int:
    """Past the ``,`` after a member (to the next member), or at the ``}`` closing the object."""
    pos = _SPACE.match(text, pos).end()
    if _at(text, pos, ","):
        return _SPACE.match(text, pos + 1).end()
    if text[pos] != "}":
        raise _Stop(pos, False, "expected ',' or '}'")
    return pos


def _decode(text: str, pos: int, want_string: bool = False) -> tuple[Any, int]:
    if want_string and not _at(text, pos, '"'):
        raise _Stop(pos, False, "expected a quoted name")
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise _Stop(exc.pos, _is_cut(text, exc), exc.msg) from None
    except RecursionError:
        raise _Stop(pos, False, "nested too deeply") from None
    except ValueError as exc:  # Python's limit on the digits of an integer
        raise _Stop(pos, False, str(exc).split(";")[0]) from None


def _is_cut(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the decoder stopped because the text ends, not on something wrong."""
    if exc.msg.startswith("Unterminated string"):
        return True
    rest = text[exc.pos :]
    if not rest:
        return True
    if exc.msg.startswith("Invalid \\uXXXX escape"):
        return len(rest) <= 12 and '"' not in rest
    return any(word.startswith(rest) for word in _LITERALS) or bool(_NUMBER_TAIL.fullmatch(rest))


def counted(count: int, one: str, many: str) -> str:
    """``1 call``, ``2 calls``, ``0 calls``."""
    return f"{count} {one if count == 1 else many}"


def _kind(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


# --- the header of dump.json without reading it all ---------------------------------------------


@dataclass(frozen=True)
class DumpHeader:
    """The fields of ``dump.json`` outside ``data``: ``task`` (``statistics``, ``tensor``, ...),
    ``level`` (``L0`` modules, ``L1`` APIs, ``mix`` both), ``framework`` (``pytorch``,
    ``mindspore``, ``mindtorch``; None when the file does not say), ``dump_data_dir`` (where
    the writing machine put the tensor files; None in statistics mode). Any is None when
    absent or not a string."""

    task: str | None = None
    level: str | None = None
    framework: str | None = None
    dump_data_dir: str | None = None

    @classmethod
    def of(cls, fields: dict[str, Any]) -> DumpHeader:
        """The header of the top-level members ``fields`` of a ``dump.json``."""
        values = [fields.get(name) for name in ("task", "level", "framework", "dump_data_dir")]
        return cls(*(value if isinstance(value, str) else None for value in values))


def read_header(path: str | os.PathLike) -> DumpHeader:
    """The header of the ``dump.json`` at ``path``, from its first 64 KiB (and its last 4 KiB
    when ``framework`` comes after ``data``), however long the file is.

    Raises:
        PrecisionToolError: naming ``path``: not a readable regular file, not UTF-8, or no JSON
            object.
    """
    with open_regular(path, "dump.json") as handle:
        try:
            head = handle.read(HEADER_BYTES)
            size = os.fstat(handle.fileno()).st_size
            tail = b""
            if size > HEADER_BYTES:
                handle.seek(max(size - TAIL_BYTES, HEADER_BYTES))
                tail = handle.read(TAIL_BYTES)
        except OSError as exc:
            why = f"cannot read dump.json: {exc.strerror or exc}"
            raise PrecisionToolError(why, path) from None
    try:  # up to data, and what follows data when the whole file fits in the head
        members = parse_members(decode_text(head, "dump.json", path), nested="data")
    except ValueError as exc:
        raise PrecisionToolError(f"not an msprobe dump.json: {exc}", path) from None
    header = DumpHeader.of(members.items)
    if header.framework is None and tail:
        found = _TAIL_FRAMEWORK.search(tail.decode("utf-8", "replace")[-200:])
        header = DumpHeader(header.task, header.level, found and found.group(1), header.dump_data_dir)
    return header
