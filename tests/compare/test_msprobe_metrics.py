"""msprobe's six columns through the engine, against msprobe's own values.

The expected cells and messages in tests/data/msprobe_metrics/tensor_expected.json were
computed by mindstudio-probe itself (bench/msprobe_reference.py: its reader, its tensor checks
and its column functions) on the .npy pairs beside it; here the same files go through
compare/pair_compare.py's real path (opened as sides, streamed in blocks, in one pass and split into
ranges). bfloat16 cases are stored as the float32 msprobe's reader makes of them and compared
here as bfloat16.
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare import pair_compare, split
from precision_tool.compare.engine import compare_tasks
from precision_tool.compare.golden_pairing import NpySide, PairTask
from precision_tool.compare.load import ArrayBlocks
from precision_tool.compare.metrics import METRICS, Accumulator
from precision_tool.compare.msprobe_metrics import (
    EUC_DIST,
    MSPROBE_COLUMNS,
    MSPROBE_METRICS,
    precheck,
    select_msprobe,
    text_cell,
)
from precision_tool.compare.sides import ReadCache, open_side
from precision_tool.compare.stat_groups import combine
from precision_tool.errors import PrecisionToolError

DATA = Path(__file__).resolve().parent.parent / "data" / "msprobe_metrics"
EXPECTED = json.loads((DATA / "tensor_expected.json").read_text())
CASES = EXPECTED["cases"]


def _arrays(case: dict) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.load(DATA / "tensor" / case[side]) for side in ("npu", "bench"))


def _sources(case: dict):
    """Both sides as the engine opens them (bfloat16 cases as bfloat16 arrays)."""
    if not case["bfloat16"]:
        return tuple(open_side(NpySide(DATA / "tensor" / case[side]), ReadCache()) for side in ("npu", "bench"))
    sides = []
    for array in _arrays(case):
        values = array.astype(ml_dtypes.bfloat16)
        assert np.array_equal(values.astype(np.float32), array)  # stored exactly
        sides.append(
            ArrayBlocks(
                shape=values.shape, dtype=values.dtype, dtype_name="bfloat16", nbytes=values.nbytes, array=values
            )
        )
    return tuple(sides)


def _expected_value(cell: dict):
    if "t" in cell:
        return cell["t"]
    return float(cell["n"])


def _assert_cells(values: dict, case: dict) -> None:
    for column, cell in case["cells"].items():
        expected, got = _expected_value(cell), values.get(column)
        if isinstance(expected, str):
            assert got == expected, column
        elif column == EUC_DIST:  # not rounded by msprobe: sums in another order
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-300) or got == expected, column
        else:  # rounded to 12 (cosine: 6) decimals by both
            assert isinstance(got, float) and (got == expected or abs(got - expected) <= 1.5e-12), column


def _assert_message(reasons, case: dict) -> None:
    """Every reason is msprobe's, and msprobe says nothing else (but its truncated repeats of
    the 0-d sentence, which our one sentence holds)."""
    rest = case["message"]
    for reason in reasons:
        assert reason in rest
        rest = rest.replace(reason, "")
    assert rest.replace(EXPECTED["err_scalar_input"], "").strip() == ""


def _compared(case: dict):
    x, y = _sources(case)
    decided = precheck(x.shape, y.shape)
    if decided is not None:
        return decided
    result, _note = pair_compare.compare_sources(x, y, MSPROBE_METRICS, chunk=1000)
    return result


def test_the_reference_is_msprobes_own():
    assert EXPECTED["msprobe"] and EXPECTED["columns"] == list(MSPROBE_COLUMNS)
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_pass_gives_msprobes_cells_and_messages(name):
    case = CASES[name]
    result = _compared(case)
    _assert_cells(result.values, case)
    _assert_message(result.reasons, case)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_column_without_a_number_gets_msprobes_text_from_the_message(name):
    """A row keeps numbers only: the text msprobe wrote in a column comes back from the
    message alone, msprobe's own (and ours, which the test above shows are msprobe's)."""
    case = CASES[name]
    reasons = " ".join(_compared(case).reasons)
    for column, cell in case["cells"].items():
        expected = _expected_value(cell)
        if isinstance(expected, str) and expected not in ("inf", "-inf"):
            assert (text_cell(column, case["message"]), text_cell(column, reasons)) == (expected, expected), column


def _in_ranges(case: dict, pieces: int, chunk: int = 700):
    """The pair folded in ``pieces`` ranges, each as split.run_piece folds one, combined."""
    x, y = _sources(case)
    acc = pair_compare.new_accumulator(x, y, MSPROBE_METRICS, None)
    total = None
    for start, stop in zip(bounds := split.split_points(x.size, 1, pieces), bounds[1:]):
        part = pair_compare.new_accumulator(x, y, MSPROBE_METRICS, None)
        for blocks in pair_compare.pair_pieces(x, y, chunk, start, stop):
            part.update(*blocks)
        total = part.stats if total is None else combine(total, part.stats, acc.first)
    acc.stats = total
    return acc.result()


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n, c in CASES.items()
        if precheck(*(np.load(DATA / "tensor" / c[s], mmap_mode="r").shape for s in ("npu", "bench"))) is None
    ),
)
def test_ranges_merged_give_msprobes_cells(name):
    case = CASES[name]
    for pieces in (2, 7):
        result = _in_ranges(case, pieces)
        _assert_cells(result.values, case)
        _assert_message(result.reasons, case)


def test_a_big_tensor_split_by_the_engine_gives_msprobes_cells():
    case = CASES["big_fp16"]
    task = PairTask(
        1,
        "Op",
        "op",
        "op",
        "op:output:0",
        NpySide(DATA / "tensor" / case["npu"]),
        NpySide(DATA / "tensor" / case["bench"]),
    )
    x, y = (open_side(side, ReadCache()) for side in (task.left, task.right))
    unit = split.SplitCompare(
        task,
        x,
        y,
        split.split_points(x.size, 1, 5),
        (MSPROBE_METRICS, 4096, None, False),
        pair_compare.base_row(task, ReadCache()),
    )

    class Done:
        def __init__(self, value):
            self.value = value

        def done(self):
            return True

    submit = lambda fn, *args: Done(fn(*args))  # noqa: E731
    assert unit.start(submit) == 5
    (row,) = unit.finish(submit, lambda future: future.value).rows
    expected = {c: _expected_value(v) for c, v in case["cells"].items()}
    assert set(row.metrics) == set(MSPROBE_COLUMNS)
    for column, value in row.metrics.items():
        assert value == pytest.approx(expected[column], rel=1e-12, abs=1.5e-12)


def test_the_engine_writes_the_numbers_into_rows():
    names = ["fp32_noise", "zero_npu", "nan_positions_differ"]
    tasks = [
        PairTask(
            i,
            "Op",
            name,
            name,
            f"{name}:output:0",
            NpySide(DATA / "tensor" / CASES[name]["npu"]),
            NpySide(DATA / "tensor" / CASES[name]["bench"]),
        )
        for i, name in enumerate(names)
    ]
    rows = list(compare_tasks(tasks, MSPROBE_METRICS))
    for row, name in zip(rows, names):
        numbers = {
            c: _expected_value(v) for c, v in CASES[name]["cells"].items() if not isinstance(_expected_value(v), str)
        }
        assert set(row.metrics) == set(numbers)  # msprobe's texts are not numbers: not in the row
        for column, value in numbers.items():
            assert row.metrics[column] == pytest.approx(value, rel=1e-12, abs=1.5e-12)
    assert "All the data is Zero in npu dump data" in rows[1].fail_reason
    assert "do not match" in rows[2].fail_reason


@pytest.mark.parametrize("numba", [False, True])
def test_beside_the_ten_metrics_and_either_kernel(numba):
    """Selected with msaccucmp's ten, the msprobe group folds beside the fused kernels."""
    case = CASES["fp16_noise"]
    x, y = _sources(case)
    acc = Accumulator(METRICS + MSPROBE_METRICS, size=x.size, numba=numba)
    for blocks in pair_compare.pair_pieces(x, y, 1500):
        acc.update(*blocks)
    for blocks in pair_compare.pair_pieces(x, y, 1500):
        acc.update_second(*blocks)
    result = acc.result()
    _assert_cells({c: result.values[c] for c in MSPROBE_COLUMNS}, case)
    assert result.values["CosineSimilarity"] == pytest.approx(_expected_value(case["cells"]["Cosine"]), abs=1e-6)


