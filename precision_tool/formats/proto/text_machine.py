"""The token-level TextFormat parser behind :mod:`.fast_text`, for lines it has not seen before.

It follows ``google.protobuf.text_format._Parser`` (``_MergeField`` and its skipping of unknown
fields) on an explicit stack of open messages, so that a message may stay open across lines and
the reader can replay the lines it has learnt in between. A frame is ``[type, fields, end,
field]``: the open message's :class:`~.text_schema.MessageType`, its collected fields, the token
that closes it (``"}"`` or ``">"``; with ``"]"`` appended for an item of a ``[...]`` list) and
the field of the enclosing message it belongs to, and the index of the line after the one that
opened it when that line did nothing else (else -1; see :mod:`.fast_text`'s blocks).

While it parses a line it records what the line did, twice:

* for the same line again (``MessageType.lines``): ops on the open messages, where a message
  opened and closed on the line is one op adding its finished value (when that value can be
  shared or copied cheaply);
* for a line that differs only inside its ``"..."`` literals (``MessageType.templates``): every
  open, close and value, a value taken from the literal it came from.
"""

from __future__ import annotations

from typing import Any

from .text_scalars import (
    Unsupported,
    is_identifier,
    skippable_value,
    string_body,
    tokens,
    unescape,
)
from .text_schema import MAP, SKIP, SKIPPED, FieldInfo, MessageType, add

OPEN, CLOSE, MULTI, NOP, LIT, CONST, SUB = range(5, 12)
"""Recorded ops, besides the add kinds of :mod:`.text_schema` (SINGLE, ONEOF, APPEND, MAP)."""
ONE_VALUE, TREE, STEPS = range(3)
"""The kinds of template (see :func:`make_template`)."""

MAX_DEPTH = 100
"""Deeper nesting is left to protobuf, whose recursive parser has its own limit."""
LEARNT_LINES = 20_000
"""Lines remembered per message type; all are forgotten when a type reaches this many."""


_SCALARS = frozenset((str, bytes, int, float, bool, type(None)))


def _frozen(value: Any) -> bool:
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is not tuple:
        return False
    for item in value:
        if type(item) not in _SCALARS and not _frozen(item):
            return False
    return True


def replayable(field: FieldInfo, value: Any) -> tuple | None:
    """The op adding ``value`` to ``field`` on a later identical line: ``(add kind, field,
    value, copy)`` where ``copy`` 1 makes a fresh list of a tuple and 3 fresh lists of a tuple
    of tuples (a ListListInt's lists), 2 and 4 the same of a map entry's value; None for values
    that cannot be shared so (they hold dicts or descriptors)."""
    if _frozen(value):
        return (field.add, field, value, 0)
    if type(value) is list:
        frozen, copy = _frozen_list(value)
        return None if frozen is None else (field.add, field, frozen, copy)
    if field.add == MAP and type(value[1]) is list:
        frozen, copy = _frozen_list(value[1])
        return None if frozen is None else (field.add, field, (value[0], frozen), copy + 1)
    return None


def _frozen_list(value: list) -> tuple[tuple | None, int]:
    """``value`` as a tuple that can be shared, and the copy that makes it a list again (1: of
    immutable items, 3: of lists of them); None and 0 when it holds anything else."""
    frozen = tuple(value)
    if _frozen(frozen):
        return frozen, 1
    if all(type(item) is list for item in value):
        nested = tuple(tuple(item) for item in value)
        if _frozen(nested):
            return nested, 3
    return None, 0


def learn_op(start: MessageType, line: str, op: tuple) -> None:
    """Remember that ``line``, read with a ``start`` message open, did ``op``."""
    lines = start.lines
    if len(lines) >= LEARNT_LINES:
        lines.clear()
    lines[line] = op


def learn(start: MessageType, line: str, record: list) -> None:
    """Remember that ``line``, read with a ``start`` message open, did ``record``."""
    lines = start.lines
    if len(lines) >= LEARNT_LINES:
        lines.clear()
    if not record:
        lines[line] = (NOP,)
    elif len(record) == 1:
        lines[line] = record[0]
    else:  # with the ends of the messages it closes, to check before anything is applied
        lines[line] = (MULTI, tuple(record), tuple(op[1] for op in record if op[0] == CLOSE))


