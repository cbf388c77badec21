"""seen_pairs: a consumer's input that holds its producer's output bytes, paired with the same
golden, gets the producer pair's outcome without a second comparison; one byte or one fact
different and it is compared.

Expected metrics come from the arrays written (cosine by numpy's dot product, the rest by the
one-shot ``compare_arrays``); comparisons are counted by wrapping ``compare_sources``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare import pair_compare
from precision_tool.compare.engine import compare_job, compare_tasks
from precision_tool.compare.golden_pairing import DumpSide, NpySide, PairTask
from precision_tool.compare.metrics import METRICS, compare_arrays
from precision_tool.compare.row_keys import RowKeys
from precision_tool.compare.seen_pairs import SeenPairs
from precision_tool.compare.sides import ReadCache
from precision_tool.formats.dump_write import TensorSpec, write_dump
from precision_tool.formats.golden import write_golden
from precision_tool.formats.layouts import to_device

RNG = np.random.default_rng(11)
GOLDEN = RNG.standard_normal((2, 5, 4, 20)).astype(np.float32)  # NHWC, 20 channels: padded to 32
NPU = (GOLDEN + 0.02 * RNG.standard_normal(GOLDEN.shape)).astype(np.float16)


def _spec(npu: np.ndarray, fmt: str = "NC1HWC0") -> TensorSpec:
    device = to_device(npu, fmt, "NHWC") if fmt != "ND" else npu
    return TensorSpec(device, "FLOAT16", fmt, npu.shape, ("producer", 0, "NHWC"))


def _network(tmp_path, consumer_input: TensorSpec) -> tuple[list[PairTask], np.ndarray]:
    """A producer whose output 0 is NPU, a consumer whose input 0 is ``consumer_input``, both
    paired with the producer's output golden, the input's host layout from the graph (as
    golden_pairing pairs an input: a dump records the TF tensor of outputs only)."""
    golden = write_golden(tmp_path / "golden", "producer", 0, 1, GOLDEN)
    producer = write_dump(tmp_path / "dump/Conv2D.producer.1.0.1700000000000000", "producer", [], [_spec(NPU)])
    consumer = write_dump(
        tmp_path / "dump/Relu.consumer.2.0.1700000000000001", "consumer", [consumer_input], [_spec(NPU)]
    )
    tasks = [
        PairTask(
            0, "Conv2D", "producer", "producer", "producer:output:0", DumpSide(producer, "output", 0), NpySide(golden)
        ),
        PairTask(
            1,
            "Relu",
            "consumer",
            "producer",
            "consumer:input:0",
            DumpSide(consumer, "input", 0, "NHWC"),
            NpySide(golden),
        ),
    ]
    return tasks, golden


@pytest.fixture
def comparisons(monkeypatch) -> list:
    """Every pair compare_sources computes, as the NPU side's shape (appended as they come)."""
    seen, compare = [], pair_compare.compare_sources

    def counted(x, y, *args, **kwargs):
        seen.append(x.shape)
        return compare(x, y, *args, **kwargs)

    monkeypatch.setattr(pair_compare, "compare_sources", counted)
    return seen


def _cosine(npu: np.ndarray, golden: np.ndarray) -> float:
    x, y = npu.astype(np.float64).ravel(), golden.astype(np.float64).ravel()
    return float(x @ y / np.sqrt((x @ x) * (y @ y)))


def _assert_metrics_of(row, npu: np.ndarray) -> None:
    expected = compare_arrays(npu, GOLDEN)
    assert row.cosine == pytest.approx(_cosine(npu, GOLDEN), abs=1e-12)
    for name, value in expected.numbers.items():
        assert row.metrics[name] == pytest.approx(value, rel=1e-9, abs=1e-15), name
    assert row.std_text == expected.std_text


def test_a_consumer_input_holding_its_producer_output_is_compared_once(tmp_path, comparisons, kernel_backend):
    tasks, golden = _network(tmp_path, _spec(NPU))
    keys, seen = RowKeys.for_metrics(METRICS), SeenPairs()
    rows = compare_job(tasks, METRICS, 1 << 20, None, keys, ReadCache(), seen).rows
    assert len(comparisons) == 1 and seen.hits == 1
    producer, consumer = rows
    _assert_metrics_of(consumer, NPU)
    assert consumer.metrics == producer.metrics and consumer.metrics is not producer.metrics
    fields = ("npu_dtype", "golden_dtype", "shape", "std_text", "fail_reason")
    assert [getattr(consumer, f) for f in fields] == [getattr(producer, f) for f in fields]
    # the names and the cache key are the consumer's own
    assert (consumer.index, consumer.npu_name, consumer.tensor_index) == (1, "consumer", "consumer:input:0")
    assert consumer.cache_key == RowKeys.for_metrics(METRICS).key(tasks[1]) != producer.cache_key


