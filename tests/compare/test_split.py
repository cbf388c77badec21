"""Issue 16.4 / 13.7: one tensor compared in ranges on several workers (partial statistics
combined) gives the unsplit row to the printed decimals and the float64 reference's values;
every kind of Source reads any range of its elements."""

from __future__ import annotations

import math
import multiprocessing

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool import read_dump
from precision_tool.compare import engine, split
from precision_tool.compare import sides as side_opening
from precision_tool.compare.engine import compare_tasks
from precision_tool.compare.golden_pairing import DumpSide, NpySide, PairTask
from precision_tool.compare.jobs import plan_jobs
from precision_tool.compare.load import Buffers
from precision_tool.compare.metric_data import Metric, StatGroup, Stats
from precision_tool.compare.metric_table import METRIC_NAMES
from precision_tool.compare.metrics import select_metrics
from precision_tool.compare.result_csv import write_result_csv
from precision_tool.compare.sides import ReadCache, open_dump_side, open_npy_side, range_extent
from precision_tool.compare.stat_groups import register_group
from precision_tool.compare.window import stream_units
from precision_tool.formats.dump_write import TensorSpec, write_dump
from precision_tool.formats.golden import write_golden
from precision_tool.formats.layouts import to_device
from tests.compare.test_kernels import _f16_extremes
from tests.compare.test_metrics import KL_TOLERANCE, _close, _one_shot

STAMP = 1700000000000000
NUMERIC = [n for n in METRIC_NAMES if n != "StandardDeviation"]


def _task(i: int, name: str, left, right) -> PairTask:
    return PairTask(i, "Op", name, name, f"{name}:output:0", left, right)


def _dump(tmp_path, name: str, host: np.ndarray, fmt: str = "ND", dtype: str = "FLOAT16", host_format: str = "NHWC"):
    """An NPU dump of ``host`` in device format ``fmt``; returns its DumpSide."""
    device = host if fmt == "ND" else to_device(host, fmt, host_format)
    original = (host.shape, (name, 0, host_format)) if fmt != "ND" else (host.shape, None)
    path = write_dump(tmp_path / f"Op.{name}.1.0.{STAMP}", name, [], [TensorSpec(device, dtype, fmt, *original)])
    return DumpSide(path, "output", 0)


def _pair(tmp_path, name, npu, golden, fmt="ND", dtype="FLOAT16", host_format="NHWC"):
    left = _dump(tmp_path, name, npu, fmt, dtype, host_format)
    right = NpySide(write_golden(tmp_path, name, 0, 1, golden))
    return _task(0, name, left, right)


def _rows(tasks, metrics=None, split_bytes=0, workers=2):
    chosen = select_metrics(metrics)
    return list(compare_tasks(tasks, chosen, workers=workers, split_bytes=split_bytes, chunk=4096))


def _csv(tmp_path, name, rows, metrics=None):
    return write_result_csv(tmp_path / name, rows, metrics=select_metrics(metrics)).read_bytes()


def _units(task, split_bytes):
    plan = plan_jobs([task], select_metrics(None), 4096)
    return split.split_units(plan.jobs, plan.job_args, plan.sizes, split_bytes)


# --- ranges of every kind of Source ---------------------------------------------------------


