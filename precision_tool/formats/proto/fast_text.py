"""A fast reader of protobuf TextFormat that builds the caller's objects directly.

protobuf's own TextFormat parser (``google.protobuf.text_format``) is pure Python that sets each
field on a message object; a 70 MB graph dump takes it about a minute. This reader gets the same
result several times faster by doing less per line:

* It reads line by line, and per message type it learns what each line did. A Build graph
  repeats most of its lines (``}``, ``layout: "ND"``, whole ``attr { ... }`` lines), so a line
  seen before costs a dict lookup and the replay of what it did; a line that differs from one
  seen before only inside its ``"..."`` literals replays that line's steps with its own strings.
* Other lines are parsed token by token (:mod:`.text_machine`), against message types compiled
  from the descriptors that :mod:`.schema` builds (:mod:`.text_schema`): field names, types and
  enums are not written twice.
* Each finished message goes to a *finisher* the caller gives, which turns its fields into the
  caller's own objects, bottom up: no protobuf message is made.

It accepts only what ``text_format.Parse(text, message, allow_unknown_field=True)`` accepts,
with the same values. Anything else -- a syntax error, a singular field given twice, very deep
nesting, a construct it does not handle -- raises :class:`Unsupported`, and the caller parses
with protobuf instead (which also words the error, with its line and column).
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from .text_machine import (
    CLOSE,
    CONST,
    LEARNT_LINES,
    LIT,
    MAX_DEPTH,
    MULTI,
    NOP,
    ONE_VALUE,
    OPEN,
    TREE,
    Machine,
    learn,
    learn_op,
    replayable,
)
from .text_scalars import SIMPLE, Unsupported, skippable_value
from .text_schema import (
    APPEND,
    MAP,
    ONEOF,
    SINGLE,
    SKIP,
    FieldInfo,
    MessageType,
    add,
    compile_schema,
)

__all__ = ["Unsupported", "compile_schema", "parse"]


def _copy(value: Any, how: int) -> Any:
    """A learnt value as fresh lists (``how``: see :func:`.text_machine.replayable`)."""
    if how == 1:
        return list(value)
    if how == 2:
        return value[0], list(value[1])
    if how == 3:
        return [list(item) for item in value]
    return value[0], [list(item) for item in value[1]]


def _closes_fit(stack: list[list], closes: tuple) -> bool:
    """Whether the open messages end with those ``closes`` closes (innermost first)."""
    return len(closes) < len(stack) and all(stack[-1 - i][2] == end for i, end in enumerate(closes))


def _replay(stack: list[list], op: tuple) -> bool:
    """Apply a learnt line's op to the open messages; False when it does not fit them (the
    line is then parsed again), before anything is changed."""
    code = op[0]
    if code == MULTI:
        if not _closes_fit(stack, op[2]):
            return False
        for item in op[1]:
            _replay(stack, item)
    elif code == OPEN:
        if len(stack) > MAX_DEPTH:
            raise Unsupported
        stack.append([op[1].message, {}, op[2], op[1], -1])
    elif code == CLOSE:
        frame = stack[-1]
        if frame[2] != op[1]:
            return False
        stack.pop()
        add(stack[-1][1], frame[3], frame[0].finish(frame[1]))
    elif code != NOP:
        add(stack[-1][1], op[1], _copy(op[2], op[3]) if op[3] else op[2])
    return True


def _value(field: FieldInfo, kind: int, x: Any, bodies: list[str]) -> Any:
    """The value of one item of a template (see :func:`.text_machine.make_template`)."""
    if kind == LIT:
        return field.parse(bodies[x])
    if kind == CONST:
        return x
    fields: dict = {}
    for item in x:
        add(fields, item[0], _value(*item, bodies))
    return field.message.finish(fields)


def _replay_template(stack: list[list], template: tuple, bodies: list[str], line: str) -> bool:
    """Apply a learnt template (:func:`.text_machine.make_template`) with the literals
    ``bodies``; False when it does not fit the open messages.

    A template that closes what it opens also teaches ``line`` itself, with the values it
    added, so that the same line again is replayed as one op.
    """
    if template[0] == TREE:
        _, depth, ops = template
        if len(stack) + depth > MAX_DEPTH:
            raise Unsupported
        frame = stack[-1]
        record: list | None = []
        for field, kind, x in ops:
            value = _value(field, kind, x, bodies)
            add(frame[1], field, value)
            if record is not None and field.add != SKIP:
                op = replayable(field, value)
                if op is None:
                    record = None
                else:
                    record.append(op)
        if record is not None:
            learn(frame[0], line, record)
        return True
    _, closes, ops = template
    if closes and not _closes_fit(stack, closes):
        return False
    for op in ops:
        code = op[0]
        if code == LIT:
            add(stack[-1][1], op[1], op[1].parse(bodies[op[2]]))
        elif code == CONST:
            add(stack[-1][1], op[1], op[2])
        elif code == OPEN:
            if len(stack) > MAX_DEPTH:
                raise Unsupported
            stack.append([op[1].message, {}, op[2], op[1], -1])
        else:
            frame = stack.pop()
            add(stack[-1][1], frame[3], frame[0].finish(frame[1]))
    return True


def _simple(line: str, frame: list, skeleton: str | None) -> bool:
    """Parse a new line holding one plain scalar field, and learn it; False if it is not one."""
    match = SIMPLE.fullmatch(line)
    if match is None:
        return False
    message = frame[0]
    field = message.fields.get(match.group(1))
    body, token = match.group(2), match.group(3)
    if field is None:  # unknown: skipped, if protobuf would take the value
        if token is not None and not skippable_value(token):
            raise Unsupported
        learn(message, line, [])
        return True
    if field.message is not None or field.is_string != (body is not None):
        raise Unsupported  # a message field wants { or <, a string field a string
    value = field.parse(body if body is not None else token)
    add(frame[1], field, value)
    learn_op(message, line, (field.add, field, value, 0))  # scalars are immutable
    if skeleton is not None:
        message.templates[skeleton] = (ONE_VALUE, field)
    return True


MAX_BLOCK = 64
"""Longer messages are not learnt as blocks (their lines are, one by one)."""
BLOCK_MISSES = 256
"""A type none of whose first this many messages could be learnt as a block is not tried."""
BLOCK_VERSIONS = 8
"""Versions of a block kept besides the first, for one opening and first line: an attribute of
GE's ops takes a few values across a graph (its pass names, its fused-scope number), and a block
kept in one version only would be relearnt at each change."""
BLOCK_CHURN = 64
"""New versions of a block after which it is no longer learnt: one that names its op (a fused
op's names, its kernel) never repeats, and would cost a look at every version each time."""


def _learn_block(frame: list, lines: list[str], end: int, value: Any, parent: MessageType) -> None:
    """Remember the message of ``frame``, read from its open line to ``lines[end - 1]``, which
    closed it, so that the same lines are replayed as one op adding ``value``."""
    first = frame[4]
    if first < 0 or end - first > MAX_BLOCK:
        return
    opening = lines[first - 1]
    blocks = parent.blocks.get(opening)
    known = None if blocks is None else blocks.get(lines[first])
    if known is not None and known[3] < 0:
        return  # a block that never repeats (it names its op): not learnt again
    op = replayable(frame[3], value)
    if op is None:
        frame[0].block_misses += 1
        return
    frame[0].block_misses = -(1 << 30)  # some can: keep trying
    if blocks is None:
        if len(parent.blocks) >= LEARNT_LINES:
            parent.blocks.clear()
        blocks = parent.blocks[opening] = {}
    if known is None:
        if len(blocks) >= LEARNT_LINES:
            blocks.clear()
        blocks[lines[first]] = [lines[first:end], op, [], 0]
        return
    body = lines[first:end]
    if known[0] != body and all(version[0] != body for version in known[2]):
        known[3] += 1
        if known[3] > BLOCK_CHURN:
            blocks[lines[first]] = _NEVER_AGAIN
            return
        if len(known[2]) >= BLOCK_VERSIONS:
            del known[2][0]
        known[2].append((body, op))


_NEVER_AGAIN = [[None], None, [], -1]
"""The learnt block of an opening and first line whose versions kept changing: no line is None,
so it is never replayed, and has no other versions."""


def _other_version(block: tuple, lines: list[str], after: int) -> tuple | None:
    """The version of a learnt block, other than the first learnt, that the lines from
    ``after`` on repeat; None when none does."""
    for version in block[2]:
        if lines[after : after + len(version[0])] == version[0]:
            return version
    return None


def parse(text: str, root: MessageType) -> Any:
    """``text``, the TextFormat of ``root``'s message, as ``root``'s finisher makes it.

    Raises :class:`Unsupported` for anything protobuf's parser would reject or read otherwise,
    and for what this reader does not handle: the caller then parses with protobuf.
    """
    # One long loop on purpose: it runs once per line of files with millions of lines, and a
    # function call per line would cost a fifth of the time.
    lines = text.split("\n")
    lines_left = iter(lines)
    offset = 1  # lines[i + offset] follows line i: more than one once lines are skipped
    machine = Machine(root, lines)
    stack = machine.stack
    frame = stack[-1]
    learnt = root.lines
    for i, line in enumerate(lines_left):
        op = learnt.get(line)
        if op is not None:  # the commonest ops inline: this runs for millions of lines
            code = op[0]
            if code == OPEN:
                after = i + offset
                blocks = frame[0].blocks.get(line)
                block = None if blocks is None or after >= len(lines) else blocks.get(lines[after])
                if block is not None and lines[after : after + len(block[0])] != block[0]:
                    block = _other_version(block, lines, after)
                if block is None:
                    if len(stack) > MAX_DEPTH:
                        raise Unsupported
                    frame = [op[1].message, {}, op[2], op[1], after]
                    stack.append(frame)
                    learnt = frame[0].lines
                    continue
                skip = len(block[0])  # a learnt block: its lines skipped, its one add below
                next(islice(lines_left, skip - 1, skip), None)
                offset += skip
                op = block[1]
                code = op[0]
            if code == SINGLE and not op[3]:
                fields, name = frame[1], op[1].name
                if name in fields:
                    raise Unsupported
                fields[name] = op[2]
                continue
            if code == MAP:
                key, item = _copy(op[2], op[3]) if op[3] else op[2]
                fields, name = frame[1], op[1].name
                try:
                    fields[name][key] = item
                except KeyError:
                    fields[name] = {key: item}
                continue
            if code == CLOSE and frame[2] == op[1]:
                closed = stack.pop()
                value = closed[0].finish(closed[1])
                frame = stack[-1]
                field = closed[3]
                if field.add == APPEND:  # descriptors, ops: the commonest close
                    try:
                        frame[1][field.name].append(value)
                    except KeyError:
                        frame[1][field.name] = [value]
                else:
                    add(frame[1], field, value)
                learnt = frame[0].lines
                if closed[4] >= 0 and closed[0].block_misses < BLOCK_MISSES:
                    _learn_block(closed, lines, i + offset, value, frame[0])
                continue
            if code == ONEOF and not op[3]:
                fields, field = frame[1], op[1]
                if field.oneof in fields:
                    raise Unsupported
                fields[field.oneof] = field.name
                fields[field.name] = op[2]
                continue
            if code == APPEND:
                add(frame[1], op[1], _copy(op[2], op[3]) if op[3] else op[2])
                continue
            if _replay(stack, op):
                frame = stack[-1]
                learnt = frame[0].lines
                continue
        machine.index = i + offset
        _new_line(machine, line, frame)
        pulled = machine.index - (i + offset)
        if pulled:  # the line's field went on in the lines after it
            next(islice(lines_left, pulled - 1, pulled), None)
            offset += pulled
        frame = stack[-1]
        learnt = frame[0].lines
    if len(stack) != 1:
        raise Unsupported  # the text ends inside a message
    return root.finish(stack[0][1])


def _new_line(machine: Machine, line: str, frame: list) -> None:
    """A line not learnt in this context (or whose learnt ops do not fit the open messages)."""
    skeleton = number_key = None
    if '"' not in line:
        head, _, token = line.rpartition(": ")
        if token.isdigit() and token.isascii():  # an integer (ids): learnt by what precedes it
            template = frame[0].templates.get(head)  # no '""' in it: no string skeleton
            if template is not None and template[0] == ONE_VALUE:
                add(frame[1], template[1], template[1].parse(token))
                return
            number_key = head
    elif "'" not in line and "#" not in line and "\\" not in line:
        # Without ' # or \ every " starts or ends a string token: what lies between the
        # strings tokenizes the same whatever they hold.
        parts = line.split('"')
        if len(parts) % 2:  # else a string is not closed
            skeleton = '""'.join(parts[0::2])
            template = frame[0].templates.get(skeleton)
            if template is not None:
                if template[0] == ONE_VALUE:  # the commonest: one field, from one string
                    field = template[1]
                    value = field.parse(parts[1])
                    add(frame[1], field, value)
                    learn_op(frame[0], line, (field.add, field, value, 0))
                    return
                if _replay_template(machine.stack, template, parts[1::2], line):
                    return
    if not _simple(line, frame, skeleton if number_key is None else number_key):
        machine.line(line, frame[0], skeleton)