def make_template(ops: list[tuple], closes: list[str]) -> tuple:
    """A template from the ops a line did, one of

    * ``(ONE_VALUE, field)``: the line gives one scalar field the value of its one literal;
    * ``(TREE, depth, items)``: the line closed every message it opened and no other; each item
      is ``(field, LIT, literal index)``, ``(field, CONST, value)`` or ``(field, SUB, items)``,
      a message built from its items, ``depth`` deep;
    * ``(STEPS, closes, ops)``: the ops themselves, with the ends of the messages opened before
      the line that it closes, to check before anything is applied.
    """
    if closes:
        return STEPS, tuple(closes), tuple(ops)
    levels: list[list] = [[]]
    opened: list[FieldInfo] = []
    depth = 0
    for op in ops:
        if op[0] == OPEN:
            levels.append([])
            opened.append(op[1])
            depth = max(depth, len(opened))
        elif op[0] == CLOSE:
            items = tuple(levels.pop())
            levels[-1].append((opened.pop(), SUB, items))
        else:
            levels[-1].append((op[1], op[0], op[2]))
    if opened:
        return STEPS, (), tuple(ops)
    items = tuple(levels[0])
    if len(items) == 1 and items[0][1] == LIT and items[0][2] == 0:
        return ONE_VALUE, items[0][0]
    return TREE, depth, items


