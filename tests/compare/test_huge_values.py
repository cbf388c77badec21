"""Issue 27.7: finite float64 values whose sums overflow give the metrics they should, on both
backends, against an independent reference in numpy's longdouble (x86's 80-bit extended
precision: squares of 1e308 are finite there, and its 64-bit significand is finer than float64's).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from precision_tool.compare import kernels
from precision_tool.compare.metric_data import Stats
from precision_tool.compare.metrics import METRICS, Accumulator, compare_arrays
from precision_tool.compare.result_csv import format_value
from precision_tool.compare.stat_groups import at_scale, combine, unscaled

LD = np.longdouble
EPS = float(np.finfo(np.float64).eps)
F32_EPS = float(np.finfo(np.float32).eps)
HUGE = float(np.finfo(np.float64).max)

pytestmark = pytest.mark.skipif(np.finfo(LD).maxexp <= 1024, reason="longdouble is float64 here: no reference")


def reference(x: np.ndarray, y: np.ndarray) -> dict:
    """The ten metrics (FORMATS.md section 6) in longdouble, the plain formulas."""
    xl, yl = x.astype(LD), y.astype(LD)
    n = x.size
    d = xl - yl
    nx, ny = np.sqrt(np.sum(xl * xl)), np.sqrt(np.sum(yl * yl))
    with np.errstate(all="ignore"):
        if nx <= EPS or ny <= EPS:  # msaccucmp's zero rule: 1 for two zero tensors, else none
            cosine = 1.0 if nx <= EPS and ny <= EPS else None
        else:
            cosine = min(float(np.sum(xl * yl) / (nx * ny)), 1.0)
        rel = np.where(np.abs(y) > EPS, np.abs(xl / yl - 1), LD(0))

    def normalised(v):
        span = v.max() - v.min()
        return np.maximum((v - v.min()) / span if span != 0 else v, LD(F32_EPS))

    p, q = normalised(xl), normalised(yl)
    p, q = p / p.sum(), q / q.sum()
    kl = float(np.sum(p * np.log(p / q)))

    def side(v):
        mean = v.sum() / n
        return float(mean), float(np.sqrt(np.sum((v - mean) ** 2) / n))

    return {
        "CosineSimilarity": cosine,
        "MaxAbsoluteError": float(np.max(np.abs(d))),
        "AccumulatedRelativeError": float(rel.sum()),
        "RelativeEuclideanDistance": 0.0 if float(ny) <= EPS else float(np.sqrt(np.sum(d * d)) / ny),
        "KullbackLeiblerDivergence": 0.0 if abs(kl) < EPS else kl,
        "MeanAbsoluteError": float(np.sum(np.abs(d)) / n),
        "RootMeanSquareError": float(np.sqrt(np.sum(d * d) / n)),
        "MaxRelativeError": float(rel.max()),
        "MeanRelativeError": float(rel.sum() / n),
        "moments": (side(xl), side(yl)),
        "top": float(max(np.abs(xl).max(), np.abs(yl).max())),
    }


def _std_numbers(text: str) -> list[float]:
    return [float(v) for part in text.split("),(") for v in part.strip("()").split(";")]


def assert_agrees(result, expected: dict) -> None:
    """Every metric within 1e-9 relative of the reference (KL within 1e-9 absolutely: it sums
    terms of either sign); the printed means and stds within 1e-9 of the data's magnitude."""
    assert not result.reasons, result.reasons
    for name, value in expected.items():
        if name in ("moments", "top"):
            continue
        ours = result.values[name]
        assert math.isfinite(ours) or not math.isfinite(value), (name, ours, value)
        if name == "KullbackLeiblerDivergence":
            assert ours == pytest.approx(value, abs=1e-9), name
        else:
            assert ours == pytest.approx(value, rel=1e-9, abs=1e-300), (name, ours, value)
    printed = _std_numbers(result.std_text)
    wanted = [v for pair in expected["moments"] for v in pair]
    assert printed == pytest.approx(wanted, abs=1e-9 * expected["top"] + 1e-3)


def _run(x, y, chunk=1 << 22):
    return compare_arrays(x, y, chunk=chunk)


