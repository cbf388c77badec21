"""``fusion_result.json``: what the graph compiler's fusion passes did (FORMATS.md section 8).

GE writes one entry per compiled graph, and real installations have written it in four forms
(samples of each are in ``tests/data/real/fusion/``):

1. objects back to back, nothing between them::

       {"graph_fusion": {"ConvBiasAddFusionPass": {"effect_times": "2", "match_times": "2"}},
        "session_and_graph_id": "1_1", "ub_fusion": {...}}{"graphId": "11", "sessionId": "0", ...}

2. one JSON array of such objects, ``[{..},{..}]``;
3. arrays back to back, ``[{..}][{..}]``;
4. one object keyed by graph, as current CANN writes it::

       {"session_and_graph_id_0_0": {"graph_fusion": {..}, "ub_fusion": {..}}, ...}

:func:`parse_fusion_result` reads any mix of these as a sequence of JSON values
(:meth:`json.JSONDecoder.raw_decode` in a loop), walking arrays item by item and keyed objects
key by key, so an error keeps every graph read before it. A ``null`` where a graph's entry
could stand (the whole file is ``null`` when a torch_npu run fused nothing) is no graph. A key
written more than once in one object (several processes of one job appending to the keyed form)
is read key by key, not through a dict, which would keep only the last silently: a repeat with
the same content is the same graph (:attr:`FusionGraph.copies` counts them); a repeat with other
content is a graph of its own (both are kept, :func:`repeated_keys` says so). Counts are strings in real files;
integers are taken too. A graph's ids are ``session_and_graph_id`` ("S_G"), the ``_X_Y`` of its
key in the keyed form, or ``graphId`` with ``sessionId`` in older files: the session is kept,
since graph 1 of two sessions are two graphs. Unknown fields (``repository_hit_times``, ...) are
ignored.

Anything else -- not JSON, a garbage tail, an object that is no fusion result, a keyed value
that is not an object -- raises :class:`FusionResultError` naming the file and the character
offset where the problem starts; the error keeps the graphs read before that offset
(``error.graphs``), so a caller can still show them. The file is only ever read.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import PrecisionToolError
from .files import read_text

SECTIONS = ("graph_fusion", "ub_fusion")
MAX_FUSION_RESULT_BYTES = 256 << 20  # a few rules a fusion pass a graph: megabytes at most
GRAPH_KEYS = frozenset({*SECTIONS, "session_and_graph_id", "graphId", "sessionId"})
"""Keys of which an object needs one to be a graph's entry (forms 1-3)."""

KEYED_GRAPH = re.compile(r"^session_and_graph_id_(-?[0-9]+)_(-?[0-9]+)$")
"""A key of the keyed form (4): session id, graph id."""

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"
_JSON_KINDS = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "true/false",
    type(None): "null",
}


@dataclass(frozen=True)
class FusionRule:
    """One fusion rule (pass) of one graph: how often it matched and how often it took effect."""

    name: str
    effect_times: int
    match_times: int | None  # None when the file does not say


@dataclass(frozen=True)
class FusionGraph:
    """The rules of one compiled graph, in file order.

    ``session_id`` / ``graph_id`` are GE's ids as the file writes them (None when it does not
    say); ``index`` is the graph's position among all graphs of the file (0-based); ``offset``
    the character offset where its entry starts (its key, in the keyed form).
    """

    session_id: str | None
    graph_id: str | None
    graph_fusion: tuple[FusionRule, ...]
    ub_fusion: tuple[FusionRule, ...]
    index: int = 0
    offset: int = 0
    copies: int = 1  # entries of the same key and content the file holds (folded into this one)

    @property
    def key(self) -> str | None:
        """``"S_G"`` as in ``session_and_graph_id`` (and the Build graph's ``_session_graph_id``),
        or the bare graph id when the session is unknown."""
        if self.session_id is None:
            return self.graph_id
        return f"{self.session_id}_{self.graph_id if self.graph_id is not None else '?'}"

    def effective(self, section: str) -> list[FusionRule]:
        """The rules of ``section`` (``"graph_fusion"`` or ``"ub_fusion"``) with effect_times > 0."""
        return [rule for rule in getattr(self, section) if rule.effect_times > 0]


@dataclass(frozen=True)
class RepeatedKey:
    """A graph key written more than once: ``entries`` times in all, in ``variants`` contents."""

    key: str
    entries: int
    variants: int

    @property
    def note(self) -> str:
        """One line for a view: what the repeat is and what the reader made of it."""
        if self.variants == 1:
            return f"graph {self.key} is written {self.entries} times with the same rules: read as one graph"
        return (
            f"graph {self.key} is written {self.entries} times with {self.variants} "
            "different sets of rules: each set is kept"
        )


