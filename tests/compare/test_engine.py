"""The streaming engine: msaccucmp's numbers, order, workers, bad tensors, Ctrl-C, streamed layouts."""

from __future__ import annotations

import math
import multiprocessing
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from precision_tool import read_dump, read_golden, read_graph
from precision_tool.compare import engine, jobs, pair_compare, sides
from precision_tool.compare.engine import compare_tasks
from precision_tool.compare.golden_pairing import DumpSide, NpySide, PairTask, pair_with_graph
from precision_tool.compare.jobs import JobStream
from precision_tool.compare.load import Buffers, aligned
from precision_tool.compare.metric_data import Metric, StatGroup
from precision_tool.compare.metric_table import METRIC_NAMES
from precision_tool.compare.metrics import select_metrics
from precision_tool.compare.result_csv import ResultWriter, write_result_csv
from precision_tool.compare.result_read import read_result_csv
from precision_tool.compare.sides import ReadCache, open_dump_side
from precision_tool.compare.stat_groups import register_group
from precision_tool.formats.dump_write import TensorSpec, build_dump, write_dump
from precision_tool.formats.golden import write_golden
from precision_tool.formats.layouts import to_device
from precision_tool.formats.proto.dumpdata import DumpData
from precision_tool.formats.tree import DumpTree
from tests.conftest import FIXTURES

GRAPH = "npu/debug_0/graph/ge_proto_00000001_Build.txt"
NUMERIC = [n for n in METRIC_NAMES if n != "StandardDeviation"]
LAST_PLACE = 1.000001e-6  # one unit of the 6th decimal both files print, plus float noise


def _tasks(root: Path) -> list[PairTask]:
    graph = read_graph(root / GRAPH).graphs[0]
    tree = DumpTree(root / "npu/debug_0/dump")
    (step,) = tree.select()
    return pair_with_graph(graph, tree.listing(step), read_golden(root / "tf/dump"))


def assert_agrees_with_reference(ours_csv: Path, reference_csv: Path) -> None:
    """Row for row: TensorIndex set, cosine 1e-6, other metrics 1e-5 relative, std text equal.

    Both files print 6 decimals, so one unit of the last place (1e-6) is allowed too.
    """
    ours = {r.tensor_index: r for r in read_result_csv(ours_csv) if r.tensor_index}
    reference = {r.tensor_index: r for r in read_result_csv(reference_csv) if r.tensor_index}
    assert set(ours) == set(reference)
    for key, ref in reference.items():
        row = ours[key]
        assert abs(row.cosine - ref.cosine) <= 1e-6 or math.isnan(row.cosine) and math.isnan(ref.cosine), key
        for name in NUMERIC[1:]:
            a, b = row.metric(name), ref.metric(name)
            both_nan = math.isnan(a) and math.isnan(b)
            assert both_nan or math.isclose(a, b, rel_tol=1e-5, abs_tol=LAST_PLACE), (key, name)
        assert row.std_text == ref.std_text, key


def test_fixture_rows_agree_with_msaccucmp(fixture_data, tmp_path, kernel_backend):
    rows = list(compare_tasks(_tasks(fixture_data)))
    out = write_result_csv(tmp_path / "ours.csv", rows)
    assert_agrees_with_reference(out, FIXTURES / "small" / "reference_result.csv")


def test_rows_come_in_task_order(fixture_data):
    tasks = _tasks(fixture_data)
    rows = list(compare_tasks(tasks, workers=2, chunk=5))
    assert [(r.index, r.tensor_index) for r in rows] == [(t.index, t.tensor_index) for t in tasks]
    assert [r.index for r in rows] == sorted(r.index for r in rows)


def test_one_and_two_workers_write_identical_csvs(sample_data, tmp_path):
    tasks = _tasks(sample_data)
    one = write_result_csv(tmp_path / "one.csv", compare_tasks(tasks, workers=1, chunk=97))
    two = write_result_csv(tmp_path / "two.csv", compare_tasks(tasks, workers=2, chunk=97))
    whole = write_result_csv(tmp_path / "whole.csv", compare_tasks(tasks, workers=1))
    assert one.read_bytes() == two.read_bytes() == whole.read_bytes()


