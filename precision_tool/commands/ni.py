"""``ni``: node info of one graph op, its NPU dump and TF golden tensors, and its neighbourhood;
the work is :mod:`.ni_report`'s (imported when the command runs, so the shell starts fast)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..render.limits import FULL_FLAG, LIST_LIMIT
from .registry import Command, CommandParser, CommandResult, UsageError, add_graph_argument

if TYPE_CHECKING:
    from ..context import Context


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument("name", nargs="?", help="op name: exact, '/'-'_' equivalent, or a substring")
    parser.add_argument("-n", "--name", dest="name_opt", metavar="NAME", help="the op name (same as the positional)")
    add_graph_argument(parser)
    parser.add_argument(
        "-a",
        "--all",
        dest="all_attrs",
        action="store_true",
        help="also show every attribute of the op and its tensor descs",
    )
    parser.add_argument(
        "-s",
        "--subgraph",
        dest="depth",
        type=int,
        metavar="DEPTH",
        help="write the op's neighbourhood as graphviz .gv (and .svg with dot) and "
        "print it as a tree: its producers up to DEPTH edges upstream, its "
        "consumers up to DEPTH edges downstream, and those consumers' other "
        "inputs (e.g. the next MatMul's weight and bias), each op coloured by "
        "the newest result's output cosine; 0 is the op alone",
    )
    parser.add_argument(
        "-d",
        "--debug",
        metavar="DEBUG_DIR",
        help="only this NPU debug dir (debug_0, debug_1; on an msprobe data root npu or bench); not the global --debug",
    )
    parser.add_argument(
        FULL_FLAG,
        action="store_true",
        help=f"every entry of long lists (default: the first {LIST_LIMIT} inputs, "
        "outputs and tensors of each, then '... N more')",
    )


ORIGINAL_D = (
    "here -d names an NPU debug dir (ni NAME -d debug_1); the original precision_tool's "
    "'ni -d' (show the dump data) needs no flag: ni always shows the op's NPU dump and "
    "golden tensors"
)


def _op_name(args) -> str:
    given = [n for n in (args.name, args.name_opt) if n is not None]
    if len(given) != 1:
        why = "give the op name once: 'ni NAME' or 'ni -n NAME'" if given else "an op name is required"
        raise UsageError(f"ni: {why}", COMMAND.parser().format_usage().strip())
    if args.depth is not None and args.depth < 0:
        raise UsageError("ni: -s DEPTH must be 0 or more", COMMAND.parser().format_usage().strip())
    return given[0]


# --- NPU dump -----------------------------------------------------------------------------------


def run(args, context: Context) -> CommandResult:
    """Show node info of the op NAME (of every graph holding it); ``-a`` all attributes;
    ``-s D`` its neighbourhood."""
    from .ni_report import node_report

    return node_report(args, context, _op_name(args))


COMMAND = Command(
    name="ni",
    summary="node info: an op's graph facts, NPU dump and golden stats, -s neighbourhood",
    add_arguments=_add_arguments,
    run=run,
    completions={"": "op", "-n": "op", "--name": "op", "-g": "path", "--graph": "path"},
    flag_hints={"-d": ORIGINAL_D, "--debug": ORIGINAL_D},
    description=(
        "Node info of one op of the Build graph: type, id, kernel, fusion (PassName, "
        "OriginalOp), inputs and outputs, the NPU dump tensors (latest launch) and the "
        "matching TF golden tensors with max/min/mean; when several graphs hold the op, "
        "each is shown (-g GRAPH picks one: a graph name, file name, graph id or a stage "
        "such as PreRunBegin). -a adds every attribute; -s D writes the depth-D "
        "neighbourhood to temp/op_graph/ as .gv (and .svg when graphviz 'dot' is "
        "installed) and prints it as a tree: producers D edges up, consumers D edges "
        "down, and the consumers' other producers, each port with its device and host "
        "format and shape, each op coloured by the newest result (red flagged, amber "
        "within 0.02 above the threshold, green above, grey not compared). At most the "
        "nearest 1500 ops are drawn and 200 printed. Long lists show their first "
        f"{LIST_LIMIT} entries and how many more there are ({FULL_FLAG}: all)."
    ),
)