def _streamed(source, start, stop, chunk):
    blocks = [b.copy() for b in source.blocks(chunk, Buffers(), "x", start, stop)]
    return np.concatenate(blocks) if blocks else np.zeros(0, source.dtype)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """One Source of each kind and layout the engine streams, and its host tensor (flat) as the
    layout code converts it whole."""
    tmp = tmp_path_factory.mktemp("sources")
    rng = np.random.default_rng(5)
    nhwc = rng.standard_normal((3, 5, 4, 20)).astype(np.float16)
    by_kind = {
        "FileRegion (ND dump)": _dump(tmp, "nd", nhwc),
        "DeviceRows (NC1HWC0, padded)": _dump(tmp, "rows", nhwc, "NC1HWC0"),
        "DeviceRows (FRACTAL_NZ 3-D)": _dump(tmp, "nz", nhwc[0], "FRACTAL_NZ", host_format="ND"),
        "ArrayBlocks (NCHW dump, NHWC host)": _dump(tmp, "view", nhwc, "NCHW", host_format="NHWC"),
    }
    saved = side_opening.SMALL_DUMP_BYTES
    try:  # these small files streamed from disk, as large ones are ...
        side_opening.SMALL_DUMP_BYTES = 0
        opened = {kind: open_dump_side(side, ReadCache()) for kind, side in by_kind.items()}
    finally:
        side_opening.SMALL_DUMP_BYTES = saved
    # ... and read whole into memory, as small ones are
    by_kind["ArrayBlocks (ND dump in memory)"] = by_kind["FileRegion (ND dump)"]
    by_kind["DeviceRows (NC1HWC0 in memory)"] = by_kind["DeviceRows (NC1HWC0, padded)"]
    for kind in ("ArrayBlocks (ND dump in memory)", "DeviceRows (NC1HWC0 in memory)"):
        opened[kind] = open_dump_side(by_kind[kind], ReadCache())
    wholes = {kind: read_dump(side.path).outputs[0].host().reshape(-1) for kind, side in by_kind.items()}
    fortran = np.asfortranarray(rng.standard_normal((6, 7, 5)).astype(np.float32))
    np.save(tmp / "fortran.npy", fortran)
    opened["ArrayBlocks (Fortran .npy)"] = open_npy_side(NpySide(tmp / "fortran.npy"))
    wholes["ArrayBlocks (Fortran .npy)"] = fortran.reshape(-1)  # C order, as every side streams
    return opened, wholes


def test_each_kind_is_the_kind_named(sources):
    opened, _ = sources
    for kind, source in opened.items():
        assert kind.startswith(type(source).__name__), kind


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_range_of_any_source_is_that_slice_of_the_host_tensor(sources, data):
    opened, wholes = sources
    kind = data.draw(st.sampled_from(sorted(opened)))
    source, whole = opened[kind], wholes[kind]
    start = data.draw(st.integers(0, source.size))
    stop = data.draw(st.integers(start, source.size))
    chunk = data.draw(st.sampled_from([1, 7, 64, 1 << 20]))
    np.testing.assert_array_equal(_streamed(source, start, stop, chunk), whole[start:stop], err_msg=kind)


def test_device_rows_read_in_rows_and_a_whole_run_in_any_range(sources):
    opened, _ = sources
    assert opened["DeviceRows (NC1HWC0, padded)"].unit == 5 * 4 * 20
    assert opened["FileRegion (ND dump)"].unit == 1


# --- where to cut -----------------------------------------------------------------------------