def test_rows_given_a_kept_outcome_equal_rows_compared_apart(tmp_path, comparisons):
    tasks, _ = _network(tmp_path, _spec(NPU))
    together = list(compare_tasks(tasks))
    apart = [next(compare_tasks([task])) for task in tasks]  # each task a run of its own
    assert len(comparisons) == 3
    assert together == apart


def test_one_byte_different_is_compared_again(tmp_path, comparisons, kernel_backend):
    changed = NPU.copy()
    changed[1, 4, 3, 19] += np.float16(0.5)  # the last element: the last bytes of the tensor
    tasks, _ = _network(tmp_path, _spec(changed))
    seen = SeenPairs()
    rows = compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), seen).rows
    assert len(comparisons) == 2 and seen.hits == 0
    _assert_metrics_of(rows[1], changed)
    assert rows[1].metrics != rows[0].metrics


def test_the_same_bytes_in_another_layout_are_compared_again(tmp_path, comparisons):
    # ND bytes of the NC1HWC0 device tensor: equal bytes, but another host array
    device = to_device(NPU, "NC1HWC0", "NHWC")
    tasks, _ = _network(tmp_path, TensorSpec(device, "FLOAT16", "ND", device.shape))
    seen = SeenPairs()
    rows = compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), seen).rows
    assert len(comparisons) == 2 and seen.hits == 0
    assert "Shape mismatch" in rows[1].fail_reason  # the ND tensor has the padded size


def test_pairs_beyond_the_byte_bound_are_dropped_and_compared_again(tmp_path, comparisons):
    tasks, _ = _network(tmp_path, _spec(NPU))
    stored = to_device(NPU, "NC1HWC0", "NHWC").nbytes
    seen = SeenPairs(max_bytes=stored - 1)  # not even one kept
    compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), seen)
    assert len(comparisons) == 2 and seen.hits == 0
    seen = SeenPairs(max_bytes=stored)
    compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), seen)
    assert len(comparisons) == 3 and seen.hits == 1


def test_the_least_recent_pair_is_dropped_first(tmp_path, comparisons):
    tasks, golden = _network(tmp_path, _spec(NPU))
    other_golden = write_golden(tmp_path / "golden", "other", 0, 1, GOLDEN)
    other = PairTask(2, "Relu", "other", "other", "other:output:0", tasks[0].left, NpySide(other_golden))
    stored = to_device(NPU, "NC1HWC0", "NHWC").nbytes
    seen = SeenPairs(max_bytes=stored)  # room for one: the other golden's pair drops the producer's
    compare_job([tasks[0], other, tasks[1]], METRICS, 1 << 20, None, None, ReadCache(), seen)
    assert len(comparisons) == 3 and seen.hits == 0


def test_a_large_dump_file_is_not_kept(tmp_path, comparisons, monkeypatch):
    from precision_tool.compare import sides

    monkeypatch.setattr(sides, "SMALL_DUMP_BYTES", 64)  # read from the file, not whole
    tasks, _ = _network(tmp_path, _spec(NPU))
    seen = SeenPairs()
    rows = compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), seen).rows
    assert len(comparisons) == 2 and seen.hits == 0
    _assert_metrics_of(rows[1], NPU)


# --- pairs looked up by their contents (msprobe's tensor files, directories of .npy) -----------


def _npy_pairs(tmp_path, left: list[np.ndarray], right: list[np.ndarray]) -> list[PairTask]:
    tasks = []
    for i, (a, b) in enumerate(zip(left, right)):
        np.save(tmp_path / f"npu_{i}.npy", a)
        np.save(tmp_path / f"bench_{i}.npy", b)
        tasks.append(
            PairTask(
                i,
                "Api",
                f"api_{i}",
                f"api_{i}",
                f"api_{i}:output:0",
                NpySide(tmp_path / f"npu_{i}.npy"),
                NpySide(tmp_path / f"bench_{i}.npy"),
            )
        )
    return tasks


def test_two_files_pairs_of_the_same_contents_are_compared_once(tmp_path, comparisons, kernel_backend):
    tasks = _npy_pairs(tmp_path, [NPU, NPU], [GOLDEN, GOLDEN])  # an API's input: another's output
    seen = SeenPairs()
    rows = compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), seen).rows
    assert len(comparisons) == 1 and seen.hits == 1
    _assert_metrics_of(rows[1], NPU)
    assert rows[1].metrics == rows[0].metrics and rows[1].npu_name == "api_1"


