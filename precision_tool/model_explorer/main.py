"""The Model Explorer adapter extension for GE graph dumps.

Model Explorer loads ``<module>.main`` for each ``--extensions=<module>`` and registers every
``Adapter`` subclass defined there (``model_explorer.extension_manager``), so::

    model-explorer ge_proto_00000001_Build.txt --extensions=precision_tool.model_explorer

opens a Build graph; the adapter is offered for ``.txt`` files. The graph is read by
:func:`precision_tool.formats.graph.read_graph` (TextFormat or atc JSON, decided by content);
a file it cannot read raises its one-line ``PrecisionToolError``, which Model Explorer shows.
"""

from __future__ import annotations

from typing import Dict

from model_explorer import Adapter, AdapterMetadata, ModelExplorerGraphs

from ..formats.graph import read_graph
from .convert import model_graphs

ADAPTER_ID = "precision_tool_ge_graph"


class GeGraphAdapter(Adapter):
    """GE graph dumps (``ge_proto_*_Build.txt``) as Model Explorer graphs."""

    metadata = AdapterMetadata(
        id=ADAPTER_ID,
        name="GE graph (PrecisionTool)",
        description="Ascend GE graph dumps (ge_proto_*.txt, TextFormat or atc JSON): ops, "
                    "namespaces from '/', data edges, tensor descriptors and attributes.",
        fileExts=["txt"],
    )

    def convert(self, model_path: str, settings: Dict) -> ModelExplorerGraphs:
        """Read the graph dump at ``model_path`` (``settings`` are not used)."""
        return {"graphs": model_graphs(read_graph(model_path))}
