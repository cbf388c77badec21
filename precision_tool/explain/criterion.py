"""When two tensors differ: beyond rounding (a difference to explain), and enough to flag.

Two levels, both over :class:`~.numbers.PairStats`:

* **within rounding**: no non-finite mismatch and a relative Euclidean distance (RED,
  ``||npu - golden|| / ||golden||``) of at most ``precision_ulps`` machine epsilons of the
  coarsest float dtype involved (float16: 2**-10). RED is the error's root mean square over the
  values' root mean square, so this reads "within a few ulp at the values' magnitude".
* **diverges**: a non-finite mismatch, or cosine <= ``cosine_threshold``, or RED >=
  ``red_threshold``. Cosine alone is blind to scale (a tensor at half its golden's norm has
  cosine 1.0); RED sees it. The default 0.2 is where the two agree for noise-like error
  (cosine = 1 / sqrt(1 + RED**2) gives RED 0.2 at cosine 0.98), so RED adds only what cosine
  cannot see.

The comparison's flag rule (``compare/divergence.py``) is the lead's to unify with this one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .numbers import PairStats

DEFAULT_RED_THRESHOLD = 0.2
DEFAULT_PRECISION_ULPS = 4.0


@dataclass(frozen=True)
class Criterion:
    """The thresholds every hypothesis judges by.

    Attributes:
        cosine_threshold: a cosine at or below this diverges (the config's COSINE_THRESHOLD).
        red_threshold: a relative Euclidean distance at or above this diverges.
        precision_ulps: how many machine epsilons of RED are still rounding.
    """

    cosine_threshold: float = 0.98
    red_threshold: float = DEFAULT_RED_THRESHOLD
    precision_ulps: float = DEFAULT_PRECISION_ULPS

    @classmethod
    def from_config(cls, config) -> Criterion:
        """The criterion of a :class:`~precision_tool.config.Config` (its cosine threshold; its
        RED threshold when the config has one)."""
        red = getattr(config, "red_threshold", None)
        return cls(cosine_threshold=config.cosine_threshold,
                   red_threshold=DEFAULT_RED_THRESHOLD if red is None else red)

    def diverges(self, stats: PairStats) -> bool:
        """True when ``stats`` should be flagged: non-finite mismatch, low cosine or high RED."""
        if stats.nonfinite_mismatch:
            return True
        cosine = stats.cosine
        if not math.isnan(cosine) and cosine <= self.cosine_threshold:
            return True
        return stats.red >= self.red_threshold

    def rounding_limit(self, eps: float) -> float:
        """The largest RED that rounding at machine epsilon ``eps`` explains (0: exact types)."""
        return self.precision_ulps * eps

    def within_rounding(self, stats: PairStats, eps: float) -> bool:
        """True when ``stats`` shows only what rounding at ``eps`` explains."""
        return not stats.nonfinite_mismatch and stats.red <= self.rounding_limit(eps)
