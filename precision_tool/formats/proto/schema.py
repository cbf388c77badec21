"""Build protobuf message classes from a compact schema written in Python.

The NPU dump header and GE graphs are protobuf messages. Rather than shipping ``protoc``
output (whose generated code is tied to one protobuf runtime version), each schema is declared
here as plain data and turned into a real ``FileDescriptorProto``; the protobuf library then does
all parsing (binary, TextFormat) against it. The field numbers and enum values are those of
FORMATS.md, which mirror Huawei's ``dump_data.proto`` and GE's ``ge_ir.proto``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FDP = descriptor_pb2.FieldDescriptorProto

_SCALARS = {
    "double": _FDP.TYPE_DOUBLE,
    "float": _FDP.TYPE_FLOAT,
    "int64": _FDP.TYPE_INT64,
    "uint64": _FDP.TYPE_UINT64,
    "int32": _FDP.TYPE_INT32,
    "uint32": _FDP.TYPE_UINT32,
    "bool": _FDP.TYPE_BOOL,
    "string": _FDP.TYPE_STRING,
    "bytes": _FDP.TYPE_BYTES,
}


@dataclass(frozen=True)
class Field:
    """One field: ``type`` is a scalar name, a message or enum name, or ``map<string, X>``."""

    name: str
    number: int
    type: str
    repeated: bool = False
    oneof: str | None = None


@dataclass(frozen=True)
class Enum:
    name: str
    values: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Message:
    name: str
    fields: tuple[Field, ...]
    nested: tuple[Message, ...] = ()
    enums: tuple[Enum, ...] = ()


@dataclass(frozen=True)
class ProtoFile:
    name: str
    package: str
    messages: tuple[Message, ...]
    enums: tuple[Enum, ...] = field(default_factory=tuple)


def _add_enum(container, enum: Enum) -> None:
    proto = container.add(name=enum.name)
    for name, number in enum.values:
        proto.value.add(name=name, number=number)


def _map_entry_name(field_name: str) -> str:
    return "".join(part.capitalize() for part in field_name.split("_")) + "Entry"


def _resolve(type_name: str, scope: str, enums: set[str]) -> tuple[int, str | None]:
    """The descriptor type and fully-qualified type name for a field's declared type."""
    if type_name in _SCALARS:
        return _SCALARS[type_name], None
    full = type_name if type_name.startswith(".") else f"{scope}.{type_name}"
    return (_FDP.TYPE_ENUM if type_name.split(".")[-1] in enums else _FDP.TYPE_MESSAGE), full


def _add_message(container, message: Message, package: str, enums: set[str]) -> None:
    proto = container.add(name=message.name)
    for enum in message.enums:
        _add_enum(proto.enum_type, enum)
    for nested in message.nested:
        _add_message(proto.nested_type, nested, package, enums)
    oneofs: list[str] = []
    for spec in message.fields:
        fproto = proto.field.add(name=spec.name, number=spec.number, json_name=spec.name)
        fproto.label = _FDP.LABEL_REPEATED if spec.repeated else _FDP.LABEL_OPTIONAL
        if spec.type.startswith("map<"):
            key, value = (t.strip() for t in spec.type[4:-1].split(","))
            entry = proto.nested_type.add(name=_map_entry_name(spec.name))
            entry.options.map_entry = True
            for number, (name, declared) in enumerate((("key", key), ("value", value)), 1):
                kind, full = _resolve(declared, f".{package}", enums)
                entry.field.add(
                    name=name,
                    number=number,
                    type=kind,
                    label=_FDP.LABEL_OPTIONAL,
                    **({"type_name": full} if full else {}),
                )
            fproto.label = _FDP.LABEL_REPEATED
            fproto.type = _FDP.TYPE_MESSAGE
            fproto.type_name = f".{package}.{message.name}.{entry.name}"
            continue
        kind, full = _resolve(spec.type, f".{package}", enums)
        fproto.type = kind
        if full:
            fproto.type_name = full
        if spec.oneof is not None:
            if spec.oneof not in oneofs:
                oneofs.append(spec.oneof)
                proto.oneof_decl.add(name=spec.oneof)
            fproto.oneof_index = oneofs.index(spec.oneof)


def _enum_names(file: ProtoFile) -> set[str]:
    names = {e.name for e in file.enums}
    stack = list(file.messages)
    while stack:
        message = stack.pop()
        names.update(e.name for e in message.enums)
        stack.extend(message.nested)
    return names


def build_file_descriptor(file: ProtoFile) -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` that ``protoc`` would produce for ``file`` (proto3)."""
    proto = descriptor_pb2.FileDescriptorProto(name=file.name, package=file.package, syntax="proto3")
    enums = _enum_names(file)
    for enum in file.enums:
        _add_enum(proto.enum_type, enum)
    for message in file.messages:
        _add_message(proto.message_type, message, file.package, enums)
    return proto


def build_classes(file: ProtoFile) -> dict[str, type]:
    """Message classes for every top-level message of ``file``, by name.

    A private descriptor pool keeps these apart from any generated modules of the same package
    (for example CANN's own) that may be imported in the same process.
    """
    pool = descriptor_pool.DescriptorPool()
    pool.Add(build_file_descriptor(file))
    return {
        m.name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.{m.name}"))
        for m in file.messages
    }