@pytest.mark.parametrize("side", ["npu", "bench"])
def test_one_element_different_on_either_side_is_compared_again(tmp_path, comparisons, side):
    changed = (NPU if side == "npu" else GOLDEN).copy()
    changed[0, 2, 1, 7] = 3.0  # not one of the sampled elements: found by the byte comparison
    left, right = (changed, GOLDEN) if side == "npu" else (NPU, changed)
    seen = SeenPairs()
    rows = compare_job(
        _npy_pairs(tmp_path, [NPU, left], [GOLDEN, right]), METRICS, 1 << 20, None, None, ReadCache(), seen
    ).rows
    assert len(comparisons) == 2 and seen.hits == 0
    expected = compare_arrays(left, right)
    assert rows[1].cosine == pytest.approx(expected.values["CosineSimilarity"], abs=1e-12)
    assert rows[1].metrics != rows[0].metrics


def test_the_same_bytes_in_another_shape_are_compared_again(tmp_path, comparisons):
    tasks = _npy_pairs(tmp_path, [NPU, NPU.reshape(10, 80)], [GOLDEN, GOLDEN.reshape(10, 80)])
    seen = SeenPairs()
    compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), seen)
    assert len(comparisons) == 2 and seen.hits == 0


def test_sides_too_large_for_a_quarter_of_the_bound_are_not_kept(tmp_path, comparisons):
    tasks = _npy_pairs(tmp_path, [NPU, NPU], [GOLDEN, GOLDEN])
    seen = SeenPairs(max_bytes=4 * (NPU.nbytes + GOLDEN.nbytes) - 1)
    compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), seen)
    assert len(comparisons) == 2 and seen.hits == 0


# --- property: rows with kept outcomes are the rows of each pair compared apart ----------------


@st.composite
def _runs(draw):
    """Goldens and NPU tensors (some the same bytes, some one element off), and tasks pairing
    them in any order, GE dump tensors and .npy files both."""
    shape = draw(st.sampled_from([(3,), (2, 5), (4, 3, 2)]))
    count = int(np.prod(shape))
    values = st.floats(-4, 4, allow_nan=False, width=32)
    goldens = [np.array(draw(st.lists(values, min_size=count, max_size=count)), np.float32).reshape(shape)]
    goldens.append(goldens[0] + 1)
    npus = [g.astype(np.float16) for g in goldens]
    off = npus[0].copy()
    off.reshape(-1)[draw(st.integers(0, count - 1))] += np.float16(0.25)
    npus.append(off)
    picks = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.booleans()), min_size=2, max_size=7))
    return shape, goldens, npus, picks


@settings(max_examples=40, deadline=None)
@given(_runs())
def test_rows_with_kept_outcomes_are_the_rows_compared_apart(run):
    import tempfile
    from pathlib import Path

    _, goldens, npus, picks = run
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        golden_paths = [write_golden(root / "golden", f"g{i}", 0, 1, g) for i, g in enumerate(goldens)]
        tasks = []
        for k, (npu, golden, as_dump) in enumerate(picks):
            if as_dump:
                path = write_dump(
                    root / f"dump/Op.op{k}.{k}.0.17000000000000{k:02d}",
                    f"op{k}",
                    [],
                    [TensorSpec(npus[npu], "FLOAT16")],
                )
                left = DumpSide(path, "output", 0)
            else:
                left = NpySide(root / f"npu_{k}.npy")
                np.save(left.path, npus[npu])
            tasks.append(
                PairTask(k, "Op", f"op{k}", f"g{golden}", f"op{k}:output:0", left, NpySide(golden_paths[golden]))
            )
        keys = RowKeys.for_metrics(METRICS)
        together = compare_job(tasks, METRICS, 1 << 20, None, keys, ReadCache(), SeenPairs()).rows
        apart = [
            compare_job([t], METRICS, 1 << 20, None, RowKeys.for_metrics(METRICS), ReadCache(), None).rows[0]
            for t in tasks
        ]
        assert together == apart


def test_a_golden_no_other_task_reads_is_not_kept(tmp_path, comparisons):
    tasks, _ = _network(tmp_path, _spec(NPU))
    told = SeenPairs(tasks=tasks)  # both read the producer's golden: the first is kept
    compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), told)
    assert len(comparisons) == 1 and told.hits == 1
    alone = SeenPairs(tasks=tasks[:1])  # told of the producer's task alone: nothing to keep
    compare_job(tasks, METRICS, 1 << 20, None, None, ReadCache(), alone)
    assert len(comparisons) == 3 and alone.hits == 0 and not alone._kept