def repeated_keys(graphs: list[FusionGraph] | tuple[FusionGraph, ...]) -> list[RepeatedKey]:
    """The graph keys of ``graphs`` the file wrote more than once, in first-seen order."""
    entries: dict[str, int] = {}
    variants: dict[str, int] = {}
    for graph in graphs:
        if graph.key is None:  # id-less entries are never one graph (see _Reader.add)
            continue
        entries[graph.key] = entries.get(graph.key, 0) + graph.copies
        variants[graph.key] = variants.get(graph.key, 0) + 1
    return [RepeatedKey(key, count, variants[key]) for key, count in entries.items() if count > 1]


class FusionResultError(PrecisionToolError):
    """A fusion_result.json that goes wrong at ``offset``; ``graphs`` holds those read before."""

    def __init__(self, message: str, path: str | os.PathLike | None, offset: int, graphs: list[FusionGraph]):
        super().__init__(f"{message} at offset {offset}", path)
        self.offset = offset
        self.graphs = graphs


class _BadEntry(ValueError):
    """Valid JSON that is not a fusion result (the message says why)."""


def json_kind(value: Any) -> str:
    """The JSON name of a decoded value's kind: object, array, string, number, ..."""
    return _JSON_KINDS.get(type(value), type(value).__name__)


# --- one graph's entry ------------------------------------------------------------------------


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise _BadEntry(f"{where} is {value!r}, not a count")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise _BadEntry(f"{where} is {value!r}, not a count")


