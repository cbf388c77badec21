"""The ten metrics: msaccucmp's numbers on the small fixture, streaming = one-shot, edge rules."""

from __future__ import annotations

import csv
import json
import math
import re
from unittest import mock

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from precision_tool import PrecisionToolError, read_dump, read_golden
from precision_tool.compare import kernels
from precision_tool.compare import metrics as M
from precision_tool.compare.metrics import (
    METRIC_NAMES,
    METRICS,
    Accumulator,
    Metric,
    compare_arrays,
    select_metrics,
    shape_mismatch,
)
from tests.conftest import FIXTURES

NUMERIC = [m.name for m in METRICS if not m.text]


# --- the reference CSV of the small fixture --------------------------------------------------


def _reference_rows():
    case_dir = FIXTURES / "small"
    with open(case_dir / "reference_result.csv", newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = _unique(next(reader))
        rows = [dict(zip(header, cells)) for cells in reader]
    return [pytest.param(row, id=row["TensorIndex"]) for row in rows if row["TensorIndex"] != "NaN"]


def _unique(names):
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}.{seen[name] - 1}")
    return out


def _host_pair(case_dir, tensor_index):
    case = json.loads((case_dir / "case.json").read_text())
    tensor = next(t for t in case["tensors"] if t["tensor_id"] == tensor_index)
    files = {f["op"]: case_dir / f["file"] for f in case["dump_files"][str(case["golden_step"])]}
    dump = read_dump(files[tensor["op"]])
    side = dump.inputs if tensor["kind"] == "input" else dump.outputs
    x = side[tensor["index"]].host()
    name, index = tensor["golden"].rsplit(":", 1)
    y = read_golden(case_dir / "precision_data/tf/dump").lookup(name, int(index))
    return x, y


def _agrees(ours: float, reference: str, rel: float) -> bool:
    # the reference is printed with 6 decimals: allow its rounding (and "-0.000000" == 0)
    value = float(reference)
    if math.isnan(value):
        return math.isnan(ours)
    return math.isclose(ours, value, rel_tol=rel, abs_tol=1e-6)


@pytest.mark.parametrize("reference", _reference_rows())
@pytest.mark.parametrize("chunk", [7, 1 << 22])
def test_every_reference_row_agrees_with_msaccucmp(small_case, reference, chunk, kernel_backend):
    x, y = _host_pair(small_case, reference["TensorIndex"])
    # msaccucmp shows the flat length for some ND tensors ([16] for [2,8]): compare sizes
    assert x.size == math.prod(json.loads(reference["Shape"]))
    # the engine's contract: flat chunks in their stored dtypes, a second pass for KL
    xf, yf = np.ascontiguousarray(x).ravel(), np.ascontiguousarray(y).ravel()
    acc = Accumulator(METRICS)
    for start in range(0, xf.size, chunk):
        acc.update(xf[start : start + chunk], yf[start : start + chunk])
    assert acc.needs_second_pass
    for start in range(0, xf.size, chunk):
        acc.update_second(xf[start : start + chunk], yf[start : start + chunk])
    result = acc.result()
    assert abs(result.value("CosineSimilarity") - float(reference["CosineSimilarity"])) <= 1e-6
    for name in NUMERIC[1:]:
        assert _agrees(result.value(name), reference[name], 1e-5), name
    assert result.std_text == reference["StandardDeviation"]
    assert result.fail_reason == reference["CompareFailReason"]


def test_the_planted_defect_row_to_the_printed_digits(small_case, kernel_backend):
    result = compare_arrays(*_host_pair(small_case, "model/add/add:output:0"))
    expected = [0.505089, 5.783783, 1944.898682, 0.868205, 0.338589, 1.173538, 1.498777, 161.276947, 1.899315]
    # float64 here vs msaccucmp's float32: the relative-error sums differ in the 8th digit
    # (1944.898744, 161.276944); everything else prints the same 6 decimals
    assert [result.value(name) for name in NUMERIC] == pytest.approx(expected, rel=1e-7, abs=5e-7)
    assert result.std_text == "(0.530;0.889),(0.416;1.676)"


# --- streaming equals the one-shot float64 formulas -------------------------------------------


