"""Message types for the fast TextFormat reader, compiled from protobuf descriptors.

The descriptors are those :mod:`.schema` builds from its one declaration, so field names, types
and enum names come from there. A :class:`MessageType` also carries its *finisher* (the caller's
function that turns a finished message's collected fields into a value) and the lines the reader
has learnt in its context. How one value joins a message's fields (:func:`add`) is here too:
as protobuf's ``text_format.Parse`` would set it, except that what ``Parse`` might refuse (a
singular field or a oneof member given twice) raises :class:`Unsupported`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from .text_scalars import STRING_TYPES, Unsupported, scalar_parser

Finisher = Callable[[dict], Any]

SINGLE, ONEOF, APPEND, MAP, SKIP = range(5)
"""How a value joins a message (:attr:`FieldInfo.add`)."""

_ABSENT = object()

OMIT = object()
"""What a finisher returns for a map value to leave its entry out of the map (as if the entry
had not been given; a later entry of the key still counts, as an earlier one no longer does)."""


class FieldInfo:
    """One field of a :class:`MessageType`."""

    __slots__ = ("name", "add", "oneof", "parse", "message", "is_string", "repeated")

    def __init__(
        self,
        name: str,
        add: int,
        *,
        oneof: str | None = None,
        parse: Callable[[str], Any] | None = None,
        message: MessageType | None = None,
        is_string: bool = False,
        repeated: bool = False,
    ) -> None:
        self.name, self.add, self.oneof, self.parse = name, add, oneof, parse
        self.message, self.is_string, self.repeated = message, is_string, repeated


class MessageType:
    """A message type, its finisher, and what was learnt in its context: ``lines`` maps a line
    to what it did, ``templates`` a line with its string literals emptied to what it did, and
    ``blocks`` a line opening a message to ``{next line: [the lines to the close, op, other
    versions, how many were added]}``, each other version ``(lines, op)``."""

    __slots__ = ("name", "fields", "finish", "lines", "templates", "blocks", "block_misses")

    def __init__(self, name: str, finish: Finisher) -> None:
        self.name, self.finish = name, finish
        self.fields: dict[str, FieldInfo] = {}
        self.lines: dict[str, tuple] = {}
        self.templates: dict[str, tuple] = {}
        self.blocks: dict[str, dict[str, tuple]] = {}
        # Finished values of this type that could not be shared as a block, until one could:
        # past a few hundred, blocks of it are no longer tried (descriptors, ops).
        self.block_misses = 0


UNKNOWN = MessageType("<unknown>", lambda fields: None)
"""The type of an unknown field's message: every field in it is unknown too."""
SKIPPED = FieldInfo("<unknown>", SKIP, message=UNKNOWN)


def add(fields: dict, field: FieldInfo, value: Any) -> None:
    """Put one value of ``field`` into a message's collected ``fields``."""
    kind = field.add
    if kind == APPEND:
        try:
            fields[field.name].append(value)
        except KeyError:
            fields[field.name] = [value]
    elif kind == MAP:
        key, item = value
        entries = fields.get(field.name)
        if entries is None:
            entries = fields[field.name] = {}
        if item is OMIT:
            entries.pop(key, None)
        else:
            entries[key] = item  # a later entry wins, as protobuf's does
    elif kind == SINGLE:
        if field.name in fields:
            raise Unsupported
        fields[field.name] = value
    elif kind == ONEOF:
        if field.oneof in fields:
            raise Unsupported
        fields[field.oneof] = field.name
        fields[field.name] = value


def _short_name(descriptor: Descriptor) -> str:
    package = descriptor.file.package
    return descriptor.full_name[len(package) + 1 :] if package else descriptor.full_name


def _map_entry_finisher(entry: Descriptor, value_type: MessageType | None) -> Finisher:
    key_default = entry.fields_by_name["key"].default_value
    value_default = entry.fields_by_name["value"].default_value

    def finish(fields: dict) -> tuple[Any, Any]:
        value = fields.get("value", _ABSENT)
        if value is _ABSENT:  # an entry without its value holds the value's default
            value = value_type.finish({}) if value_type is not None else value_default
        return fields.get("key", key_default), value

    return finish


class _Compiler:
    def __init__(self, finishers: Mapping[str, Finisher], field_finishers: Mapping[tuple[str, str], Finisher]) -> None:
        self.finishers, self.field_finishers = finishers, field_finishers
        self.types: dict[tuple[str, int], MessageType] = {}

    def message(self, descriptor: Descriptor, finish: Finisher | None = None) -> MessageType:
        name = _short_name(descriptor)
        finish = finish or self.finishers.get(name) or dict
        key = (descriptor.full_name, id(finish))
        known = self.types.get(key)
        if known is not None:
            return known
        message = self.types[key] = MessageType(name, finish)
        for field in descriptor.fields:
            message.fields[field.name] = self.field(name, field)
        return message

    def field(self, owner: str, field: FieldDescriptor) -> FieldInfo:
        target = field.message_type
        if target is not None and target.GetOptions().map_entry:
            value_message = target.fields_by_name["value"].message_type
            value_type = self.message(value_message) if value_message is not None else None
            entry = self.message(target, _map_entry_finisher(target, value_type))
            return FieldInfo(field.name, MAP, message=entry, repeated=True)
        oneof = field.containing_oneof
        kind = APPEND if field.is_repeated else ONEOF if oneof is not None else SINGLE
        extra: dict[str, Any] = {"oneof": None if oneof is None else "@" + oneof.name, "repeated": field.is_repeated}
        if target is not None:
            finish = self.field_finishers.get((owner, field.name))
            return FieldInfo(field.name, kind, message=self.message(target, finish), **extra)
        return FieldInfo(field.name, kind, parse=scalar_parser(field), is_string=field.type in STRING_TYPES, **extra)


def compile_schema(
    root: Descriptor,
    finishers: Mapping[str, Finisher],
    field_finishers: Mapping[tuple[str, str], Finisher] | None = None,
) -> MessageType:
    """The :class:`MessageType` of ``root`` and, through its fields, of every message under it.

    ``finishers`` maps a message name without its package (``"AttrDef.ListValue"``) to the
    function that turns its collected fields into a value (a message without one gives the dict
    itself); ``field_finishers`` overrides that for the messages of one field
    (``{("AttrDef", "g"): ...}``). The fields dict holds a singular field's value under its name
    (absent when not given), a repeated field's values as a list, a map as ``{key: value}``,
    and for a oneof the name of its member under ``"@" + oneof name``. Make a fresh one per
    parse: the learnt lines live in it.
    """
    return _Compiler(finishers, field_finishers or {}).message(root)
