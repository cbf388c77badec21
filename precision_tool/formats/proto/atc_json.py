"""The JSON that ``atc --mode=5`` writes, read into :mod:`.ge_ir` messages.

atc's JSON is not protobuf's canonical JSON: maps are lists of ``{"key": ..., "value": ...}``,
bytes are plain strings, floats may be quoted and an empty message is ``null``. The reader walks
the message descriptors, so nothing is field-specific; the writer
(``graph_write.message_to_atc_json``) does the same and shares :func:`is_map_field`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from .ge_ir import ModelDef


class AtcJsonError(ValueError):
    """atc JSON that does not fit the schema; ``where`` is the path of the offending value."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem
        self._segments: list[str] = []  # innermost first, filled while the error propagates

    def add(self, segment: str) -> AtcJsonError:
        self._segments.append(segment)
        return self

    @property
    def where(self) -> str:
        return "".join(reversed(self._segments)).lstrip(".") or "top level"


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _expect(ok: bool, what: str, value: Any) -> None:
    if not ok:
        raise AtcJsonError(f"expected {what}, got {_kind(value)}")


def _to_int(value: Any) -> int:
    if isinstance(value, str):
        try:
            return int(value, 10)
        except ValueError:
            raise AtcJsonError(f"expected an integer, got {value!r}") from None
    _expect(isinstance(value, int) and not isinstance(value, bool), "an integer", value)
    return value


def _to_float(value: Any) -> float:
    if isinstance(value, str):  # atc quotes floats: {"f": "0.5"}
        try:
            return float(value)
        except ValueError:
            raise AtcJsonError(f"expected a number, got {value!r}") from None
    _expect(isinstance(value, (int, float)) and not isinstance(value, bool), "a number", value)
    return float(value)


def _to_bool(value: Any) -> bool:
    _expect(isinstance(value, bool), "a boolean", value)
    return value


def _to_str(value: Any) -> str:
    _expect(isinstance(value, str), "a string", value)
    return value


def _to_bytes(value: Any) -> bytes:
    _expect(isinstance(value, str), "a string", value)
    return value.encode("utf-8")


def _enum_converter(enum) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        if isinstance(value, str):
            if value not in enum.values_by_name:
                raise AtcJsonError(f"unknown {enum.name} value {value!r}")
            return enum.values_by_name[value].number
        return _to_int(value)

    return convert


_SCALAR_CONVERTERS = {
    FieldDescriptor.CPPTYPE_INT32: _to_int,
    FieldDescriptor.CPPTYPE_INT64: _to_int,
    FieldDescriptor.CPPTYPE_UINT32: _to_int,
    FieldDescriptor.CPPTYPE_UINT64: _to_int,
    FieldDescriptor.CPPTYPE_FLOAT: _to_float,
    FieldDescriptor.CPPTYPE_DOUBLE: _to_float,
    FieldDescriptor.CPPTYPE_BOOL: _to_bool,
}


def _converter(field) -> Callable[[Any], Any]:
    if field.cpp_type == FieldDescriptor.CPPTYPE_ENUM:
        return _enum_converter(field.enum_type)
    if field.cpp_type == FieldDescriptor.CPPTYPE_STRING:
        return _to_bytes if field.type == FieldDescriptor.TYPE_BYTES else _to_str
    return _SCALAR_CONVERTERS[field.cpp_type]


def is_map_field(field) -> bool:
    """Whether ``field`` (a FieldDescriptor) is a ``map<..>``."""
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _fill_map(container, entries: Any) -> None:
    if isinstance(entries, dict):  # protobuf's canonical JSON form, accepted too
        entries = [{"key": key, "value": value} for key, value in entries.items()]
    _expect(isinstance(entries, list), "a list of key/value entries", entries)
    for index, entry in enumerate(entries):
        segment = f"[{index}]"
        try:
            _expect(isinstance(entry, dict), "a key/value object", entry)
            key = entry.get("key")
            _expect(isinstance(key, str), 'a string "key"', key)
            segment = f"[{key!r}]"
            value = container[key]  # creates the entry: `"value": null` is an empty AttrDef
            if entry.get("value") is not None:
                _fill(value, entry["value"])
        except AtcJsonError as err:
            err.add(segment)
            raise


def _step(field) -> Callable[[Any, Any], None]:
    """How one JSON value is stored into ``field`` of a message."""
    name = field.name
    if is_map_field(field):
        return lambda message, value: _fill_map(getattr(message, name), value)
    if field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE and field.is_repeated:

        def add_all(message, values):
            _expect(isinstance(values, list), "a list", values)
            container = getattr(message, name)
            for index, item in enumerate(values):
                if item is None:
                    continue
                try:
                    _fill(container.add(), item)
                except AtcJsonError as err:
                    err.add(f"[{index}]")
                    raise

        return add_all
    if field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:

        def set_message(message, value):
            sub = getattr(message, name)
            sub.SetInParent()  # `"list": {}` still selects the oneof member
            _fill(sub, value)

        return set_message
    convert = _converter(field)
    if field.is_repeated:

        def extend(message, values):
            _expect(isinstance(values, list), "a list", values)
            getattr(message, name).extend([convert(v) for v in values if v is not None])

        return extend
    return lambda message, value: setattr(message, name, convert(value))


_PLANS: dict[str, dict[str, Callable[[Any, Any], None]]] = {}


def _plan(descriptor) -> dict[str, Callable[[Any, Any], None]]:
    plan = _PLANS.get(descriptor.full_name)
    if plan is None:
        plan = _PLANS[descriptor.full_name] = {f.name: _step(f) for f in descriptor.fields}
    return plan


def _fill(message, obj: Any) -> None:
    _expect(isinstance(obj, dict), "an object", obj)
    plan = _plan(message.DESCRIPTOR)
    for key, value in obj.items():
        step = plan.get(key)
        if step is None or value is None:  # newer atc fields, and nulls, carry nothing we use
            continue
        try:
            step(message, value)
        except AtcJsonError as err:
            err.add(f".{key}")
            raise
        except (ValueError, TypeError) as err:  # protobuf's own range checks
            raise AtcJsonError(str(err)).add(f".{key}") from None


def message_from_atc_json(obj: Any, message_class: type = ModelDef):
    """A ``message_class`` message holding the atc-style JSON value ``obj``.

    Unknown keys and ``null`` values are skipped; enums may be names or numbers; bytes are
    UTF-8 strings; floats and 64-bit integers may be quoted. Raises :class:`AtcJsonError`
    naming the path of the first value that does not fit.
    """
    message = message_class()
    _fill(message, obj)
    return message
