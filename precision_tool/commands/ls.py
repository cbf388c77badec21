"""``ls``: the ops of the Build graphs, as type counts or a filtered list."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .registry import Command, CommandParser, CommandResult, add_graph_argument

if TYPE_CHECKING:  # the listing loads the graph readers: only when ls runs
    from ..context import Context


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument("-t", "--type", help="ops whose type contains TYPE (case-insensitive)")
    parser.add_argument(
        "-n", "--name", help="ops whose name, or the name of a TF op fused into them (OriginalOp), contains NAME"
    )
    parser.add_argument("-f", "--pass", dest="pass_name", metavar="PASS", help="ops made by fusion pass PASS")
    parser.add_argument("-k", "--kernel", help="ops whose kernel name contains KERNEL")
    parser.add_argument(
        "-d",
        "--debug",
        metavar="DEBUG_DIR",
        help="only this NPU debug dir (debug_0, debug_1; on an msprobe data root npu or bench)",
    )
    add_graph_argument(parser)


def run(args, context: Context) -> CommandResult:
    """The ``ls`` command (:func:`.ls_listing.list_ops`)."""
    from .ls_listing import list_ops

    return list_ops(args, context)


COMMAND = Command(
    name="ls",
    summary="list op types and counts (and the graph files read), or the ops matching -t/-n/-f/-k",
    add_arguments=_add_arguments,
    run=run,
    completions={"-n": "op", "--name": "op", "-t": "optype", "--type": "optype", "-g": "path", "--graph": "path"},
)
