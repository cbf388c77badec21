"""The fused kernels against an independent float64 reference, on both backends; combine; 10**8."""

from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare import kernels
from precision_tool.compare.kernels import fold_first, fold_second
from precision_tool.compare.metric_data import Metric, StatGroup, Stats
from precision_tool.compare.metrics import METRICS, Accumulator, compare_arrays
from precision_tool.compare.stat_groups import combine, register_group, stat_group

FIRST = [stat_group(n) for n in ("xy", "xx", "yy", "diff", "rel", "moments", "range")]
KL = [stat_group("kl")]
F32_EPS = float(np.finfo(np.float32).eps)


def _fsum(terms: np.ndarray) -> float:
    """The correctly rounded sum; with NaN/Inf terms, numpy's (then the order does not matter)."""
    return math.fsum(terms) if np.isfinite(terms).all() else float(np.sum(terms))


def reference(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Every statistic, written plainly: whole float64 arrays, math.fsum for the sums."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.abs(x - y)
        rel = np.where(np.abs(y) > np.finfo(np.float64).eps, np.abs(x / y - 1), 0.0)
        out = {
            "count": x.size,
            "sum_xy": _fsum(x * y),
            "sum_xx": _fsum(x * x),
            "sum_yy": _fsum(y * y),
            "sum_x": _fsum(x),
            "sum_y": _fsum(y),
            "max_abs": float(np.max(d)),
            "sum_abs": _fsum(d),
            "sum_sq": _fsum(d * d),
            "rel_sum": _fsum(rel),
            "rel_max": float(np.max(rel)),
            "x_lo": float(np.min(x)),
            "x_hi": float(np.max(x)),
            "y_lo": float(np.min(y)),
            "y_hi": float(np.max(y)),
            "nan_x": int(np.isnan(x).sum()),
            "nan_y": int(np.isnan(y).sum()),
            "inf_x": int(np.isinf(x).sum()),
            "inf_y": int(np.isinf(y).sum()),
        }
        for side, v in (("x", x), ("y", y)):
            out[f"m2_{side}"] = _fsum((v - _fsum(v) / v.size) ** 2)
        p, q = _normalise(x), _normalise(y)
        out.update(kl_sp=_fsum(p), kl_sq=_fsum(q), kl_cross=_fsum(p * (np.log(p) - np.log(q))))
        # what each sum's rounding is relative to
        out["scale"] = {
            "sum_xy": _fsum(np.abs(x * y)),
            "sum_x": _fsum(np.abs(x)),
            "sum_y": _fsum(np.abs(y)),
            "kl_cross": _fsum(np.abs(p * np.log(p))) + _fsum(np.abs(p * np.log(q))),
        }
    return out


def _normalise(v: np.ndarray) -> np.ndarray:
    span = v.max() - v.min()
    return np.maximum((v - v.min()) / span if span != 0 else v, F32_EPS)


def _agree(name: str, ours: float, expected: float, scale: float | None = None, rel: float = 1e-12) -> None:
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(ours), (name, ours)
        return
    if math.isinf(expected) or scale is None and expected == int(expected) and name in kernels.COUNTS:
        assert ours == expected, (name, ours, expected)
        return
    bound = rel * (scale if scale is not None and math.isfinite(scale) else abs(expected)) + 1e-300
    assert abs(ours - expected) <= bound, (name, ours, expected)


def _fold_both_passes(x, y, backend, chunk=None):
    acc = Accumulator(METRICS)
    chunk = chunk or x.size or 1
    for start in range(0, x.size, chunk):
        acc.update(x[start : start + chunk], y[start : start + chunk])
    for start in range(0, x.size, chunk):
        acc.update_second(x[start : start + chunk], y[start : start + chunk])
    return acc.stats


def _check_against_reference(stats: Stats, x, y, rel=1e-12) -> None:
    expected = reference(x, y)
    scales = expected.pop("scale")
    for name, value in expected.items():
        if name.startswith("m2_"):
            _agree(name, getattr(stats, name), value, rel=1e-8)  # mean 1e7, std 1e-2: conditioning
        elif name.startswith("kl_") and (x.size == 0 or math.isnan(value)):
            _agree(name, getattr(stats, name), value)
        else:
            _agree(name, getattr(stats, name), value, scales.get(name), rel)


def _f16_extremes(rng, n=50_000):
    finfo = np.finfo(np.float16)
    special = np.array(
        [
            finfo.max,
            -finfo.max,
            finfo.tiny,
            -finfo.tiny,
            finfo.smallest_subnormal,
            -finfo.smallest_subnormal,
            0.0,
            -0.0,
            1.0,
            -1.0,
        ],
        np.float32,
    )
    y = (rng.standard_normal(n) * 300).astype(np.float32)
    y[rng.integers(0, n, special.size * 20)] = np.resize(special, special.size * 20)
    x = np.clip(y * (1 + 1e-3 * rng.standard_normal(n)), -finfo.max, finfo.max).astype(np.float16)
    return x, y


CASES = {
    "float16 extremes": _f16_extremes,
    "bfloat16": lambda rng: (
        (rng.standard_normal(30_000) * 1e30).astype(ml_dtypes.bfloat16),
        (rng.standard_normal(30_000) * 1e30).astype(np.float32),
    ),
    "bfloat16 both": lambda rng: (
        rng.standard_normal(30_000).astype(ml_dtypes.bfloat16),
        rng.standard_normal(30_000).astype(ml_dtypes.bfloat16),
    ),
    "float16 both": lambda rng: (
        rng.standard_normal(30_000).astype(np.float16),
        rng.standard_normal(30_000).astype(np.float16),
    ),
    "float64 large mean": lambda rng: (
        1e7 + rng.standard_normal(20_000) * 1e-2,
        1e7 + rng.standard_normal(20_000) * 1e-2,
    ),
    "zeros": lambda rng: (np.zeros(5000, np.float16), np.zeros(5000, np.float32)),
    "golden zeros": lambda rng: (rng.standard_normal(5000).astype(np.float16), np.zeros(5000, np.float32)),
    "int32 and uint8": lambda rng: (
        rng.integers(-1000, 1000, 10_000).astype(np.int32),
        rng.integers(0, 255, 10_000).astype(np.uint8),
    ),
    "bool": lambda rng: (rng.integers(0, 2, 10_000).astype(bool), rng.integers(0, 2, 10_000).astype(bool)),
    "one element": lambda rng: (np.array([3.0], np.float16), np.array([2.0], np.float32)),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("chunk", [None, 777])
def test_every_statistic_matches_the_float64_reference(kernel_backend, case, chunk):
    x, y = CASES[case](np.random.default_rng(len(case)))
    _check_against_reference(_fold_both_passes(x, y, kernel_backend, chunk), x, y)


@pytest.mark.parametrize("where", ["x", "y", "both"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_follow_numpy(kernel_backend, where, value):
    rng = np.random.default_rng(5)
    x, y = _f16_extremes(rng, 10_000)
    if where in ("x", "both"):
        x[[3, 4000, 9999]] = value
    if where in ("y", "both"):
        y[[5, 4000]] = value
    stats = _fold_both_passes(x, y, kernel_backend)
    expected = reference(x, y)
    for name in (
        "sum_xy",
        "max_abs",
        "rel_max",
        "x_lo",
        "x_hi",
        "y_lo",
        "y_hi",
        "nan_x",
        "nan_y",
        "inf_x",
        "inf_y",
        "kl_cross",
    ):
        ours, theirs = getattr(stats, name), expected[name]
        assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, rel=1e-12), name


_SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1.5, -2.0, 65504.0])


@settings(max_examples=200, deadline=None)
@given(
    x=st.lists(_SPECIAL, min_size=1, max_size=40),
    y=st.lists(_SPECIAL, min_size=1, max_size=40),
    fill=st.integers(0, 3000),
)
def test_the_numpy_range_fold_counts_nan_and_inf_as_numpy_does(x, y, fill):
    """The range fold counts a block's NaNs and Infs only when its minimum or maximum is not
    finite; whatever a block holds, its counts and extremes are numpy's own of the whole side."""
    rng = np.random.default_rng(fill)
    sides = []
    for special in (x, y):
        side = np.concatenate([rng.standard_normal(fill), np.array(special)])
        rng.shuffle(side)
        sides.append(side)
    stats = Stats()
    with np.errstate(all="ignore"):
        stat_group("range").fold(stats, sides[0], sides[1])
    for name, side in (("x", sides[0]), ("y", sides[1])):
        assert getattr(stats, f"nan_{name}") == int(np.isnan(side).sum())
        assert getattr(stats, f"inf_{name}") == int(np.isinf(side).sum())
        lo, hi = getattr(stats, f"{name}_lo"), getattr(stats, f"{name}_hi")
        assert (lo, hi) == (float(np.min(side)), float(np.max(side))) or (math.isnan(lo) and math.isnan(hi))
        assert math.isnan(lo) == bool(np.isnan(side).any())


DISTANCE_METRICS = [
    m for m in METRICS if m.name in ("CosineSimilarity", "RelativeEuclideanDistance", "MaxAbsoluteError")
]
DISTANCE_FIELDS = ("count", "sum_xy", "sum_xx", "sum_yy", "sum_abs", "sum_sq", "max_abs")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("chunk", [None, 777, 5000])
def test_the_cosine_and_difference_groups_alone_match_the_reference(kernel_backend, case, chunk):
    """The verdict's three metrics (msprobe runs fold them alone: numba's distance kernel, or
    numpy's folds): their statistics as the float64 reference has them, chunked or not."""
    x, y = CASES[case](np.random.default_rng(len(case) + 7))
    acc = Accumulator(DISTANCE_METRICS)
    chunk = chunk or x.size or 1
    for start in range(0, x.size, chunk):
        acc.update(x[start : start + chunk], y[start : start + chunk])
    expected = reference(x, y)
    for name in DISTANCE_FIELDS:
        _agree(name, getattr(acc.stats, name), expected[name], expected["scale"].get(name))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_the_cosine_and_difference_groups_alone_keep_nan_and_inf(kernel_backend, value):
    x, y = _f16_extremes(np.random.default_rng(9), 10_000)
    x[[3, 4000]] = value
    y[[5, 4000]] = value
    acc = Accumulator(DISTANCE_METRICS)
    acc.update(x, y)
    expected = reference(x, y)
    for name in DISTANCE_FIELDS:
        ours, theirs = getattr(acc.stats, name), expected[name]
        assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, rel=1e-12), name
    if kernel_backend == "numba":  # the kernel's sums of squares are not finite: counted after it
        assert (acc.stats.nan_x, acc.stats.inf_x) == (expected["nan_x"], expected["inf_x"])
        assert (acc.stats.nan_y, acc.stats.inf_y) == (expected["nan_y"], expected["inf_y"])