def test_precheck_names_empty_and_unmatched_shapes_before_any_data():
    assert precheck((0,), (0,)).values == dict.fromkeys(MSPROBE_COLUMNS, "unsupported")
    assert precheck((2, 3), (3, 2)).reasons == ("Shape of NPU and bench tensor do not match. Skipped.",)
    assert precheck((1, 3), (3,)) is None  # msprobe squeezes both
    assert precheck((5,), (0,)).values["Cosine"] == "shape unmatched"


def test_select_msprobe_by_column_names():
    assert select_msprobe() == MSPROBE_METRICS
    assert [m.name for m in select_msprobe("eucdist, cosine")] == ["EucDist", "Cosine"]
    assert [m.name for m in select_msprobe(["One Thousandth Err Ratio"])] == ["One Thousandth Err Ratio"]
    with pytest.raises(PrecisionToolError) as info:
        select_msprobe("CosineSimilarity")
    assert "\n" not in str(info.value) and "EucDist" in str(info.value)
    with pytest.raises(PrecisionToolError):
        select_msprobe(" , ")


def test_metrics_travel_to_workers():
    assert pickle.loads(pickle.dumps(MSPROBE_METRICS)) == MSPROBE_METRICS


# --- ranges merge to one pass, on any data ------------------------------------------------

