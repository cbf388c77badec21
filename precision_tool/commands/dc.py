"""``dc NAME``: decode NPU dump files into one ``.npy`` per input and output; the work is
:mod:`.dc_decode`'s (imported when the command runs, so the shell starts fast)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..formats.layout_names import PLAIN_LAYOUTS
from .registry import Command, CommandParser, CommandResult, UsageError

if TYPE_CHECKING:
    from ..context import Context

TARGET_FORMATS = ("ND", *sorted(PLAIN_LAYOUTS))


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "name",
        metavar="NAME",
        help=(
            "a dump file, a directory of dump files, or an NPU op name / dump-file prefix "
            "(every launch in the selected steps); NAME:output:0 decodes one tensor only"
        ),
    )
    parser.add_argument(
        "-f",
        "--format",
        dest="fmt",
        metavar="FORMAT",
        help=f"transpose the host tensor to FORMAT ({', '.join(TARGET_FORMATS)})",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output directory (default: decode/dump_convert/ under the output root, "
        "temp/ of the data root unless --out)",
    )
    parser.add_argument("--device", action="store_true", help="keep the device layout and shape")


def _target_format(fmt: str | None) -> str | None:
    if fmt is None:
        return None
    name = fmt.strip().upper()
    if name not in TARGET_FORMATS:
        raise UsageError(f"dc: unknown format '{fmt}'; use one of {', '.join(TARGET_FORMATS)}")
    return name


def run(args, context: Context) -> CommandResult:
    """Decode the dump files NAME designates; per-tensor problems are reported and skipped."""
    from .dc_decode import decode

    if args.device and args.fmt:
        raise UsageError("dc: -f/--format and --device do not go together")
    return decode(args, context, _target_format(args.fmt))


COMMAND = Command(
    name="dc",
    summary="decode NPU dump files to one .npy per input/output (host layout by default)",
    add_arguments=_add_arguments,
    run=run,
    completions={"": "tensor", "-o": "path", "--output": "path"},
    description=(
        "Decode NPU dump files into {dumpfile}.{input|output}.{i}.{d0xd1x...}.npy files (dims of "
        "the saved array; 'scalar' for 0-d): host layout by default, device layout with "
        "--device, or transposed to -f FORMAT. bfloat16/fp8/fp4 are saved as float32 (exact). "
        "Tensors that cannot be decoded are reported and skipped."
    ),
)
