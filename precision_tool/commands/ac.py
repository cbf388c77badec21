"""``ac``: auto check. ``-c`` first compares the whole network (``vc``); then the ``vcs``
summary, and the four checks of the original ``ac``: overflow, fusion, dangerous casts, and
debug_0 vs debug_1 graph similarity. Each check is a panel, or one line saying what data it
looked for and where when that data is absent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from rich.text import Text

from ..checks.casts import check_casts
from ..compare.divergence import FlagRule
from ..checks.fusion import check_fusion
from ..checks.graph_diff import check_graph_diff
from ..checks.overflow import check_overflow
from ..context import Context
from ..errors import PrecisionToolError
from ..render.checks import render_casts, render_fusion, render_graph_diff
from ..render.overflow import render_overflow
from ..status import ExitStatus
from . import vc, vcs
from .registry import Command, CommandParser, CommandResult


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument("-c", "--compare", action="store_true",
                        help="first compare the whole network (run vc), then summarise that result")
    parser.add_argument("-l", "--limit", type=vcs.limit_arg, metavar="N",
                        help="list at most N flagged ops and overflow files, 0 for all; "
                             "defaults to the config's vcs limit (3)")


def _summary(paths: list[Path] | None, limit: int, context: Context) -> CommandResult:
    """The vcs summary of ``paths`` (None: the newest result); a missing result is one line."""
    try:
        sources = paths or vcs.result_sources(None, context)
    except PrecisionToolError as exc:
        return CommandResult([Text(f"error: {exc}", style="error")], ExitStatus.ERROR)
    return vcs.summarise(sources, FlagRule.from_config(context.config), limit)


def _check(name: str, check: Callable[[], object], render, flags: Callable[[object], bool]) -> CommandResult:
    """One check as a CommandResult: its panel, FLAGGED when ``flags`` says so, one error line when
    its data cannot be read (the other checks still run)."""
    try:
        result = check()
    except PrecisionToolError as exc:
        return CommandResult([Text(f"{name}: error: {exc}", style="error")], ExitStatus.ERROR)
    return CommandResult([render(result)], ExitStatus.FLAGGED if flags(result) else ExitStatus.OK)


def _checks(context: Context, limit: int) -> list[CommandResult]:
    """Overflow and dangerous casts count as suspicious; fusion and graph differences inform."""
    return [
        _check("overflow check", lambda: check_overflow(context, limit), render_overflow,
               lambda r: r.flagged),
        _check("fusion check", lambda: check_fusion(context), render_fusion, lambda r: False),
        _check("cast check", lambda: check_casts(context), render_casts, lambda r: r.found),
        _check("graph similarity", lambda: check_graph_diff(context), render_graph_diff, lambda r: False),
    ]


def run(args, context: Context) -> CommandResult:
    """With ``-c`` run ``vc`` and summarise what it wrote, else summarise the newest result; then
    the four checks. The status is the worst of the parts."""
    _, limit = vcs.settings(args, context)
    parts: list[CommandResult] = []
    paths: list[Path] | None = None
    if args.compare:
        try:
            compared = vc.vector_compare(context)
        except PrecisionToolError as exc:
            compared = CommandResult([Text(f"error: vc: {exc}", style="error")], ExitStatus.ERROR)
        parts.append(compared)
        paths = list(compared.files) or None  # the CSVs vc wrote
    failed = args.compare and parts[0].status == ExitStatus.ERROR and paths is None
    if not failed:  # after a failed comparison an older result would mislead
        parts.append(_summary(paths, limit, context))
    parts.extend(_checks(context, limit))
    return CommandResult(renderables=[r for part in parts for r in part.renderables],
                         status=ExitStatus(max(part.status for part in parts)),
                         files=[f for part in parts for f in part.files])


COMMAND = Command(
    name="ac", summary="auto check: -c compares the network (vc); summary, overflow, fusion, casts, graph diff",
    add_arguments=_add_arguments, run=run,
    description="Auto check. With -c, first compare the whole network (vc); then summarise the "
                "result (the flagged ops and the first operator that introduces the error), and "
                "run the overflow check (overflow/dump Opdebug files, and NPU tensors holding "
                "Inf/NaN where their golden does not), the fusion check (fusion_result.json), the "
                "dangerous-cast check (DANGEROUS_CASTS in the Build graph) and the debug_0 vs "
                "debug_1 graph similarity. Exit status 1 when ops are flagged, an overflow is "
                "found or a dangerous cast exists.")
