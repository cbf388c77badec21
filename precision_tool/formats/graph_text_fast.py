"""GE graph dumps in TextFormat straight into a :class:`~.graph_model.Model`, without protobuf.

:mod:`.proto.fast_text` reads the text against ``ge.proto.ModelDef``'s descriptors; the
finishers here turn each message's fields into the model's values bottom up, with the rules of
:mod:`.graph` (which reads the same text through protobuf's parser into a ``ModelDef`` and
converts that): ``tensor_desc_from_fields``, ``graph_from_fields``, ``list_member`` and the
attribute item conversions are shared, so both give equal models. When the fast reader does not
take a text (see :class:`~.proto.fast_text.Unsupported`), :func:`model_from_text` returns None and
the caller parses it with protobuf.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .graph_convert import _ITEM, graph_from_fields, list_member, tensor_desc_from_fields
from .graph_model import Model
from .proto import ge_ir
from .proto.fast_text import Unsupported, compile_schema, parse
from .proto.ge_ir import shortest_float32
from .proto.text_schema import OMIT, MessageType

_AS_IS = ("i", "b", "dt")  # members whose stored values are already the Python values


def _attrs(entries: dict | None) -> dict[str, Any]:
    """A map of attributes as :func:`~.graph.attrs_from_proto` gives it: sorted by name."""
    if not entries:
        return {}
    keys = sorted(entries)  # unset values were left out as they came (OMIT)
    return entries if keys == list(entries) else {key: entries[key] for key in keys}


def _attr_value(fields: dict) -> Any:
    member = fields.get("@value")
    if member is None:  # left out of attrs, as graph.attrs_from_proto does
        return OMIT
    value = fields[member]
    if member in ("s", "f", "bt"):
        return _ITEM[member](value)
    return value  # i, b, dt as stored; messages already finished below


def _list_value(fields: dict) -> list[Any]:
    member = list_member(fields.get("val_type", 0), fields.__contains__)
    if not member:
        return []
    items = fields[member]
    return items if member in _AS_IS or member in ("td", "t", "g", "na") else [_ITEM[member](item) for item in items]


def _tensor_desc(fields: dict):
    get = fields.get
    return tensor_desc_from_fields(
        get("dtype", 0), get("layout", ""), get("shape", ()), _attrs(get("attr")), get("name", "")
    )


def _op(fields: dict) -> tuple:
    get = fields.get
    return (
        get("name", ""),
        get("type", ""),
        get("id", 0),
        get("input", ()),
        get("input_desc", []),
        get("output_desc", []),
        _attrs(get("attr")),
        get("stream_id", 0),
        get("subgraph_name", []),
    )


def _graph(fields: dict) -> tuple:
    get = fields.get
    return (get("name", ""), get("op", []), _attrs(get("attr")), get("input", []), get("output", []))


def _graph_name(fields: dict) -> str:  # a graph inside an attribute stands for its name
    return fields.get("name", "")


_FINISHERS = {
    "ModelDef": dict,  # see model_from_fields
    "GraphDef": _graph,
    "OpDef": _op,
    "TensorDescriptor": _tensor_desc,
    "ShapeDef": lambda fields: tuple(fields.get("dim", ())),
    "AttrDef": _attr_value,
    "AttrDef.ListValue": _list_value,
    "AttrDef.ListListInt": lambda fields: fields.get("list_list_i", []),
    "AttrDef.ListListInt.ListInt": lambda fields: fields.get("list_i", []),
    "AttrDef.ListListFloat": lambda fields: fields.get("list_list_f", []),
    "AttrDef.ListListFloat.ListFloat": lambda fields: [shortest_float32(v) for v in fields.get("list_f", ())],
    "TensorDef": lambda fields: {"desc": fields.get("desc") or _tensor_desc({}), "data": fields.get("data", b"")},
    "NamedAttrs": lambda fields: {"name": fields.get("name", ""), "attrs": _attrs(fields.get("attr"))},
}
_BY_FIELD = {("AttrDef", "g"): _graph_name, ("AttrDef.ListValue", "g"): _graph_name}


def model_schema() -> MessageType:
    """A fresh ``ModelDef`` type for :func:`~.proto.fast_text.parse`: it gives the model's
    fields, ``"graph"`` as ``(name, ops, attrs, inputs, outputs)`` with ops as
    :data:`~.graph.OpFields` (see :func:`model_from_fields`)."""
    return compile_schema(ge_ir.ModelDef.DESCRIPTOR, _FINISHERS, _BY_FIELD)


def model_from_fields(fields: dict, source: Path | None) -> Model:
    """The model of a parsed ``ModelDef`` (:func:`model_schema`).

    Graphs are built only here, once the whole text has parsed, so that a bad op is reported
    only where protobuf's parser would have accepted the text too.
    """
    get = fields.get
    graphs = [graph_from_fields(*graph, source) for graph in get("graph", ())]
    return Model(get("name", ""), graphs, _attrs(get("attr")), source, get("version", 0), get("custom_version", ""))


def model_from_text(text: str, source: Path | None = None) -> Model | None:
    """The model of TextFormat ``text``, equal to what protobuf's parser and
    :func:`~.graph_convert.model_from_proto` give; None when the fast reader does not take the
    text (a syntax error among others: protobuf's parser then reports it).

    Raises :class:`~precision_tool.errors.PrecisionToolError` for an op without a name or two
    ops of one graph with the same name, as :func:`~.graph_convert.model_from_proto` does.
    """
    try:
        return model_from_fields(parse(text, model_schema()), source)
    except Unsupported:
        return None
