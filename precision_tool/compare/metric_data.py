"""The plain data of the metrics: statistic groups, accumulated statistics, ranges, results."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NAN = float("nan")


@dataclass(frozen=True)
class Range:
    """Min and max of one side (numpy semantics: NaN if any element is NaN)."""

    lo: float
    hi: float


@dataclass
class Stats:
    """Partial statistics of a tensor pair (or of a range of it); mergeable with ``combine``.

    Fields of groups not folded keep their start values. ``sum_x``/``m2_x`` are the sum and the
    sum of squared deviations from the mean (merged with Chan et al.'s formula, so a large mean
    does not cancel the variance away). The ranges are numpy's min/max (NaN when a NaN was seen);
    ``nan_*``/``inf_*`` count the NaN and infinite elements. ``extra`` holds the state of
    statistic groups registered outside this package, by group name.

    ``scale_x``, ``scale_y`` and ``scale_d`` are 0 unless the plain sums overflowed float64:
    then the sums were folded over ``x * 2**-scale_x``, ``y * 2**-scale_y`` and ``(x - y) *
    2**-scale_d``; :data:`.stat_groups.SCALED_FIELDS` says which fields scale by which.
    """

    count: int = 0
    sum_xy: float = 0.0
    sum_xx: float = 0.0
    sum_yy: float = 0.0
    sum_x: float = 0.0
    sum_y: float = 0.0
    m2_x: float = 0.0
    m2_y: float = 0.0
    max_abs: float = -math.inf
    sum_abs: float = 0.0
    sum_sq: float = 0.0  # sum (x - y)^2
    rel_sum: float = 0.0
    rel_max: float = -math.inf
    x_lo: float = math.inf
    x_hi: float = -math.inf
    y_lo: float = math.inf
    y_hi: float = -math.inf
    nan_x: int = 0
    nan_y: int = 0
    inf_x: int = 0
    inf_y: int = 0
    kl_sp: float = 0.0
    kl_sq: float = 0.0
    kl_cross: float = 0.0  # sum P (ln P - ln Q)
    scale_x: int = 0
    scale_y: int = 0
    scale_d: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ranges(self) -> tuple[Range, Range]:
        """(x range, y range) of what the first pass saw."""
        return Range(self.x_lo, self.x_hi), Range(self.y_lo, self.y_hi)


Fold = Callable[..., None]


@dataclass(frozen=True)
class StatGroup:
    """A named set of statistics, folded block by block over a tensor pair.

    ``fold(stats, x, y)`` folds one pair of equal-length float64 blocks into ``stats``;
    ``merge(into, other)`` adds ``other``'s partial statistics of this group into ``into``
    (so a tensor split into ranges gives the same result). A group with ``needs_ranges`` runs in
    a second pass, once the first pass has seen every element: ``fold(stats, x, y, ranges)``.
    Groups defined outside this package keep their state in ``stats.extra[name]``. Both
    functions must be module-level, so a :class:`Metric` using the group can be sent to a
    worker process. A first-pass group with ``stored`` gets the blocks in their stored dtypes
    (float16, bfloat16, integers, bool as read) instead of float64, for a formula whose
    arithmetic depends on the dtype (msprobe's relative error is float32 for float16 data);
    it converts what it needs itself.
    """

    name: str
    fold: Fold
    merge: Callable[[Stats, Stats], None]
    needs_ranges: bool = False
    stored: bool = False


@dataclass(frozen=True)
class Outcome:
    """A metric value (None: not compared) with the reason it is not a plain number."""

    value: float | str | None
    reason: str | None = None


# The groups compare/stat_groups.py defines (it registers them when imported); names are known
# here so a Metric can be checked when it is made without importing the fold functions.
BUILTIN_GROUP_NAMES = frozenset({"xy", "xx", "yy", "diff", "rel", "moments", "range", "kl"})
_REGISTERED: dict[str, StatGroup] = {}


def register_group(group: StatGroup) -> StatGroup:
    """Make ``group`` available to metrics by its name; returns it (usable as a decorator result).

    Registering the same group again is harmless; another group under a taken name is an error.
    A worker process registers it again when it imports the module that defines it (which
    unpickling a metric using it does).
    """
    known = _REGISTERED.get(group.name)
    if known is not None and known != group:
        raise ValueError(f"a statistic group named {group.name!r} is already registered")
    _REGISTERED[group.name] = group
    return group


def stat_group(name: str, metric: str | None = None) -> StatGroup:
    """The registered group ``name``; ValueError naming the known groups when there is none."""
    try:
        return _REGISTERED[name]
    except KeyError:
        owner = f"metric {metric!r} needs " if metric else ""
        known = sorted(set(_REGISTERED) | BUILTIN_GROUP_NAMES)
        raise ValueError(f"{owner}unknown statistic group {name!r}: choose from {', '.join(known)}") from None


@dataclass(frozen=True)
class Metric:
    """One comparison metric: its CSV column name, the statistic groups it reads, its formula.

    ``needs`` names groups registered with :func:`~.stat_groups.register_group` (the built-in ones:
    ``xy``, ``xx``, ``yy``, ``diff``, ``rel``, ``moments``, ``range``, ``kl``); an unknown name
    raises ValueError here, at construction. ``compute`` must be a module-level function (not a
    lambda) so the metric can be sent to worker processes.
    """

    name: str
    needs: frozenset[str]
    compute: Callable[[Stats], float | str | Outcome]
    bool_ok: bool = False
    text: bool = False  # the value is text (StandardDeviation), not a number

    def __post_init__(self) -> None:
        object.__setattr__(self, "needs", frozenset(self.needs))
        for name in self.needs:
            if name not in BUILTIN_GROUP_NAMES:
                stat_group(name, metric=self.name)  # ValueError for a misspelt group, now

    @property
    def groups(self) -> tuple[StatGroup, ...]:
        """The statistic groups this metric reads (compare/stat_groups.py registers the built-in
        ones, and is imported wherever metrics are computed)."""
        return tuple(stat_group(name, metric=self.name) for name in sorted(self.needs))


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
