"""``why``: the cause of the error an op introduces, with evidence, and a replay of the op.

``why OP`` explains one op (reading only its own dump file and the goldens it pairs with): a
call of the newest result's msprobe dumps (its key, or a part of one key), else an op of the
Build graphs;
``why`` alone explains the first operators that introduce error in the newest result (see
:func:`precision_tool.explain.diagnosis.explain_newest`). ``--json`` prints the schema of docs/why.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult
from .result_args import limit_arg

if TYPE_CHECKING:  # the explanations load numpy: only when why runs
    from ..context import Context


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "op",
        nargs="?",
        metavar="OP",
        help="the op to explain (exact, '/'-'_' equivalent, or a substring); default: "
        "the first ops that introduce error in the newest result",
    )
    parser.add_argument("--json", action="store_true", help="print the explanations as JSON")
    parser.add_argument(
        "-l",
        "--limit",
        type=limit_arg,
        metavar="N",
        help="without OP, explain at most N introducing ops per result CSV, 0 for all; "
        "defaults to the config's vcs limit (3)",
    )


def _explain_named(context: Context, name: str) -> list:
    """OP as a call of the newest result's msprobe dumps, else as an op of the Build graphs."""
    from ..compare.lookup import lookup_op
    from ..errors import PrecisionToolError
    from ..explain.diagnosis import explain_named_call, explain_ref

    calls = explain_named_call(context, name)
    if calls:
        return calls
    try:
        return explain_ref(context, lookup_op(context, name, debug="debug_0"))
    except PrecisionToolError as exc:
        if calls is None:
            raise
        raise PrecisionToolError(
            f"no call of the newest result's msprobe dumps is named {name!r}, "
            f"and no Build graph op either ({exc.problem})"
        ) from None


def run(args, context: Context) -> CommandResult:
    """Explain OP, or the first introducers of the newest result; FLAGGED when a cause other
    than precision is found."""
    from ..explain.diagnosis import explain_newest
    from ..render.json_out import dumps
    from ..render.lines import RawLines
    from ..render.why import render_why
    from ..render.why_json import to_json_data

    if args.op:
        explanations = _explain_named(context, args.op)
    else:
        explanations = explain_newest(context, args.limit)
    status = ExitStatus.FLAGGED if any(e.is_defect for e in explanations) else ExitStatus.OK
    if args.json:
        return CommandResult([RawLines(dumps(to_json_data(explanations)))], status)
    return CommandResult(render_why(explanations), status)


COMMAND = Command(
    name="why",
    summary="why an op's output differs: overflow, layout, scale, precision, inputs, computation",
    add_arguments=_add_arguments,
    run=run,
    completions={"": "op"},
    description="Test hypotheses on the op's NPU output and its golden (overflow, underflow, NaN, "
    "permutation, scale / offset / sign, float16 rounding, inputs already different) and "
    "replay the op in float64 from its own NPU inputs (computation), then list the causes "
    "that hold, most likely first, with their numbers. Without OP: the first operators that "
    "introduce error in the newest result (run vc first). Exit status 1 when a cause other "
    "than precision is found.",
)
