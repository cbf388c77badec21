"""When two tensors differ: beyond rounding (a difference to explain), and enough to flag.

Two levels, both over :class:`~.numbers.PairStats`:

* **within rounding**: no non-finite mismatch and a relative Euclidean distance (RED,
  ``||npu - golden|| / ||golden||``) within the noise a correct op shows there
  (:class:`~precision_tool.compare.noise.Noise`, from the dtypes, the op's sums and its inputs'
  own differences): the same model ``vcs`` colours by and ``cp`` judges with.
* **diverges**: the comparison's own flag rule, :class:`~precision_tool.compare.verdict.FlagRule`
  (cosine at or below the threshold, RED at or above its threshold, or NaN/Inf on the NPU where
  the golden is finite), so ``why`` explains exactly the tensors ``vcs`` flags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..compare.noise import Noise
from ..compare.pair_stats import PairStats
from ..compare.verdict import FlagRule


@dataclass(frozen=True)
class Criterion:
    """The thresholds every hypothesis judges by.

    Attributes:
        rule: when a tensor diverges (the comparison's flag rule).
    """

    rule: FlagRule = FlagRule(0.98)

    @classmethod
    def from_config(cls, config) -> Criterion:
        """The criterion of a :class:`~precision_tool.config.Config`: its flag rule."""
        return cls(rule=FlagRule.from_config(config))

    def diverges(self, stats: PairStats) -> bool:
        """True when the flag rule says the pair diverges (a NaN/Inf mismatch counts)."""
        red = stats.red if math.isfinite(stats.red) else math.nan
        return self.rule.diverges(stats.cosine, red, stats.nonfinite_mismatch)

    @staticmethod
    def within_rounding(stats: PairStats, noise: Noise) -> bool:
        """True when ``stats`` shows only what ``noise`` explains."""
        return not stats.nonfinite_mismatch and noise.within(stats.red)