class Machine:
    """The open messages, and the token-level parse of new lines (see the module doc)."""

    def __init__(self, root: MessageType, lines: list[str]) -> None:
        self.stack: list[list] = [[root, {}, None, None, -1]]
        self.lines = lines
        self.index = 0  # of the next line to read
        self.tokens: list[str] = []
        self.pos = 0
        self.pulled = False
        self.depth = 0  # of the stack, relative to the start of the line
        self.record: list | None = None
        self.marks: list[int] = []
        self.template: list | None = None
        self.closes: list[str] = []
        self.below = False  # has the line closed a message opened before it?

    # tokens

    def _pull(self) -> bool:
        if self.index >= len(self.lines):
            return False
        self.index += 1
        self.tokens, self.pos, self.pulled = tokens(self.lines[self.index - 1]), 0, True
        return True

    def next(self) -> str:
        """The next token, from the following lines if this one is used up."""
        while self.pos >= len(self.tokens):
            if not self._pull():
                raise Unsupported  # the text ends inside a field
        self.pos += 1
        return self.tokens[self.pos - 1]

    def peek(self) -> str | None:
        """The next token on this line, not taken; None at the end of the line.

        Only a field's optional ending (a separator, a string continuing it) is looked for
        like this, so a field is never continued from the next line: a line that starts with
        a separator or a string is no field, and makes the whole text go to protobuf.
        """
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    # one line

    def line(self, line: str, start: MessageType, skeleton: str | None) -> None:
        """Parse ``line`` (and the following lines it needs) with ``start`` open, and learn
        it; ``skeleton`` is the line with its literals emptied when it may serve as one."""
        self.tokens, self.pos, self.pulled, self.depth = tokens(line), 0, False, 0
        self.record, self.marks, self.below = [], [], False
        self.template, self.closes = ([] if skeleton is not None else None), []
        while self.pos < len(self.tokens):
            self.pos += 1
            self.field(self.tokens[self.pos - 1])
        if self.pulled:
            return
        if self.record is not None:
            learn(start, line, self.record)
        if self.template is not None:
            if len(start.templates) >= LEARNT_LINES:
                start.templates.clear()
            start.templates[skeleton] = make_template(self.template, self.closes)

    def _note(self, op: tuple | None, template_op: tuple | None) -> None:
        """Record an add or an open (None: one that cannot be replayed)."""
        if self.below:  # the enclosing type, where this applies, is not what is looked up
            self.record = self.template = None
            return
        if self.record is not None:
            if op is None:
                self.record = None
            else:
                self.record.append(op)
        if self.template is not None:
            if template_op is None:
                self.template = None
            else:
                self.template.append(template_op)

    # what the grammar does to the open messages

    def add(self, field: FieldInfo, value: Any, literal: int | None = None) -> None:
        add(self.stack[-1][1], field, value)
        if field.add != SKIP:
            self._note(
                replayable(field, value),
                (LIT, field, literal) if literal is not None else (CONST, field, value) if _frozen(value) else None,
            )

    def open(self, field: FieldInfo, end: str) -> None:
        if len(self.stack) > MAX_DEPTH:
            raise Unsupported
        self.stack.append([field.message, {}, end, field, -1])
        self._note((OPEN, field, end), (OPEN, field, end) if len(end) == 1 else None)
        self.depth += 1
        self.marks.append(len(self.record) - 1 if self.record is not None else -1)

    def close(self, token: str) -> bool:
        """Close the open message; True when that opened the next item of a ``[...]`` list."""
        frame = self.stack[-1]
        end = frame[2]
        if end is None or end[0] != token:
            raise Unsupported  # a close that does not match its open, or one too many
        self.stack.pop()
        value = frame[0].finish(frame[1])
        add(self.stack[-1][1], frame[3], value)
        in_list = len(end) == 2
        if self.depth > 0:  # opened on this line: the line adds its finished value
            self.depth -= 1
            mark = self.marks.pop()
            if self.record is not None:
                del self.record[mark:]
                if frame[3].add != SKIP:
                    op = replayable(frame[3], value)
                    if op is None:
                        self.record = None
                    else:
                        self.record.append(op)
        else:
            self.below = True
            if self.record is not None:
                self.record = None if in_list else self.record + [(CLOSE, end)]
            if self.template is not None and not in_list:
                self.closes.append(end)
        if self.template is not None:
            self.template = None if in_list else self.template + [(CLOSE, end)]
        return in_list and self._list_next(frame[3])

    # the grammar (text_format._Parser._MergeField and _SkipFieldContents)

    def field(self, token: str) -> None:
        """One field, or the close of the open message, starting at ``token``."""
        if token in ("}", ">"):
            if self.close(token):
                return
        elif not is_identifier(token):
            raise Unsupported  # [extension], field numbers, stray characters
        else:
            known = self.stack[-1][0].fields.get(token)
            if known is None:
                if self._skip_field():
                    return  # a message opened: a separator may only follow its close
            elif known.message is not None:
                if self._message_field(known):
                    return
            else:
                if self.next() != ":":
                    raise Unsupported
                token = self.next()
                if known.repeated and token == "[":
                    self._scalar_list(known)
                else:
                    self._scalar(known, token)
        if self.peek() in (",", ";"):  # fields may be separated by one of these
            self.pos += 1

    def _scalar(self, field: FieldInfo, token: str) -> None:
        if not field.is_string:
            self.add(field, field.parse(token))
            return
        literal = sum(1 for t in self.tokens[: self.pos - 1] if t[0] == '"') if self.template is not None else None
        bodies = [string_body(token)]
        while (following := self.peek()) is not None and following[0] in "\"'":
            self.pos += 1
            bodies.append(string_body(following))
        if len(bodies) > 1:
            self.template = None  # joined literals: not one literal's value
            self.add(field, field.parse("".join(bodies)))
        else:
            self.add(field, field.parse(bodies[0]), literal)

    def _scalar_list(self, field: FieldInfo) -> None:
        token = self.next()
        while token != "]":
            self._scalar(field, token)
            token = self.next()
            if token == ",":
                token = self.next()
                if token == "]":
                    raise Unsupported  # protobuf wants a value after each comma
            elif token != "]":
                raise Unsupported

    def _message_field(self, field: FieldInfo) -> bool:
        """The value of a message field; True when it opened a message (left to read)."""
        token = self.next()
        if token == ":":
            token = self.next()
        if field.repeated and token == "[":
            token = self.next()
            if token == "]":
                return False
            self._list_item(field, token)
        elif token in ("{", "<"):
            self.open(field, "}" if token == "{" else ">")
        else:
            raise Unsupported
        return True

    def _list_item(self, field: FieldInfo, token: str) -> None:
        if token not in ("{", "<"):
            raise Unsupported
        self.open(field, ("}" if token == "{" else ">") + "]")

    def _list_next(self, field: FieldInfo) -> bool:
        """After an item of a ``[...]`` list: True when the next one opened, False at ``]``."""
        token = self.next()
        if token == ",":
            self._list_item(field, self.next())
            return True
        if token != "]":
            raise Unsupported
        return False

    def _skip_field(self) -> bool:
        """An unknown field's value; True when it opened a message (left to read)."""
        token = self.next()
        if token == ":":
            token = self.next()
            if token not in ("{", "<"):
                if token == "[":
                    self._skip_list(0)
                else:
                    self._skip_value(token)
                return False
        if token not in ("{", "<"):
            raise Unsupported
        self.open(SKIPPED, "}" if token == "{" else ">")
        return True

    def _skip_value(self, token: str) -> None:
        if not skippable_value(token):
            raise Unsupported
        if token[0] in "\"'":
            unescape(token[1:-1])  # protobuf unescapes it, and so fails on a bad escape
            while (following := self.peek()) is not None and following[0] in "\"'":
                self.pos += 1
                unescape(string_body(following))

    def _skip_list(self, depth: int) -> None:
        token = self.next()
        if token == "]":
            return
        while True:
            if token in ("{", "<"):
                self._skip_message(token, depth + 1)
            else:
                self._skip_value(token)
            token = self.next()
            if token == "]":
                return
            if token != ",":
                raise Unsupported
            token = self.next()

    def _skip_message(self, opening: str, depth: int) -> None:
        # An unknown message inside a [...] list of unknown values, read to its close here.
        if depth + len(self.stack) > MAX_DEPTH:
            raise Unsupported
        token = self.next()
        while token not in ("}", ">"):
            if not is_identifier(token):
                raise Unsupported
            token = self.next()
            if token == ":":
                token = self.next()
                if token == "[":
                    self._skip_list(depth)
                elif token in ("{", "<"):
                    self._skip_message(token, depth + 1)
                else:
                    self._skip_value(token)
            elif token in ("{", "<"):
                self._skip_message(token, depth + 1)
            else:
                raise Unsupported
            token = self.next()
            if token in (",", ";"):
                token = self.next()
        if token != ("}" if opening == "{" else ">"):
            raise Unsupported
