"""GE's ONNX graph dumps (``ge_onnx_*_Build.pbtxt``) as ``ge.proto.ModelDef`` messages.

GE's ``OnnxUtils`` (metadef ``graph/utils/ge_ir_utils.cc``, ``ConvertGeModelToModelProto``)
writes a graph as an ONNX ``ModelProto`` (schema: :mod:`.proto.onnx_ir`). This module undoes
that encoding, so the result goes through the same :func:`.graph.model_from_proto` as a
``ge_proto`` dump and becomes the same :class:`~.graph_model.Model`:

* ``graph.node``: the ops in execution order; ``op_type`` is ``"ge:" + type``. A node of type
  ``subgraph`` is a sub-graph, held in its ``graph`` attribute (``g``): it becomes a graph of
  the model, in the order GE listed them.
* ``node.input``: ``"src:idx"`` per data input (``""`` when none is connected), then
  ``"src:-1"`` per control edge. Inputs are resolved by tensor name through the producers'
  ``node.output`` lists (GE lists ``"name:idx"`` there too; a plain ONNX tensor name maps to
  the producer's output at that position).
* tensor descriptors: node attributes ``input_desc_<field>:<i>`` / ``output_desc_<field>:<i>``
  (``dtype``, ``shape``, ``layout``, ``size``, ...; counted by ``input_desc_nums`` /
  ``output_desc_nums``), their origin view ``origin_dtype`` / ``origin_shape`` /
  ``origin_layout`` (stored as the ``origin_data_type`` / ``origin_shape`` / ``origin_format``
  attributes ge_proto dumps carry), and the descriptor's own attributes as
  ``input_desc_attr_<name>:<i>`` (a list of int lists as ``..._attr_<name>:<i>_<k>`` per row).
* the OpDef fields ``id``, ``stream_id``, ``input_name``, ``src_name``, ``src_index``,
  ``dst_name``, ``dst_index``, ``input_i``, ``output_i``, ``workspace``, ``workspace_bytes`` and
  ``is_input_const`` are attributes of those names; every other attribute is an op attribute
  (fusion bookkeeping such as ``_datadump_original_op_names`` and ``pass_name`` included).

GE writes booleans as ``INT``; those the tool reads as booleans (:data:`BOOL_ATTRS`) become
booleans again. GE leaves string attributes out unless ``DUMP_GE_GRAPH=1``; the tool reads what
is there. ``ONNX`` has no graph attributes, so a graph's own attributes (``ge_proto``'s
``GraphDef.attr``) are not there to read.
"""

from __future__ import annotations

import re
from typing import Any

from .proto import ge_ir, onnx_ir

OP_TYPE_PREFIX = "ge:"
SUBGRAPH_TYPE = "subgraph"
SUBGRAPH_ATTR = "graph"
BOOL_ATTRS = frozenset({"_datadump_is_multiop"})
"""Op attributes GE keeps as bools and writes as INT in ONNX, which the tool reads as bools."""

OP_FIELDS = (
    "id",
    "stream_id",
    "input_name",
    "src_name",
    "src_index",
    "dst_name",
    "dst_index",
    "input_i",
    "output_i",
    "workspace",
    "workspace_bytes",
    "is_input_const",
)
"""OpDef fields that GE writes as node attributes of the same name."""

DESC_FIELDS = (
    "dtype",
    "shape",
    "layout",
    "size",
    "weight_size",
    "reuse_input",
    "output_tensor",
    "device_type",
    "input_tensor",
    "real_dim_cnt",
    "data_offset",
    "cmps_size",
    "cmps_tab",
    "cmps_tab_offset",
)
"""TensorDescriptor fields that GE writes as ``{input,output}_desc_<field>:<i>``."""

DESC_ORIGIN = {"origin_dtype": "origin_data_type", "origin_shape": "origin_shape", "origin_layout": "origin_format"}
"""``{input,output}_desc_<key>:<i>`` -> the descriptor attribute ge_proto dumps keep it in."""

_DESC_ATTR = re.compile(r"^(input|output)_desc_(.+):([0-9]+)(?:_([0-9]+))?$")
_COUNTS = {"input_desc_nums": "input", "output_desc_nums": "output"}
_TYPE = {v.number: v.name for v in onnx_ir.ATTRIBUTE_TYPE.values}
_DTYPES = ge_ir.DATA_TYPE.values_by_name
_PRESENCE = (
    ("ints", "INTS"),
    ("floats", "FLOATS"),
    ("strings", "STRINGS"),
    ("graphs", "GRAPHS"),
    ("tensors", "TENSORS"),
)


