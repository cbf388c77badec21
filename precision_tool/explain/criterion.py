"""When two tensors differ: beyond rounding (a difference to explain), and enough to flag.

Two levels, both over :class:`~.numbers.PairStats`:

* **within rounding**: no non-finite mismatch and a relative Euclidean distance (RED,
  ``||npu - golden|| / ||golden||``) of at most ``precision_ulps`` machine epsilons of the
  coarsest float dtype involved (float16: 2**-10). RED is the error's root mean square over the
  values' root mean square, so this reads "within a few ulp at the values' magnitude".
* **diverges**: the comparison's own flag rule, :class:`~precision_tool.compare.divergence.FlagRule`
  (cosine at or below the threshold, RED at or above its threshold, or NaN/Inf on the NPU where
  the golden is finite), so ``why`` explains exactly the tensors ``vcs`` flags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..compare.divergence import FlagRule
from .numbers import PairStats

DEFAULT_PRECISION_ULPS = 4.0


@dataclass(frozen=True)
class Criterion:
    """The thresholds every hypothesis judges by.

    Attributes:
        rule: when a tensor diverges (the comparison's flag rule).
        precision_ulps: how many machine epsilons of RED are still rounding.
    """

    rule: FlagRule = FlagRule(0.98)
    precision_ulps: float = DEFAULT_PRECISION_ULPS

    @classmethod
    def from_config(cls, config) -> Criterion:
        """The criterion of a :class:`~precision_tool.config.Config`: its flag rule."""
        return cls(rule=FlagRule.from_config(config))

    def diverges(self, stats: PairStats) -> bool:
        """True when the flag rule says the pair diverges (a NaN/Inf mismatch counts)."""
        red = stats.red if math.isfinite(stats.red) else math.nan
        return self.rule.diverges(stats.cosine, red, stats.nonfinite_mismatch)

    def rounding_limit(self, eps: float) -> float:
        """The largest RED that rounding at machine epsilon ``eps`` explains (0: exact types)."""
        return self.precision_ulps * eps

    def within_rounding(self, stats: PairStats, eps: float) -> bool:
        """True when ``stats`` shows only what rounding at ``eps`` explains."""
        return not stats.nonfinite_mismatch and stats.red <= self.rounding_limit(eps)
