"""The ten built-in metrics as names and the statistic groups each reads, in msaccucmp's ``-alg``
order, and the ``-alg`` words read against them: what a command can know of the metrics before
numpy loads (``vc`` deciding whether to start the pool's fork server, :mod:`.pool_server`).
:mod:`.metrics` gives each its formula."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import PrecisionToolError

COSINE_GROUPS = frozenset({"xy", "xx", "yy"})  # cosine's three sums: the cheapest run of all

BUILTIN_METRIC_GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    ("CosineSimilarity", COSINE_GROUPS),
    ("MaxAbsoluteError", frozenset({"diff"})),
    ("AccumulatedRelativeError", frozenset({"rel"})),
    ("RelativeEuclideanDistance", frozenset({"diff", "yy"})),
    ("KullbackLeiblerDivergence", frozenset({"kl"})),
    ("StandardDeviation", frozenset({"moments"})),
    ("MeanAbsoluteError", frozenset({"diff"})),
    ("RootMeanSquareError", frozenset({"diff"})),
    ("MaxRelativeError", frozenset({"rel"})),
    ("MeanRelativeError", frozenset({"rel"})),
)
METRIC_NAMES: tuple[str, ...] = tuple(name for name, _ in BUILTIN_METRIC_GROUPS)


def builtin_name(word: str) -> str | None:
    """The built-in metric an ``-alg`` word names (an index, or a name in any case); None for
    an empty word. PrecisionToolError for a word that names none."""
    text = word.strip()
    if text.isdigit() and int(text) < len(METRIC_NAMES):
        return METRIC_NAMES[int(text)]
    for name in METRIC_NAMES:
        if name.lower() == text.lower():
            return name
    if text:
        raise PrecisionToolError(
            f"unknown metric {text!r}: choose from 0-{len(METRIC_NAMES) - 1} or {', '.join(METRIC_NAMES)}"
        )
    return None


def cosine_sums_only(group_names: Iterable[str]) -> bool:
    """Whether metrics reading these statistic groups need cosine's three sums alone."""
    return set(group_names) <= COSINE_GROUPS


def words_need_cosine_sums_only(spec: str) -> bool:
    """Whether the metrics an ``-alg`` spec names (``"all"``, or comma-separated words) need
    cosine's three sums alone; PrecisionToolError as :func:`builtin_name`, or when it names none."""
    if spec.strip().lower() == "all":
        return False
    names = {name for word in spec.split(",") if (name := builtin_name(word)) is not None}
    if not names:
        raise PrecisionToolError("no metric selected")
    groups = dict(BUILTIN_METRIC_GROUPS)
    return cosine_sums_only(group for name in names for group in groups[name])


__all__ = [
    "BUILTIN_METRIC_GROUPS",
    "COSINE_GROUPS",
    "METRIC_NAMES",
    "builtin_name",
    "cosine_sums_only",
    "words_need_cosine_sums_only",
]