def _one_shot(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """FORMATS.md section 6 written the obvious way, whole arrays, float64."""
    eps = np.finfo(np.float64).eps
    with np.errstate(all="ignore"):
        nx, ny = np.linalg.norm(x), np.linalg.norm(y)
        if x.size == 1 or (nx <= eps and ny <= eps):  # a 1-element tensor is a scalar
            cos = 1.0
        elif nx <= eps or ny <= eps:
            cos = None
        else:
            cos = float(np.minimum(np.sum(x * y) / (nx * ny), 1.0))
        rel = np.where(np.abs(y) > eps, np.abs(x / y - 1), 0)
        red = 0.0 if np.sqrt(np.sum(y**2)) <= eps else float(np.sqrt(np.sum((x - y) ** 2) / np.sum(y**2)))

        def norm(a):
            span = a.max() - a.min()
            return np.maximum((a - a.min()) / span if span != 0 else a, np.finfo(np.float32).eps)

        p, q = norm(x), norm(y)
        p, q = p / p.sum(), q / q.sum()
        kl = float(np.sum(p * np.log(p / q)))
        return {
            "CosineSimilarity": cos,
            "MaxAbsoluteError": float(np.max(np.abs(x - y))),
            "AccumulatedRelativeError": float(rel.sum()),
            "RelativeEuclideanDistance": red,
            "KullbackLeiblerDivergence": 0.0 if abs(kl) < eps else kl,
            "MeanAbsoluteError": float(np.mean(np.abs(x - y))),
            "RootMeanSquareError": float(np.sqrt(np.mean((x - y) ** 2))),
            "MaxRelativeError": float(rel.max()),
            "MeanRelativeError": float(rel.mean()),
            "mean": (float(np.mean(x)), float(np.mean(y))),
            "std": (float(np.std(x)), float(np.std(y))),
        }


# KL sums P ln P - P ln Q: terms of either sign whose sum may be far smaller than their magnitude,
# so its rounding is relative to sum |P ln P| (kernels.py), not to the result.
KL_TOLERANCE = {"rel": 1e-9, "abs_": 1e-9}


def _close(a, b, rel=1e-9, abs_=1e-9):
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


_values = st.one_of(
    st.floats(-1e3, 1e3),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-20]),
    st.just(math.nan),
    st.sampled_from([math.inf, -math.inf]),
)
_arrays = st.integers(1, 60).flatmap(
    lambda n: st.tuples(st.lists(_values, min_size=n, max_size=n), st.lists(_values, min_size=n, max_size=n))
)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_streaming_over_any_chunking_equals_the_one_shot_formulas(backend):
    kernel = _kernels_for(backend)  # hypothesis runs many examples: a fixture would be shared

    @settings(max_examples=300, deadline=None)
    @given(_arrays, st.integers(1, 17), st.integers(1, 9))
    def check(pair, chunk, block):
        with mock.patch.object(kernels, "numba_for", lambda size, wanted=None: kernel):
            _streaming_equals_one_shot(pair, chunk, block)

    check()


def _kernels_for(backend):
    if backend == "numpy":
        return None
    pytest.importorskip("numba", reason="numba is not installed (pip install precision-tool[fast])")
    return kernels.numba_kernels()


def _streaming_equals_one_shot(pair, chunk, block):
    x, y = np.array(pair[0]), np.array(pair[1])
    expected = _one_shot(x, y)
    with mock.patch.object(kernels, "BLOCK", block):  # blocks inside chunks split too
        result = compare_arrays(x, y, chunk=chunk)
        acc = Accumulator(select_metrics("StandardDeviation"))
        for start in range(0, x.size, chunk):
            acc.update(x[start : start + chunk], y[start : start + chunk])
    for name in NUMERIC:
        got = result.values.get(name)
        tolerance = KL_TOLERANCE if name == "KullbackLeiblerDivergence" else {}
        assert _close(got, expected[name], **tolerance), (name, got, expected[name])
    s = acc.stats
    for i, (total, m2) in enumerate(((s.sum_x, s.m2_x), (s.sum_y, s.m2_y))):
        assert _close(total / s.count, expected["mean"][i])
        assert _close(math.sqrt(m2 / s.count) if m2 >= 0 else math.nan, expected["std"][i], abs_=1e-6)


@given(st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=40), st.floats(0.01, 10))
@example([0.0, 5e-324], 1.0)  # a subnormal range: 1/span overflows, (x - lo)/span does not
@example([0.0, 2.225073858507203e-309], 1.0)
def test_kl_decomposition_equals_the_direct_sum(values, scale):
    x = np.array(values)
    y = x * scale + np.linspace(0, 1, x.size)
    direct = _one_shot(x, y)["KullbackLeiblerDivergence"]
    assert _close(compare_arrays(x, y, select_metrics("4")).value("KullbackLeiblerDivergence"), direct, **KL_TOLERANCE)