def test_a_run_below_pool_min_bytes_starts_no_workers(sample_data, monkeypatch):
    """The line is drawn on the files' bytes, each file counted once (summed here from stat)."""
    tasks = _tasks(sample_data)
    files = {side.path for t in tasks if t.comparable for side in (t.left, t.right)}
    data_bytes = sum(os.stat(path).st_size for path in files)
    pools = []
    real = engine._pooled
    monkeypatch.setattr(engine, "_pooled", lambda *args: pools.append(args[2]) or real(*args))
    inline = list(compare_tasks(tasks, workers=2, pool_min_bytes=data_bytes + 1))
    assert pools == []
    pooled = list(compare_tasks(tasks, workers=2, pool_min_bytes=data_bytes))
    assert pools == [2] and pooled == inline


def test_spawned_workers_give_the_same_rows(fixture_data, monkeypatch):
    tasks = _tasks(fixture_data)
    monkeypatch.setattr(engine, "_mp_context", lambda: multiprocessing.get_context("spawn"))
    assert list(compare_tasks(tasks, workers=2)) == list(compare_tasks(tasks, workers=1))


def test_progress_counts_rows_and_both_sides_bytes(fixture_data):
    tasks = _tasks(fixture_data)
    calls = []
    rows = list(compare_tasks(tasks, progress=lambda *a: calls.append(a)))
    assert calls[-1][:2] == (len(rows), len(tasks))
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)
    expected = 0
    for task in (t for t in tasks if t.comparable):
        dump = read_dump(task.left.path)
        tensor = (dump.inputs if task.left.kind == "input" else dump.outputs)[task.left.index]
        expected += tensor.size + os.stat(task.right.path).st_size
    assert calls[-1][2] == expected


def test_consecutive_tasks_of_one_dump_file_are_one_job(fixture_data):
    tasks = _tasks(fixture_data)
    grouped = list(JobStream(tasks).jobs())
    assert sum(len(j) for j in grouped) == len(tasks)
    for job in grouped:
        assert len({t.left.path if t.left else None for t in job}) == 1
    conv = next(j for j in grouped if j[0].npu_name == "model/conv1/Conv2D")
    assert len(conv) == 4  # three inputs and the output: one header read


def test_alg_0_computes_cosine_only(fixture_data):
    rows = [r for r in compare_tasks(_tasks(fixture_data), select_metrics("0")) if r.compared]
    assert rows and all(set(r.metrics) == {"CosineSimilarity"} and r.std_text == "NaN" for r in rows)


# --- bad tensors become rows with reasons -------------------------------------------------------


def _unknown_dtype_dump(path: Path, array: np.ndarray) -> Path:
    raw = build_dump("bad/op", [], [TensorSpec(array, "FLOAT16")])
    length = struct.unpack("<Q", raw[:8])[0]
    header = DumpData()
    header.ParseFromString(raw[8 : 8 + length])
    header.output[0].data_type = 977
    body = header.SerializeToString()
    path.write_bytes(struct.pack("<Q", len(body)) + body + raw[8 + length :])
    return path


def _task(index, name, left, right, reason=""):
    return PairTask(index, "Op", name, name, f"{name}:output:0", left, right, reason)


def test_per_tensor_problems_are_rows_with_reasons_and_the_run_goes_on(tmp_path):
    good = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    gold = write_golden(tmp_path / "golden", "good", 0, 1, good)
    other = write_golden(tmp_path / "golden", "other", 0, 2, good.reshape(-1)[:10])
    garbage = tmp_path / "golden" / "garbage.0.3.npy"
    garbage.write_bytes(b"not an npy file at all")
    dump = write_dump(
        tmp_path / "Op.good.1.0.1700000000000000", "good", [], [TensorSpec(good.astype(np.float16), "FLOAT16")]
    )
    bad = _unknown_dtype_dump(tmp_path / "Op.bad.2.0.1700000000000001", good.astype(np.float16))
    tasks = [
        _task(0, "unknown", DumpSide(bad, "output", 0), NpySide(gold)),
        _task(1, "shape", DumpSide(dump, "output", 0), NpySide(other)),
        _task(2, "garbage", DumpSide(dump, "output", 0), NpySide(garbage)),
        _task(3, "missing", DumpSide(dump, "output", 0), None, "no ground truth dump file for missing:output:0"),
        _task(4, "absent", DumpSide(dump, "output", 5), NpySide(gold)),
        _task(5, "fine", DumpSide(dump, "output", 0), NpySide(gold)),
    ]
    rows = list(compare_tasks(tasks, workers=2))
    reasons = [r.fail_reason for r in rows]
    assert "unknown data_type 977" in reasons[0]
    assert "Shape mismatch" in reasons[1] and "[2,3,4]" in reasons[1] and "[10]" in reasons[1]
    assert "not a .npy file" in reasons[2]
    assert reasons[3] == "no ground truth dump file for missing:output:0"
    assert "no output 5" in reasons[4]
    assert not any(r.compared for r in rows[:5])
    assert rows[5].compared and rows[5].cosine == pytest.approx(1.0, abs=1e-6)
    assert rows[1].npu_dtype == "float16" and rows[1].golden_dtype == "float32"
    assert rows[3].npu_dtype == "float16" and rows[3].shape == (2, 3, 4)