def test_both_backends_print_the_same_metrics():
    pytest.importorskip("numba", reason="numba is not installed (pip install precision-tool[fast])")
    x, y = _f16_extremes(np.random.default_rng(11), 300_000)
    results = []
    for compiled in (None, kernels.numba_kernels()):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(kernels, "numba_for", lambda size, wanted=None, compiled=compiled: compiled)
            results.append(compare_arrays(x, y))
    printed = [{k: v if isinstance(v, str) else "%.6f" % v for k, v in r.values.items()} for r in results]
    assert printed[0] == printed[1]


# --- partial statistics combine ----------------------------------------------------------------


def _cuts(rng, n, parts):
    return [0] + sorted(rng.choice(np.arange(1, n), parts - 1, replace=False).tolist()) + [n]


@pytest.mark.parametrize("parts", [1, 2, 7])
def test_ranges_folded_apart_combine_to_the_whole(kernel_backend, parts):
    rng = np.random.default_rng(parts)
    x, y = _f16_extremes(rng, 40_000)
    x[17] = np.inf
    kernel = kernels.numba_for(None)
    cuts = _cuts(rng, x.size, parts)
    pieces = [(x[a:b], y[a:b]) for a, b in zip(cuts, cuts[1:])]
    first = Stats()
    for xs, ys in reversed(pieces):  # any order
        first = combine(first, fold_first(Stats(), xs, ys, FIRST, kernel))
    second = Stats()
    for xs, ys in pieces:
        part = Stats()
        fold_second(part, xs, ys, KL, first.ranges, kernel)
        second = combine(second, part)
    whole = combine(first, second)
    _check_against_reference(whole, x, y, rel=1e-11)
    assert whole.count == x.size