def _rules(section: str, value: Any) -> tuple[FusionRule, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise _BadEntry(f"{section} is a JSON {json_kind(value)}, not an object of rules")
    rules = []
    for name, counts in value.items():
        if not isinstance(counts, dict):
            raise _BadEntry(f"{section} rule {name!r} is not an object of counts")
        effect = _count(counts.get("effect_times", 0), f"{section} {name} effect_times")
        match = counts.get("match_times")
        rules.append(
            FusionRule(name, effect, None if match is None else _count(match, f"{section} {name} match_times"))
        )
    return tuple(rules)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _ids(value: dict[str, Any]) -> tuple[str | None, str | None]:
    """(session id, graph id) of an entry: ``session_and_graph_id`` "S_G" wins over the older
    ``graphId`` (+ ``sessionId``); an S_G without ``_`` is a bare graph id."""
    joined = value.get("session_and_graph_id")
    if joined is not None:
        session, sep, graph = str(joined).partition("_")
        return (session, graph) if sep else (None, session)
    return _text_or_none(value.get("sessionId")), _text_or_none(value.get("graphId"))


def fusion_graph_from_json(
    value: Any, index: int = 0, offset: int = 0, ids: tuple[str | None, str | None] | None = None
) -> FusionGraph:
    """One decoded entry as a :class:`FusionGraph`; ``ValueError`` when it is not one.

    ``ids`` (session, graph) override the entry's own, as the keyed form's key does.
    """
    if not isinstance(value, dict):
        raise _BadEntry(f"found a JSON {json_kind(value)}, not an object")
    session, graph = ids if ids is not None else _ids(value)
    return FusionGraph(
        session,
        graph,
        _rules("graph_fusion", value.get("graph_fusion")),
        _rules("ub_fusion", value.get("ub_fusion")),
        index,
        offset,
    )


# --- the file ---------------------------------------------------------------------------------


class _Reader:
    """Walks the file's JSON values (see the module doc), collecting graphs in order."""

    def __init__(self, text: str, path: str | os.PathLike | None):
        self.text, self.path = text, path
        self.graphs: list[FusionGraph] = []
        self.contents: dict[str, list[tuple[int, Any]]] = {}  # key -> (graph index, content)

    def fail(self, message: str, offset: int):
        raise FusionResultError(message, self.path, offset, self.graphs)

    def skip(self, position: int) -> int:
        while position < len(self.text) and self.text[position] in _WHITESPACE:
            position += 1
        return position

    def decode(self, position: int) -> tuple[Any, int]:
        try:
            return _DECODER.raw_decode(self.text, position)
        except json.JSONDecodeError as exc:
            self.fail(f"not JSON ({exc.msg})", exc.pos)
        except RecursionError:
            self.fail("not JSON (nested too deeply)", position)

    def add(self, value: Any, offset: int, where: str, ids: tuple[str | None, str | None] | None = None) -> None:
        try:
            graph = fusion_graph_from_json(value, len(self.graphs), offset, ids)
        except _BadEntry as exc:
            self.fail(f"{where}: {exc}", offset)
        if graph.key is None:  # nothing says two id-less entries are one graph
            self.graphs.append(graph)
            return
        earlier = self.contents.setdefault(graph.key, [])
        for index, content in earlier:
            if content == value:  # the same graph written again
                self.graphs[index] = replace(self.graphs[index], copies=self.graphs[index].copies + 1)
                return
        earlier.append((len(self.graphs), value))
        self.graphs.append(graph)

    def read(self) -> list[FusionGraph]:
        position = self.skip(1 if self.text.startswith("\ufeff") else 0)
        number = 0
        while position < len(self.text):
            number += 1
            char = self.text[position]
            if char == "[":
                position = self.array(position, number)
            elif char == "{":
                position = self.object(position, f"object {number}")
            else:
                value, end = self.decode(position)
                if value is None:  # what a run that fused nothing writes
                    position = self.skip(end)
                    continue
                self.fail(
                    f"value {number}: found a JSON {json_kind(value)}, not an object or an array of objects", position
                )
            position = self.skip(position)
        return self.graphs

    def _after_item(self, position: int, close: str) -> tuple[bool, int]:
        """After an array item or object member: (more follow, position after the delimiter)."""
        position = self.skip(position)
        char = self.text[position : position + 1]
        if char == ",":
            return True, self.skip(position + 1)
        if char == close:
            return False, position + 1
        self.fail(
            "not JSON ("
            + (f"Expecting ',' delimiter or '{close}'" if char else f"'{close}' missing: the file ends early")
            + ")",
            position,
        )

    def array(self, start: int, number: int) -> int:
        position = self.skip(start + 1)
        if self.text[position : position + 1] == "]":
            return position + 1
        item, more = 0, True
        while more:
            item += 1
            where = f"array {number}, item {item}"
            if self.text[position : position + 1] == "{":
                end = self.object(position, where)
            else:
                value, end = self.decode(position)
                if value is not None:
                    self.add(value, position, where)
            more, position = self._after_item(end, "]")
        return position

    def object(self, start: int, where: str) -> int:
        """A graph's entry, or (its first key ``session_and_graph_id_X_Y``) a keyed object."""
        position = self.skip(start + 1)
        if self.text[position : position + 1] == '"':
            key, _ = self.decode(position)
            if KEYED_GRAPH.match(key):
                return self.keyed(position, where)
        value, end = self.decode(start)
        if any(KEYED_GRAPH.match(key) for key in value):  # keyed, after some other key first
            return self.keyed(position, where)  # member by member: a dict drops repeated keys
        if value and not GRAPH_KEYS & value.keys():
            keys = ", ".join(sorted(value)[:5])
            self.fail(
                f"{where}: not a fusion result: none of graph_fusion, ub_fusion, "
                f"session_and_graph_id, graphId (keys: {keys})",
                start,
            )
        if value:  # {} holds no graph
            self.add(value, start, where)
        return end

    def keyed(self, position: int, where: str) -> int:
        """The members of a keyed object from its first key on; other keys are ignored."""
        more = True
        while more:
            key, end = self.decode(position)
            if not isinstance(key, str):
                self.fail("not JSON (Expecting property name enclosed in double quotes)", position)
            colon = self.skip(end)
            if self.text[colon : colon + 1] != ":":
                self.fail("not JSON (Expecting ':' delimiter)", colon)
            value, end = self.decode(self.skip(colon + 1))
            if KEYED_GRAPH.match(key):
                self.add_keyed(key, value, position, where)
            more, position = self._after_item(end, "}")
        return position

    def add_keyed(self, key: str, value: Any, offset: int, where: str) -> None:
        if value is None:  # a graph with nothing to say, as a whole file of null
            return
        if not isinstance(value, dict):
            self.fail(f"{where}, key {key!r}: found a JSON {json_kind(value)}, not an object of fusion rules", offset)
        self.add(value, offset, f"{where}, key {key!r}", KEYED_GRAPH.match(key).groups())


def parse_fusion_result(text: str, path: str | os.PathLike | None = None) -> list[FusionGraph]:
    """The graphs of ``text`` in file order, whichever of the four forms it is in.

    Whitespace around and between values is allowed; an empty text (or ``[]``, ``{}``) gives
    ``[]``. Raises :class:`FusionResultError` (naming ``path`` and the offset, keeping the
    graphs before it) at the first thing that is not part of a fusion result.
    """
    return _Reader(text, path).read()


def read_fusion_result(path: str | os.PathLike) -> list[FusionGraph]:
    """Read a ``fusion_result.json`` in any of its four forms; never writes or moves it.

    Returns one :class:`FusionGraph` per compiled graph (session id, graph id, and the graph-
    fusion and UB-fusion rules with their effect and match times), in file order.

    Raises:
        PrecisionToolError: the file cannot be read or is not UTF-8 text.
        FusionResultError: its content goes wrong (see :func:`parse_fusion_result`).
    """
    path = Path(path)
    return parse_fusion_result(read_text(path, "fusion result file", MAX_FUSION_RESULT_BYTES), path)