def test_a_pair_that_runs_out_of_memory_is_its_row_and_the_run_goes_on(tmp_path, monkeypatch):
    values = np.arange(1, 13, dtype=np.float32)
    gold = write_golden(tmp_path, "a", 0, 1, values)
    big = write_dump(tmp_path / "Op.big.1.0.1700000000000000", "big", [], [TensorSpec(values, "FLOAT")])
    fine = write_dump(tmp_path / "Op.fine.2.0.1700000000000001", "fine", [], [TensorSpec(values, "FLOAT")])
    real = pair_compare.compare_sources
    calls = []

    def short_of_memory(x, y, *args):
        calls.append(x)
        if len(calls) == 1:  # the first pair, big's
            raise MemoryError()  # as numpy raises it for an allocation the machine cannot give
        return real(x, y, *args)

    monkeypatch.setattr(pair_compare, "compare_sources", short_of_memory)
    rows = list(
        compare_tasks(
            [
                _task(0, "big", DumpSide(big, "output", 0), NpySide(gold)),
                _task(1, "fine", DumpSide(fine, "output", 0), NpySide(gold)),
            ]
        )
    )
    assert not rows[0].compared and "not enough memory to compare big" in rows[0].fail_reason
    assert rows[1].compared and rows[1].cosine == pytest.approx(1.0)


def test_equal_sizes_with_different_shapes_compare_flattened(tmp_path):
    values = np.arange(1, 13, dtype=np.float32)
    dump = write_dump(tmp_path / "Op.a.1.0.1700000000000000", "a", [], [TensorSpec(values.reshape(3, 4), "FLOAT")])
    gold = write_golden(tmp_path, "a", 0, 1, values.reshape(2, 6))
    (row,) = compare_tasks([_task(0, "a", DumpSide(dump, "output", 0), NpySide(gold))])
    assert row.cosine == pytest.approx(1.0) and row.shape == (3, 4)
    assert "compared flattened" in row.fail_reason


def test_empty_tensors_are_not_compared_with_a_reason(tmp_path):
    dump = write_dump(
        tmp_path / "Op.e.1.0.1700000000000000", "e", [], [TensorSpec(np.zeros((0, 4), np.float16), "FLOAT16")]
    )
    gold = write_golden(tmp_path, "e", 0, 1, np.zeros((0, 4), np.float32))
    (row,) = compare_tasks([_task(0, "e", DumpSide(dump, "output", 0), NpySide(gold))])
    assert not row.compared and "empty" in row.fail_reason


def test_a_golden_of_dates_is_not_compared_with_a_reason(tmp_path, kernel_backend):
    """Issue 27.7: datetime64 converts to float64 without complaint, and was compared as numbers."""
    values = np.arange(1, 13, dtype=np.float32)
    dump = write_dump(tmp_path / "Op.a.1.0.1700000000000000", "a", [], [TensorSpec(values, "FLOAT")])
    dates = write_golden(tmp_path, "a", 0, 1, values.astype("datetime64[s]"))
    good = write_golden(tmp_path, "b", 0, 2, values)
    rows = list(
        compare_tasks(
            [
                _task(0, "a", DumpSide(dump, "output", 0), NpySide(dates)),
                _task(1, "b", DumpSide(dump, "output", 0), NpySide(good)),
            ]
        )
    )
    assert not rows[0].compared and rows[0].metrics == {}
    assert rows[0].fail_reason == f"{dates}: {dates.name}: datetime64[s] data (dates and times) is not compared"
    assert rows[1].compared and rows[1].cosine == pytest.approx(1.0)


