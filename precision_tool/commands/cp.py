"""``cp LEFT RIGHT``: compare two tensors element by element; the work is
:mod:`.cp_compare`'s (imported when the command runs, so the shell starts fast).

Exit status: 0 when the tensors are allclose, 1 when some elements mismatch, 2 on errors.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .registry import Command, CommandParser, CommandResult, UsageError

if TYPE_CHECKING:
    from ..context import Context

DEFAULT_PRINT = 20  # mismatching elements shown


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument("left", metavar="LEFT", help="a tensor, as pt takes it")
    parser.add_argument("right", metavar="RIGHT", help="the reference tensor, as pt takes it")
    parser.add_argument(
        "-p",
        "--print",
        dest="count",
        type=int,
        default=DEFAULT_PRINT,
        metavar="N",
        help=f"show the first N mismatching elements (default {DEFAULT_PRINT})",
    )
    parser.add_argument("-s", "--show", action="store_true", help="also show the first N elements")
    parser.add_argument(
        "-al",
        "--atol",
        type=float,
        help="absolute tolerance (default: from the lower-precision dtype, as described above)",
    )
    parser.add_argument(
        "-rl", "--rtol", type=float, help="relative tolerance, times |right| (default: from the lower-precision dtype)"
    )


def _check(args) -> None:
    if args.count < 0:
        raise UsageError("cp: -p/--print must be 0 or more")
    for flag, value in (("-al/--atol", args.atol), ("-rl/--rtol", args.rtol)):
        if value is not None and (not math.isfinite(value) or value < 0):
            raise UsageError(f"cp: {flag} must be a finite number >= 0, got {value}")


def _defaults_text() -> str:
    from ..compare.tolerance import tolerance_table

    return "; ".join(f"{t.dtype} {t.rtol:.3g}" if not t.exact else f"{t.dtype} exact" for t in tolerance_table())


def run(args, context: Context) -> CommandResult:
    """Compare LEFT with RIGHT: mismatches, optionally the first elements, and a summary."""
    from .cp_compare import compare_tensors

    _check(args)
    return compare_tensors(args, context)


COMMAND = Command(
    name="cp",
    summary="compare two tensors element by element (mismatches, allclose, cosine)",
    add_arguments=_add_arguments,
    run=run,
    completions={"": "tensor"},
    description=lambda: (  # the tolerance table needs ml_dtypes: only when the help is shown
        "Compare LEFT with the reference RIGHT (each named as pt takes it; NPU tensors in host "
        "layout). An element mismatches when |left - right| > atol + rtol * |right| (numpy's "
        "isclose; NaN equals NaN). Shows the first N mismatches, with -s the first N elements, "
        "then the verdict ('within float16 rounding' or 'differs beyond float16 rounding'), "
        "allclose, cosine, max abs error and error ratio. The default atol and rtol follow the "
        "lower-precision side's dtype: 4 x its machine epsilon, at least 1e-5 ("
        + _defaults_text()
        + "); -al/-rl override them. Equal sizes with different shapes are "
        "compared flattened. Exit status 1 when any element mismatches."
    ),
)
