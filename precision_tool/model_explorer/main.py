"""The Model Explorer adapter extension for GE graph dumps.

Model Explorer loads ``<module>.main`` for each ``--extensions=<module>`` and registers every
``Adapter`` subclass defined there (``model_explorer.extension_manager``), so::

    model-explorer ge_proto_00000001_Build.txt --extensions=precision_tool.model_explorer

opens a Build graph; the adapter is offered for ``.txt`` and ``.json`` files. The graph is read by
:func:`precision_tool.formats.graph.read_graph` (TextFormat or atc JSON, decided by content),
an msprobe ``dump.json`` by :func:`precision_tool.formats.msprobe_graph.read_model_at`;
a file it cannot read raises its one-line ``PrecisionToolError``, which Model Explorer shows.
"""

from __future__ import annotations

from pathlib import Path

from model_explorer import Adapter, AdapterMetadata, ModelExplorerGraphs

from ..formats.graph import read_graph
from ..formats.msprobe_graph import read_model_at
from ..formats.msprobe_tree import DUMP_JSON
from .convert import model_graphs
from .ids import ADAPTER_ID


class GeGraphAdapter(Adapter):
    """GE graph dumps (``ge_proto_*_Build.txt``) as Model Explorer graphs."""

    metadata = AdapterMetadata(
        id=ADAPTER_ID,
        name="GE graph (PrecisionTool)",
        description="Ascend GE graph dumps (ge_proto_*.txt, TextFormat or atc JSON): ops, "
        "namespaces from '/', data edges, tensor descriptors and attributes.",
        fileExts=["txt", "json"],
    )

    def convert(self, model_path: str, settings: dict) -> ModelExplorerGraphs:
        """Read the graph dump at ``model_path``, or the msprobe ``dump.json`` (``settings``
        are not used)."""
        if Path(model_path).name == DUMP_JSON:
            return {"graphs": model_graphs(read_model_at(model_path))}
        return {"graphs": model_graphs(read_graph(model_path))}