def test_std_survives_a_large_mean():
    rng = np.random.default_rng(1)
    x = 1e7 + rng.standard_normal(200_000) * 1e-2
    acc = Accumulator(select_metrics("StandardDeviation"))
    for start in range(0, x.size, 10_000):
        acc.update(x[start : start + 10_000], x[start : start + 10_000])
    assert math.sqrt(acc.stats.m2_x / acc.stats.count) == pytest.approx(np.std(x), rel=1e-6)


# --- edge rules ---------------------------------------------------------------------------


def test_both_sides_zero_give_cosine_one():
    result = compare_arrays(np.zeros(5), np.zeros(5))
    assert result.values["CosineSimilarity"] == 1.0
    assert result.fail_reason == ""


@pytest.mark.parametrize("x, y, side", [(np.zeros(4), np.ones(4), "NPU"), (np.ones(4), np.zeros(4), "golden")])
def test_one_side_zero_is_not_compared_by_cosine(x, y, side):
    result = compare_arrays(x, y)
    assert "CosineSimilarity" not in result.values and math.isnan(result.value("CosineSimilarity"))
    assert "all data is zero" in result.fail_reason and side in result.fail_reason
    assert result.values["MaxAbsoluteError"] == 1.0


def test_cosine_is_capped_at_one():
    rounded_up = M.Stats(count=2, sum_xy=1.0 + 4e-16, sum_xx=1.0, sum_yy=1.0)
    assert METRICS[0].compute(rounded_up) == 1.0
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.standard_normal(rng.integers(2, 50)) * 10.0 ** rng.integers(-5, 5)
        assert compare_arrays(x, x.copy(), select_metrics("0")).values["CosineSimilarity"] <= 1.0


def test_scalar_cosine_is_one_and_the_rest_are_computed():
    result = compare_arrays(np.array([[2.0]]), np.array([[1.0]]))
    assert result.values["CosineSimilarity"] == 1.0
    assert result.fail_reason == "This tensor is scalar."
    assert result.values["MaxAbsoluteError"] == 1.0
    assert result.values["MaxRelativeError"] == 1.0
    assert result.values["KullbackLeiblerDivergence"] == pytest.approx(0.0, abs=1e-6)  # 0 range: p = q = 1
    assert result.std_text == "(2.000;0.000),(1.000;0.000)"
    assert M.is_scalar_shape(()) and M.is_scalar_shape((1, 1, 1)) and not M.is_scalar_shape((1, 2))
    assert M.is_scalar_shape([np.int64(1), 1]) and not M.is_scalar_shape((0,)) and not M.is_scalar_shape((1, 0))


def test_bool_tensors_get_only_cosine_and_relative_euclidean_distance():
    x = np.array([True, False, True, True])
    y = np.array([True, False, False, True])
    result = compare_arrays(x, y)
    assert set(result.values) == {"CosineSimilarity", "RelativeEuclideanDistance"}
    assert result.values["CosineSimilarity"] == pytest.approx(2 / math.sqrt(6))
    assert result.values["RelativeEuclideanDistance"] == pytest.approx(math.sqrt(1 / 2))
    assert "bool" in result.fail_reason and result.std_text == "NaN"


def test_empty_tensors_are_not_compared_with_a_reason():
    result = compare_arrays(np.zeros((0, 3)), np.zeros((0, 3)))
    assert result.values == {} and "empty" in result.fail_reason


def test_shape_mismatch_names_both_shapes():
    result = compare_arrays(np.zeros((2, 3)), np.zeros((3, 2)))
    assert result.values == {} and "[2,3]" in result.fail_reason and "[3,2]" in result.fail_reason
    assert shape_mismatch((4,), (2, 2)).fail_reason == "Shape mismatch: NPU [4] vs golden [2,2]."


def test_nan_and_inf_propagate_as_computed_values():
    result = compare_arrays(np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]))
    assert all(
        math.isnan(result.values[name])
        for name in ("CosineSimilarity", "MaxAbsoluteError", "KullbackLeiblerDivergence", "MeanRelativeError")
    )
    assert result.std_text == "(nan;nan),(2.000;0.816)"
    result = compare_arrays(np.array([1.0, np.inf, 3.0]), np.array([1.0, 2.0, 3.0]))
    assert result.values["MaxAbsoluteError"] == math.inf and math.isnan(result.values["CosineSimilarity"])
    # a NaN golden value fails msaccucmp's |y| > eps mask: its relative term is 0
    result = compare_arrays(np.array([1.0, 2.0]), np.array([1.0, np.nan]))
    assert result.values["AccumulatedRelativeError"] == 0.0


def test_identical_tensors_give_exactly_zero_kl():
    x = np.linspace(-3, 5, 1000)
    assert compare_arrays(x, x.copy()).values["KullbackLeiblerDivergence"] == 0.0


