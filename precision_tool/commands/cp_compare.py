"""What ``cp LEFT RIGHT`` does: compare two tensors element by element.

LEFT and RIGHT are anything ``pt`` accepts (``.npy`` or dump files, NPU op names with an optional
``:input:N``/``:output:N``, golden names); NPU tensors are compared in host layout. RIGHT is the
reference. Tensors of different shapes but equal sizes are compared flattened, in C order.

The verdict is the one every view gives (:meth:`~precision_tool.compare.divergence.TensorCosine.state`):
the pair *diverges* by the flag rule, is *non-finite*, is *near* (beyond rounding, not flagged)
or is *rounding*, judged against the noise of a correct op (:mod:`precision_tool.compare.noise`):
for an NPU op's output, from its own inputs measured against their goldens, exactly as ``why``
judges it (:func:`~precision_tool.explain.diagnosis.output_noise_of`); for anything else, from
the dtypes alone. The elementwise mismatches stay as evidence: a pair mismatches unless
``|left - right| <= atol + rtol * |right|`` (numpy's ``isclose``; two NaNs are equal), with the
lower-precision side's tolerance (:mod:`precision_tool.compare.tolerance`) and ``atol`` scaled by
RIGHT's root mean square, so the near-zero sums of a long accumulation are not miscalled;
``-al``/``-rl`` give the tolerance instead, and then it decides.

Exit status: 1 when the pair diverges (or, with ``-al``/``-rl``, when elements mismatch), 0
otherwise, 2 on errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rich.text import Text

from ..compare.divergence import TensorCosine
from ..compare.elementwise import ElementwiseResult, check_numbers, compare_elementwise, first_elements
from ..compare.noise import Noise, output_noise
from ..compare.op_tensors import op_tensors
from ..compare.pair_stats import PairStats, compare
from ..compare.tolerance import Tolerance, pair_tolerance
from ..compare.verdict import DIVERGES, INTRODUCES, NEAR, NONFINITE, ROUNDING, FlagRule
from ..context import Context
from ..errors import PrecisionToolError
from ..explain.diagnosis import output_noise_of
from ..render.lines import visible
from ..render.palette import swatch
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
    scale: float = 1.0  # what the default atol was multiplied by: RIGHT's root mean square

    @property
    def what(self) -> str:
        """What a difference within the tolerance is: ``float16 rounding``, or ``the given
        tolerance``."""
        return "the given tolerance" if self.given else self.default.what


def tolerances(args, left: np.ndarray, right: np.ndarray, scale: float = 1.0) -> Tolerances:
    """The lower-precision side's :class:`Tolerance` (``atol`` times ``scale``, RIGHT's root
    mean square, when it is positive and finite: allclose is then as scale-free as the verdict
    beside it), with ``-al``/``-rl`` overriding it."""
    default = pair_tolerance(left.dtype, right.dtype)
    given = args.atol is not None or args.rtol is not None
    # an all-zero RIGHT keeps the absolute atol; given tolerances are taken as typed
    scale = scale if math.isfinite(scale) and scale > 0 and not given else 1.0
    atol = default.atol * scale if args.atol is None else args.atol
    rtol = default.rtol if args.rtol is None else args.rtol
    return Tolerances(atol, rtol, default, given, scale)


@dataclass(frozen=True)
class PairVerdict:
    """The one verdict on LEFT against RIGHT, and the noise it was judged by."""

    tensor: TensorCosine
    noise: Noise
    noise_source: str  # what the noise was derived from
    rule: FlagRule

    @property
    def state(self) -> str:
        return self.tensor.state(self.rule)

    @property
    def flagged(self) -> bool:
        """True when the pair diverges (NaN/Inf on the NPU side included)."""
        return self.tensor.diverges(self.rule)


def _noise(context: Context, tensor: ResolvedTensor, left: np.ndarray, right: np.ndarray) -> tuple[Noise, str]:
    """The noise of an NPU op output from its inputs (as ``why`` has it), else of the dtypes."""
    dump = tensor.dump_tensor
    ref = context.find_op(tensor.op_name, "debug_0") if dump is not None and dump.kind == "output" else None
    if ref is not None:
        try:
            launch = next((t for t in op_tensors(context, ref) if t.dump_path == tensor.path), None)
        except PrecisionToolError:
            launch = None
        if launch is not None and dump.index < len(launch.outputs):
            return output_noise_of(launch, dump.index), f"{ref.op.name}'s inputs against their goldens"
    return output_noise(left.dtype, right.dtype, [None]), "the dtypes (the inputs are not measured)"


def pair_verdict(
    context: Context, tensor: ResolvedTensor, left: np.ndarray, right: np.ndarray, stats: PairStats
) -> PairVerdict:
    """LEFT against RIGHT judged as every view judges a tensor."""
    noise, source = _noise(context, tensor, left, right)
    npu_bad = stats.nan.count + stats.inf.count > 0
    judged = TensorCosine(
        "output",
        0,
        stats.cosine,
        red=stats.red if math.isfinite(stats.red) else math.nan,
        nonfinite=npu_bad,
        limit=noise.limit,
        golden_nonfinite=stats.golden_nonfinite > 0,
    )
    return PairVerdict(judged, noise, source, FlagRule.from_config(context.config))


def _dtype_name(tensor: ResolvedTensor, array: np.ndarray) -> str:
    return tensor.dump_tensor.dtype_name if tensor.is_dump else str(array.dtype)


def _sides_table(pairs) -> object:
    rows = []
    for side, (tensor, array) in zip(("left", "right"), pairs):
        rows.append(
            (
                side,
                Text.assemble(
                    (visible(tensor.label), "op.name"), f"  {list(array.shape)} {_dtype_name(tensor, array)}"
                ),
            )
        )
    return key_value_table("", rows)


def _cosine_text(cosine: float, threshold: float) -> Text:
    if math.isnan(cosine):
        return Text("NaN (a NaN/Inf value, or an all-zero tensor)", style="cos.nan")
    return Text(f"{cosine:.8f}", style=cosine_style(cosine, threshold))


def _verdict(result: ElementwiseResult, tolerance: Tolerances, verdict: PairVerdict) -> Text:
    if tolerance.given:
        if result.allclose:
            return Text(f"within {tolerance.what}", style=swatch(ROUNDING).style)
        return Text(f"differs beyond {tolerance.what}", style=swatch(INTRODUCES).style)
    state, what = verdict.state, tolerance.default.what
    words = {
        ROUNDING: f"within {what}",
        NEAR: f"beyond {what}, not flagged",
        DIVERGES: f"differs: diverges ({verdict.rule.describe()})",
        NONFINITE: f"non-finite ({verdict.tensor.nonfinite_side})",
    }.get(state, state)
    look = swatch(INTRODUCES if state == DIVERGES else state)
    return Text(f"{look.marker} {words}".strip(), style=look.style)


def _rounding_text(verdict: PairVerdict) -> str:
    return f"RED {verdict.tensor.red:.3g}; {verdict.noise.describe()}, from {verdict.noise_source}"


def _tolerance_text(tolerance: Tolerances) -> str:
    if not tolerance.given:
        return (
            f"{tolerance.default.describe()}, the lower-precision side; atol x {tolerance.scale:.3g}, "
            f"RIGHT's root mean square: {tolerance.atol:.3g}"
        )
    default = tolerance.default
    return (
        f"atol {tolerance.atol:g}, rtol {tolerance.rtol:g} (given; {default.dtype}'s default: "
        f"atol {default.atol:g}, rtol {default.rtol:g})"
    )


def _summary(result: ElementwiseResult, shape, threshold: float, tolerance: Tolerances, verdict: PairVerdict):
    allclose = Text("yes" if result.allclose else "no", style="cos.good" if result.allclose else "cos.bad")
    max_error = format_value(result.max_abs_error)
    if result.max_abs_index is not None and result.max_abs_error > 0:
        max_error += f" at {format_index(result.max_abs_index, shape)}"
    rows = [
        ("verdict", _verdict(result, tolerance, verdict)),
        ("rounding", _rounding_text(verdict)),
        ("allclose", allclose),
        ("cosine", _cosine_text(result.cosine, threshold)),
        ("max abs error", max_error),
        ("error ratio", f"{result.error_ratio:.6g} ({result.mismatches} of {result.total})"),
        ("mismatches", str(result.mismatches)),
        ("tolerance", _tolerance_text(tolerance)),
    ]
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
        raise PrecisionToolError(
            f"cannot compare: {lt.label} has {a.size} elements {list(a.shape)}, {rt.label} has {b.size} {list(b.shape)}"
        )
    out: list = [_sides_table((left, right))]
    shape = a.shape
    if a.shape != b.shape:
        shape = (a.size,)
        out.append(
            Text(
                f"shapes differ ({list(a.shape)} vs {list(b.shape)}) but sizes match: "
                "compared flattened; indexes are flat",
                style="warn",
            )
        )
    stats = compare(a.reshape(shape), b.reshape(shape), a.dtype)
    verdict = pair_verdict(context, lt, a, b, stats)
    tolerance = tolerances(args, a, b, stats.rms_golden)
    result = compare_elementwise(a, b, atol=tolerance.atol, rtol=tolerance.rtol, limit=args.count)
    if result.mismatches and args.count:
        title = f"first {len(result.first_mismatches)} of {result.mismatches} mismatching elements"
        out.append(pairs_table(title, result.first_mismatches, shape))
    elif not result.mismatches:
        out.append(Text("no mismatching elements", style="cos.good"))
    if args.show and args.count:
        out.append(
            pairs_table(
                f"first {min(args.count, a.size)} elements",
                first_elements(a, b, args.count),
                shape,
                mark=lambda p: None if _close(p, result) else "cos.bad",
            )
        )
    out.append(_summary(result, shape, context.config.cosine_threshold, tolerance, verdict))
    flagged = not result.allclose if tolerance.given else verdict.flagged
    return CommandResult(out, ExitStatus.FLAGGED if flagged else ExitStatus.OK)


def _close(pair, result: ElementwiseResult) -> bool:
    return bool(np.isclose(pair.left, pair.right, rtol=result.rtol, atol=result.atol, equal_nan=True))
