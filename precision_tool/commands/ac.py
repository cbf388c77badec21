"""``ac``: auto check. ``-c`` first compares the whole network (``vc``); then the ``vcs``
summary, why the first introducers differ, the four checks of the original ``ac`` (overflow,
fusion, dangerous casts, debug_0 vs debug_1 graph similarity) and a conclusion, one line per
part with the root cause first. The work is :mod:`.ac_autocheck`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .registry import Command, CommandParser, CommandResult
from .result_args import limit_arg, settings

if TYPE_CHECKING:
    from ..context import Context


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "-c",
        "--compare",
        action="store_true",
        help="first compare the whole network (run vc), then summarise that result",
    )
    parser.add_argument(
        "-l",
        "--limit",
        type=limit_arg,
        metavar="N",
        help="list at most N flagged ops and overflow files, 0 for all; defaults to the config's vcs limit (3)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print what was found as one JSON document (see docs/json.md)"
    )


def run(args, context: Context) -> CommandResult:
    """With ``-c`` run ``vc`` and summarise what it wrote, else summarise the newest result; then
    the four checks, and a conclusion. The status is the worst of the parts."""
    from .ac_autocheck import auto_check, render_json, render_text

    _, limit = settings(args, context)
    found = auto_check(context, args.compare, limit, quiet=args.json)
    renderables = [render_json(found)] if args.json else render_text(found, limit)
    files = list(found.comparison.files) if found.comparison else []
    files += [found.report] if found.report is not None else []
    return CommandResult(renderables, found.status, files)


COMMAND = Command(
    name="ac",
    summary="auto check: -c compares the network (vc); summary, overflow, fusion, casts, graph diff",
    add_arguments=_add_arguments,
    run=run,
    description="Auto check. With -c, first compare the whole network (vc); then summarise the "
    "result (the flagged ops and the first operator that introduces the error), run "
    "the overflow check (overflow/dump Opdebug files, and NPU tensors holding Inf/NaN "
    "where their golden does not), the fusion check (fusion_result.json), the "
    "dangerous-cast check (DANGEROUS_CASTS in the Build graph) and the debug_0 vs "
    "debug_1 graph similarity, and end with one line per part, the root cause first "
    "(--json: one JSON document instead). Exit status 1 when ops are flagged, an "
    "overflow is found or a dangerous cast exists.",
)
