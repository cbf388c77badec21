"""Start Model Explorer on an ``explore.json`` (:mod:`.launch`)::

    python -m precision_tool.model_explorer.serve temp/explore/20261202040000/explore.json

serves the graph with this project's adapter and opens the browser at the focus op, the verdict
overlay first (``--no-browser``: only print the address; ``--host``, ``--port`` as
Model Explorer's own, port 8080 meaning the first free one from 8080). ``explore`` runs this in
the background; it and ``report --model-explorer`` print the line that runs it
(:func:`~.launch.serve_command`).

Model Explorer's ``server.start`` opens the address its config encodes, which carries models
and node data only; the config here adds the selected node and layers (``Launch.query``).
"""

from __future__ import annotations

import argparse
import sys

from model_explorer import server
from model_explorer.config import ModelExplorerConfig
from model_explorer.consts import DEFAULT_PORT

from ..errors import PrecisionToolError
from .ids import EXTENSION
from .launch import Launch, read_launch


class LaunchConfig(ModelExplorerConfig):
    """Model Explorer's config whose address also selects the focus node (module doc)."""

    def __init__(self, launch: Launch) -> None:
        super().__init__()
        self.launch = launch
        self.add_model_from_path(str(launch.graph_file))
        for path in launch.node_data:
            self.add_node_data_from_path(str(path))

    def to_url_param_value(self) -> str:
        return self.launch.query().removeprefix("data=")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m precision_tool.model_explorer.serve", description="Start Model Explorer on an explore.json."
    )
    parser.add_argument("config", help="the explore.json that `precision-tool explore` wrote")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the port (default {DEFAULT_PORT}: the first free one from there)",
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted; 2 with one line on stderr when the file cannot be read."""
    args = parse_args(argv)
    try:
        launch = read_launch(args.config)
    except PrecisionToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server.start(
        host=args.host,
        port=args.port,
        config=LaunchConfig(launch),
        extensions=[EXTENSION],
        no_open_in_browser=args.no_browser,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
