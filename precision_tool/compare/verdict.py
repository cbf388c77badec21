"""The words of the one verdict, and the replay evidence that decides an op's part in an error.

Per tensor (:meth:`~.divergence.TensorCosine.state`), one of

* ``diverges``: the flag rule (:class:`FlagRule`) says so;
* ``non-finite``: a side holds NaN or Inf (:attr:`~.divergence.TensorCosine.nonfinite_side`
  says which; on the NPU side it also diverges, a golden that is not finite judges nothing);
* ``near``: not flagged, but beyond what rounding explains (:mod:`.noise`);
* ``rounding``: within the noise of a correct op;
* ``not compared``: no number to judge.

Per op (:attr:`~.divergence.OpCosines.state`): ``introduces`` / ``inherits`` for a flagged op,
``clean`` for one that is not, ``not compared`` for one without a compared output. For a flagged
op whose replay could run, the replay decides (:class:`LocalCheck`): its NPU output against the
op recomputed on its own NPU inputs; beyond the replay's noise the op introduces an error, within
it the op only carries one in. Without a replay the input rule decides: the op introduces when
none of its inputs diverges. :data:`BY_REPLAY` / :data:`BY_INPUTS` say which rule spoke.

Every view shows these words and asks these objects; none decides again. The noise limit
of each tensor of one op's CSV rows is :func:`tensor_limits`' (:mod:`.noise` fed with the rows).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .noise import EXPONENTIAL, Noise, accumulation_length, output_noise, unmeasured_noise
from .result import CompareRow

DIVERGES, NONFINITE, NEAR, ROUNDING, NOT_COMPARED = "diverges", "non-finite", "near", "rounding", "not compared"
TENSOR_STATES = (DIVERGES, NONFINITE, NEAR, ROUNDING, NOT_COMPARED)
INTRODUCES, INHERITS, CLEAN = "introduces", "inherits", "clean"
OP_STATES = (INTRODUCES, INHERITS, CLEAN, NOT_COMPARED)
BY_REPLAY, BY_INPUTS = "replay", "inputs"
RED = "RelativeEuclideanDistance"
RED_FLOOR = "RedFloor"  # a row without tensors: the lower bound on the RED it proves (divergence.py)
AMPLIFY_FACTOR = 1.5  # an inheriting op whose output RED is this much above its inputs' amplifies


def cosine_flags(cosine: float, threshold: float) -> bool:
    """The cosine part of the rule: at or below ``threshold``; NaN never flags."""
    return not math.isnan(cosine) and cosine <= threshold


def equivalent_red(cosine: float) -> float:
    """The RelativeEuclideanDistance of an error that keeps the norm, at this cosine."""
    return math.sqrt(max(2.0 * (1.0 - cosine), 0.0))


@dataclass(frozen=True)
class FlagRule:
    """When a tensor diverges, the same for outputs and inputs: when

    * its cosine is at or below the cosine threshold (COSINE_THRESHOLD, 0.98), or
    * its RelativeEuclideanDistance is at or above the RED threshold: cosine cannot see a scale (an
      output at half the golden's norm has cosine 1 and RED 0.5). With ``r = |x|/|y|``,
      ``RED^2 = (r - 1)^2 + 2 r (1 - cos)``: when the norms agree (r = 1), RED and cosine say the
      same thing, ``RED = sqrt(2 (1 - cos))``. So the RED threshold defaults to that value at the
      cosine threshold (0.2 at 0.98; RED_THRESHOLD sets it): errors that keep the norm are judged
      exactly as by the cosine alone, and the RED criterion adds only what the cosine is blind to,
      a norm that is off; or
    * the NPU tensor holds NaN or Inf (see :attr:`~.result.CompareRow.npu_nonfinite`): a NaN
      cosine cannot be compared with a threshold, but a network that overflows is wrong.

    ``red`` None takes :func:`equivalent_red` of the cosine threshold; ``math.inf`` judges by
    the cosine alone.
    """

    cosine: float
    red: float | None = None

    @classmethod
    def from_config(cls, config, cosine: float | None = None) -> FlagRule:
        """The configured rule; ``cosine`` overrides the threshold (``vcs -c``)."""
        return cls(config.cosine_threshold if cosine is None else cosine, config.red_threshold)

    @property
    def red_threshold(self) -> float:
        """The RED at or above which a tensor diverges."""
        return equivalent_red(self.cosine) if self.red is None else self.red

    def diverges(self, cosine: float, red: float = math.nan, nonfinite: bool = False) -> bool:
        """Whether a tensor with these numbers diverges."""
        return cosine_flags(cosine, self.cosine) or nonfinite or (not math.isnan(red) and red >= self.red_threshold)

    def describe(self) -> str:
        """The rule in words, for counts and summary lines."""
        return f"output cosine <= {self.cosine:g}, RED >= {self.red_threshold:.3g} or NaN/Inf"


@dataclass(frozen=True)
class LocalCheck:
    """An op's own error: its NPU output against the op replayed on its own NPU inputs.

    Attributes:
        red: the RelativeEuclideanDistance over the elements finite on both sides.
        nonfinite_mismatch: elements non-finite on one side only (the replay turns the NPU's
            inputs into finite values where the NPU wrote NaN or Inf, or the reverse).
        noise: what a correct kernel would show (:func:`~.noise.replay_noise`).
        replayed: what was recomputed (``Conv2D+BiasAdd+Relu``).
        slot: the output compared.
    """

    red: float
    nonfinite_mismatch: int
    noise: Noise
    replayed: str
    slot: int = 0

    @property
    def beyond(self) -> bool:
        """True when the op itself adds error: a non-finite mismatch, or a RED beyond the
        noise (an undefined RED, nothing finite on either side, adds none)."""
        return self.nonfinite_mismatch > 0 or (not math.isnan(self.red) and not self.noise.within(self.red))

    def describe(self) -> str:
        """``replay of Conv2D: local RED 0.412 > rounding 0.000845``."""
        if self.nonfinite_mismatch:
            return f"replay of {self.replayed}: {self.nonfinite_mismatch} value(s) non-finite on one side only"
        sign = ">" if self.beyond else "<="
        return f"replay of {self.replayed}: local RED {self.red:.3g} {sign} rounding {self.noise.limit:.3g}"


_MOMENTS = re.compile(r"\(([^;()]+);([^;()]+)\)")


def golden_rms(row: CompareRow) -> float | None:
    """The golden's root mean square from the StandardDeviation text ``(mean;std),(mean;std)``
    (the second pair is the golden's); None when the row has none."""
    pairs = _MOMENTS.findall(row.std_text or "")
    try:
        mean, std = (float(v) for v in pairs[-1])
    except (IndexError, ValueError):
        return None
    return math.hypot(mean, std)


def _size(shape) -> int:
    return math.prod(shape) if shape else 1


def tensor_limits(rows: list[CompareRow], op_type: str) -> dict[int, float]:
    """The noise limit of each tensor row (by position in ``rows``): outputs from the op's
    dtypes, sums and its inputs' measured REDs; inputs as tensors of unmeasured history."""
    inputs = sorted((r for r in rows if r.kind == "input" and r.slot is not None), key=lambda r: r.slot)
    reds = [r.metric(RED) for r in inputs] or [None]  # no input row: one of unmeasured history
    shapes = [r.shape for r in inputs]
    limits = {}
    for i, row in enumerate(rows):
        if row.kind == "output":
            k = accumulation_length(op_type, shapes, row.shape)
            scale = golden_rms(inputs[0]) if inputs and op_type in EXPONENTIAL else None
            noise = output_noise(
                row.npu_dtype,
                row.golden_dtype,
                reds,
                [r.npu_dtype for r in inputs],
                k,
                op_type,
                scale,
                _size(inputs[0].shape) if inputs else 1,
            )
        elif row.kind == "input":
            noise = unmeasured_noise(row.npu_dtype, row.golden_dtype)
        else:
            continue
        limits[i] = noise.limit
    return limits
