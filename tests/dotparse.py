"""A small reader of the DOT language, written for the tests from the grammar in graphviz's
documentation (https://graphviz.org/doc/info/lang.html), independent of the tool's writer.

It reads what ``ni -s`` writes: a ``digraph`` of node statements ``ID [a=b ...]``, edge
statements ``ID(:port)* -> ID(:port)* [attrs]``, attribute statements ``graph|node|edge [...]``
and ``a=b`` statements; IDs are bare words, numerals, double-quoted strings (``\\"`` escapes a
quote) or HTML strings ``<...>`` (nested angle brackets). A quoted string keeps its backslash
escapes as written (``\\n``, ``\\\\``), as graphviz passes them to the label renderer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/|\#[^\n]*)
  | (?P<arrow>->|--)
  | (?P<punct>[{}\[\];=,:])
  | (?P<quoted>"(?:[^"\\]|\\.)*")
  | (?P<word>[A-Za-z_\x80-\uffff][A-Za-z_0-9\x80-\uffff]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
  | (?P<html><)
""",
    re.S | re.X,
)


@dataclass(frozen=True)
class Token:
    kind: str  # id, html, arrow, punct
    text: str  # for quoted ids: the content without the quotes, escapes kept


def _html(source: str, start: int) -> tuple[str, int]:
    depth, at = 0, start
    while at < len(source):
        char = source[at]
        depth += char == "<"
        depth -= char == ">"
        at += 1
        if depth == 0:
            return source[start + 1 : at - 1], at
    raise ValueError("unterminated HTML string")


def tokens(source: str) -> list[Token]:
    """The tokens of ``source``; ValueError on a character DOT does not allow."""
    out, at = [], 0
    while at < len(source):
        match = _TOKEN.match(source, at)
        if match is None:
            raise ValueError(f"unexpected {source[at : at + 20]!r}")
        kind = match.lastgroup
        if kind == "html":
            text, at = _html(source, at)
            out.append(Token("html", text))
            continue
        at = match.end()
        text = match.group()
        if kind == "quoted":
            out.append(Token("id", text[1:-1]))
        elif kind == "word":
            out.append(Token("id", text))
        elif kind in ("arrow", "punct"):
            out.append(Token(kind, text))
    return out


@dataclass
class Graph:
    """The statements of one graph: node attributes by id, edges, graph attributes."""

    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # "n0:out0:s"
    attrs: dict[str, str] = field(default_factory=dict)
    html_values: list[str] = field(default_factory=list)  # every <...> value seen
    subgraphs: dict[str, Graph] = field(default_factory=dict)  # ``subgraph NAME { ... }``, apart


class _Reader:
    def __init__(self, items: list[Token]) -> None:
        self.items, self.at = items, 0

    def peek(self, offset: int = 0) -> Token | None:
        at = self.at + offset
        return self.items[at] if at < len(self.items) else None

    def take(self, text: str | None = None, kind: str | None = None) -> Token:
        token = self.peek()
        if token is None or (text is not None and token.text != text) or (kind and token.kind != kind):
            raise ValueError(f"expected {text or kind}, got {token}")
        self.at += 1
        return token

    def value(self, graph: Graph) -> str:
        token = self.peek()
        if token is None or token.kind not in ("id", "html"):
            raise ValueError(f"expected a value, got {token}")
        self.at += 1
        if token.kind == "html":
            graph.html_values.append(token.text)
        return token.text

    def attr_list(self, graph: Graph) -> dict[str, str]:
        attrs: dict[str, str] = {}
        while self.peek() is not None and self.peek().text == "[":
            self.take("[")
            while self.peek().text != "]":
                key = self.value(graph)
                self.take("=")
                attrs[key] = self.value(graph)
                if self.peek().text in (",", ";"):
                    self.at += 1
            self.take("]")
        return attrs

    def node_id(self, graph: Graph) -> str:
        parts = [self.value(graph)]
        while self.peek() is not None and self.peek().text == ":":
            self.take(":")
            parts.append(self.value(graph))
        return ":".join(parts)


def parse(source: str) -> Graph:
    """The one ``digraph`` of ``source``; ValueError when it is not what the grammar allows."""
    reader, graph = _Reader(tokens(source)), Graph()
    if reader.peek().text == "strict":
        reader.take("strict")
    reader.take("digraph")
    if reader.peek().text != "{":
        reader.value(graph)
    _body(reader, graph)
    if reader.peek() is not None:
        raise ValueError(f"text after the graph: {reader.peek()}")
    return graph


def _subgraph(reader: _Reader, graph: Graph) -> None:
    reader.take("subgraph")
    name = reader.value(graph)
    inner = graph.subgraphs.setdefault(name, Graph())
    inner.html_values = graph.html_values  # one list: no HTML-like value anywhere
    _body(reader, inner)


def _body(reader: _Reader, graph: Graph) -> None:
    """``{ statement; ... }`` into ``graph``."""
    reader.take("{")
    while reader.peek().text != "}":
        _statement(reader, graph)
        if reader.peek().text == ";":
            reader.take(";")
    reader.take("}")


def _statement(reader: _Reader, graph: Graph) -> None:
    first = reader.peek()
    if first.text == "subgraph" and first.kind == "id":
        _subgraph(reader, graph)
        return
    if first.text in ("graph", "node", "edge") and first.kind == "id" and reader.peek(1).text == "[":
        reader.take()
        attrs = reader.attr_list(graph)
        if first.text == "graph":
            graph.attrs.update(attrs)
        return
    if reader.peek(1) is not None and reader.peek(1).text == "=":
        key = reader.value(graph)
        reader.take("=")
        graph.attrs[key] = reader.value(graph)
        return
    ends = [reader.node_id(graph)]
    while reader.peek().kind == "arrow":
        reader.take(kind="arrow")
        ends.append(reader.node_id(graph))
    attrs = reader.attr_list(graph)
    if len(ends) == 1:
        graph.nodes.setdefault(ends[0], {}).update(attrs)
    else:
        graph.edges += [(a, b, attrs) for a, b in zip(ends, ends[1:])]


def unescape(text: str) -> str:
    """A quoted DOT string's text as shown: ``\\"`` a quote, ``\\\\`` a backslash."""
    return re.sub(r"\\(.)", r"\1", text)
