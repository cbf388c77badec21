"""The public ``precision_tool.compare(...)`` API: the same rows ``vc`` writes, and their views."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys

import pytest

import precision_tool
from precision_tool.compare.result_read import read_result_csv
from precision_tool.errors import PrecisionToolError
from tests.conftest import make_context, run_command

PLANTED = "resnet/conv2/Conv2D"


@pytest.fixture(scope="module")
def result(sample_data_module):
    return precision_tool.compare(sample_data_module, workers=1)


@pytest.fixture(scope="module")
def sample_data_module(tmp_path_factory):
    from precision_tool.sample.build import write_sample

    root = tmp_path_factory.mktemp("api") / "precision_data"
    write_sample(root)
    return root


def _vc_rows(root):
    context, _ = make_context(root)
    run_command(context, "vc")
    (csv_path,) = sorted((root / "temp" / "vector_compare").rglob("*.csv"))
    return read_result_csv(csv_path), csv_path


def test_rows_are_what_vc_writes(result, sample_data_module, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(sample_data_module, root)
    rows, _ = _vc_rows(root)
    mine = result.rows
    assert [r.tensor_index for r in mine] == [r.tensor_index for r in rows]
    for a, b in zip(mine, rows):
        assert a.index == b.index and a.npu_name == b.npu_name and a.ground_truth == b.ground_truth
        assert a.metrics.keys() == b.metrics.keys()
        for name, value in a.metrics.items():  # the CSV keeps six decimals
            assert value == pytest.approx(b.metrics[name], abs=5e-7, nan_ok=True)


def test_first_divergence_and_flagged(result):
    first = result.first_divergence()
    assert first is not None and first.name == PLANTED and first.introduces
    flagged = [op.name for op in result.flagged()]
    assert flagged[0] == PLANTED and len(flagged) >= 2
    assert all(not op.introduces for op in result.flagged()[1:])  # the rest inherit
    assert result.flagged(threshold=-1.0) == [] and result.first_divergence(threshold=-1.0) is None


SIDES = {"DataType": ("NPUDataType", "GroundTruthDataType"), "Address": ("NPUAddress", "GroundTruthAddress")}


def _named_sides(header: list[str]) -> list[str]:
    """The CSV header with each side's DataType and Address named by its side, in order."""
    seen: dict[str, int] = {}
    named = []
    for name in header:
        if name in SIDES:
            named.append(SIDES[name][seen.get(name, 0)])
            seen[name] = seen.get(name, 0) + 1
        else:
            named.append(name)
    return named


def test_to_pandas_has_the_csv_columns(result, tmp_path):
    frame = result.to_pandas()
    (path,) = result.write_csv(tmp_path / "out.csv")
    with path.open(newline="") as handle:
        header = next(csv.reader(handle))
    assert list(frame.columns) == _named_sides(header) + ["Verdict", "OpVerdict"]
    assert len(frame) == len(result.rows)
    cosines = frame["CosineSimilarity"]
    assert cosines.dtype.kind == "f"
    row = next(i for i, r in enumerate(result.rows) if r.tensor_index == f"{PLANTED}:output:0")
    assert cosines.iloc[row] == pytest.approx(result.rows[row].cosine)
    assert frame["Index"].dtype.kind == "i"
    assert frame["TensorIndex"].isna().sum() == sum(1 for r in result.rows if r.tensor_index is None)


def test_the_api_tells_the_verdict_vcs_tells(result, sample_data_module):
    """flagged(), first_divergence() and to_pandas()'s verdict columns are vcs --json's: the
    same flagged ops, the same introducer (replay-decided), the same states."""
    import json

    from tests.conftest import make_context, run_command

    context, buffer = make_context(sample_data_module, width=1000)
    run_command(context, "vc")
    buffer.truncate(0), buffer.seek(0)
    run_command(context, "vcs --json -l 0")
    (summary,) = json.loads(buffer.getvalue())["results"]
    assert [op.name for op in result.flagged()] == [op["op"] for op in summary["flagged"]]
    assert result.first_divergence().name == summary["first_introducer"]["op"] == PLANTED
    assert result.first_divergence().decided_by == "replay"
    frame = result.to_pandas()
    outputs = frame[frame["TensorIndex"].fillna("").str.contains(":output:")]
    states = {op["op"]: op["state"] for op in summary["flagged"]}
    for name, state in states.items():
        assert set(outputs[outputs["NPUDump"] == name]["OpVerdict"]) == {state}, name
    assert set(outputs["Verdict"]) <= {"diverges", "near", "rounding", "non-finite", "not compared"}
    assert (outputs[outputs["NPUDump"] == PLANTED]["Verdict"] == "diverges").all()


