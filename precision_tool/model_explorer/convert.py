"""A GE graph dump (:class:`~precision_tool.formats.graph_model.Model`) as Model Explorer graphs
(an msprobe dump's model too: :mod:`~precision_tool.formats.msprobe_graph`, each call in the
layer of the module it ran in).

Each GE graph becomes one ``graph_builder.Graph``; each op a ``GraphNode`` whose id is
:func:`.ids.node_id`, whose label is the last ``/`` part of its name and whose namespace is the
rest (so ``resnet/conv1/Conv2D`` sits in the layer ``resnet/conv1``); an op the compiler
inserted joins the layer of the op it serves (:mod:`.namespaces`). Data inputs become
incoming edges (output ``i`` of the producer to input ``j``); an input whose producer is not in
the graph is listed in the node's attributes instead, and control inputs are listed as links to
their nodes. Every input and output gets its descriptor (dtype, format, shape, origin format,
shape, name and dtype, and the descriptor's other attributes) as metadata, and the node its
type, id, stream, kernel, fusion (PassName, OriginalOp) and every attribute.

The classes are Model Explorer's own (``model_explorer.graph_builder``; fields as documented
there, version 0.1.x), so this module needs the optional ``explorer`` extra.
"""

from __future__ import annotations

from typing import Any

from model_explorer import graph_builder as gb

from ..formats.graph_model import GraphDesc, Model, Op, TensorDesc
from ..formats.text import shape_text
from .ids import graph_ids, node_id
from .namespaces import node_place

MAX_VALUE_CHARS = 400  # a Const's tensor attribute can hold megabytes
TENSOR_TAG = "__tensor_tag"  # Model Explorer names a node's input/output tensors by this key


def value_text(value: Any) -> str:
    """An attribute value as one line of text, cut at :data:`MAX_VALUE_CHARS`."""
    text = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)
    if len(text) > MAX_VALUE_CHARS:
        return f"{text[:MAX_VALUE_CHARS]}... ({len(text)} characters)"
    return text


def _kv(key: str, value: Any) -> gb.KeyValue:
    return gb.KeyValue(key=key, value=value_text(value))


def desc_attrs(desc: TensorDesc | None, position: int | None = None) -> list[gb.KeyValue]:
    """The descriptor of one input or output as key/value pairs. An output's (``position`` its
    number) shows its origin as pairing reads it (``name:index``); an input's origin
    attributes, which pairing does not read, stay raw attributes."""
    if desc is None:
        return [_kv("desc", "none in the graph")]
    pairs = [("dtype", desc.dtype), ("format", desc.layout), ("shape", shape_text(desc.shape))]
    if desc.origin_format is not None:
        pairs.append(("origin_format", desc.origin_format))
    if desc.origin_shape is not None:
        pairs.append(("origin_shape", shape_text(desc.origin_shape)))
    origin = desc.origin(position) if position is not None else None
    if origin is not None:
        pairs.append(("origin_name", str(origin)))
    if desc.origin_data_type is not None:
        pairs.append(("origin_data_type", desc.origin_data_type))
    if desc.name:
        pairs.append(("name", desc.name))
    shown = {"origin_format", "origin_shape", "_datadump_origin_data_type"}
    if origin is not None:
        shown |= {"_datadump_origin_name", "_datadump_origin_output_index"}
    pairs += [(f"attr {k}", v) for k, v in sorted(desc.attrs.items()) if k not in shown]
    return [_kv(k, v) for k, v in pairs]


def _op_attrs(op: Op, graph: GraphDesc) -> list[gb.KeyValue]:
    pairs: list[tuple[str, Any]] = [("type", op.type), ("id", op.id), ("stream_id", op.stream_id)]
    for key, value in (
        ("kernel_name", op.kernel_name),
        ("kernel_lib", op.kernel_lib),
        ("session_graph_id", op.session_graph_id),
    ):
        if value:
            pairs.append((key, value))
    if op.pass_name:
        pairs.append(("pass_name", ", ".join(op.pass_name)))
    if op.original_op_names is not None:
        names = ", ".join(op.original_op_names) or "(inserted by the compiler)"
        pairs.append(("original_op_names", names))
    if op.original_op_types:
        pairs.append(("original_op_types", ", ".join(op.original_op_types)))
    missing = [str(ref) for ref in op.data_inputs if ref.src not in graph]
    if missing:
        pairs.append(("inputs not in this graph", ", ".join(missing)))
    out = [_kv(k, v) for k, v in pairs]
    controls = [ref.src for ref in op.control_inputs if ref.src in graph]
    if controls:
        links = gb.NodeIdsNodeAttributeValue(nodeIds=controls)
        out.append(gb.KeyValue(key="control inputs", value=links))
    out += [_kv(f"attr {k}", v) for k, v in sorted(op.attrs.items())]
    return out


def op_node(op: Op, graph: GraphDesc, subgraph_ids: dict[str, str]) -> gb.GraphNode:
    """The Model Explorer node of ``op`` (see the module doc)."""
    namespace, label = node_place(graph, op)  # trans_*: the layer it serves; msprobe: its module
    edges = [
        gb.IncomingEdge(sourceNodeId=ref.src, sourceNodeOutputId=str(ref.index), targetNodeInputId=str(port))
        for port, ref in enumerate(op.data_inputs)
        if ref.src in graph
    ]
    inputs = [
        gb.MetadataItem(id=str(port), attrs=[_kv(TENSOR_TAG, str(ref)), *desc_attrs(op.input_desc(port))])
        for port, ref in enumerate(op.data_inputs)
    ]
    outputs = [
        gb.MetadataItem(id=str(i), attrs=[_kv(TENSOR_TAG, f"{op.name}:{i}"), *desc_attrs(desc, i)])
        for i, desc in enumerate(op.output_descs)
    ]
    return gb.GraphNode(
        id=node_id(op),
        label=label,
        namespace=namespace,
        subgraphIds=[subgraph_ids[s] for s in op.subgraph_names if s in subgraph_ids],
        attrs=_op_attrs(op, graph),
        incomingEdges=edges,
        inputsMetadata=inputs,
        outputsMetadata=outputs,
    )


def model_graphs(model: Model) -> list[gb.Graph]:
    """Every graph of ``model`` as a Model Explorer graph, with ids from :func:`.ids.graph_ids`."""
    ids = graph_ids(model)
    by_name = {}
    for graph, graph_id in zip(model.graphs, ids):
        by_name.setdefault(graph.name, graph_id)
    return [
        gb.Graph(id=graph_id, nodes=[op_node(op, graph, by_name) for op in graph.ops])
        for graph, graph_id in zip(model.graphs, ids)
    ]
