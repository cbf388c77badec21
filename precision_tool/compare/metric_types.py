"""The plain data of the metrics: accumulated statistics, ranges, and results."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

NAN = float("nan")


@dataclass
class Stats:
    """Sums accumulated over a tensor pair; fields of groups not selected stay 0."""

    count: int = 0
    sum_xy: float = 0.0
    sum_xx: float = 0.0
    sum_yy: float = 0.0
    sum_x: float = 0.0
    sum_y: float = 0.0
    m2_x: float = 0.0  # sum of squared deviations from the mean
    m2_y: float = 0.0
    max_abs: float = -math.inf
    sum_abs: float = 0.0
    sum_sq: float = 0.0  # sum (x - y)^2
    rel_sum: float = 0.0
    rel_max: float = -math.inf
    kl_sp: float = 0.0
    kl_sq: float = 0.0
    kl_cross: float = 0.0  # sum P (ln P - ln Q)


@dataclass(frozen=True)
class Range:
    """Min and max of one side (numpy semantics: NaN if any element is NaN)."""

    lo: float
    hi: float


@dataclass(frozen=True)
class Outcome:
    """A metric value (None: not compared) with the reason it is not a plain number."""

    value: float | str | None
    reason: str | None = None


@dataclass(frozen=True)
class Metric:
    """One comparison metric: its CSV column name, the stat groups it reads, and its formula."""

    name: str
    needs: frozenset[str]
    compute: Callable[[Stats], float | str | Outcome]
    bool_ok: bool = False
    text: bool = False  # the value is text (StandardDeviation), not a number


@dataclass(frozen=True)
class MetricResult:
    """What the metrics say about one tensor pair, and the reasons.

    ``values`` holds the metrics computed (a computed value may be nan or inf); a metric
    absent from it was not compared (msaccucmp's ``NaN``).
    """

    values: dict[str, float | str] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()

    @property
    def numbers(self) -> dict[str, float]:
        """The numeric metrics computed (StandardDeviation, a text, left out)."""
        return {k: v for k, v in self.values.items() if not isinstance(v, str)}

    def value(self, name: str) -> float:
        """Metric ``name`` as a number; NaN when not compared."""
        value = self.values.get(name, NAN)
        return NAN if isinstance(value, str) else value

    @property
    def std_text(self) -> str:
        """The StandardDeviation text, ``NaN`` when not computed."""
        value = self.values.get("StandardDeviation", "NaN")
        return value if isinstance(value, str) else "NaN"

    @property
    def fail_reason(self) -> str:
        """The reasons joined into one CompareFailReason text ('' when none)."""
        return " ".join(self.reasons)
