"""A :class:`~.graph_model.Model` as JSON text and back: the form the graph cache keeps.

The cache (:mod:`.graph_cache`) once kept a ``ModelDef``; reading one back meant converting
every attribute of every op from protobuf again, which cost most of a cached load (the 4 GB
bench network's 9,767 ops: 0.39-0.53 s of CPU in all). JSON is read by the standard library's C
parser and holds the values the conversion already made, so a cached load builds the objects
only: 0.20-0.26 s for that graph (docs/performance.md).

Layout: ``{"format": 1, "name", "version", "custom_version", "attrs", "graphs"}``, a graph
``{"name", "attrs", "inputs", "outputs", "ops"}``, an op the list of its field values that
:func:`~.graph_convert.graph_from_fields` takes (name, type, id, input entries, input descs,
output descs, attrs, stream id, sub-graph names), so the ops are built, and their consumers
found, by the same code as from the graph file; a tensor desc its dtype, layout, shape, attrs
and name, the fields that come from its attrs found again as from the file
(:func:`~.graph_convert.named_tensor_desc`).

Attribute values are the Python values of :mod:`.graph_convert`'s table. Those JSON has no
word for are written as a one-key object whose key starts with NUL, which no attribute name
of GE has: ``{"\\u0000b": bytes as Latin-1 text}``, ``{"\\u0000d": a tensor desc's fields}``,
and ``{"\\u0000m": [[key, value], ...]}`` for a dict that has such a key itself. Floats keep
their exact value (``repr``), NaN and infinities included. Anything else (a tuple, a set, an
object) is refused with ``TypeError``: the cache is then not written, never written wrong.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..collector import gc_paused
from .graph_convert import graph_from_fields, named_tensor_desc
from .graph_model import GraphDesc, InputRef, Model, Op, TensorDesc

FORMAT = 1
_BYTES, _DESC, _MAPPING = "\x00b", "\x00d", "\x00m"


def model_to_json(model: Model) -> bytes:
    """The JSON form of ``model`` (see the module doc), UTF-8 (ASCII in fact); ``TypeError``
    for an attribute value that has no form here."""
    document = {
        "format": FORMAT,
        "name": model.name,
        "version": model.version,
        "custom_version": model.custom_version,
        "attrs": _attrs(model.attrs),
        "graphs": [_graph(graph) for graph in model.graphs],
    }
    return json.dumps(document, separators=(",", ":")).encode("ascii")


def _graph(graph: GraphDesc) -> dict:
    return {
        "name": graph.name,
        "attrs": _attrs(graph.attrs),
        "inputs": list(graph.inputs),
        "outputs": list(graph.outputs),
        "ops": [_op(op) for op in graph.ops],
    }


def _op(op: Op) -> list:
    return [
        op.name,
        op.type,
        op.id,
        _entries(op.inputs),
        [_desc(d) for d in op.input_descs],
        [_desc(d) for d in op.output_descs],
        _attrs(op.attrs),
        op.stream_id,
        list(op.subgraph_names),
    ]


def _entries(refs: Sequence[InputRef]) -> list[str]:
    """The op's input list as the graph file had it, as far as the references tell: each at its
    slot (``"src:index"``, ``"src:-1"`` for a control edge), ``""`` where an entry was empty.
    :func:`~.graph_convert.parse_input` reads each back as the same reference."""
    slots = [ref.slot for ref in refs]
    if None in slots or len(set(slots)) != len(slots):
        raise TypeError("input references without distinct slots")
    entries = [""] * (max(slots, default=-1) + 1)
    for ref in refs:
        entries[ref.slot] = str(ref)
    return entries


def _desc(desc: TensorDesc) -> list:
    # the fields found from attrs (the origin's) are found again on reading, by the one rule
    return [desc.dtype, desc.layout, list(desc.shape), _attrs(desc.attrs), desc.name]


def _attrs(attrs: dict) -> dict:
    if not all(type(key) is str for key in attrs):
        raise TypeError("attributes named by something other than text")
    if any(key.startswith("\x00") for key in attrs):
        return {_MAPPING: [[key, _value(value)] for key, value in attrs.items()]}
    return {key: _value(value) for key, value in attrs.items()}


def _value(value: Any) -> Any:
    kind = type(value)
    if kind in (str, int, float, bool):
        return value
    if kind is list:
        return [_value(item) for item in value]
    if kind is dict:
        return _attrs(value)
    if kind is bytes:
        return {_BYTES: value.decode("latin-1")}
    if kind is TensorDesc:
        return {_DESC: _desc(value)}
    raise TypeError(f"no JSON form for an attribute value of type {kind.__name__}")


def model_from_json(data: bytes, source_path: Path | None = None) -> Model:
    """The :class:`Model` :func:`model_to_json` wrote. ``ValueError`` (a ``JSONDecodeError``
    among them), ``TypeError``, ``KeyError``, ``IndexError``, ``AttributeError``,
    ``RecursionError`` or :class:`~precision_tool.errors.PrecisionToolError` when ``data`` is
    not such a form."""
    with gc_paused():
        document = json.loads(data, object_hook=_tagged)
        if document.get("format") != FORMAT:
            raise ValueError(f"not format {FORMAT}")
        graphs = [_graph_from(graph, source_path) for graph in document["graphs"]]
        return Model(
            document["name"],
            graphs,
            document["attrs"],
            source_path,
            document["version"],
            document["custom_version"],
        )


def _graph_from(graph: dict, source: Path | None) -> GraphDesc:
    ops = [
        (name, op_type, op_id, entries, _descs(inputs), _descs(outputs), attrs, stream_id, subgraphs)
        for name, op_type, op_id, entries, inputs, outputs, attrs, stream_id, subgraphs in graph["ops"]
    ]
    return graph_from_fields(graph["name"], ops, graph["attrs"], graph["inputs"], graph["outputs"], source)


def _descs(descs: list) -> list[TensorDesc]:
    return [_desc_from(fields) for fields in descs]


def _desc_from(fields: list) -> TensorDesc:
    dtype, layout, shape, attrs, name = fields
    return named_tensor_desc(dtype, layout, tuple(shape), attrs, name)


def _tagged(obj: dict) -> Any:
    """json's hook for every object: a tagged value (module doc) as its Python value."""
    if len(obj) != 1:
        return obj
    ((key, value),) = obj.items()
    if key == _BYTES:
        return value.encode("latin-1")
    if key == _DESC:
        return _desc_from(value)
    if key == _MAPPING:
        return {item_key: item for item_key, item in value}
    if key.startswith("\x00"):
        raise ValueError(f"unknown tag {key!r}")
    return obj


__all__ = ["FORMAT", "model_from_json", "model_to_json"]
