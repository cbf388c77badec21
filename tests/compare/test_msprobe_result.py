"""msprobe's per-call Result and Err_message, against the CSV msprobe wrote.

tests/data/msprobe_metrics/{statistics,md5,tensor_mode}/ hold MindSpore-style dump pairs made to
trip each of msprobe's rules and the rows of the CSV that mindstudio-probe's own ``ms_compare``
wrote for them (bench/msprobe_reference.py). Our rows are built from the dump.json files (plain
json) and, in tensor mode, from our own comparison of the tensor files through compare/pair_compare.py.
"""

from __future__ import annotations

import pytest

from precision_tool.compare import pair_compare
from precision_tool.compare.golden_pairing import NpySide
from precision_tool.compare.msprobe_metrics import MSPROBE_COLUMNS, MSPROBE_METRICS, precheck
from precision_tool.compare.msprobe_result import ApiRow, judge_api
from precision_tool.compare.msprobe_stats import compare_summaries
from precision_tool.compare.sides import ReadCache, open_side

from .msprobe_dumps import DATA, dtype, dump, expected, md5, records, shape, summary


def _tensor_cells(record: dict, other: dict) -> dict:
    """Our six tensor-mode cells of a pair of dump records (arguments: ``unsupported``)."""
    if "data_name" not in record:
        return dict.fromkeys(MSPROBE_COLUMNS, "unsupported")
    x, y = (
        open_side(NpySide(DATA / "tensor_mode" / side / "dump_tensor_data" / r["data_name"]), ReadCache())
        for side, r in (("npu", record), ("bench", other))
    )
    result = precheck(x.shape, y.shape) or pair_compare.compare_sources(x, y, MSPROBE_METRICS)[0]
    return result.values


def _grouped(mode: str) -> tuple[dict[str, list[ApiRow]], dict[str, list[dict]]]:
    """Our ApiRows and msprobe's CSV rows, grouped by call key, in the CSV's order."""
    npu, bench = records(dump(mode, "npu")), records(dump(mode, "bench"))
    ours: dict[str, list[ApiRow]] = {}
    theirs: dict[str, list[dict]] = {}
    for row in expected(mode):
        key, record = npu[row["NPU Name"]]
        other = bench[row["NPU Name"]][1] if row["Bench Name"] != "N/A" else None
        cells, bench_cells = summary(record).cells(), summary(other).cells() if other else ("N/A",) * 4
        diff = compare_summaries(summary(record), summary(other) if other else None)
        tensor = _tensor_cells(record, other) if mode == "tensor_mode" else {}
        ours.setdefault(key, []).append(
            ApiRow(
                npu_name=row["NPU Name"],
                bench_name=row["Bench Name"],
                npu_dtype=dtype(record),
                bench_dtype=dtype(other) if other else "N/A",
                npu_shape=shape(record),
                bench_shape=shape(other) if other else "N/A",
                npu_requires_grad=record.get("requires_grad"),
                bench_requires_grad=other.get("requires_grad") if other else None,
                npu_max=cells[0],
                npu_min=cells[1],
                bench_max=bench_cells[0],
                bench_min=bench_cells[1],
                norm_relative=diff.norm_relative,
                cosine=tensor.get("Cosine", "N/A"),
                one_thousandth=tensor.get("One Thousandth Err Ratio", "N/A"),
                npu_md5=md5(record),
                bench_md5=md5(other) if other else "N/A",
            )
        )
        theirs.setdefault(key, []).append(row)
    return ours, theirs


@pytest.mark.parametrize("mode", ["statistics", "md5", "tensor_mode"])
def test_result_and_err_message_are_msprobes(mode):
    ours, theirs = _grouped(mode)
    seen = set()
    for key, rows in ours.items():
        verdicts = judge_api(rows, "tensor" if mode == "tensor_mode" else mode)
        assert [(v.result, v.err_message) for v in verdicts] == [
            (row["Result"], row["Err_message"]) for row in theirs[key]
        ], key
        seen |= {v.result for v in verdicts}
    assert seen == ({"pass", "warning", "error"} if mode != "tensor_mode" else {"pass", "error"})


def test_tensor_mode_cells_of_the_engine_are_msprobes_csv():
    npu, bench = records(dump("tensor_mode", "npu")), records(dump("tensor_mode", "bench"))
    for row in expected("tensor_mode"):
        ours = _tensor_cells(npu[row["NPU Name"]][1], bench[row["NPU Name"]][1])
        for column in MSPROBE_COLUMNS:
            value = ours[column]
            if isinstance(value, str):
                assert value == row[column], (row["NPU Name"], column)
            else:
                assert value == pytest.approx(float(row[column]), rel=1e-12, abs=1.5e-12), (row["NPU Name"], column)


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown msprobe compare mode 'all'"):
        judge_api([ApiRow("Functional.a.0.forward.input.0")], "all")


def test_ignored_calls_are_not_judged():
    """msprobe's ignore sets: ``to`` calls are never judged, ``_all_gather_base`` only on outputs."""
    bad = dict(bench_name="x", npu_max="inf", npu_dtype="Float16", bench_dtype="Float32")
    assert [v.result for v in judge_api([ApiRow("Tensor.to.0.forward.input.0", **bad)], "statistics")] == ["pass"]
    rows = [
        ApiRow("Distributed._all_gather_base.0.forward.input.0", **bad),
        ApiRow("Distributed._all_gather_base.0.forward.output.0", **bad),
    ]
    assert [v.result for v in judge_api(rows, "statistics")] == ["pass", "error"]
