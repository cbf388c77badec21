"""Why an NPU tensor differs from its golden: one small function per hypothesis (the affine
ones in :mod:`.affine`, the permutation search in :mod:`.permutation`), and a ranking.

Every hypothesis reads a :class:`Subject` (the NPU output and its golden in host layout, the
statistics of one streamed pass over them, what is known about the op's inputs and the replay)
and returns a :class:`Cause` when it holds, else None. A cause carries ``evidence`` (one
sentence) and ``numbers`` (what the sentence quotes), and a ``score``: the share of the
difference (squared error) it explains, from 0 to 1.

:func:`diagnose` runs them all and ranks what held: by score (in steps of 0.1), then by how
specific the cause is (:data:`SPECIFICITY`: a permutation that explains everything is a better
answer than "the op computes something else", which is also true then). Only overflow and NaN
are looked for in a tensor within rounding of its golden; every other hypothesis needs a
difference beyond rounding to explain (:attr:`Subject.differs`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .affine import offset, scale, sign
from .permutation import permutation
from .rounding import input_noise
from .subject import Cause, InputCheck, ReplayCheck, Subject

__all__ = ["CAUSES", "Cause", "InputCheck", "ReplayCheck", "Subject", "diagnose", "hypotheses", "rank"]

# Causes that describe the form of the difference; on an op that faithfully computes from
# inputs that already differ, that form is inherited (see own_share).
FORMS = frozenset({"nan", "overflow", "underflow", "permutation", "sign", "scale", "offset"})
SPECIFICITY = (
    "nan",
    "overflow",
    "underflow",
    "permutation",
    "sign",
    "scale",
    "offset",
    "computation",
    "input",
    "precision",
    "unknown",
)
CAUSES = SPECIFICITY  # every cause name ``why`` can give
UNDERFLOW_SHARE = 0.1  # flushed values must carry this share of the squared error
MIN_SHARE = 0.1  # input / computation / an inherited form: the least share of the error a
# named cause explains


def _g(value: float | None) -> str:
    return "nan" if value is None or value != value else f"{value:.6g}"


def _cos(value: float) -> str:
    return "nan" if value != value else f"{value:.6f}"


def overflow(s: Subject) -> Cause | None:
    """The NPU holds +-inf, or its dtype's largest finite value, where the golden is finite."""
    inf, saturated = s.stats.inf, s.stats.saturated
    count = inf.count + saturated.count
    if not count:
        return None
    first = (
        inf
        if inf.flat_index is not None and (saturated.flat_index is None or inf.flat_index < saturated.flat_index)
        else saturated
    )
    dd = s.stats.sums["dd"]  # in the scale overflow_sq is in: the share is theirs
    score = 1.0 if inf.count else min(1.0, s.stats.overflow_sq / dd) if dd else 1.0
    where = s.stats.position(first.flat_index)
    return Cause(
        "overflow",
        f"{count} value(s) overflow {s.stats.facts.name} ({inf.count} inf, "
        f"{saturated.count} at +-{_g(s.stats.facts.max)}) where the golden is finite; the "
        f"first at {where}, where the golden holds {_g(first.golden)}",
        {
            "count": count,
            "inf": inf.count,
            "saturated": saturated.count,
            "first_index": where,
            "golden_value": first.golden,
            "dtype_max": s.stats.facts.max,
        },
        score,
    )


def underflow(s: Subject) -> Cause | None:
    """Golden values non-zero but below the NPU dtype's smallest normal are zero on the NPU."""
    lost, dd = s.stats.underflow, s.stats.sums["dd"]
    if not lost.count or not s.differs or not dd:
        return None
    share = min(1.0, s.stats.underflow_sq / dd)
    if share < UNDERFLOW_SHARE:
        return None
    facts = s.stats.facts
    where = s.stats.position(lost.flat_index)
    return Cause(
        "underflow",
        f"{lost.count} golden value(s) below the smallest normal {facts.name} "
        f"({_g(facts.tiny)}; {s.stats.below_subnormal} below even the smallest subnormal "
        f"{_g(facts.smallest_subnormal)}) are zero on the NPU, carrying {share:.0%} of the "
        f"error; the first at {where} (golden {_g(lost.golden)})",
        {
            "count": lost.count,
            "below_subnormal": s.stats.below_subnormal,
            "first_index": where,
            "golden_value": lost.golden,
            "smallest_normal": facts.tiny,
            "smallest_subnormal": facts.smallest_subnormal,
            "share": share,
        },
        share,
    )