class OnnxGraphError(ValueError):
    """An ONNX model that is not a graph dump (the message says why)."""


# --- attribute values ---------------------------------------------------------------------------


def attribute_kind(attr) -> str:
    """The attribute's ``AttributeType`` name; guessed from the populated field when the file
    leaves ``type`` out (IR version 1)."""
    kind = _TYPE.get(attr.type, "UNDEFINED")
    if kind != "UNDEFINED":
        return kind
    for member, name in _PRESENCE:
        if len(getattr(attr, member)):
            return name
    for member, name in (("g", "GRAPH"), ("t", "TENSOR")):
        if attr.HasField(member):
            return name
    return "STRING" if attr.s else "FLOAT" if attr.f else "INT"


def _set_value(target, attr, as_bool: bool = False) -> None:
    """Store ONNX attribute ``attr`` into the ``ge.proto.AttrDef`` ``target``."""
    kind = attribute_kind(attr)
    lists = {
        "INTS": ("i", "VT_LIST_INT", attr.ints),
        "FLOATS": ("f", "VT_LIST_FLOAT", attr.floats),
        "STRINGS": ("s", "VT_LIST_STRING", attr.strings),
    }
    if kind == "INT":
        if as_bool:
            target.b = bool(attr.i)
        else:
            target.i = attr.i
    elif kind == "FLOAT":
        target.f = attr.f
    elif kind == "STRING":
        target.s = attr.s
    elif kind in lists:
        member, val_type, values = lists[kind]
        target.list.SetInParent()  # an empty list is still a list
        target.list.val_type = ge_ir.LIST_VALUE_TYPES.index(val_type)
        getattr(target.list, member).extend(values)
    elif kind == "TENSOR":
        target.t.desc.shape.dim.extend(attr.t.dims)
        target.t.data = attr.t.raw_data
    elif kind == "GRAPH":
        target.g.name = attr.g.name


def _int(attr) -> int:
    return attr.i if attribute_kind(attr) == "INT" else 0


def _text(attr) -> str:
    return attr.s.decode("utf-8", errors="replace")


# --- descriptors and ops ------------------------------------------------------------------------


def _fill_desc_field(desc, key: str, attr) -> None:
    if key == "dtype":
        known = _DTYPES.get(_text(attr))
        if known is not None:
            desc.dtype = known.number
        elif attr.s:  # a dtype this schema does not know: keep its name where -a shows it
            desc.attr["dtype"].s = attr.s
    elif key == "shape":
        desc.shape.SetInParent()
        desc.shape.dim.extend(attr.ints)
    elif key in ("layout", "device_type"):
        setattr(desc, key, _text(attr))
    elif key == "cmps_tab":
        desc.cmps_tab = attr.s
    elif key in ("reuse_input", "output_tensor", "input_tensor"):
        setattr(desc, key, bool(_int(attr)))
    else:
        setattr(desc, key, _int(attr))


def _fill_desc(desc, key: str, row: str | None, attr) -> None:
    """One ``*_desc_<key>:<i>[_<row>]`` attribute into descriptor ``desc``."""
    if key.startswith("attr_"):
        name = key[len("attr_") :]
        if row is None:
            if name in desc.attr:  # written twice, or set from an origin_* field: this one wins
                del desc.attr[name]
            _set_value(desc.attr[name], attr)
        else:  # one row of a list of int lists
            rows = desc.attr[name].list_list_int.list_list_i
            while len(rows) <= int(row):
                rows.add()
            rows[int(row)].list_i.extend(attr.ints)
    elif key in DESC_ORIGIN:
        name = DESC_ORIGIN[key]
        if name in desc.attr:
            return  # the descriptor's own attribute (DUMP_GE_GRAPH=1) says it already
        if key == "origin_shape" and not len(attr.ints):
            return  # GE writes [] when no origin shape is set: leave it unknown
        if key == "origin_dtype" and _text(attr) in ("", "DT_UNDEFINED"):
            return
        _set_value(desc.attr[name], attr)
    elif key in DESC_FIELDS and row is None:
        _fill_desc_field(desc, key, attr)
    else:
        _set_value(desc.attr[key], attr)


def _attributes(node) -> dict[str, Any]:
    """The node's attributes by name; a name written twice keeps its last value."""
    return {attr.name: attr for attr in node.attribute}


