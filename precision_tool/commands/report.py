"""``report``: one self-contained HTML page of a comparison result, for the browser and for
sharing: the summary, the cosine curve along execution order, the flagged ops, the graph around
the first operator that introduces the error, and ``ac``'s checks. ``--model-explorer`` also
writes what ``explore`` opens in Google's Model Explorer (the node data and ``explore.json``,
:func:`precision_tool.model_explorer.prepare.write_launch`) and prints the short command that
starts it there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..report import DEFAULT_DEPTH
from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult, UsageError
from .result_args import add_result_argument, cosine_arg, result_sources

if TYPE_CHECKING:  # the report's writer loads the readers and numpy: only when report runs
    from ..context import Context
    from ..render.lines import OneLineText


def _add_arguments(parser: CommandParser) -> None:
    add_result_argument(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write index.html (and the node data) into DIR instead of temp/report/{timestamp}/",
    )
    parser.add_argument(
        "-c", "--cosine", type=cosine_arg, metavar="COS", help="the cosine threshold; defaults to the config's (0.98)"
    )
    parser.add_argument(
        "-s",
        "--subgraph",
        dest="depth",
        type=int,
        default=DEFAULT_DEPTH,
        metavar="DEPTH",
        help=f"depth of the graph around the first introducer (default {DEFAULT_DEPTH})",
    )
    parser.add_argument(
        "--model-explorer",
        action="store_true",
        help="also write Model Explorer node data (the verdict, one JSON per metric) "
        "and explore.json, and print the short command that opens Model "
        "Explorer at the first introducer",
    )


def _path_line(label: str, path, extra: str = "") -> OneLineText:
    from rich.text import Text

    from ..render.lines import OneLineText, one_line

    return OneLineText(Text.assemble((f"{label}: ", "title"), (one_line(str(path)), "path"), extra))


def run(args, context: Context) -> CommandResult:
    """Write the report of ``-f`` (default: the newest result) and say where it is."""
    if args.depth < 0:
        raise UsageError("report: -s DEPTH must be 0 or more", COMMAND.parser().format_usage().strip())
    from rich.text import Text

    from ..render.lines import OneLine
    from ..report.write import make_report

    threshold = context.config.cosine_threshold if args.cosine is None else args.cosine
    written = make_report(
        context,
        result_sources(args.file, context),
        output=args.output,
        threshold=threshold,
        depth=args.depth,
        model_explorer=args.model_explorer,
    )
    out: list = [_path_line("report", written.index, f"  ({written.size / 1024:.1f} KiB)")]
    out += [OneLine(f"error: {p.error}") for p in written.parts if p.view is None]
    if args.model_explorer:
        commands = written.explorer_commands()
        out += [_path_line("model explorer", c) for c in commands] or [
            Text("model explorer: no Build graph holds these results' ops: no node data", style="warn")
        ]
    status = ExitStatus.ERROR if any(p.view is None for p in written.parts) else ExitStatus.OK
    return CommandResult(out, status, written.files)


COMMAND = Command(
    name="report",
    summary="write a self-contained HTML report of a result (plot, flagged ops, subgraph)",
    add_arguments=_add_arguments,
    run=run,
    completions={"-f": "path", "--file": "path", "-o": "path", "--output": "path"},
    description="Write temp/report/{timestamp}/index.html (or -o DIR/index.html): one file that "
    "opens offline, with the summary (the first operator that introduces the error), "
    "the output cosine and RelativeEuclideanDistance along execution order, a sortable "
    "table of the flagged ops, the graph around the first introducer filled by "
    "each op's verdict, and ac's checks. --model-explorer also writes Model Explorer node data "
    "and explore.json and prints the short command that opens it at the first "
    "introducer, the verdict overlay first (as explore does).",
)