def test_huge_float64_tensors_get_their_metrics_not_nan(tmp_path, kernel_backend):
    """Issue 27.7: two identical float64 tensors of 1e300 had cosine NaN and no reason."""
    values = np.full((4, 250), 1e300)
    dump = write_dump(tmp_path / "Op.a.1.0.1700000000000000", "a", [], [TensorSpec(values, "DOUBLE")])
    gold = write_golden(tmp_path, "a", 0, 1, values)
    (row,) = compare_tasks([_task(0, "a", DumpSide(dump, "output", 0), NpySide(gold))])
    assert row.fail_reason == ""
    assert row.cosine == pytest.approx(1.0, abs=1e-12)
    assert row.metric("RootMeanSquareError") == 0.0 and row.metric("RelativeEuclideanDistance") == 0.0


# --- interruption -------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_an_interrupted_run_leaves_no_csv_and_no_workers(sample_data, tmp_path, workers):
    tasks = _tasks(sample_data)

    def interrupt(done, total, nbytes):
        if done > 3:
            raise KeyboardInterrupt

    target = tmp_path / "result.csv"
    with pytest.raises(KeyboardInterrupt):
        with ResultWriter(target) as writer:
            for row in compare_tasks(tasks, workers=workers, chunk=64, progress=interrupt):
                writer.write(row)
    assert not target.exists() and list(tmp_path.iterdir()) == [tmp_path / "precision_data"]
    assert multiprocessing.active_children() == []


def test_closing_the_stream_early_ends_the_workers(sample_data):
    rows = compare_tasks(_tasks(sample_data), workers=2, chunk=64)
    next(rows)
    rows.close()
    assert multiprocessing.active_children() == []


# --- streaming: blocks in C order equal the whole host tensor -----------------------------------


def _streamed(source, chunk):
    buffers = Buffers()
    return np.concatenate([b.copy() for b in source.blocks(chunk, buffers, "x")] or [np.zeros(0)])


def _every_dump_tensor(root: Path):
    for path in sorted((root / "npu/debug_0/dump").rglob("*.*.*")):
        for tensor in read_dump(path).tensors:
            yield DumpSide(path, tensor.kind, tensor.index), tensor


@pytest.mark.parametrize("data", ["fixture_data", "sample_data"])
@pytest.mark.parametrize("chunk", [7, 100, 1 << 20])
@pytest.mark.parametrize("small", [None, 0])  # small files read whole (the default), or none
def test_streamed_blocks_equal_the_whole_conversion(request, data, chunk, small, monkeypatch):
    root = request.getfixturevalue(data)
    if small is not None:
        monkeypatch.setattr(sides, "SMALL_DUMP_BYTES", small)
    kinds = set()
    for side, tensor in _every_dump_tensor(root):
        source = open_dump_side(side, ReadCache())
        kinds.add(type(source).__name__)
        whole = tensor.host()
        assert source.shape == whole.shape
        np.testing.assert_array_equal(_streamed(source, chunk), whole.reshape(-1), err_msg=str(side))
    # in memory, a tensor stored in host order is an array, not a region to read again
    expected = {"DeviceRows", "ArrayBlocks"} | ({"FileRegion"} if small == 0 else set())
    assert kinds == expected


@pytest.mark.parametrize(
    "fmt, host_format, shape",
    [
        ("NC1HWC0", "NHWC", (3, 5, 4, 40)),  # C1 = 3 with padding
        ("NC1HWC0", "NHWC", (2, 3, 3, 32)),  # no padding
        ("NC1HWC0", "NHWC", (1, 6, 2, 20)),  # a batch of one is one block
        ("NC1HWC0", "NCHW", (3, 20, 5, 4)),
        ("NC1HWC0", "NCHW", (2, 16, 2, 2)),
        ("FRACTAL_NZ", "ND", (3, 20, 37)),  # padded fractals
        ("FRACTAL_NZ", "ND", (2, 3, 32, 16)),
        ("NDC1HWC0", "NDHWC", (2, 3, 4, 5, 17)),
        ("NC1HWC0_C04", "NHWC", (2, 4, 4, 3)),
    ],
)
def test_row_streamed_layouts_match_the_layout_code(tmp_path, fmt, host_format, shape, monkeypatch):
    host = np.random.default_rng(7).standard_normal(shape).astype(np.float16)
    device = to_device(host, fmt, host_format)
    path = write_dump(
        tmp_path / "Op.x.1.0.1700000000000000",
        "x",
        [],
        [TensorSpec(device, "FLOAT16", fmt, shape, ("x", 0, host_format))],
    )
    for small in (sides.SMALL_DUMP_BYTES, 0):  # rows sliced from memory, and read from the file
        monkeypatch.setattr(sides, "SMALL_DUMP_BYTES", small)
        source = open_dump_side(DumpSide(path, "output", 0), ReadCache())
        assert type(source).__name__ == "DeviceRows" and (source.raw is None) == (small == 0)
        for chunk in (1, 50, 10_000):
            np.testing.assert_array_equal(_streamed(source, chunk), host.reshape(-1))