def test_combine_leaves_its_inputs_alone_and_merges_empty_parts():
    a = Stats(count=2, sum_x=3.0, m2_x=0.5, max_abs=1.0)
    merged = combine(a, Stats())
    assert merged == a and merged is not a
    assert combine(Stats(), a) == a


# --- a custom statistic group ------------------------------------------------------------------


def _fold_count_positive(stats, x, y):
    stats.extra["positive"] = stats.extra.get("positive", 0) + int(np.count_nonzero(x > 0))


def _merge_count_positive(into, other):
    into.extra["positive"] = into.extra.get("positive", 0) + other.extra.get("positive", 0)


POSITIVE = register_group(StatGroup("positive", _fold_count_positive, _merge_count_positive))


def _positive_share(stats):
    return stats.extra.get("positive", 0) / stats.count


def test_a_custom_group_folds_beside_the_fused_kernel(kernel_backend):
    x = np.random.default_rng(2).standard_normal(300_001).astype(np.float16)
    metric = Metric("PositiveShare", frozenset({"positive"}), _positive_share)
    result = compare_arrays(x, x.astype(np.float32), METRICS[:1] + (metric,), chunk=100_000)
    assert result.values["PositiveShare"] == np.count_nonzero(x > 0) / x.size
    assert result.values["CosineSimilarity"] == pytest.approx(1.0)
    parts = [fold_first(Stats(), x[a:b], x[a:b], [POSITIVE]) for a, b in ((0, 10), (10, x.size))]
    assert combine(*parts, [POSITIVE]).extra["positive"] == np.count_nonzero(x > 0)