def nan(s: Subject) -> Cause | None:
    """NaN in the NPU output where the golden has none, while the op's NPU inputs are finite."""
    found = s.stats.nan
    if not found.count or any(check.nonfinite for check in s.inputs):
        return None
    where = s.stats.position(found.flat_index)
    return Cause(
        "nan",
        f"{found.count} NaN in the NPU output while its {len(s.inputs)} input(s) hold "
        f"no NaN or inf; the first at {where}, where the golden holds {_g(found.golden)}",
        {"count": found.count, "first_index": where, "golden_value": found.golden, "inputs_nan": 0},
        1.0,
    )


def precision(s: Subject) -> Cause | None:
    """The difference is what rounding to the op's coarsest float dtype explains."""
    if s.differs:
        return None
    red, facts = s.stats.red, s.facts
    if not facts.is_float:
        return Cause(
            "precision",
            f"the {facts.name} tensors agree (relative error {red:.3g})",
            {"red": red, "dtype": facts.name, "ulps": 0.0},
            1.0,
        )
    ulps = red / facts.eps
    noise = s.output_noise
    return Cause(
        "precision",
        f"relative error {red:.2e} = {ulps:.2g} {facts.name} epsilons, within what a "
        f"correct op shows here ({noise.describe()}): expected {facts.name} rounding, not a defect",
        {
            "red": red,
            "dtype": facts.name,
            "ulps": ulps,
            "expected_red": noise.expected,
            "rounding_limit": noise.limit,
            "max_abs_error": s.stats.max_abs_diff,
        },
        1.0,
    )


def _input_differs(s: Subject, check: InputCheck) -> bool:
    stats = check.stats
    return stats is not None and (bool(stats.nonfinite_mismatch) or not input_noise(check).within(stats.red))


def _replay_distances(s: Subject) -> tuple[float, float] | None:
    """(||npu - replay||, ||golden - replay||) when a replay was compared."""
    replay = s.replay
    if replay is None or not replay.supported or replay.npu is None or replay.golden is None:
        return None
    return replay.npu.diff_norm, replay.golden.diff_norm


def _faithful(s: Subject) -> Cause | None:
    """Inputs without a golden, but the replay from them gives the NPU output: the difference
    came in with those inputs."""
    unknown = [check for check in s.inputs if check.stats is None]
    replay = s.replay
    if not unknown or replay is None or replay.npu is None or replay.npu.nonfinite_mismatch:
        return None
    if replay.npu.red > s.replay_limit:
        return None
    slots = ", ".join(str(check.slot) for check in unknown)
    return Cause(
        "input",
        f"input(s) {slots} have no golden, but recomputed from its own NPU inputs the op "
        f"gives its NPU output (cosine {_cos(replay.npu.cosine)}): the difference comes in with "
        "its inputs",
        {"inputs": [], "without_golden": [c.slot for c in unknown], "explained": 1.0},
        1.0,
    )


def input_differs(s: Subject) -> Cause | None:
    """The op's inputs already differ from their goldens beyond rounding (for the first op: the
    network's input data differ, e.g. a preprocessing difference); or inputs without a golden
    from which the replay gives exactly the NPU output."""
    if not s.differs:
        return None
    bad = [check for check in s.inputs if _input_differs(s, check)]
    if not bad:
        return _faithful(s)
    parts = [
        f"input {c.slot} ({c.source}) cosine {_cos(c.stats.cosine)}, relative error {_g(c.stats.red)}"
        + (f", {c.stats.nonfinite_mismatch} non-finite mismatch(es)" if c.stats.nonfinite_mismatch else "")
        for c in bad
    ]
    network = [c for c in bad if c.network_input]
    tail = (
        "; it is the network's input data: the data fed to the NPU differ from TensorFlow's (preprocessing?)"
        if network
        else ""
    )
    distances = _replay_distances(s)
    score = 0.5  # without a replay, how much the inputs explain is not known
    if distances is not None and sum(d * d for d in distances) > 0:
        score = distances[1] ** 2 / (distances[0] ** 2 + distances[1] ** 2)
        if score < MIN_SHARE:
            return None  # they differ, but the op's output does not show it
    numbers = {
        "inputs": [
            {
                "slot": c.slot,
                "golden": c.source,
                "cosine": c.stats.cosine,
                "red": c.stats.red,
                "network_input": c.network_input,
            }
            for c in bad
        ],
        "explained": score,
    }
    return Cause("input", "the op's inputs already differ: " + "; ".join(parts) + tail, numbers, score)


