"""Write a :class:`~.graph_model.Model` as GE's ONNX graph dump (``ge_onnx_*_Build.pbtxt``).

Used by the tests and the sample generator to make data roots that hold only ``ge_onnx``
graphs. The encoding is GE's (see :mod:`.onnx_graph`, which reads it back), at the level
``DUMP_GE_GRAPH=1`` writes, where string attributes are kept:

* one ``GraphProto``, the model's first graph; the others as nodes of type ``subgraph``
  holding them in a ``GRAPH`` attribute;
* op type ``"ge:" + type``; ``input`` as in ge_proto (``""`` for an unconnected input, control
  edges ``"src:-1"`` last); ``output`` ``"name:i"`` per consumed output and ``"name:-1"`` when a
  control edge leaves the op;
* the OpDef fields and every tensor descriptor as node attributes (``id``,
  ``input_desc_dtype:0``, ``output_desc_origin_layout:0``, ``output_desc_attr_<name>:0``, ...),
  all sorted by name as GE sorts them.

What ONNX cannot hold is left out: graph and model attributes, ``custom_version``, attribute
values that are tensors, descriptors, bytes or named attributes; booleans are written as INT.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from .graph_model import GraphDesc, Model, Op, TensorDesc
from .onnx_graph import OP_TYPE_PREFIX, SUBGRAPH_ATTR, SUBGRAPH_TYPE
from .proto import onnx_ir

IR_VERSION = 6  # what GE writes (the real dumps in tests/data/real say ir_version: 6)
_ORIGIN_KEYS = {"origin_format": "origin_layout", "origin_shape": "origin_shape", "origin_data_type": "origin_dtype"}


def _is_int(value: Any) -> bool:
    return isinstance(value, int)  # bools too: GE writes them as INT


def _attribute(name: str, value: Any):
    """``value`` as an ONNX AttributeProto, or None when ONNX cannot hold it."""
    attr = onnx_ir.AttributeProto(name=name)
    if _is_int(value):
        attr.type, attr.i = onnx_ir.AttributeProto.INT, int(value)
    elif isinstance(value, float):
        attr.type, attr.f = onnx_ir.AttributeProto.FLOAT, value
    elif isinstance(value, str):
        attr.type, attr.s = onnx_ir.AttributeProto.STRING, value.encode("utf-8")
    elif isinstance(value, list) and all(_is_int(v) for v in value):
        attr.type = onnx_ir.AttributeProto.INTS
        attr.ints.extend(int(v) for v in value)
    elif isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
        attr.type = onnx_ir.AttributeProto.FLOATS
        attr.floats.extend(value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        attr.type = onnx_ir.AttributeProto.STRINGS
        attr.strings.extend(v.encode("utf-8") for v in value)
    else:
        return None
    return attr


def _rows(name: str, value: Any) -> list:
    """A list of int lists as GE writes it: one INTS attribute per row, ``name_<k>``."""
    if not (isinstance(value, list) and value and all(isinstance(r, list) for r in value)):
        return []
    if not all(_is_int(v) for row in value for v in row):
        return []
    return [_attribute(f"{name}_{k}", list(row)) for k, row in enumerate(value)]


def _desc_attributes(side: str, index: int, desc: TensorDesc) -> list:
    prefix, suffix = f"{side}_desc_", f":{index}"
    out = [
        _attribute(f"{prefix}dtype{suffix}", desc.dtype),
        _attribute(f"{prefix}shape{suffix}", list(desc.shape)),
        _attribute(f"{prefix}layout{suffix}", desc.layout),
        _attribute(f"{prefix}device_type{suffix}", "NPU"),
        _attribute(f"{prefix}real_dim_cnt{suffix}", len(desc.shape)),
    ]
    for key, value in desc.attrs.items():
        if key in _ORIGIN_KEYS:
            out.append(_attribute(f"{prefix}{_ORIGIN_KEYS[key]}{suffix}", value))
            if value == []:  # GE's empty origin shape means "none": say it is a real []
                out.append(_attribute(f"{prefix}attr_{key}{suffix}", value))
        else:
            out += _rows(f"{prefix}attr_{key}{suffix}", value) or [_attribute(f"{prefix}attr_{key}{suffix}", value)]
    return out


def _placed_inputs(op: Op) -> list[str]:
    data = [ref for ref in op.data_inputs]
    slots = [ref.slot for ref in data]
    width = max(len(op.input_descs), len(data))
    if data and None not in slots and len(set(slots)) == len(slots):
        width = max(width, max(slots) + 1)
        placed = [""] * width
        for ref in data:
            placed[ref.slot] = str(ref)
    else:
        placed = [str(ref) for ref in data] + [""] * (width - len(data))
    return placed + [str(ref) for ref in op.control_inputs]


def _strings(name: str, values: list[str]):
    attr = onnx_ir.AttributeProto(name=name, type=onnx_ir.AttributeProto.STRINGS)
    attr.strings.extend(v.encode("utf-8") for v in values)
    return attr


def _op_field_attributes(op: Op) -> list:
    data = op.data_inputs
    return [
        _attribute("id", op.id),
        _attribute("stream_id", op.stream_id),
        _strings("input_name", [ref.src for ref in data]),
        _strings("src_name", [ref.src for ref in data]),
        _attribute("src_index", [ref.index for ref in data]),
        _strings("dst_name", [name for users in op.consumers for name, _ in users]),
        _attribute("dst_index", [slot for users in op.consumers for _, slot in users]),
        _attribute("input_desc_nums", len(op.input_descs)),
        _attribute("output_desc_nums", len(op.output_descs)),
    ]


def _node(op: Op, control_sources: set[str], target) -> None:
    target.name, target.op_type = op.name, OP_TYPE_PREFIX + op.type
    target.input.extend(_placed_inputs(op))
    target.output.extend(f"{op.name}:{i}" for i, users in enumerate(op.consumers) if users)
    if op.name in control_sources:
        target.output.append(f"{op.name}:-1")
    attrs = [_attribute(key, value) for key, value in op.attrs.items()]
    attrs += _op_field_attributes(op)
    for side, descs in (("input", op.input_descs), ("output", op.output_descs)):
        for index, desc in enumerate(descs):
            attrs += _desc_attributes(side, index, desc)
    target.attribute.extend(sorted((a for a in attrs if a is not None), key=lambda a: a.name))


def _fill_graph(graph: GraphDesc, target) -> None:
    target.name = graph.name
    for name, container in ((graph.inputs, target.input), (graph.outputs, target.output)):
        for value in name:
            container.add(name=value)
    control_sources = {ref.src for op in graph.ops for ref in op.control_inputs}
    for op in graph.ops:
        _node(op, control_sources, target.node.add())


def model_to_onnx(model: Model):
    """``model`` as an ONNX ``ModelProto`` in GE's encoding (see the module doc)."""
    proto = onnx_ir.ModelProto(ir_version=IR_VERSION, producer_name=model.name, model_version=model.version)
    first, *subgraphs = model.graphs
    _fill_graph(first, proto.graph)
    for graph in subgraphs:
        node = proto.graph.node.add(name=graph.name, op_type=SUBGRAPH_TYPE)
        attr = node.attribute.add(name=SUBGRAPH_ATTR, type=onnx_ir.AttributeProto.GRAPH)
        _fill_graph(graph, attr.g)
    return proto


def write_graph_onnx(model: Model, path: str | os.PathLike) -> Path:
    """Write ``model`` as GE's ONNX TextFormat dump (``ge_onnx_*_Build.pbtxt``); returns the path.

    Raises ``ValueError`` for a model without graphs (GE never writes one).
    """
    if not model.graphs:
        raise ValueError("a model without graphs has no ONNX form")
    path = Path(path)
    path.write_text(text_format.MessageToString(model_to_onnx(model)), encoding="utf-8")
    return path