def test_aligned_splits_blocks_of_different_sizes():
    xs = iter([np.arange(0, 5), np.arange(5, 7), np.arange(7, 12)])
    ys = iter([np.arange(0, 3), np.arange(3, 12)])
    pairs = list(aligned(xs, ys))
    assert all(np.array_equal(a, b) for a, b in pairs)
    assert np.array_equal(np.concatenate([a for a, _ in pairs]), np.arange(12))
    with pytest.raises(ValueError):
        list(aligned(iter([np.arange(3)]), iter([np.arange(4)])))


@pytest.mark.parametrize("channels", [32, 20])  # unpadded; padded
def test_streamed_pair_equals_the_one_shot_metrics(tmp_path, channels, kernel_backend):
    from precision_tool.compare.engine import compare_sources
    from precision_tool.compare.metrics import compare_arrays
    from precision_tool.compare.sides import open_npy_side

    rng = np.random.default_rng(3)
    golden = rng.standard_normal((4, 6, 5, channels)).astype(np.float32)
    npu = (golden + 0.01 * rng.standard_normal(golden.shape)).astype(np.float16)
    path = write_dump(
        tmp_path / "Op.x.1.0.1700000000000000",
        "x",
        [],
        [TensorSpec(to_device(npu, "NC1HWC0", "NHWC"), "FLOAT16", "NC1HWC0", npu.shape, ("x", 0, "NHWC"))],
    )
    gold = write_golden(tmp_path, "x", 0, 1, golden)
    expected = compare_arrays(npu, golden)
    for chunk in (1 << 20, 300, 7):
        x = open_dump_side(DumpSide(path, "output", 0), ReadCache())
        result, note = compare_sources(x, open_npy_side(NpySide(gold)), chunk=chunk)
        assert note == "" and result.std_text == expected.std_text
        for name, value in expected.numbers.items():
            assert result.values[name] == pytest.approx(value, rel=1e-9, abs=1e-15), (chunk, name)


# --- notes in the reason ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "npu, golden, expected",
    [
        ([1, np.nan, 3, 4], [1, 2, 3, 4], "The NPU tensor holds 1 NaN."),
        ([1, 2, 3, 4], [np.inf, 2, -np.inf, 4], "The golden tensor holds 2 Inf."),
        (
            [np.nan, np.inf, 3, 4],
            [np.nan, 2, 3, np.nan],
            "The NPU tensor holds 1 NaN and 1 Inf. The golden tensor holds 2 NaN.",
        ),
    ],
)
def test_nan_and_inf_are_named_in_the_reason(tmp_path, npu, golden, expected):
    dump = write_dump(
        tmp_path / "Op.n.1.0.1700000000000000", "n", [], [TensorSpec(np.array(npu, np.float16), "FLOAT16")]
    )
    gold = write_golden(tmp_path, "n", 0, 1, np.array(golden, np.float32))
    (row,) = compare_tasks([_task(0, "n", DumpSide(dump, "output", 0), NpySide(gold))])
    assert row.compared and math.isnan(row.cosine)
    assert expected in row.fail_reason


def test_finite_data_gets_no_nan_note(tmp_path):
    dump = write_dump(
        tmp_path / "Op.f.1.0.1700000000000000", "f", [], [TensorSpec(np.arange(1, 5, dtype=np.float32), "FLOAT")]
    )
    gold = write_golden(tmp_path, "f", 0, 1, np.arange(1, 5, dtype=np.float32))
    (row,) = compare_tasks([_task(0, "f", DumpSide(dump, "output", 0), NpySide(gold))])
    assert row.fail_reason == ""


def test_an_unsupported_format_is_compared_as_stored_with_a_note(tmp_path):
    values = np.arange(1, 7, dtype=np.float32)
    data = build_dump("u", [], [TensorSpec(values, "FLOAT")])
    length = struct.unpack("<Q", data[:8])[0]
    header = DumpData()
    header.ParseFromString(data[8 : 8 + length])
    header.output[0].format = 77  # no such OutputFormat
    raw = header.SerializeToString()
    path = tmp_path / "Op.u.1.0.1700000000000000"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + length :])
    gold = write_golden(tmp_path, "u", 0, 1, values)
    (row,) = compare_tasks([_task(0, "u", DumpSide(path, "output", 0), NpySide(gold))])
    assert row.cosine == pytest.approx(1.0)
    assert "unsupported format UNKNOWN(77), compared in its stored order" in row.fail_reason