def test_identical_tensors_of_1e300_have_cosine_one(kernel_backend):
    """The case of the issue: sum x*x is inf for both, and inf/inf was a bare NaN."""
    x = np.full(1000, 1e300)
    result = _run(x, x.copy())
    assert not result.reasons
    assert result.values["CosineSimilarity"] == pytest.approx(1.0, abs=1e-12)
    assert format_value(result.values["CosineSimilarity"]) == "1.000000"
    for name in (
        "MaxAbsoluteError",
        "RelativeEuclideanDistance",
        "MeanAbsoluteError",
        "RootMeanSquareError",
        "KullbackLeiblerDivergence",
        "AccumulatedRelativeError",
    ):
        assert result.values[name] == 0.0, name
    assert_agrees(result, reference(x, x))


def _near(y: np.ndarray, rel: float, rng) -> np.ndarray:
    """``y`` with a relative error of about ``rel``, kept finite."""
    return np.clip(y * (1 + rel * rng.standard_normal(y.size)), -HUGE, HUGE)


CASES = {
    "huge, close": lambda rng: (lambda y: (_near(y, 1e-3, rng), y))(rng.standard_normal(5000) * 1e300),
    "near the top, spans overflow": lambda rng: (lambda y: (_near(y, 1e-2, rng), y))(
        rng.uniform(-1, 1, 5000) * 1.7e308
    ),
    "huge NPU, ordinary golden": lambda rng: (lambda y: (y * 1e200, y))(rng.standard_normal(5000)),
    "ordinary NPU, huge golden": lambda rng: (lambda y: (y, y * 1e200))(rng.standard_normal(5000)),
    "1e160: squares overflow, values do not": lambda rng: (lambda y: (_near(y, 1e-3, rng), y))(
        rng.standard_normal(5000) * 1e160
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("chunk", [1 << 22, 777])
def test_huge_values_agree_with_the_longdouble_reference(kernel_backend, case, chunk):
    x, y = CASES[case](np.random.default_rng(len(case)))
    assert_agrees(_run(x, y, chunk), reference(x, y))


def test_chunks_that_overflow_only_together_are_merged_at_a_smaller_scale(kernel_backend):
    """Each chunk's sum x*x (100 x 1e306) is finite, the tensor's is not."""
    rng = np.random.default_rng(3)
    y = 1e153 * (1 + rng.random(3000))
    x = y * (1 + 1e-4 * rng.standard_normal(y.size))
    expected = reference(x, y)
    assert_agrees(_run(x, y, chunk=100), expected)


def test_a_difference_beyond_float64_is_inf_and_the_rest_is_finite(kernel_backend):
    """|x - y| of 1.7e308 and -1.7e308 is beyond float64: MaxAbsoluteError is inf (what
    float64 rounds the true value to), cosine and the relative distance are not."""
    y = np.array([1.7e308, 1.0, -2.0, 1e300])
    x = np.array([-1.7e308, 1.0, -2.0, 1e300])
    result = _run(x, y)
    assert result.values["MaxAbsoluteError"] == math.inf
    assert result.values["CosineSimilarity"] == pytest.approx(reference(x, y)["CosineSimilarity"], abs=1e-12)
    assert result.values["RelativeEuclideanDistance"] == pytest.approx(2.0, rel=1e-12)


def test_nan_and_inf_inputs_still_propagate_and_are_not_rescaled(kernel_backend):
    x = np.array([1e300, np.nan, 1e300])
    result = _run(x, np.array([1e300, 1e300, 1e300]))
    assert math.isnan(result.values["CosineSimilarity"]) and math.isnan(result.values["MaxAbsoluteError"])
    x = np.array([1e300, np.inf, 1e300])
    result = _run(x, np.array([1e300, 1e300, 1e300]))
    assert result.values["MaxAbsoluteError"] == math.inf and math.isnan(result.values["CosineSimilarity"])


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_any_finite_float64_values_agree_with_the_reference(backend):
    if backend == "numba":
        pytest.importorskip("numba", reason="numba is not installed (pip install precision-tool[fast])")
    kernel = kernels.numba_kernels() if backend == "numba" else None
    # 0 or at least 1e-100 in magnitude: underflow of tiny values is another matter (msaccucmp's
    # float32 sees them as 0), the overflow of huge ones is this one
    magnitude = st.one_of(
        st.just(0.0),
        st.tuples(st.sampled_from([1.0, -1.0]), st.floats(1e-100, HUGE)).map(
            lambda sign_size: sign_size[0] * sign_size[1]
        ),
    )
    pairs = st.integers(2, 40).flatmap(
        lambda n: st.tuples(st.lists(magnitude, min_size=n, max_size=n), st.lists(magnitude, min_size=n, max_size=n))
    )

    @settings(max_examples=200, deadline=None)
    @given(pairs, st.integers(1, 17))
    @example(([1e300, 1.0], [1e300, 2.0]), 2)  # the differences are small beside the values
    @example(([1e300, -1e300, 3.0], [1e300, -1e300, 1.0]), 3)
    def check(pair, chunk):
        x, y = np.array(pair[0]), np.array(pair[1])
        expected = reference(x, y)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(kernels, "numba_for", lambda size, wanted=None: kernel)
            result = compare_arrays(x, y, chunk=chunk)
        for name in (
            "CosineSimilarity",
            "RelativeEuclideanDistance",
            "MeanAbsoluteError",
            "RootMeanSquareError",
            "MaxAbsoluteError",
        ):
            ours, theirs = result.values.get(name), expected[name]
            if theirs is None:  # one side's norm at most float64 eps: not compared, with the reason
                assert ours is None and "all data is zero" in result.fail_reason
                continue
            assert ours is not None and not math.isnan(ours), (name, ours)
            if math.isinf(theirs):
                assert ours == theirs, name
            elif name == "CosineSimilarity":
                assert ours == pytest.approx(theirs, abs=1e-9), name
            else:
                assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-300), name

    check()


def test_the_scaled_fields_move_between_scales_exactly():
    stats = Stats(
        count=2,
        sum_xy=3.0,
        sum_xx=4.0,
        sum_yy=5.0,
        sum_x=6.0,
        m2_x=7.0,
        sum_abs=8.0,
        sum_sq=9.0,
        max_abs=1.5,
        rel_sum=2.5,
    )
    moved = at_scale(stats, (3, 5, 5))
    assert (moved.sum_xy, moved.sum_xx, moved.sum_yy, moved.sum_x, moved.m2_x) == (
        3 / 2**8,
        4 / 2**6,
        5 / 2**10,
        6 / 2**3,
        7 / 2**6,
    )
    assert (moved.sum_abs, moved.max_abs, moved.sum_sq, moved.rel_sum) == (8 / 2**5, 1.5 / 2**5, 9 / 2**10, 2.5)
    assert combine(stats, moved).sum_xx == pytest.approx(8 / 2**6)
    assert unscaled(1.0, 2000) == math.inf and unscaled(-1.0, 2000) == -math.inf and unscaled(3.0, -1) == 1.5


def test_ordinary_values_are_never_rescaled(kernel_backend):
    """The plain path is the only path for values that do not overflow (nothing is redone)."""
    rng = np.random.default_rng(0)
    acc = Accumulator(METRICS)
    acc.update(rng.standard_normal(10_000) * 1e150, rng.standard_normal(10_000) * 1e150)
    assert (acc.stats.scale_x, acc.stats.scale_y) == (0, 0)
    acc.update(np.full(10, 1e200), np.full(10, 1.0))
    assert acc.stats.scale_x > 600 and acc.stats.scale_y == 1


def test_a_constant_side_of_huge_values_makes_kl_inf_without_a_warning(kernel_backend):
    """A side whose values are all one number has a range of width 0, so KL's P is the value
    itself: 1.78e308 twice over overflows the sum of P. The sum is inf, as numpy's, and no
    RuntimeWarning reaches the terminal (found by the property above, 1 run in 5,000)."""
    x = np.array([1.0774915506110161e120, -1.7782794100389228e308])
    y = np.array([1.7782794100389228e308, 1.7782794100389228e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = compare_arrays(x, y, chunk=1)
    assert not math.isfinite(result.values["KullbackLeiblerDivergence"])  # sum Q = 2 * 1.78e308
    assert result.values["CosineSimilarity"] == pytest.approx(reference(x, y)["CosineSimilarity"], abs=1e-9)
