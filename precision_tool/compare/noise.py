"""What rounding is: the RelativeEuclideanDistance a *correct* op is expected to show.

An NPU op that computes the right function still differs from its golden, because its values
are stored in a coarser type and its sums are accumulated in finite precision. This module says
how much, as an expected RED (``||npu - golden|| / ||golden||``) with a margin. Every judgement
of "is this rounding" asks it: the tensor verdict (:mod:`.divergence`: rounding / near), ``cp``'s
verdict, ``why``'s ``precision`` cause and the replay that decides whether an op introduces or
inherits an error.

Derivation (``u`` is a type's unit roundoff, half its machine epsilon: float16 2**-11, bfloat16
2**-8, float32 2**-24; exact types have none):

* **Storing** a value rounds it to the nearest representable one: the absolute error is uniform
  over half a unit in the last place, ``±u 2**e`` for ``x = m 2**e``. With the mantissa ``m``
  log-uniform on [1, 2) (Benford's law, the usual model of computed data), ``E[m^2] = 3 / (2 ln 2)``
  and the error relative to the values' root mean square is
  ``RED_store = u / sqrt(3 E[m^2]) = u sqrt(2 ln 2) / 3 ~= 0.392 u`` (:data:`STORE`). The NPU output
  and, when it is not exact, the golden are each stored once.
* **Accumulating** ``K`` terms of random sign in a type of unit roundoff ``u_a`` (Ascend's cube
  unit accumulates float16 products in float32): every partial sum ``S_i`` is rounded, an error of
  ``0.392 u_a |S_i|`` with ``|S_i| ~ sqrt(i) sigma``; the errors add in quadrature,
  ``sum_i i ~ K^2 / 2``, against a result of size ``sqrt(K) sigma``:
  ``RED_acc = 0.392 u_a sqrt(K / 2)``. ``K`` comes from the shapes (:func:`accumulation_length`).
* **Inputs** that already differ from theirs carry their difference through the op. For the ops
  of a network (linear maps, elementwise maps of slope about one, normalisations) a relative
  error ``rho`` of an input gives about ``rho`` at the output, and independent inputs add in
  quadrature: ``RED_in = sqrt(sum_i rho_i^2)``. ``rho_i`` is the input's measured RED when the
  comparison has it, but no more than rounding explains in that input (what an input carries
  beyond rounding is an error the output inherits, not rounding of its own); without it each
  input is taken to carry the rounding of :data:`UPSTREAM` correct ops before it (a chain of ``n`` ops adds ``n`` independent roundings: ``sqrt(n)``
  times one). The exponential family (:data:`EXPONENTIAL`: Exp, Softmax...) turns an absolute
  input error into a relative output error, ``d exp(x) / exp(x) = dx``, and its output is
  dominated by its largest inputs: the input term is multiplied by an estimate of the largest
  ``|x|``, the root mean square times ``sqrt(2 ln n)`` over ``n`` values (the largest of ``n``
  normal values; a softmax's ``n`` is its row), at least 1, when the magnitude is known.

The expected RED is ``sqrt(RED_store(out)^2 + RED_store(golden)^2 + RED_acc^2 + RED_in^2)``, and a
tensor is within rounding up to :data:`MARGIN` times that (at least :data:`FLOOR`: float32
results of another algorithm or summation order differ by more than a few float32 roundings, and
no one calls that a defect). The margin covers what the RMS model leaves out: small tensors
(an RMS over few elements fluctuates), the rounding inside multi-step kernels, mild cancellation.
It was calibrated on float64 simulations of each op kind (``tests/compare/test_noise.py``): float16
inputs, float32 accumulation, float16 outputs against a float64 reference of the unrounded inputs;
the table is in ``docs/noise.md``.

The replay's question (:func:`replay_noise`) is narrower: the op recomputed in float64 from its
own NPU inputs has no input term and no golden rounding, but a kernel rounds inside
(:data:`KERNEL_ROUNDINGS` intermediate roundings for ops of several steps).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

STORE = math.sqrt(2 * math.log(2)) / 3  # RED of one rounding to nearest, in units of u
MARGIN = 3.0
UPSTREAM = 16  # correct ops assumed before an input whose difference is not measured
FLOOR = 1e-5  # the smallest RED limit: float32 results of another summation order
ACCUMULATOR = "float32"  # what Ascend's cube and vector units accumulate float16 sums in
KERNEL_ROUNDINGS = 4  # intermediate roundings inside a multi-step kernel (LayerNorm, Softmax...)
_SINGLE_STEP = frozenset(
    {
        "Add",
        "AddV2",
        "Sub",
        "Mul",
        "RealDiv",
        "Div",
        "Maximum",
        "Minimum",
        "Relu",
        "Relu6",
        "Neg",
        "Abs",
        "Cast",
        "TransData",
        "Identity",
        "Reshape",
        "Transpose",
        "TransposeD",
        "ConcatV2",
        "ConcatV2D",
        "Concat",
        "ConcatD",
        "Split",
        "SplitD",
        "SplitV",
        "Pack",
        "Unpack",
        "StridedSlice",
        "StridedSliceD",
        "Slice",
        "SliceD",
        "MaxPool",
        "MaxPoolV3",
        "Squeeze",
        "ExpandDims",
        "Pad",
        "PadD",
        "Tile",
        "TileD",
        "GatherV2",
        "Gather",
        "BiasAdd",
        "MatMul",
        "MatMulV2",
        "BatchMatMul",
        "BatchMatMulV2",
        "Conv2D",
        "Conv3D",
        "DepthwiseConv2D",
        "Sum",
        "ReduceSum",
        "ReduceSumD",
        "Mean",
        "ReduceMean",
        "ReduceMeanD",
    }
)
EXPONENTIAL = frozenset(
    {"Exp", "Softmax", "SoftmaxV2", "LogSoftmax", "LogSoftmaxV2", "Pow", "SoftmaxCrossEntropyWithLogits"}
)
_MATMUL = frozenset({"MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "FullyConnection"})
_CONV = frozenset({"Conv2D", "Conv3D", "DepthwiseConv2D", "Conv2DBackpropInput", "Conv2DTranspose", "Conv2DTransposeD"})
_REDUCE = frozenset(
    {
        "Sum",
        "ReduceSum",
        "ReduceSumD",
        "Mean",
        "ReduceMean",
        "ReduceMeanD",
        "ReduceProd",
        "ReduceProdD",
        "AvgPool",
        "AvgPoolV2",
    }
)
# normalisations sum over their last axis (BatchNorm's statistics are inputs at inference)
_LAST_AXIS = frozenset(
    {"Softmax", "SoftmaxV2", "LogSoftmax", "LogSoftmaxV2", "LayerNorm", "LayerNormV3", "RmsNorm", "L2Normalize"}
)


def unit_roundoff(dtype) -> float:
    """Half the machine epsilon of ``dtype`` (numpy or ml_dtypes, or its name: ``float16``,
    ``bfloat16``, ``DT_FLOAT16``); 0 for exact types (integers, booleans).

    Raises:
        ValueError: not a number type numpy or ml_dtypes knows.
    """
    resolved = _dtype(dtype)
    if resolved.kind in "biu":
        return 0.0
    if resolved.kind == "c":
        resolved = np.dtype(np.float32 if resolved.itemsize <= 8 else np.float64)
    if resolved.kind not in "fV" and resolved.name not in _ML_FLOATS:
        raise ValueError(f"{resolved} is not a number type")
    return float(ml_dtypes.finfo(resolved).eps) / 2


_ML_FLOATS = frozenset(
    n
    for n in (
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e4m3b11fnuz",
        "float4_e2m1fn",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "float8_e8m0fnu",
    )
    if hasattr(ml_dtypes, n)
)


def _dtype(dtype) -> np.dtype:
    if isinstance(dtype, str):
        name = dtype.strip()
        if name.upper().startswith("DT_"):
            name = {"BF16": "bfloat16", "FLOAT": "float32", "DOUBLE": "float64"}.get(name[3:].upper(), name[3:].lower())
        return np.dtype(getattr(ml_dtypes, name, name))
    return np.dtype(dtype)


@functools.lru_cache(maxsize=256)  # a result has a handful of types and a million rows
def roundoff_or_none(dtype) -> float | None:
    """:func:`unit_roundoff`, None for a missing or unknown type (a CSV's ``NaN``)."""
    if dtype is None:
        return None
    try:
        return unit_roundoff(dtype)
    except (TypeError, ValueError):
        return None


def _size(shape: Sequence[int] | None) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape is not None else 0


def accumulation_length(
    op_type: str, input_shapes: Sequence[Sequence[int] | None], output_shape: Sequence[int] | None
) -> int:
    """How many terms each output value sums, read off the shapes (1 for elementwise ops).

    MatMul: the dimension the two operands share (of their last two). Convolution: the filter's
    size over its output channels (``kh kw Cin``). Reductions: input size over output size.
    Softmax and the normalisations: the last axis.
    """
    shapes = [tuple(s) for s in input_shapes if s]
    if op_type in _MATMUL and len(shapes) >= 2:
        common = set(shapes[0][-2:]) & set(shapes[1][-2:])
        return max(common) if common else shapes[0][-1]
    if op_type in _CONV and len(shapes) >= 2 and output_shape:
        channels = [d for d in output_shape if d and _size(shapes[1]) % d == 0]
        return max(1, _size(shapes[1]) // max(channels)) if channels else 1
    if op_type in _REDUCE and shapes and output_shape is not None:
        return max(1, _size(shapes[0]) // max(1, _size(output_shape)))
    if op_type in _LAST_AXIS and shapes:
        return max(1, shapes[0][-1])
    return 1


@dataclass(frozen=True)
class Noise:
    """The expected RED of a correct op and the largest RED still called rounding.

    Attributes:
        expected: the model's RED (module docstring).
        terms: what it is made of, ``(name, RED)``, for ``why`` and ``cp`` to print.
        exact: both sides are of exact types: only equal values are rounding.
    """

    expected: float
    terms: tuple[tuple[str, float], ...] = ()
    exact: bool = False

    @property
    def limit(self) -> float:
        """The largest RED that is rounding: MARGIN x expected, at least FLOOR (0 when exact)."""
        return 0.0 if self.exact else max(MARGIN * self.expected, FLOOR)

    def within(self, red: float) -> bool:
        """True when ``red`` (a number) is at most the limit; NaN is never within."""
        return not math.isnan(red) and red <= self.limit

    def describe(self) -> str:
        """``expected RED 2.87e-04 (float16 output 1.91e-04, inputs 2.14e-04), rounding up to
        8.6e-04``."""
        if self.exact:
            return "exact types: only equal values are rounding"
        parts = ", ".join(
            f"{name} {value:.3g}" for name, value in self.terms if value > 0.01 * self.expected
        )  # what changes the sum
        return (
            f"expected RED {self.expected:.3g}"
            + (f" ({parts})" if parts else "")
            + f", rounding up to {self.limit:.3g}"
        )


def _quadrature(terms: Sequence[tuple[str, float]]) -> float:
    return math.sqrt(sum(value * value for _, value in terms))


def output_noise(
    output_dtype,
    golden_dtype=None,
    input_reds: Sequence[float | None] = (),
    input_dtypes: Sequence = (),
    accumulation: int = 1,
    op_type: str = "",
    input_scale: float | None = None,
    input_size: int = 1,
) -> Noise:
    """The noise of an op's output against its golden.

    ``input_reds`` are the inputs' measured REDs (None or NaN where not measured: such an
    input is taken to carry UPSTREAM roundings of its type, or of the output's); ``input_dtypes``
    their NPU types, where known; ``input_scale`` the first input's root mean square and
    ``input_size`` its number of values (the gain of an EXPONENTIAL op). An unknown output type counts as float16, the coarsest type
    Ascend networks commonly store.
    """
    u_out = roundoff_or_none(output_dtype)
    u_out = unit_roundoff("float16") if u_out is None else u_out
    u_gold = roundoff_or_none(golden_dtype) or 0.0
    terms = [(f"{_name(output_dtype)} output", STORE * u_out)]
    if u_gold:
        terms.append((f"{_name(golden_dtype)} golden", STORE * u_gold))
    if accumulation > 1 and u_out:
        terms.append((f"{accumulation}-term sums", STORE * roundoff_or_none(ACCUMULATOR) * math.sqrt(accumulation / 2)))
    inputs = _input_terms(input_reds, input_dtypes, u_out)
    if op_type in EXPONENTIAL and input_scale is not None and math.isfinite(input_scale):
        n = accumulation if op_type in _LAST_AXIS else input_size  # a softmax's largest is per row
        inputs *= max(1.0, input_scale * math.sqrt(2 * math.log(max(n, 3))))
    if inputs:
        terms.append(("inputs", inputs))
    exact = u_out == 0 and u_gold == 0 and not inputs
    return Noise(_quadrature(terms), tuple(terms), exact)


def _input_terms(reds: Sequence[float | None], dtypes: Sequence, u_out: float) -> float:
    total = 0.0
    for i, red in enumerate(reds):
        u_in = roundoff_or_none(dtypes[i]) if i < len(dtypes) else None
        unmeasured = STORE * (u_out if u_in is None else u_in) * math.sqrt(1 + UPSTREAM)
        if red is not None and not math.isnan(red):
            red = min(red, max(MARGIN * unmeasured, FLOOR))  # beyond that: inherited, not rounding
            total += red * red
        else:
            total += UPSTREAM * (unmeasured * unmeasured / (1 + UPSTREAM))
    return math.sqrt(total)


@functools.lru_cache(maxsize=256)
def unmeasured_noise(output_dtype, golden_dtype=None) -> Noise:
    """:func:`output_noise` of a tensor whose history is not measured (one input of UPSTREAM
    roundings): the same for every tensor of the same types, so computed once per pair."""
    return output_noise(output_dtype, golden_dtype, [None], [output_dtype])


def replay_noise(output_dtype, op_type: str = "", accumulation: int = 1) -> Noise:
    """The noise of an NPU output against the op replayed in float64 on its own NPU inputs:
    the output's rounding, its sums', and KERNEL_ROUNDINGS more inside a multi-step kernel."""
    u_out = roundoff_or_none(output_dtype)
    u_out = unit_roundoff("float16") if u_out is None else u_out
    steps = 1 if op_type in _SINGLE_STEP else 1 + KERNEL_ROUNDINGS
    terms = [
        (
            f"{_name(output_dtype)} output" + (f" and {steps - 1} inner roundings" if steps > 1 else ""),
            STORE * u_out * math.sqrt(steps),
        )
    ]
    if accumulation > 1 and u_out:
        terms.append((f"{accumulation}-term sums", STORE * roundoff_or_none(ACCUMULATOR) * math.sqrt(accumulation / 2)))
    return Noise(_quadrature(terms), tuple(terms), u_out == 0)


@functools.lru_cache(maxsize=256)
def _name(dtype) -> str:
    if dtype is None:
        return "float16"
    try:
        return _dtype(dtype).name
    except (TypeError, ValueError):
        return str(dtype)