# --- custom metrics reach the workers -----------------------------------------------------------


def _fold_sign_flips(stats, x, y):
    stats.extra["flips"] = stats.extra.get("flips", 0) + int(np.count_nonzero(np.signbit(x) != np.signbit(y)))


def _merge_sign_flips(into, other):
    into.extra["flips"] = into.extra.get("flips", 0) + other.extra.get("flips", 0)


def _sign_flip_share(stats):
    return stats.extra.get("flips", 0) / stats.count


def _rms_of_golden(stats):
    return math.sqrt(stats.sum_yy / stats.count)


register_group(StatGroup("sign_flips", _fold_sign_flips, _merge_sign_flips))
SIGN_FLIPS = Metric("SignFlipShare", frozenset({"sign_flips"}), _sign_flip_share)
GOLDEN_RMS = Metric("GoldenRMS", frozenset({"yy"}), _rms_of_golden)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_custom_metrics_compute_in_worker_processes(sample_data, tmp_path, monkeypatch, context):
    """A metric defined here, one with its own statistic group, through two worker processes."""
    monkeypatch.setattr(engine, "_mp_context", lambda: multiprocessing.get_context(context))
    tasks = _tasks(sample_data)
    metrics = select_metrics(["0", SIGN_FLIPS, GOLDEN_RMS])
    rows = [r for r in compare_tasks(tasks, metrics, workers=2) if r.compared]
    assert rows
    for row, task in zip(rows, [t for t in tasks if t.comparable]):
        x = read_dump(task.left.path)
        tensor = (x.inputs if task.left.kind == "input" else x.outputs)[task.left.index]
        npu = tensor.host().astype(np.float64).ravel()
        golden = np.load(task.right.path).astype(np.float64).ravel()
        assert set(row.metrics) == {"CosineSimilarity", "SignFlipShare", "GoldenRMS"}
        assert row.metrics["SignFlipShare"] == np.count_nonzero(np.signbit(npu) != np.signbit(golden)) / npu.size
        assert row.metrics["GoldenRMS"] == pytest.approx(np.sqrt(np.mean(golden**2)), rel=1e-12)
    out = write_result_csv(tmp_path / "r.csv", rows, metrics=metrics)
    assert out.read_text(encoding="utf-8").splitlines()[0].endswith("CompareFailReason,SignFlipShare,GoldenRMS")


def test_small_jobs_are_batched_into_calls_of_the_byte_limit_in_order_around_split_tensors():
    """Cluster calls: consecutive jobs join until the next would pass the limit; a split
    tensor's unit is never joined and keeps its place."""

    def job(i):
        return [_task(i, f"op{i}", DumpSide(Path(f"/d/{i}"), "output", 0), NpySide(Path(f"/g/{i}")))]

    sizes = {Path(f"/d/{i}"): 30 for i in range(7)} | {Path(f"/g/{i}"): 10 for i in range(7)}
    split_unit = engine.Unit()
    units = [job(0), job(1), job(2), split_unit, job(3), job(4), job(5), job(6)]
    batched = jobs.batch_jobs(units, sizes, batch_bytes=100)
    shape = [u if isinstance(u, engine.Unit) else [t.index for t in u] for u in batched]
    assert shape == [[0, 1], [2], split_unit, [3, 4], [5, 6]]
    flat = [t.index for u in batched if not isinstance(u, engine.Unit) for t in u]
    assert flat == [0, 1, 2, 3, 4, 5, 6]
    # a job larger than the limit is a call of its own, never cut
    assert [[t.index for t in u] for u in jobs.batch_jobs([job(0), job(1)], sizes, 10)] == [[0], [1]]


def test_pool_calls_are_batched_but_at_least_four_a_worker():
    def plan(total_bytes):
        sizes = {f"f{i}": total_bytes // 100 for i in range(100)}
        return jobs.Plan([], (), sizes)

    assert jobs.pool_batch_bytes(plan(10 << 30), 2) == jobs.POOL_BATCH_BYTES
    assert jobs.pool_batch_bytes(plan(8_000), 2) == 8_000 // 8  # a small run: four calls a worker
    assert jobs.pool_batch_bytes(plan(10 << 30), 1) == 0  # inline: nothing to batch
