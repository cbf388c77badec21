"""Entry point: ``precision-tool``, ``python -m precision_tool`` and ``python3 precision_tool/cli.py``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python3 ./precision_tool/cli.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precision_tool import __version__  # noqa: E402
from precision_tool.errors import PrecisionToolError  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="precision-tool",
        description="Find the operator where a network's numbers go wrong on Ascend NPUs.")
    parser.add_argument("--data", default="precision_data", help="data root. Defaults to ./precision_data.")
    parser.add_argument("--version", action="version", version=f"precision-tool {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Survey the data root and print what was found. Returns the exit status."""
    from rich.console import Console

    from precision_tool.formats.datadir import survey
    from precision_tool.render.survey import render_survey

    args = build_parser().parse_args(argv)
    console = Console()
    try:
        console.print(render_survey(survey(args.data), __version__))
    except PrecisionToolError as exc:
        Console(stderr=True).print(f"error: {exc}", markup=False, highlight=False)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
