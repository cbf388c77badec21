"""``ac``: auto check. ``-c`` first compares the whole network (``vc``); then the ``vcs`` summary.

The other checks of the original ``ac`` (overflow, fusion, dangerous casts, debug_0 vs debug_1
graph similarity) are not part of this release, and ``ac`` says so.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from rich.text import Text

from ..context import Context
from ..errors import PrecisionToolError
from ..status import ExitStatus
from . import vcs
from .registry import Command, CommandParser, CommandResult

NOT_IN_RELEASE = ("the overflow, fusion, cast and graph-similarity checks are not part of this "
                  "release; ac runs the comparison summary only")
_VC_MODULE = "precision_tool.commands.vc"


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument("-c", "--compare", action="store_true",
                        help="first compare the whole network (run vc), then summarise that result")
    parser.add_argument("-l", "--limit", type=vcs.limit_arg, metavar="N",
                        help="list at most N flagged ops, 0 for all; defaults to the config's vcs limit (3)")


def _run_vc(context: Context) -> CommandResult:
    """``vc`` with its default arguments, as a CommandResult (ERROR with a line when it is absent)."""
    try:
        module = importlib.import_module(_VC_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != _VC_MODULE:
            raise
        return CommandResult([Text("error: the vc command is not available in this build, so "
                                   "ac -c cannot compare", style="error")], ExitStatus.ERROR)
    command = module.COMMAND
    result = command.run(command.parser().parse_args([]), context)
    return result if isinstance(result, CommandResult) else CommandResult([result])


def _written_csvs(result: CommandResult) -> list[Path]:
    return [Path(p) for p in result.files if Path(p).suffix.lower() == ".csv"]


def _summary(paths: list[Path] | None, limit: int, context: Context) -> CommandResult:
    """The vcs summary of ``paths`` (None: the newest result); a missing result is one line."""
    try:
        sources = paths or vcs.result_sources(None, context)
    except PrecisionToolError as exc:
        return CommandResult([Text(f"error: {exc}", style="error")], ExitStatus.ERROR)
    return vcs.summarise(sources, context.config.cosine_threshold, limit)


def run(args, context: Context) -> CommandResult:
    """With ``-c`` run ``vc`` and summarise what it wrote, else summarise the newest result; then
    say which checks this release lacks. The status is the worst of the parts."""
    _, limit = vcs.settings(args, context)
    parts: list[CommandResult] = []
    paths: list[Path] | None = None
    if args.compare:
        try:
            compared = _run_vc(context)
        except PrecisionToolError as exc:
            compared = CommandResult([Text(f"error: vc: {exc}", style="error")], ExitStatus.ERROR)
        parts.append(compared)
        paths = _written_csvs(compared) or None  # None: vc did not say, take the newest result
    failed = args.compare and parts[0].status == ExitStatus.ERROR and paths is None
    if not failed:  # after a failed comparison an older result would mislead
        parts.append(_summary(paths, limit, context))
    parts.append(CommandResult([Text(NOT_IN_RELEASE, style="warn")]))
    return CommandResult(renderables=[r for part in parts for r in part.renderables],
                         status=ExitStatus(max(part.status for part in parts)),
                         files=[f for part in parts for f in part.files])


COMMAND = Command(
    name="ac", summary="auto check: -c compares the network (vc), then the vcs summary",
    add_arguments=_add_arguments, run=run,
    description="Auto check. With -c, first compare the whole network (vc); then summarise the "
                "result: the flagged ops and the first operator that introduces the error. The "
                "overflow, fusion, cast and graph-similarity checks are not part of this release.")
