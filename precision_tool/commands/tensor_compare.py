"""What ``cp LEFT RIGHT`` does: compare two tensors element by element.

LEFT and RIGHT are anything ``pt`` accepts (``.npy`` or dump files, NPU op names with an optional
``:input:N``/``:output:N``, golden names); NPU tensors are compared in host layout. RIGHT is the
reference: a pair is a mismatch unless ``|left - right| <= atol + rtol * |right|`` (numpy's
``isclose``; two NaNs are equal). The default tolerance follows the lower-precision side's dtype
(:mod:`precision_tool.compare.tolerance`: 4 x its epsilon, at least 1e-5; float16 0.0039), so a
healthy float16 tensor is "within float16 rounding" of its float32 golden; ``-al``/``-rl``
override it. Tensors of different shapes but equal sizes are compared flattened, in C order.

Exit status: 0 when the tensors are allclose, 1 when some elements mismatch, 2 on errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rich.text import Text

from ..compare.elementwise import ElementwiseResult, check_numbers, compare_elementwise, first_elements
from ..compare.tolerance import Tolerance, pair_tolerance
from ..context import Context
from ..errors import PrecisionToolError
from ..render.lines import visible
from ..render.summary import cosine_style
from ..render.tensor_view import format_index, format_value, key_value_table, pairs_table
from ..status import ExitStatus
from .registry import CommandResult
from .tensors import ResolvedTensor, resolve_tensor


@dataclass(frozen=True)
class Tolerances:
    """The tolerance ``cp`` compares with: the dtype's default, or what the flags override."""

    atol: float
    rtol: float
    default: Tolerance  # that of the lower-precision side
    given: bool  # -al or -rl was given

    @property
    def what(self) -> str:
        """What a difference within the tolerance is: ``float16 rounding``, or ``the given
        tolerance``."""
        return "the given tolerance" if self.given else self.default.what


def tolerances(args, left: np.ndarray, right: np.ndarray) -> Tolerances:
    """The lower-precision side's :class:`Tolerance`, with ``-al``/``-rl`` overriding it."""
    default = pair_tolerance(left.dtype, right.dtype)
    atol = default.atol if args.atol is None else args.atol
    rtol = default.rtol if args.rtol is None else args.rtol
    return Tolerances(atol, rtol, default, args.atol is not None or args.rtol is not None)


def _dtype_name(tensor: ResolvedTensor, array: np.ndarray) -> str:
    return tensor.dump_tensor.dtype_name if tensor.is_dump else str(array.dtype)


def _sides_table(pairs) -> object:
    rows = []
    for side, (tensor, array) in zip(("left", "right"), pairs):
        rows.append((side, Text.assemble((visible(tensor.label), "op.name"),
                                         f"  {list(array.shape)} {_dtype_name(tensor, array)}")))
    return key_value_table("", rows)


def _cosine_text(cosine: float, threshold: float) -> Text:
    if math.isnan(cosine):
        return Text("NaN (a NaN/Inf value, or an all-zero tensor)", style="cos.nan")
    return Text(f"{cosine:.8f}", style=cosine_style(cosine, threshold))


def _verdict(result: ElementwiseResult, tolerance: Tolerances) -> Text:
    if result.allclose:
        return Text(f"within {tolerance.what}", style="cos.good")
    return Text(f"differs beyond {tolerance.what}", style="cos.bad")


def _tolerance_text(tolerance: Tolerances) -> str:
    if not tolerance.given:
        return f"{tolerance.default.describe()}, the lower-precision side"
    default = tolerance.default
    return (f"atol {tolerance.atol:g}, rtol {tolerance.rtol:g} (given; {default.dtype}'s default: "
            f"atol {default.atol:g}, rtol {default.rtol:g})")


def _summary(result: ElementwiseResult, shape, threshold: float, tolerance: Tolerances):
    allclose = Text("yes" if result.allclose else "no", style="cos.good" if result.allclose else "cos.bad")
    max_error = format_value(result.max_abs_error)
    if result.max_abs_index is not None and result.max_abs_error > 0:
        max_error += f" at {format_index(result.max_abs_index, shape)}"
    rows = [("verdict", _verdict(result, tolerance)), ("allclose", allclose),
            ("cosine", _cosine_text(result.cosine, threshold)),
            ("max abs error", max_error),
            ("error ratio", f"{result.error_ratio:.6g} ({result.mismatches} of {result.total})"),
            ("mismatches", str(result.mismatches)),
            ("tolerance", _tolerance_text(tolerance))]
    if result.nan_left or result.nan_right:
        rows.append(("NaN", Text(f"left {result.nan_left}, right {result.nan_right}", style="warn")))
    return key_value_table("summary", rows)


def _load(context: Context, text: str) -> tuple[ResolvedTensor, np.ndarray]:
    tensor = resolve_tensor(context, text)
    return tensor, tensor.load()


def compare_tensors(args, context: Context) -> CommandResult:
    """Compare LEFT with RIGHT: mismatches, optionally the first elements, and a summary."""
    left, right = _load(context, args.left), _load(context, args.right)
    (lt, a), (rt, b) = left, right
    for tensor, values in left, right:  # dates, text, complex...: refused before anything else
        check_numbers(values, tensor.label)
    if a.size != b.size:
        raise PrecisionToolError(f"cannot compare: {lt.label} has {a.size} elements {list(a.shape)}, "
                                 f"{rt.label} has {b.size} {list(b.shape)}")
    out: list = [_sides_table((left, right))]
    shape = a.shape
    if a.shape != b.shape:
        shape = (a.size,)
        out.append(Text(f"shapes differ ({list(a.shape)} vs {list(b.shape)}) but sizes match: "
                        "compared flattened; indexes are flat", style="warn"))
    tolerance = tolerances(args, a, b)
    result = compare_elementwise(a, b, atol=tolerance.atol, rtol=tolerance.rtol, limit=args.count)
    if result.mismatches and args.count:
        title = f"first {len(result.first_mismatches)} of {result.mismatches} mismatching elements"
        out.append(pairs_table(title, result.first_mismatches, shape))
    elif not result.mismatches:
        out.append(Text("no mismatching elements", style="cos.good"))
    if args.show and args.count:
        out.append(pairs_table(f"first {min(args.count, a.size)} elements", first_elements(a, b, args.count),
                               shape, mark=lambda p: None if _close(p, result) else "cos.bad"))
    out.append(_summary(result, shape, context.config.cosine_threshold, tolerance))
    return CommandResult(out, ExitStatus.OK if result.allclose else ExitStatus.FLAGGED)


def _close(pair, result: ElementwiseResult) -> bool:
    return bool(np.isclose(pair.left, pair.right, rtol=result.rtol, atol=result.atol, equal_nan=True))
