"""The words of the one verdict, and the replay evidence that decides an op's part in an error.

Per tensor (:meth:`~.divergence.TensorCosine.state`), one of

* ``diverges``: the flag rule (:class:`~.divergence.FlagRule`) says so;
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

Every view shows these words and asks these objects; none decides again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .noise import Noise

DIVERGES, NONFINITE, NEAR, ROUNDING, NOT_COMPARED = "diverges", "non-finite", "near", "rounding", "not compared"
TENSOR_STATES = (DIVERGES, NONFINITE, NEAR, ROUNDING, NOT_COMPARED)
INTRODUCES, INHERITS, CLEAN = "introduces", "inherits", "clean"
OP_STATES = (INTRODUCES, INHERITS, CLEAN, NOT_COMPARED)
BY_REPLAY, BY_INPUTS = "replay", "inputs"
AMPLIFY_FACTOR = 1.5  # an inheriting op whose output RED is this much above its inputs' amplifies


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
            return (f"replay of {self.replayed}: {self.nonfinite_mismatch} value(s) non-finite on one "
                    f"side only")
        sign = ">" if self.beyond else "<="
        return f"replay of {self.replayed}: local RED {self.red:.3g} {sign} rounding {self.noise.limit:.3g}"