@pytest.mark.parametrize("size, unit, pieces", [(100, 1, 3), (120, 40, 5), (7, 7, 4), (4096 * 244_141, 4096, 7)])
def test_split_points_cover_the_tensor_on_whole_units(size, unit, pieces):
    points = split.split_points(size, unit, pieces)
    assert points[0] == 0 and points[-1] == size
    assert all(a < b for a, b in zip(points, points[1:]))
    assert all(p % unit == 0 for p in points)
    assert len(points) - 1 == min(pieces, size // unit)


def test_the_split_size_is_the_setting_or_half_a_workers_share_within_bounds():
    assert split.split_size(10**12, 2, setting=12345) == 12345
    assert split.split_size(8 << 30, 4) == 1 << 30
    assert split.split_size(1 << 30, 4) == 128 << 20
    assert split.split_size(10 << 20, 8) == split.SPLIT_MIN_BYTES
    assert split.split_size(10**15, 2) == split.SPLIT_MAX_BYTES


def test_only_the_big_tensor_is_split_and_the_job_is_cut_around_it(tmp_path):
    rng = np.random.default_rng(2)
    small = rng.standard_normal((4, 8)).astype(np.float32)
    big = rng.standard_normal((64, 50)).astype(np.float32)
    path = write_dump(
        tmp_path / f"Op.m.1.0.{STAMP}",
        "m",
        [TensorSpec(small.astype(np.float16), "FLOAT16")],
        [TensorSpec(big.astype(np.float16), "FLOAT16"), TensorSpec(small.astype(np.float16), "FLOAT16")],
    )
    goldens = [write_golden(tmp_path, f"g{i}", 0, 1, a) for i, a in enumerate((small, big, small))]
    tasks = [
        PairTask(0, "Op", "m", "m", f"m:{kind}:{i}", DumpSide(path, kind, i), NpySide(g))
        for (kind, i), g in zip([("input", 0), ("output", 0), ("output", 1)], goldens)
    ]
    plan = plan_jobs(tasks, select_metrics(None), 4096)
    assert [len(job) for job in plan.jobs] == [3]
    units = split.split_units(plan.jobs, plan.job_args, plan.sizes, split_bytes=4000)
    assert [type(u).__name__ for u in units] == ["list", "SplitCompare", "list"]
    assert units[1].pieces == math.ceil((64 * 50 * 2 + 64 * 50 * 4 + 128) / 4000)  # fp16 + npy bytes
    assert units[1].bounds[-1] == 64 * 50
    assert sum(unit.calls for unit in engine._units(plan, 2, 4000)) == 2 + units[1].pieces


def test_a_side_converted_whole_on_opening_is_not_split(tmp_path):
    weight = np.random.default_rng(1).standard_normal((3, 3, 16, 32)).astype(np.float16)
    side = _dump(tmp_path, "w", weight, "FRACTAL_Z", host_format="HWCN")
    assert range_extent(side, ReadCache()) is None
    golden = NpySide(write_golden(tmp_path, "w", 0, 1, weight.astype(np.float32)))
    assert [type(u).__name__ for u in _units(_task(0, "w", side, golden), 100)] == ["list"]


# --- split equals unsplit, and the float64 reference ------------------------------------------


def _with_nonfinite(rng, n):
    x, y = (rng.standard_normal(n) * 3).astype(np.float16), rng.standard_normal(n).astype(np.float32)
    x[[7, n // 2]] = [np.nan, np.inf]
    y[n - 3] = -np.inf
    return x, y


PAIRS = {
    "float16 extremes": lambda rng: _f16_extremes(rng, 40_000),
    "bfloat16 vs float32": lambda rng: (
        rng.standard_normal(30_000).astype(ml_dtypes.bfloat16),
        rng.standard_normal(30_000).astype(np.float32),
    ),
    "large mean": lambda rng: (
        (1e4 + rng.standard_normal(30_000)).astype(np.float32),
        (1e4 + rng.standard_normal(30_000)).astype(np.float32),
    ),
    "golden zeros": lambda rng: (rng.standard_normal(20_000).astype(np.float16), np.zeros(20_000, np.float32)),
    "NaN and Inf": lambda rng: _with_nonfinite(rng, 20_000),
}
DTYPES = {"float16": "FLOAT16", "float32": "FLOAT", "bfloat16": "BF16"}


@pytest.mark.parametrize("case", list(PAIRS))
@pytest.mark.parametrize("metrics", [None, "0"])
def test_split_rows_print_what_the_unsplit_engine_prints(tmp_path, case, metrics, kernel_backend):
    x, y = PAIRS[case](np.random.default_rng(11))
    task = _pair(tmp_path, "t", x.reshape(-1, 100), y.reshape(-1, 100), dtype=DTYPES[x.dtype.name])
    split_rows = _rows([task], metrics, split_bytes=20_000)
    assert [type(u).__name__ for u in _units(task, 20_000)] == ["SplitCompare"]
    whole_rows = _rows([task], metrics, workers=1)
    assert _csv(tmp_path, "split.csv", split_rows, metrics) == _csv(tmp_path, "whole.csv", whole_rows, metrics)
    assert split_rows[0].fail_reason == whole_rows[0].fail_reason
    if case == "NaN and Inf":
        assert "The NPU tensor holds 1 NaN and 1 Inf. The golden tensor holds 1 Inf." in split_rows[0].fail_reason


@pytest.mark.parametrize("case", ["float16 extremes", "bfloat16 vs float32", "large mean"])
def test_split_values_equal_the_float64_reference(tmp_path, case, kernel_backend):
    x, y = PAIRS[case](np.random.default_rng(3))
    task = _pair(tmp_path, "r", x.reshape(-1, 100), y.reshape(-1, 100), dtype=DTYPES[x.dtype.name])
    (row,) = _rows([task], split_bytes=10_000)
    expected = _one_shot(x.astype(np.float64), y.astype(np.float64))
    for name in NUMERIC:
        tolerance = KL_TOLERANCE if name.startswith("Kullback") else {}
        assert _close(row.metrics[name], expected[name], **tolerance), (name, row.metrics[name], expected[name])
    mean, std = expected["mean"], expected["std"]
    zero = lambda v: 0.0 if abs(v) < 0.001 else v  # noqa: E731 -- msaccucmp prints tiny ones as 0
    assert row.std_text == "(%.3f;%.3f),(%.3f;%.3f)" % (zero(mean[0]), zero(std[0]), zero(mean[1]), zero(std[1]))


def test_a_row_separable_layout_splits_on_rows_and_matches(tmp_path, kernel_backend):
    rng = np.random.default_rng(8)
    golden = rng.standard_normal((40, 6, 5, 20)).astype(np.float32)
    npu = (golden + 0.01 * rng.standard_normal(golden.shape)).astype(np.float16)
    task = _pair(tmp_path, "nc", npu, golden, fmt="NC1HWC0")
    (unit,) = _units(task, 30_000)
    assert unit.pieces > 2 and all(b % (6 * 5 * 20) == 0 for b in unit.bounds)
    assert _csv(tmp_path, "s.csv", _rows([task], split_bytes=30_000)) == _csv(
        tmp_path, "w.csv", _rows([task], workers=1)
    )


# custom metrics: a first-pass group keeping state in ``extra``, and one that needs the ranges


def _fold_above_mid(stats, x, y, ranges):
    mid = (ranges[1].lo + ranges[1].hi) / 2
    stats.extra["above"] = stats.extra.get("above", 0) + int(np.count_nonzero(y > mid))


def _merge_above_mid(into, other):
    into.extra["above"] = into.extra.get("above", 0) + other.extra.get("above", 0)


def _fold_sum_abs_x(stats, x, y):
    stats.extra["abs_x"] = stats.extra.get("abs_x", 0.0) + float(np.abs(x).sum())


def _merge_sum_abs_x(into, other):
    into.extra["abs_x"] = into.extra.get("abs_x", 0.0) + other.extra.get("abs_x", 0.0)


register_group(StatGroup("above_mid", _fold_above_mid, _merge_above_mid, needs_ranges=True))
register_group(StatGroup("sum_abs_x", _fold_sum_abs_x, _merge_sum_abs_x))


def _above_share(s: Stats) -> float:
    return s.extra.get("above", 0) / s.count


def _mean_abs_x(s: Stats) -> float:
    return s.extra.get("abs_x", 0.0) / s.count


ABOVE = Metric("AboveMidShare", frozenset({"above_mid"}), _above_share)
MEAN_ABS_X = Metric("MeanAbsNPU", frozenset({"sum_abs_x"}), _mean_abs_x)


def test_custom_groups_of_both_passes_combine_across_ranges(tmp_path):
    rng = np.random.default_rng(4)
    y = rng.standard_normal((300, 70)).astype(np.float32)
    x = (y + 0.1).astype(np.float16)
    task = _pair(tmp_path, "c", x, y)
    (row,) = _rows([task], ["0", ABOVE, MEAN_ABS_X], split_bytes=20_000)
    assert multiprocessing.active_children() == []
    mid = (y.min() + y.max()) / 2
    assert row.metrics["AboveMidShare"] == np.count_nonzero(y > mid) / y.size
    assert row.metrics["MeanAbsNPU"] == pytest.approx(np.abs(x.astype(np.float64)).mean(), rel=1e-12)


def test_a_range_that_cannot_be_read_becomes_the_rows_reason(tmp_path):
    """The file shrinks after the parent opened it: the piece that reads past its end fails,
    the row says why, and the rows around it are computed."""
    rng = np.random.default_rng(6)
    y = rng.standard_normal((400, 50)).astype(np.float32)
    task = _pair(tmp_path, "cut", y.astype(np.float16), y)
    (tmp_path / "ok").mkdir()
    other = _pair(tmp_path / "ok", "ok", y[:4].astype(np.float16), y[:4])
    plan = plan_jobs([task, other], select_metrics(None), 4096)
    units = engine._units(plan, 2, 20_000)
    assert [type(u).__name__ for u in units] == ["SplitCompare", "JobUnit"]
    path = task.left.path
    path.write_bytes(path.read_bytes()[:-1000])
    rows = list(stream_units(units, _InlineExecutor().submit, 4, engine._Tracker(lambda: 2, None).emit))
    assert "truncated" in rows[0].fail_reason and not rows[0].metrics
    assert rows[1].compared and rows[1].cosine == pytest.approx(1.0, abs=1e-6)


class _Done:
    def __init__(self, value):
        self.value = value

    def done(self):
        return True

    def result(self):
        return self.value


class _InlineExecutor:
    """Runs each call when submitted: a deterministic stand-in for a pool."""

    def submit(self, fn, *args):
        return _Done(fn(*args))