def test_a_misspelt_group_fails_when_the_metric_is_made():
    with pytest.raises(ValueError, match="unknown statistic group 'dif'.*diff"):
        Metric("Broken", frozenset({"dif"}), _positive_share)
    with pytest.raises(ValueError, match="already registered"):
        register_group(StatGroup("diff", _fold_count_positive, _merge_count_positive))


# --- 10**8 elements --------------------------------------------------------------------------------


def _big_chunks(n, chunk):
    rng = np.random.default_rng(8)
    for start in range(0, n, chunk):
        y = rng.standard_normal(min(chunk, n - start), dtype=np.float32) * 4 + 1
        yield (y + np.float32(0.01) * y * y).astype(np.float16), y


def test_a_10e8_element_pair_keeps_its_digits():
    """The numba path on 10**8 elements, streamed, against a chunked reference (a few seconds).

    The reference sums each chunk with numpy's pairwise summation (error ~ log2(n) eps) and the
    chunk sums with math.fsum: accurate to ~1e-15, against which the kernel must hold 1e-11.
    """
    pytest.importorskip("numba", reason="numba is not installed (pip install precision-tool[fast])")
    compiled = kernels.numba_kernels()
    n, chunk = 10**8, 1 << 22
    acc = Accumulator(METRICS[:1] + METRICS[6:8])  # cosine, MAE, RMSE: one pass
    acc.kernels = compiled
    sums = {"xy": [], "xx": [], "yy": [], "abs": [], "sq": []}
    for x, y in _big_chunks(n, chunk):
        acc.update(x, y)
        xf, yf = x.astype(np.float64), y.astype(np.float64)
        d = xf - yf
        for key, terms in (("xy", xf * yf), ("xx", xf * xf), ("yy", yf * yf), ("abs", np.abs(d)), ("sq", d * d)):
            sums[key].append(float(np.sum(terms)))
    exact = {key: math.fsum(parts) for key, parts in sums.items()}
    s = acc.stats
    assert s.count == n
    for key, ours in (("xy", s.sum_xy), ("xx", s.sum_xx), ("yy", s.sum_yy), ("abs", s.sum_abs), ("sq", s.sum_sq)):
        assert ours == pytest.approx(exact[key], rel=1e-11), key
    cosine = exact["xy"] / math.sqrt(exact["xx"]) / math.sqrt(exact["yy"])
    assert abs(acc.result().values["CosineSimilarity"] - cosine) < 1e-11


# --- choosing the backend ----------------------------------------------------------------------


@pytest.fixture
def fresh_choice(monkeypatch):
    """numba_kernels() decides again (its answer is cached per process)."""
    kernels.numba_kernels.cache_clear()
    yield monkeypatch
    kernels.numba_kernels.cache_clear()


def test_without_numba_the_numpy_path_computes_the_same(fresh_choice):
    import sys

    fresh_choice.setitem(sys.modules, "precision_tool.compare.kernels_numba", None)  # import fails
    with pytest.warns(RuntimeWarning, match="numba kernels unavailable"):
        assert kernels.numba_kernels() is None
    x, y = _f16_extremes(np.random.default_rng(3), 300_000)
    assert kernels.numba_for(x.size) is None
    _check_against_reference(_fold_both_passes(x, y, "numpy"), x, y)