def test_small_means_and_stds_print_as_zero_without_sign():
    x = np.array([-0.0004, -0.0004])
    assert compare_arrays(x, x.copy()).std_text == "(0.000;0.000),(0.000;0.000)"
    x = np.array([-0.004, 0.004, -0.010])
    assert compare_arrays(x, x.copy()).std_text == "(-0.003;0.006),(-0.003;0.006)"


# --- selection and pluggability -----------------------------------------------------------


def test_select_metrics_by_index_name_and_all():
    assert [m.name for m in select_metrics("0")] == ["CosineSimilarity"]
    # the order given, as msaccucmp's -alg 5,1 writes StandardDeviation before MaxAbsoluteError
    assert [m.name for m in select_metrics("meanrelativeerror, 1, 9")] == ["MeanRelativeError", "MaxAbsoluteError"]
    assert [m.name for m in select_metrics([3, "KullbackLeiblerDivergence"])] == [
        "RelativeEuclideanDistance",
        "KullbackLeiblerDivergence",
    ]
    assert select_metrics("all") == METRICS == select_metrics(None)
    assert METRIC_NAMES[0] == "CosineSimilarity" and len(METRIC_NAMES) == 10
    with pytest.raises(PrecisionToolError, match="unknown metric 'cosine'"):
        select_metrics("cosine")
    with pytest.raises(PrecisionToolError):
        select_metrics("10")


def test_cosine_only_needs_one_pass_and_three_sums(kernel_backend):
    chosen = select_metrics("0")
    acc = Accumulator(chosen)
    assert acc.groups == {"xy", "xx", "yy"} and not acc.needs_second_pass
    assert Accumulator(METRICS).needs_second_pass and not Accumulator(METRICS, boolean=True).needs_second_pass
    acc.update(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    assert acc.result().values == {"CosineSimilarity": pytest.approx(1.0)}
    assert acc.stats.max_abs == -math.inf and acc.stats.kl_sp == 0.0 and acc.stats.x_lo == math.inf


def test_chunks_of_different_shapes_are_a_programming_error():
    with pytest.raises(ValueError, match="chunk shapes"):
        Accumulator(select_metrics("0")).update(np.zeros(3), np.zeros(4))


def _sum_squared(s):
    return s.sum_sq


def test_an_eleventh_metric_is_one_more_object():
    squared = Metric("SumSquaredError", frozenset({"diff"}), _sum_squared)
    assert select_metrics(["0", squared]) == (METRICS[0], squared)
    acc = Accumulator(select_metrics("0") + (squared,))
    acc.update(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0]))
    assert acc.result().values["SumSquaredError"] == 4.0


def test_float16_chunks_are_upcast_block_by_block():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(100_000).astype(np.float16)
    y = x.astype(np.float32) + np.float32(1e-3)
    wide = compare_arrays(x.astype(np.float64), y.astype(np.float64))
    narrow = compare_arrays(x, y, chunk=33_333)
    for name in NUMERIC:
        rel = 1e-6 if name == "KullbackLeiblerDivergence" else 1e-9  # its log is taken in float32
        assert narrow.values[name] == pytest.approx(wide.values[name], rel=rel, abs=1e-15)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_the_standard_deviation_s_square_root_is_numpy_s(value):
    from precision_tool.compare.metrics import _sqrt

    with np.errstate(all="ignore"):
        expected = float(np.sqrt(value))
    got = _sqrt(value)
    assert (math.isnan(got) and math.isnan(expected)) or (
        got == expected and math.copysign(1, got) == math.copysign(1, expected)
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 12).map(str), st.sampled_from(METRIC_NAMES), st.just(" all "), st.just("")), max_size=4
    )
)
def test_alg_words_read_without_numpy_agree_with_the_metrics_they_select(words):
    """vc's fork-server guess (metric_table, no numpy) and select_metrics + the kernels' rule
    answer the same for any -alg words: the same error, or the same cosine-alone verdict; and
    that verdict is msaccucmp's -alg read by hand: cosine alone is index 0 or its name, alone."""
    from precision_tool.compare.metric_table import words_need_cosine_sums_only

    spec = ",".join(w.upper() if k % 2 else w for k, w in enumerate(words))
    try:
        expected = kernels.needs_cosine_sums_only(select_metrics(spec))
    except PrecisionToolError as exc:
        with pytest.raises(PrecisionToolError, match=re.escape(exc.problem)):
            words_need_cosine_sums_only(spec)
        return
    assert words_need_cosine_sums_only(spec) is expected
    named = [w.strip().lower() for w in words if w.strip()]
    assert expected is all(w in ("0", "cosinesimilarity") for w in named)