def computation(s: Subject) -> Cause | None:
    """The replay from the op's own NPU inputs disagrees with the NPU output (and agrees with
    the golden better than the NPU does): the op computes something else."""
    distances = _replay_distances(s)
    if distances is None or not s.differs:
        return None
    npu_vs_replay = s.replay.npu
    nonfinite = npu_vs_replay.nonfinite_mismatch > 0
    d_nr, d_rg = distances
    d_ng = s.stats.diff_norm
    if not nonfinite and (npu_vs_replay.red <= s.replay_limit or d_rg >= d_ng):
        return None
    score = 1.0 if nonfinite else d_nr**2 / (d_nr**2 + d_rg**2)
    if score < MIN_SHARE:
        return None
    golden_vs_replay = s.replay.golden
    extra = f", {npu_vs_replay.nonfinite_mismatch} non-finite value(s) the replay does not have" if nonfinite else ""
    return Cause(
        "computation",
        f"recomputed from its own NPU inputs, the op differs from the NPU output "
        f"(cosine {_cos(npu_vs_replay.cosine)}, relative error {_g(npu_vs_replay.red)}{extra}) but "
        f"agrees with the golden (cosine {_cos(golden_vs_replay.cosine)}, relative error "
        f"{_g(golden_vs_replay.red)}): the NPU computes something else",
        {
            "npu_vs_replay_cosine": npu_vs_replay.cosine,
            "npu_vs_replay_red": npu_vs_replay.red,
            "npu_vs_replay_nonfinite": npu_vs_replay.nonfinite_mismatch,
            "golden_vs_replay_cosine": golden_vs_replay.cosine,
            "golden_vs_replay_red": golden_vs_replay.red,
            "explained": score,
        },
        score,
    )


def unknown(s: Subject) -> Cause:
    """What is said when no hypothesis holds."""
    return Cause(
        "unknown",
        f"the output differs from the golden (cosine {_cos(s.stats.cosine)}, relative "
        f"error {_g(s.stats.red)}) and no hypothesis explains it",
        {"cosine": s.stats.cosine, "red": s.stats.red},
        0.0,
    )


def rank(causes: list[Cause]) -> tuple[Cause, ...]:
    """Most likely first: by score in steps of 0.1, then by :data:`SPECIFICITY`."""
    return tuple(sorted(causes, key=lambda c: (-round(c.score, 1), SPECIFICITY.index(c.name))))


def hypotheses() -> tuple[Callable[[Subject], Cause | None], ...]:
    """Every hypothesis, in :data:`SPECIFICITY` order."""

    return (nan, overflow, underflow, permutation, sign, scale, offset, computation, input_differs, precision)


def own_share(s: Subject) -> float:
    """The share of the difference the op itself adds: 1 when its inputs match their goldens;
    with a replay, ``||npu - replay||^2`` over that plus ``||golden - replay||^2`` (what the
    inputs carry in); 0.5 when the inputs differ and there is no replay to tell."""
    if not any(_input_differs(s, check) for check in s.inputs):
        return 1.0
    distances = _replay_distances(s)
    if distances is None:
        return 0.5
    total = distances[0] ** 2 + distances[1] ** 2
    return distances[0] ** 2 / total if total else 0.5


def _inherited(cause: Cause, own: float) -> Cause:
    text = cause.evidence + (" (carried in from the inputs)" if own < 0.5 else "")
    return replace(cause, evidence=text, score=cause.score * own)


def diagnose(s: Subject) -> tuple[Cause, ...]:
    """Every cause that holds for ``s``, most likely first; ``unknown`` when none does.

    The form causes (:data:`FORMS`) are weighed by :func:`own_share`: on an op that computes
    faithfully from inputs already wrong, a permuted or scaled output is inherited, and a form
    left explaining less than :data:`MIN_SHARE` of the difference is not named (reversed
    channels carried in from the inputs are the inputs' doing, not a second cause at 0%)."""
    held = [cause for cause in (test(s) for test in hypotheses()) if cause is not None]
    own = own_share(s) if any(c.name in FORMS for c in held) else 1.0
    held = [_inherited(c, own) if c.name in FORMS and own < 1.0 else c for c in held]
    held = [c for c in held if c.name not in FORMS or own == 1.0 or c.score >= MIN_SHARE]
    return rank(held or [unknown(s)])
