"""The ids Model Explorer knows GE graphs and ops by: one home for the adapter and the node data.

A node id is the op's name (unique within a GE graph: the reader refuses two ops of one name),
so a node-data file stays valid for any dump of the same graph. A graph id is the graph's name,
with ``#2``, ``#3``... added to repeats and ``graph<k>`` for an unnamed one; an msprobe model's
is its rank directory's name, as the adapter reads it.
"""

from __future__ import annotations

from pathlib import Path

from ..formats.graph_model import Model, Op
from ..formats.msprobe_tree import DUMP_JSON

ADAPTER_ID = "precision_tool_ge_graph"  # the adapter's id (main.py), named in the URL that opens it
EXTENSION = "precision_tool.model_explorer"  # the module --extensions names


def node_id(op: Op) -> str:
    """The Model Explorer node id of ``op``."""
    return op.name


def _adapter_name(model: Model) -> str | None:
    """The name the adapter gives an msprobe model: it reads the ``dump.json`` alone, so the
    graph is called by its rank directory (``rank0``), whatever name the session gave it
    (``step0/rank0``); None for a GE model, whose names come from the graph file itself."""
    source = Path(model.source_path) if model.source_path else None
    return source.parent.name if source is not None and source.name == DUMP_JSON else None


def graph_ids(model: Model) -> list[str]:
    """The Model Explorer graph id of each graph of ``model``, in order, all distinct."""
    used: set[str] = set()
    ids = []
    alone = _adapter_name(model)
    for k, graph in enumerate(model.graphs):
        base = alone or graph.name or f"graph{k}"
        candidate, n = base, 1
        while candidate in used:  # "#n" may itself be taken by a graph so named
            n += 1
            candidate = f"{base}#{n}"
        used.add(candidate)
        ids.append(candidate)
    return ids
