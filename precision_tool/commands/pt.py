"""``pt NAME``: print a tensor (an NPU dump tensor or a golden ``.npy``) and export it as text;
the work is :mod:`.pt_print`'s (imported when the command runs, so the shell starts fast)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..render.limits import FULL_FLAG, LIST_LIMIT
from .registry import Command, CommandParser, CommandResult

if TYPE_CHECKING:
    from ..context import Context

DEFAULT_COUNT = 20


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "name",
        metavar="NAME",
        help=(
            "a .npy or dump file, an NPU op name or dump-file prefix (NAME:input:1 / NAME:output:0 "
            "picks the tensor; default output:0), or a golden name such as model_dense_MatMul.0"
        ),
    )
    parser.add_argument(
        "-n",
        "--count",
        type=int,
        default=DEFAULT_COUNT,
        help=f"how many of the first values to show (default {DEFAULT_COUNT}; 0: none)",
    )
    parser.add_argument(
        "--device", action="store_true", help="an NPU tensor in its device layout and shape (default: host layout)"
    )
    parser.add_argument(
        FULL_FLAG, action="store_true", help=f"name every other tensor of the dump (default: the first {LIST_LIMIT})"
    )


def run(args, context: Context) -> CommandResult:
    """Show NAME's statistics and first values; export all of its values under ``temp/pt/``."""
    from .pt_print import print_tensor

    return print_tensor(args, context)


COMMAND = Command(
    name="pt",
    summary="print a tensor (NPU dump or golden npy): stats, first values, .txt export",
    add_arguments=_add_arguments,
    run=run,
    completions={"": "tensor"},
    description=(
        "Print a tensor: shape, dtype, max/min/mean, NaN/Inf counts and its first values; write "
        "all of its values to temp/pt/<tensor>.txt. NAME is a path, an NPU op name or dump-file "
        "prefix (looked up in the selected steps of the newest run, debug_0 first), or a golden "
        "name (name.0, graph/name:0, or a file-name prefix); npu:, tf: and debug_N: prefixes "
        "narrow the search. NPU tensors are shown in host layout unless --device."
    ),
)