def _descs(attributes: dict[str, Any]) -> tuple[dict, dict, dict]:
    """(input descs, output descs by index, the other attributes)."""
    descs: dict[str, dict[int, list]] = {"input": {}, "output": {}}
    others = {}
    for name, attr in attributes.items():
        match = _DESC_ATTR.match(name)
        if match is not None:
            side, key, index, row = match.groups()
            descs[side].setdefault(int(index), []).append((key, row, attr))
        elif name not in _COUNTS:
            others[name] = attr
    for name, side in _COUNTS.items():
        for index in range(_int(attributes[name]) if name in attributes else 0):
            descs[side].setdefault(index, [])
    return descs["input"], descs["output"], others


def _add_descs(container, by_index: dict[int, list]) -> None:
    for index in range(max(by_index, default=-1) + 1):
        desc = container.add()
        for key, row, attr in by_index.get(index, []):
            _fill_desc(desc, key, row, attr)


def _set_op_field(opdef, name: str, attr) -> None:
    field = getattr(opdef, name)
    if name in ("id", "stream_id"):
        setattr(opdef, name, _int(attr))
    elif name in ("input_name", "src_name", "dst_name"):
        field.extend(s.decode("utf-8", errors="replace") for s in attr.strings)
    elif name == "is_input_const":
        field.extend(bool(v) for v in attr.ints)
    else:
        field.extend(attr.ints)


def _fill_op(opdef, node, inputs: list[str]) -> None:
    opdef.name = node.name
    opdef.type = node.op_type.removeprefix(OP_TYPE_PREFIX)
    opdef.input.extend(inputs)
    input_descs, output_descs, others = _descs(_attributes(node))
    for name, attr in others.items():
        if name in OP_FIELDS:
            _set_op_field(opdef, name, attr)
        else:
            _set_value(opdef.attr[name], attr, as_bool=name in BOOL_ATTRS)
    _add_descs(opdef.input_desc, input_descs)
    _add_descs(opdef.output_desc, output_descs)


# --- graphs -------------------------------------------------------------------------------------


def _is_index(text: str) -> bool:
    return text.lstrip("-").isdigit() and text.isascii()


def _producers(nodes) -> dict[str, str]:
    """Tensor name -> ``"producer:index"``: GE's ``"name:idx"`` outputs as they are, other ONNX
    outputs by their position in the producer's output list."""
    found: dict[str, str] = {}
    for node in nodes:
        for position, tensor in enumerate(node.output):
            src, sep, index = tensor.rpartition(":")
            own = bool(sep) and src == node.name and _is_index(index)
            found.setdefault(tensor, tensor if own else f"{node.name}:{position}")
    return found


def _is_subgraph(node) -> bool:
    return node.op_type == SUBGRAPH_TYPE and any(a.name == SUBGRAPH_ATTR and a.HasField("g") for a in node.attribute)


def _fill_graph(target, graph, name: str) -> None:
    target.name = name
    target.input.extend(v.name for v in graph.input)
    target.output.extend(v.name for v in graph.output)
    nodes = [node for node in graph.node if not _is_subgraph(node)]
    producers = _producers(nodes)
    for node in nodes:
        inputs = [producers.get(tensor, tensor) if tensor else "" for tensor in node.input]
        _fill_op(target.op.add(), node, inputs)


def _subgraphs(graph) -> list[tuple[str, Any]]:
    """GE's sub-graph nodes, depth first, as (name, GraphProto)."""
    found = []
    for node in graph.node:
        if _is_subgraph(node):
            inner = next(a.g for a in node.attribute if a.name == SUBGRAPH_ATTR and a.HasField("g"))
            found.append((node.name or inner.name, inner))
            found.extend(_subgraphs(inner))
    return found


def model_def_from_onnx(model) -> Any:
    """An ONNX ``ModelProto`` of a GE graph dump as a ``ge.proto.ModelDef`` (see module doc).

    Raises:
        OnnxGraphError: the model has no graph, or a graph without nodes.
    """
    graph = model.graph
    if not model.HasField("graph") or not (len(graph.node) or graph.name):
        raise OnnxGraphError("no graph in it: an ONNX ModelProto text with graph { node { ... } } was expected")
    out = ge_ir.ModelDef(name=model.producer_name, version=max(model.model_version, 0) & 0xFFFFFFFF)
    for name, sub in [(graph.name, graph), *_subgraphs(graph)]:
        if not any(not _is_subgraph(node) for node in sub.node):
            raise OnnxGraphError(f"graph {name!r} has no nodes")
        _fill_graph(out.graph.add(), sub, name)
    return out
