"""The layer each op sits in on Model Explorer: the ``/`` path of its name, except that an op the
compiler inserted (a ``trans_TransData_1`` or ``trans_Cast_0`` GE adds between two ops, an op
whose ``_datadump_original_op_names`` is empty) joins the layer of the op it serves.

GE names its inserted ops without a path, so left as they are they all sit at the root: the
collapsed graph is a star around them, and data leaves a layer for the root and comes back. An
inserted op serves the ops that read what it converts: the first ops past any chain of inserted
ops (a Cast feeding a TransData feeding a Conv2D serves the Conv2D). When they share one layer
(or a common outer one), the inserted op goes there; when its readers are at the root (the graph
output), it goes to the layer of the op whose value it converts, found back through the chain.
An inserted op whose name already has a path keeps it. An msprobe call sits in the layer of the
module it ran in (:func:`node_place`).
"""

from __future__ import annotations

from ..compare.golden_pairing import STEP_OVER_TYPES
from ..formats.graph_model import GraphDesc, Op
from ..formats.msprobe_graph import module_namespace


def split_name(name: str) -> tuple[str, str]:
    """``(namespace, label)`` of an op name: ``"a/b/C"`` -> ``("a/b", "C")``; empty parts
    (``a//b``, a trailing ``/``) are dropped from the namespace."""
    parts = name.split("/")
    label = parts[-1] or name
    return "/".join(p for p in parts[:-1] if p), label


def compiler_inserted(op: Op) -> bool:
    """Whether the compiler inserted ``op``: its original-op list is there and empty, or it is a
    Cast/TransData with none (pairing steps over the same ops)."""
    if op.original_op_names:
        return False
    return op.original_op_names is not None or op.type in STEP_OVER_TYPES


def _common_layer(layers: set[str]) -> str:
    """The longest ``/`` path all ``layers`` start with (``""`` when none, or any is the root)."""
    split = [layer.split("/") for layer in layers]
    common: list[str] = []
    for parts in zip(*split):
        if len(set(parts)) != 1 or not parts[0]:
            break
        common.append(parts[0])
    return "/".join(common)


def _readers(graph: GraphDesc, op: Op) -> set[str]:
    """The layers of the first ops past the chain of inserted ops starting at ``op``."""
    layers, seen, todo = set(), {op.name}, [op]
    while todo:
        here = todo.pop()
        for consumer_name, _ in (pair for port in here.consumers for pair in port):
            consumer = graph.find_op(consumer_name)
            if consumer is None or consumer.name in seen:
                continue
            seen.add(consumer.name)
            if compiler_inserted(consumer) and not split_name(consumer.name)[0]:
                todo.append(consumer)
            else:
                layers.add(split_name(consumer.name)[0])
    return layers


def _source_layer(graph: GraphDesc, op: Op) -> str:
    """The layer of the op whose value ``op`` converts, back through inserted ops."""
    seen = {op.name}
    here = op
    while here.data_inputs:
        producer = graph.find_op(here.data_inputs[0].src)
        if producer is None or producer.name in seen:
            return ""
        if not (compiler_inserted(producer) and not split_name(producer.name)[0]):
            return split_name(producer.name)[0]
        seen.add(producer.name)
        here = producer
    return ""


def op_layer(graph: GraphDesc, op: Op) -> str:
    """The namespace ``op`` is shown in (see the module doc)."""
    own = split_name(op.name)[0]
    if own or not compiler_inserted(op):
        return own
    readers = _readers(graph, op)
    served = _common_layer(readers) if readers else ""
    return served or _source_layer(graph, op)


def node_place(graph: GraphDesc, op: Op) -> tuple[str, str]:
    """``(namespace, label)`` of ``op``'s node: an msprobe call in the layer of the module it
    ran in, labelled by its whole name; a GE op in :func:`op_layer`, labelled by its last part."""
    module = module_namespace(op)
    if module is not None:
        return module, op.name
    return op_layer(graph, op), split_name(op.name)[1]