def test_numba_not_installed_is_the_numpy_path_without_a_warning(fresh_choice):
    import sys
    import warnings

    fresh_choice.setitem(sys.modules, "numba", None)  # as if not installed
    fresh_choice.delitem(sys.modules, "precision_tool.compare.kernels_numba", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kernels.numba_kernels() is None


def test_numba_can_be_switched_off_and_small_tensors_skip_it(fresh_choice):
    fresh_choice.setenv("PRECISION_TOOL_KERNELS", "numpy")
    assert kernels.numba_kernels() is None
    assert kernels.numba_for(kernels.NUMBA_MIN_SIZE - 1) is None


def test_the_kernel_cache_is_a_writable_directory_outside_the_data(fresh_choice, tmp_path):
    fresh_choice.delenv("NUMBA_CACHE_DIR", raising=False)
    fresh_choice.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert kernels.numba_cache_dir() == tmp_path / "cache" / "precision_tool" / "numba"
    assert (tmp_path / "cache" / "precision_tool" / "numba").is_dir()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    fresh_choice.setenv("XDG_CACHE_HOME", str(blocked))  # cannot hold a directory: the temp dir
    fallback = kernels.numba_cache_dir()
    assert fallback is not None and fallback.is_dir() and blocked not in fallback.parents
    fresh_choice.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert kernels.numba_cache_dir() == tmp_path / "mine"


@pytest.mark.parametrize(
    "values",
    [[0.0, 5e-324], [0.0, 2.225073858507203e-309], [3.0, 3.0], [1.0, np.inf], [-np.inf, np.inf, 0.0], [np.nan, 1.0]],
)
def test_kl_over_subnormal_zero_and_infinite_ranges(kernel_backend, values):
    """The normalisation (x - lo)/span where 1/span overflows, span is 0, or not finite."""
    x = np.array(values)
    y = x + np.linspace(0, 1, x.size)
    stats = _fold_both_passes(x, y, kernel_backend)
    expected = reference(x, y)
    for name in ("kl_sp", "kl_sq", "kl_cross"):
        ours, theirs = getattr(stats, name), expected[name]
        assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, rel=1e-12, abs=1e-300), name


_NUMBA_FIRST = """
import sys, numba
from pathlib import Path
from precision_tool.compare import numba_load
numba_load._use_cache_dir(Path(sys.argv[1]))
sys.path.insert(0, sys.argv[2])
import cached_probe
print(cached_probe.twice(2.0))
"""