_DTYPES = st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.bool_])


@st.composite
def _pairs(draw):
    dtype = draw(_DTYPES)
    size = draw(st.integers(2, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = rng.standard_normal(size) * draw(st.sampled_from([1e-3, 1.0, 1e3]))
    x = y * (1 + rng.standard_normal(size) * draw(st.sampled_from([0.0, 1e-4, 3e-3, 0.1])))
    y[rng.random(size) < draw(st.sampled_from([0.0, 0.2]))] = 0
    x, y = x.astype(dtype), y.astype(dtype)
    if dtype in (np.float16, np.float32, np.float64) and draw(st.booleans()):
        where = rng.random(size) < 0.1
        x[where], y[where] = np.nan, np.nan
        if draw(st.booleans()):
            x[rng.integers(size)] = np.inf
    cuts = sorted(draw(st.lists(st.integers(1, size - 1), max_size=6, unique=True)))
    return x, y, [0, *cuts, size]


def _result(x, y, bounds, chunk):
    acc = Accumulator(MSPROBE_METRICS, size=x.size, numba=False)
    total = None
    for start, stop in zip(bounds, bounds[1:]):
        part = Accumulator(MSPROBE_METRICS, size=x.size, numba=False)
        for at in range(start, stop, chunk):
            part.update(x[at : min(at + chunk, stop)], y[at : min(at + chunk, stop)])
        total = part.stats if total is None else combine(total, part.stats, acc.first)
    acc.stats = total
    return acc.result()


@settings(max_examples=60, deadline=None)
@given(_pairs(), st.integers(1, 64))
def test_ranges_merge_to_the_same_values_as_one_pass(data, chunk):
    x, y, bounds = data
    whole, ranged = _result(x, y, [0, x.size], 1 << 20), _result(x, y, bounds, chunk)
    assert whole.reasons == ranged.reasons
    for column in MSPROBE_COLUMNS:
        a, b = whole.values[column], ranged.values[column]
        if isinstance(a, str) or column not in ("Cosine", "EucDist"):
            assert a == b, column  # texts, maxima and counts are exact
        else:  # sums added in another order; the cosine's 12 decimals may round apart
            assert a == pytest.approx(b, rel=1e-12, abs=2e-12) or math.isnan(a) and math.isnan(b), column
