"""What ``explore`` opens in Model Explorer, kept in one small JSON file (``explore.json``), and the
URL that opens it.

Model Explorer's web app reads everything it shows from its ``data`` URL parameter, a JSON
object: ``models`` (each ``url``, the file's path on the server, and ``adapterId``),
``nodeData`` (node-data file paths, each added as an overlay in order, the last one shown), ``nodeDataTargets`` (the model each applies to, ``""`` the first) and
``uiState.paneStates`` (per pane: ``selectedGraphId``, ``selectedNodeId``,
``deepestExpandedGroupNodeIds``, ``widthFraction``), which opens the graph at the selected node
with the layers around it expanded. Its command line has no option for the selected node, so
:mod:`.serve` starts the server with this URL; ``explore.json`` lets a user start it again
(:func:`serve_command`: ``python3 -m precision_tool.model_explorer.serve DIR/explore.json``).

Plain JSON and the standard library: nothing here needs Model Explorer installed.
"""

from __future__ import annotations

import json
import shlex
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.files import read_text
from .ids import ADAPTER_ID

CONFIG_NAME = "explore.json"
SERVE_MODULE = "precision_tool.model_explorer.serve"  # starts Model Explorer on an explore.json
CONFIG_LIMIT = 1 << 20  # bytes; the file holds a dozen paths
URL_SAFE = "/:,"  # left as they are in the query (the web app's URLSearchParams reads them so)


@dataclass(frozen=True)
class Launch:
    """One graph, its overlays (in the order listed; the last one shown) and the node it opens at."""

    graph_file: Path
    node_data: tuple[Path, ...]
    graph_id: str = ""
    focus: str = ""  # the node id selected on open ("" none)
    expanded: tuple[str, ...] = ()  # layer ids expanded on open
    focus_state: str = ""  # what the verdict says of the focus op, for the user
    result: Path | None = None  # the result CSV the node data comes from

    def to_json(self) -> str:
        """The ``explore.json`` text."""
        return json.dumps(
            {
                "graph": str(self.graph_file),
                "node_data": [str(p) for p in self.node_data],
                "graph_id": self.graph_id,
                "focus": self.focus,
                "expanded": list(self.expanded),
                "focus_state": self.focus_state,
                "result": str(self.result) if self.result else "",
            },
            ensure_ascii=True,
            indent=1,
        )

    def url_data(self) -> dict:
        """The web app's ``data`` object (module doc)."""
        pane = {
            "deepestExpandedGroupNodeIds": list(self.expanded),
            "selectedNodeId": self.focus,
            "selectedGraphId": self.graph_id,
            "selectedCollectionLabel": "",
            "widthFraction": 1,
        }
        return {
            "models": [{"url": str(self.graph_file), "adapterId": ADAPTER_ID}],
            "nodeData": [str(p) for p in self.node_data],
            "nodeDataTargets": [""] * len(self.node_data),
            "uiState": {"paneStates": [pane]},
        }

    def query(self) -> str:
        """``data=...``, URL-encoded."""
        text = json.dumps(self.url_data(), ensure_ascii=True, separators=(",", ":"))
        return "data=" + urllib.parse.quote(text, safe=URL_SAFE)

    def url(self, host: str, port: int) -> str:
        """The address that opens the graph at the focus node on a server at ``host:port``."""
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/?{self.query()}"


def serve_command(config: Path) -> str:
    """The short command that starts Model Explorer on ``config`` (an ``explore.json``),
    shell-quoted: what ``explore`` and ``report --model-explorer`` print."""
    return shlex.join(["python3", "-m", SERVE_MODULE, str(config)])


def _strings(value, key: str, path: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PrecisionToolError(f"'{key}' is not a list of strings", path)
    return value


def read_launch(path: str | Path) -> Launch:
    """The :class:`Launch` in ``explore.json`` at ``path``.

    Raises:
        PrecisionToolError: naming ``path``: unreadable, not JSON, or a field missing or of the
            wrong type.
    """
    path = Path(path)
    try:
        data = json.loads(read_text(path, "Model Explorer launch file", CONFIG_LIMIT))
    except json.JSONDecodeError as exc:
        raise PrecisionToolError(f"not JSON: {exc.msg} at line {exc.lineno}", path) from None
    if not isinstance(data, dict):
        raise PrecisionToolError("not a JSON object", path)
    text = {}
    for key in ("graph", "graph_id", "focus", "focus_state", "result"):
        value = data.get(key, "")
        if not isinstance(value, str):
            raise PrecisionToolError(f"'{key}' is not a string", path)
        text[key] = value
    if not text["graph"]:
        raise PrecisionToolError("'graph' is missing: no graph to open", path)
    return Launch(
        Path(text["graph"]),
        tuple(Path(p) for p in _strings(data.get("node_data", []), "node_data", path)),
        text["graph_id"],
        text["focus"],
        tuple(_strings(data.get("expanded", []), "expanded", path)),
        text["focus_state"],
        Path(text["result"]) if text["result"] else None,
    )