def test_kernels_are_cached_outside_the_package_when_numba_was_imported_first(tmp_path):
    """numba reads NUMBA_CACHE_DIR at its import; a caller that imported numba before the tool
    still gets the private directory, not a cache beside the source (a real numba compile)."""
    import os
    import subprocess
    import sys

    source = tmp_path / "src"
    source.mkdir()
    (source / "cached_probe.py").write_text(
        "import numba\n\n@numba.njit(cache=True)\ndef twice(x):\n    return 2 * x\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    run = subprocess.run(
        [sys.executable, "-c", _NUMBA_FIRST, str(tmp_path / "cache"), str(source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "4.0"
    assert list((tmp_path / "cache").rglob("*.nbi")), "nothing was cached in the private directory"
    assert not list(source.rglob("*.nbi")), "the kernel was cached beside its source"


def test_the_numba_cache_dir_must_be_private(tmp_path, monkeypatch):
    import os

    from precision_tool.compare import kernels, numba_load

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(numba_load.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    assert kernels.numba_cache_dir() == tmp_path / "cache" / "precision_tool" / "numba"
    shared = tmp_path / "cache" / "precision_tool" / "numba"
    shared.chmod(0o777)  # writable by others: another user could plant kernels there
    (tmp_path / "tmp").mkdir()
    planted = tmp_path / "elsewhere"
    planted.mkdir()
    (tmp_path / "tmp" / f"precision_tool-numba-{os.getuid()}").symlink_to(planted)
    assert kernels.numba_cache_dir() is None  # neither candidate is used


COSINE_ALONE = [m for m in METRICS if m.name == "CosineSimilarity"]
FIRST_PASS_FIELDS = (*DISTANCE_FIELDS, "sum_x", "sum_y", "rel_sum", "rel_max", "x_lo", "x_hi", "y_lo", "y_hi")


@pytest.mark.parametrize(
    "metrics, fields",
    [(COSINE_ALONE, DISTANCE_FIELDS[:4]), (DISTANCE_METRICS, DISTANCE_FIELDS), (METRICS, FIRST_PASS_FIELDS)],
    ids=["cosine", "distance", "fused"],
)
@pytest.mark.parametrize("case", ["float16 extremes", "bfloat16", "float64 large mean", "int32 and uint8", "zeros"])
def test_a_first_chunk_goes_to_its_kernel_straight_with_the_references_statistics(monkeypatch, metrics, fields, case):
    """A pair's first chunk of dtypes the kernels read is folded by its kernel alone
    (kernels.first_chunk); integers go through fold_first's conversion. Either way the
    statistics are the float64 reference's."""
    pytest.importorskip("numba", reason="numba is not installed (pip install precision-tool[fast])")
    assert kernels.numba_kernels() is not None
    taken = []

    def first_chunk(*args):
        taken.append(found := real(*args))
        return found

    real = kernels.first_chunk
    monkeypatch.setattr(kernels, "first_chunk", first_chunk)
    x, y = CASES[case](np.random.default_rng(len(case) + 11))
    acc = Accumulator(metrics, numba=True)
    acc.update(x, y)
    expected = reference(x, y)
    for name in fields:
        _agree(name, getattr(acc.stats, name), expected[name], expected["scale"].get(name))
    readable = case != "int32 and uint8"  # the kernels read float16, bfloat16, float32 and float64
    assert len(taken) == 1 and (taken[0] is not None) == readable


def test_a_first_chunk_whose_sums_overflow_is_refolded_scaled():
    """float64 values near 1e200: x*x overflows, so the kernel's part is not taken
    (first_chunk gives None) and fold_first folds the chunk again at scaled magnitudes."""
    pytest.importorskip("numba", reason="numba is not installed (pip install precision-tool[fast])")
    compiled = kernels.numba_kernels()
    rng = np.random.default_rng(3)
    x = rng.standard_normal(4000) * 1e200
    y = x * (1 + 1e-3 * rng.standard_normal(4000))
    assert kernels.first_chunk(compiled, "cosine", x, y) is None
    acc = Accumulator(COSINE_ALONE, numba=True)
    acc.update(x, y)
    xs, ys = x / 1e200, y / 1e200  # exact scaling by a power of ten is not needed: a ratio
    expected = float(np.dot(xs, ys) / math.sqrt(np.dot(xs, xs) * np.dot(ys, ys)))
    assert acc.result().values["CosineSimilarity"] == pytest.approx(expected, rel=1e-12)


_LOG_EDGES = [2.0**-1022, 1.1920928955078125e-07, 0.5, 2**-0.5, np.nextafter(2**-0.5, 0), 1.0, np.nextafter(1.0, 2)]
_LOG_EDGES += [2**0.5, np.nextafter(2**0.5, 2), np.nextafter(2**0.5, 0), 2.0, 1e300, np.finfo(np.float64).max]


@settings(deadline=None)
@given(st.lists(st.floats(min_value=2.0**-1022, allow_infinity=False, allow_nan=False), min_size=1, max_size=64))
def test_the_kernels_logarithm_is_within_its_bound_of_numpys(values):
    """KL's logarithm (a series numba vectorises) against numpy's: within the 5e-13 its
    docstring gives, plus the rounding of a result as large as ln of float64's largest."""
    assert kernels.numba_kernels() is not None, "CI installs numba (the fast extra)"
    logs = _numba_logs()
    v = np.array(values + _LOG_EDGES)
    ours, theirs = np.empty_like(v), np.log(v)
    logs(v, ours)
    assert np.all(np.abs(ours - theirs) <= 5e-13 + 4 * np.spacing(np.abs(theirs)))
    special = np.array([np.inf, np.nan])
    out = np.empty(2)
    logs(special, out)
    assert out[0] == np.inf and math.isnan(out[1])


@functools.cache
def _numba_logs():
    import numba

    from precision_tool.compare import kernels_numba

    @numba.njit
    def logs(values, out):
        for i in range(values.size):
            out[i] = kernels_numba._log(values[i])

    return logs
