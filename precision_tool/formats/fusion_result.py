"""``fusion_result.json``: what the graph compiler's fusion passes did (FORMATS.md section 8).

GE appends one JSON object per compiled graph, back to back with nothing between them::

    {"graph_fusion": {"ConvBiasAddFusionPass": {"effect_times": "2", "match_times": "2"}},
     "session_and_graph_id": "1_1", "ub_fusion": {...}}{"graphId": "0_0", ...}

so the file as a whole is not one JSON document. :func:`parse_fusion_result` reads it as a
sequence of objects with :meth:`json.JSONDecoder.raw_decode`. Counts are strings in real files;
integers are taken too. The graph id is ``session_and_graph_id``, or ``graphId`` in older files.

A bad object or a garbage tail raises :class:`FusionResultError` naming the file and the
character offset where the problem starts; the error keeps the objects read before that offset
(``error.graphs``), so a caller can still show them. The file is only ever read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PrecisionToolError
from .files import read_user_bytes

GRAPH_ID_KEYS = ("session_and_graph_id", "graphId")
"""Where an object keeps its graph id, newest spelling first."""

SECTIONS = ("graph_fusion", "ub_fusion")

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


@dataclass(frozen=True)
class FusionRule:
    """One fusion rule (pass) of one graph: how often it matched and how often it took effect."""

    name: str
    effect_times: int
    match_times: int | None  # None when the file does not say


@dataclass(frozen=True)
class FusionGraph:
    """One object of the file: the rules of one compiled graph, in file order.

    ``index`` is the object's position in the file (0-based); ``offset`` the character offset
    where it starts.
    """

    graph_id: str | None
    graph_fusion: tuple[FusionRule, ...]
    ub_fusion: tuple[FusionRule, ...]
    index: int = 0
    offset: int = 0

    def effective(self, section: str) -> list[FusionRule]:
        """The rules of ``section`` (``"graph_fusion"`` or ``"ub_fusion"``) with effect_times > 0."""
        return [rule for rule in getattr(self, section) if rule.effect_times > 0]


class FusionResultError(PrecisionToolError):
    """A fusion_result.json that is not a sequence of fusion objects from ``offset`` on.

    ``graphs`` holds the objects read before ``offset``.
    """

    def __init__(self, message: str, path: str | os.PathLike | None, offset: int,
                 graphs: list[FusionGraph]):
        super().__init__(f"{message} at offset {offset}", path)
        self.offset = offset
        self.graphs = graphs


class _BadObject(ValueError):
    """An object that is valid JSON but not a fusion result (message says why)."""


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise _BadObject(f"{where} is {value!r}, not a count")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise _BadObject(f"{where} is {value!r}, not a count")


def _rules(section: str, value: Any) -> tuple[FusionRule, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise _BadObject(f"{section} is a {type(value).__name__}, not an object of rules")
    rules = []
    for name, counts in value.items():
        if not isinstance(counts, dict):
            raise _BadObject(f"{section} rule {name!r} is not an object of counts")
        effect = _count(counts.get("effect_times", 0), f"{section} {name} effect_times")
        match = counts.get("match_times")
        rules.append(FusionRule(name, effect,
                                None if match is None else _count(match, f"{section} {name} match_times")))
    return tuple(rules)


def _graph_id(value: dict[str, Any]) -> str | None:
    for key in GRAPH_ID_KEYS:
        if value.get(key) is not None:
            return str(value[key])
    return None


def fusion_graph_from_json(value: Any, index: int = 0, offset: int = 0) -> FusionGraph:
    """One decoded object as a :class:`FusionGraph`; ``ValueError`` when it is not one."""
    if not isinstance(value, dict):
        raise _BadObject(f"found a JSON {type(value).__name__}, not an object")
    return FusionGraph(_graph_id(value), _rules("graph_fusion", value.get("graph_fusion")),
                       _rules("ub_fusion", value.get("ub_fusion")), index, offset)


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position


def parse_fusion_result(text: str, path: str | os.PathLike | None = None) -> list[FusionGraph]:
    """The fusion objects of ``text``, one per compiled graph, in file order.

    Whitespace around and between objects is allowed; an empty text gives ``[]``. Raises
    :class:`FusionResultError` (naming ``path`` and the offset, keeping the objects before it)
    at the first thing that is not a fusion object.
    """
    graphs: list[FusionGraph] = []
    position = _skip_space(text, 1 if text.startswith("\ufeff") else 0)
    while position < len(text):
        try:
            value, end = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise FusionResultError(f"not JSON ({exc.msg})", path, exc.pos, graphs) from None
        try:
            graphs.append(fusion_graph_from_json(value, len(graphs), position))
        except _BadObject as exc:
            raise FusionResultError(f"object {len(graphs) + 1}: {exc}", path, position,
                                    graphs) from None
        position = _skip_space(text, end)
    return graphs


def read_fusion_result(path: str | os.PathLike) -> list[FusionGraph]:
    """Read a ``fusion_result.json`` (see :func:`parse_fusion_result`); never writes or moves it.

    Raises :class:`PrecisionToolError` when the file cannot be read or is not UTF-8 text, and
    :class:`FusionResultError` when its content goes wrong.
    """
    path = Path(path)
    raw = read_user_bytes(path, "fusion result file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PrecisionToolError(f"not UTF-8 text: byte {exc.start}", path) from None
    return parse_fusion_result(text, path)