def test_to_pandas_names_the_npu_and_golden_columns_apart(result, sample_data_module, tmp_path):
    """The CSV has two DataType columns (and two Address columns NPU against NPU); the frame
    names them by side, so ``frame["NPUDataType"]`` is one column holding the first's values."""
    frame = result.to_pandas()
    assert frame.columns.is_unique
    assert [c for c in frame.columns if c.endswith(("DataType", "Address"))] == [
        "NPUDataType",
        "NPUAddress",
        "GroundTruthDataType",
    ]
    (path,) = result.write_csv(tmp_path / "out.csv")
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    first, second = (k for k, name in enumerate(rows[0]) if name == "DataType")
    planted = next(k for k, row in enumerate(rows[1:]) if row[rows[0].index("TensorIndex")] == f"{PLANTED}:output:0")
    assert (
        (frame["NPUDataType"].iloc[planted], frame["GroundTruthDataType"].iloc[planted])
        == (rows[1 + planted][first], rows[1 + planted][second])
        == ("float16", "float32")
    )
    npu = str(sample_data_module / "npu" / "debug_0")
    both = precision_tool.compare(left=npu, right=npu, workers=1).to_pandas()
    assert both.columns.is_unique
    assert [c for c in both.columns if c.endswith(("DataType", "Address"))] == [
        "NPUDataType",
        "NPUAddress",
        "GroundTruthDataType",
        "GroundTruthAddress",
    ]


def test_write_csv_reads_back_as_the_same_rows(result, tmp_path):
    (path,) = result.write_csv(tmp_path / "r.csv")
    back = read_result_csv(path)
    assert [r.tensor_index for r in back] == [r.tensor_index for r in result.rows]


def test_several_parts_write_one_csv_each(sample_data_module, tmp_path):
    root = tmp_path / "two"
    shutil.copytree(sample_data_module, root)
    step = next((root / "npu" / "debug_0" / "dump").rglob("0"))
    shutil.copytree(step, step.parent / "1")
    both = precision_tool.compare(root, steps="0|1", workers=1)
    assert len(both.parts) == 2
    paths = both.write_csv(tmp_path / "out")
    assert len(paths) == 2 and all(p.parent == tmp_path / "out" for p in paths)
    assert len(both.rows) == sum(len(p.rows) for p in both.parts)


def test_custom_metric_names_and_errors(sample_data_module):
    cosine_only = precision_tool.compare(sample_data_module, metrics="0", workers=1)
    compared = [r for r in cosine_only.rows if r.compared]
    assert compared and all(set(r.metrics) == {"CosineSimilarity"} for r in compared)
    with pytest.raises(PrecisionToolError, match="unknown metric"):
        precision_tool.compare(sample_data_module, metrics="nope")
    with pytest.raises(PrecisionToolError, match="give both"):
        precision_tool.compare(sample_data_module, left=str(sample_data_module))


def test_the_package_stays_importable_and_light():
    code = (
        "import sys, precision_tool as pt; assert 'numpy' not in sys.modules; "
        "import precision_tool.compare.metrics as m; assert callable(pt.compare); "
        "assert m.METRICS; print(pt.__version__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == precision_tool.__version__


def _golden_peak(stats):
    """A metric defined here: the largest |golden| value (the built-in 'range' group)."""
    return max(abs(stats.y_lo), abs(stats.y_hi))


def test_a_metric_defined_here_computes_in_workers_through_compare(sample_data_module):
    """compare(metrics=[... a Metric object ...], workers=2): the object reaches the worker
    processes; where the golden is one op's output, the value is that file's own maximum of
    |values|, taken with numpy."""
    import numpy as np

    from precision_tool.compare.metric_data import Metric

    peak = Metric("GoldenPeak", frozenset({"range"}), _golden_peak)
    found = precision_tool.compare(sample_data_module, metrics=["0", peak], workers=2)
    goldens = precision_tool.read_golden(sample_data_module / "tf/dump")
    compared = [r for r in found.rows if r.compared]
    checked = 0
    for row in compared:
        assert set(row.metrics) == {"CosineSimilarity", "GoldenPeak"}
        if row.is_output and row.ground_truth not in ("*", "") and "," not in row.ground_truth:
            index = int(row.tensor_index.rsplit(":", 1)[1])
            golden = np.load(goldens.path_for(row.ground_truth, index), allow_pickle=False)
            assert row.metrics["GoldenPeak"] == float(np.abs(golden.astype(np.float64)).max())
            checked += 1
    assert checked >= 5
    assert "GoldenPeak" in found.to_pandas().columns


def test_write_csv_and_to_pandas_keep_the_metrics_asked_for(sample_data_module, tmp_path):
    """compare(metrics="0") writes the cosine column only, as vc -alg 0 does, and its frame too."""
    found = precision_tool.compare(sample_data_module, metrics="0", workers=1)
    (path,) = found.write_csv(tmp_path / "cosine.csv")
    header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert "CosineSimilarity" in header and "MaxAbsoluteError" not in header
    frame = found.to_pandas()
    assert "CosineSimilarity" in frame.columns and "KullbackLeiblerDivergence" not in frame.columns
    assert frame["CosineSimilarity"].dtype.kind == "f"
    assert [r.tensor_index for r in read_result_csv(path)] == [r.tensor_index for r in found.rows]
