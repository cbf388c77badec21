"""The affine hypotheses: the NPU tensor is its golden negated (``sign``), scaled (``scale``) or
shifted (``offset``).

Found by least squares over the sums of the one streamed pass, not by cosine: cosine is 1.0
when only the scale differs. The fit ``npu ~ k * golden + c`` must explain at least
:data:`FIT_SHARE` of the squared error and of the NPU tensor's own variance (so a constant
output is not "a scale of 0").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compare.pair_stats import PairStats, unscaled
from .subject import Cause, Subject

FIT_SHARE = 0.9  # a least-squares fit must explain this share of the squared error
SCALE_TOL = 0.01  # |k| must differ from 1 by this much to be a scale
OFFSET_TOL = 0.01  # |c| must reach this fraction of the golden's RMS to be an offset


@dataclass(frozen=True)
class AffineFit:
    """The least-squares fit ``npu ~ k * golden + c``: the share of the error (``npu - golden``)
    it explains, and ``r2``, the share of the NPU tensor's own variance it explains (near 1 when
    the NPU tensor is an affine function of the golden; 0 for a constant)."""

    k: float
    c: float
    share: float
    r2: float


def affine_fit(stats: PairStats) -> AffineFit | None:
    """Fit ``d = npu - golden ~ (k - 1) * golden + c`` from the pass's sums (fitting the
    difference, not the tensor, keeps the arithmetic well conditioned); None when the golden
    is constant or nothing differs. The sums may be in a scale (:attr:`PairStats.scale`): the
    slope and the shares are ratios of them, the offset is brought back from it."""
    s, n = stats.sums, stats.finite
    spread = n * s["gg"] - s["g"] ** 2
    if n < 2 or s["dd"] <= 0 or spread <= 1e-12 * n * s["gg"]:
        return None
    slope = (n * s["dg"] - s["d"] * s["g"]) / spread
    c = (s["d"] - slope * s["g"]) / n
    residual = max(0.0, s["dd"] - slope * s["dg"] - c * s["d"])
    npu_sum = s["d"] + s["g"]
    spread_npu = s["nn"] - npu_sum**2 / n
    r2 = 1.0 - residual / spread_npu if spread_npu > 0 else 0.0
    return AffineFit(1.0 + slope, unscaled(c, stats.scale), 1.0 - residual / s["dd"], r2)


def _fit(s: Subject) -> AffineFit | None:
    if not s.differs:
        return None
    fit = affine_fit(s.stats)
    return fit if fit is not None and fit.share >= FIT_SHARE and fit.r2 >= FIT_SHARE else None


def _fit_numbers(fit: AffineFit) -> dict[str, float]:
    return {"factor": fit.k, "offset": fit.c, "explained": fit.share}


def sign(s: Subject) -> Cause | None:
    """The NPU holds the golden negated (a least-squares factor below zero explains the error)."""
    fit = _fit(s)
    if fit is None or fit.k >= 0:
        return None
    return Cause(
        "sign",
        f"{_affine(fit)}: the sign is flipped (the fit explains {fit.share:.1%} of the error)",
        _fit_numbers(fit),
        fit.share,
    )


def scale(s: Subject) -> Cause | None:
    """The NPU holds the golden times a factor other than 1 (found by least squares: cosine is
    1.0 when only the scale differs)."""
    fit = _fit(s)
    if fit is None or abs(abs(fit.k) - 1.0) < SCALE_TOL:
        return None
    return Cause(
        "scale",
        f"{_affine(fit)}: scaled by {abs(fit.k):.4g} (the fit explains {fit.share:.1%} of the error)",
        _fit_numbers(fit),
        fit.share,
    )


def offset(s: Subject) -> Cause | None:
    """The NPU holds the golden plus a constant."""
    fit = _fit(s)
    if fit is None or abs(fit.c) < OFFSET_TOL * s.stats.rms_golden:
        return None
    return Cause(
        "offset",
        f"{_affine(fit)}: shifted by {fit.c:.4g} "
        f"({abs(fit.c) / s.stats.rms_golden:.1%} of the golden's RMS; the fit explains "
        f"{fit.share:.1%} of the error)",
        _fit_numbers(fit),
        fit.share,
    )


def _affine(fit: AffineFit) -> str:
    return f"npu ~ {fit.k:.4g} * golden {'-' if fit.c < 0 else '+'} {abs(fit.c):.4g}"
