"""``why``: the cause of the error an op introduces, with evidence, and a replay of the op.

``why OP`` explains one op (reading only its own dump file and the goldens it pairs with);
``why`` alone explains the first operators that introduce error in the newest result (see
:func:`precision_tool.explain.diagnosis.explain_newest`). ``--json`` prints the README's schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult
from .vcs import limit_arg

if TYPE_CHECKING:  # the explanations load numpy: only when why runs
    from ..context import Context


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument("op", nargs="?", metavar="OP",
                        help="the op to explain (exact, '/'-'_' equivalent, or a substring); default: "
                             "the first ops that introduce error in the newest result")
    parser.add_argument("--json", action="store_true", help="print the explanations as JSON")
    parser.add_argument("-l", "--limit", type=limit_arg, metavar="N",
                        help="without OP, explain at most N introducing ops per result CSV, 0 for all; "
                             "defaults to the config's vcs limit (3)")


def run(args, context: Context) -> CommandResult:
    """Explain OP, or the first introducers of the newest result; FLAGGED when a cause other
    than precision is found."""
    from ..explain.diagnosis import explain_newest, explain_ref
    from ..render.json_out import dumps
    from ..render.lines import RawLines
    from ..render.why import render_why
    from ..render.why_json import to_json_data
    from ..compare.lookup import lookup_op

    if args.op:
        explanations = explain_ref(context, lookup_op(context, args.op, debug="debug_0"))
    else:
        explanations = explain_newest(context, args.limit)
    status = ExitStatus.FLAGGED if any(e.is_defect for e in explanations) else ExitStatus.OK
    if args.json:
        return CommandResult([RawLines(dumps(to_json_data(explanations)))], status)
    return CommandResult(render_why(explanations), status)


COMMAND = Command(
    name="why", summary="why an op's output differs: overflow, layout, scale, precision, inputs, computation",
    add_arguments=_add_arguments, run=run, completions={"": "op"},
    description="Test hypotheses on the op's NPU output and its golden (overflow, underflow, NaN, "
                "permutation, scale / offset / sign, float16 rounding, inputs already different) and "
                "replay the op in float64 from its own NPU inputs (computation), then list the causes "
                "that hold, most likely first, with their numbers. Without OP: the first operators that "
                "introduce error in the newest result (run vc first). Exit status 1 when a cause other "
                "than precision is found.")
