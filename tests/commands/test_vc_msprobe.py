"""``vc`` on msprobe dumps through the real command line: a data root with npu/ and bench/,
-lt/-rt at any level, ranks paired by number, the mapping file written and fed back, msprobe's
columns beside the CSV. Expected numbers are computed here with numpy from the arrays written."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.compare.msprobe_trees import write_rank

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((8, 6)).astype(np.float32)
GOOD = X @ W
BAD = GOOD.copy()
BAD[:, 0] *= -3.0  # the planted defect: matmul's first column


def _tool(cwd: Path, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


def _network(root: Path, side: str, rank: int = 0, defect: bool = False) -> Path:
    out = BAD if defect else GOOD
    calls = [("Functional.matmul.0.forward", [X, W], [out]), ("Functional.relu.0.forward", [out], [np.maximum(out, 0)])]
    return write_rank(root / side / "step0" / f"rank{rank}", calls)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def _number(cell: str) -> float | None:
    try:
        return float(cell) if cell.lower() not in ("nan", "inf", "-inf") else None
    except ValueError:
        return None


def _rows(csv_path: Path) -> list[dict]:
    with open(csv_path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def data_root(tmp_path) -> Path:
    root = tmp_path / "precision_data"
    _network(root, "npu", defect=True)
    _network(root, "bench")
    return root


def _result_dir(root: Path) -> Path:
    (directory,) = (root / "temp" / "vector_compare").iterdir()
    return directory


def test_a_data_root_of_two_msprobe_dumps_is_compared_and_the_defect_named(data_root):
    done = _tool(data_root.parent, "--data", str(data_root), "vc")
    assert done.returncode == 1, done.stderr  # flagged
    assert "step 0, rank 0: 5 tensors compared, 0 not compared" in done.stdout
    directory = _result_dir(data_root)
    (result,) = directory.glob("result_*.csv")
    rows = {r["TensorIndex"]: r for r in _rows(result)}
    out = rows["Functional.matmul.0.forward:output:0"]
    assert float(out["CosineSimilarity"]) == pytest.approx(_cosine(BAD, GOOD), abs=1e-6)
    assert float(rows["Functional.matmul.0.forward:input:1"]["CosineSimilarity"]) == pytest.approx(1.0)
    assert out["NPUDump"] == "Functional.matmul.0.forward" and out["OpType"] == "Functional.matmul"
    summary = _tool(data_root.parent, "--data", str(data_root), "vcs")
    assert "first operator that introduces the error: Functional.matmul.0.forward" in " ".join(summary.stdout.split())


def test_msprobe_columns_and_the_mapping_are_written_beside_the_csv(data_root):
    _tool(data_root.parent, "--data", str(data_root), "vc")
    msprobe = _result_dir(data_root) / "msprobe"
    (table,) = msprobe.glob("compare_result_*.csv")
    rows = _rows(table)
    assert list(rows[0])[:8] == [
        "NPU Name",
        "Bench Name",
        "NPU Dtype",
        "Bench Dtype",
        "NPU Tensor Shape",
        "Bench Tensor Shape",
        "NPU Requires_grad",
        "Bench Requires_grad",
    ]
    names = [r["NPU Name"] for r in rows]
    assert names == [
        "Functional.matmul.0.forward.input.0",
        "Functional.matmul.0.forward.input.1",
        "Functional.matmul.0.forward.output.0",
        "Functional.relu.0.forward.input.0",
        "Functional.relu.0.forward.output.0",
    ]
    out = rows[2]
    assert float(out["NPU max"]) == pytest.approx(float(BAD.max()))  # from dump.json
    assert float(out["Bench l2norm"]) == pytest.approx(float(np.linalg.norm(GOOD.astype(np.float64))))
    (mapping,) = msprobe.glob("mapping_*.yaml")
    import yaml

    assert yaml.safe_load(mapping.read_text()) == {n: n for n in names}


def test_the_mapping_fed_back_pairs_as_it_says(data_root, tmp_path):
    mapping = tmp_path / "pairs.yaml"
    # compare relu's input with matmul's (good) output on the bench: the same values
    mapping.write_text('"Functional.relu.0.forward.input.0": "Functional.matmul.0.forward.output.0"\n')
    done = _tool(data_root.parent, "--data", str(data_root), "vc", "--mapping", str(mapping))
    assert done.returncode == 1, done.stderr
    (result,) = _result_dir(data_root).glob("result_*.csv")
    rows = {r["TensorIndex"]: r for r in _rows(result)}
    relu_in = rows["Functional.relu.0.forward:input:0"]
    assert relu_in["GroundTruth"] == "Functional.matmul.0.forward"
    assert float(relu_in["CosineSimilarity"]) == pytest.approx(_cosine(BAD, GOOD), abs=1e-6)
    relu_out = rows["Functional.relu.0.forward:output:0"]
    assert relu_out["CosineSimilarity"] == "NaN" and "mapping pairs other tensors" in relu_out["CompareFailReason"]


def test_left_and_right_at_every_level_and_ranks_paired_by_number(tmp_path):
    npu, bench = tmp_path / "dump_npu", tmp_path / "dump_gpu"
    for rank in (0, 1):
        _network(npu, "", rank, defect=rank == 1)
        _network(bench, "", rank)
    work = tmp_path / "work"
    work.mkdir()
    done = _tool(work, "--data", str(work), "vc", "-lt", str(npu), "-rt", str(bench))
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stdout.splitlines() if "tensors compared" in line]
    assert [line.split(":")[0] for line in lines] == ["step 0, rank 0", "step 0, rank 1"]
    assert "0 op(s) flagged" in lines[0] and "0 op(s) flagged" not in lines[1]
    one = _tool(
        work,
        "--data",
        str(work),
        "vc",
        "-lt",
        str(npu / "step0" / "rank0"),
        "-rt",
        str(bench / "step0" / "rank1" / "dump.json"),
        "-o",
        str(work / "out"),
    )
    assert one.returncode == 0, one.stderr  # one rank dir each: those two, whatever their numbers
    only = _tool(
        work, "--data", str(work), "vc", "-lt", str(npu), "-rt", str(bench), "--device", "1", "-o", str(work / "out1")
    )
    assert [line.split(":")[0] for line in only.stdout.splitlines() if "tensors compared" in line] == ["step 0, rank 1"]


def test_a_rank_without_a_bench_rank_is_one_line_and_status_2(tmp_path):
    npu, bench = tmp_path / "n", tmp_path / "b"
    _network(npu, "", 0)
    _network(npu, "", 1)
    _network(bench, "", 0)
    _network(bench, "", 2)
    done = _tool(tmp_path, "--data", str(tmp_path), "vc", "-lt", str(npu), "-rt", str(bench))
    assert done.returncode == 2
    assert "no bench rank directory matches step 0, rank 1" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_dump_json_cut_short_is_compared_as_far_as_it_goes_with_one_line(data_root):
    path = data_root / "npu" / "step0" / "rank0" / "dump.json"
    text = path.read_text()
    assert json.loads(text)["data"]  # whole before the test cuts it
    path.write_text(text[: text.index('"Functional.relu.0.forward"') + 40])  # the run crashed
    done = _tool(data_root.parent, "--data", str(data_root), "vc")
    text = " ".join(done.stdout.split())  # the terminal may wrap a long line
    assert "cut short after 1 call (the run probably crashed" in text
    assert "step 0, rank 0: 3 tensors compared" in text


def test_ac_runs_the_checks_that_apply_and_finds_inf_from_the_files(tmp_path):
    x = np.ones((4, 8), np.float16)
    bad = (x * 2).copy()
    bad[0, 0], bad[1, 1] = np.inf, np.nan
    root = tmp_path / "pd"
    write_rank(root / "npu" / "step0" / "rank0", [("Functional.mul.0.forward", [x], [bad])])
    write_rank(root / "bench" / "step0" / "rank0", [("Functional.mul.0.forward", [x], [x * 2])])
    done = _tool(tmp_path, "--data", str(root), "ac", "-c", "--json")
    doc = json.loads(done.stdout)
    assert set(doc["checks"]) == {"overflow", "fusion"}  # casts and graph similarity read GE graphs
    (item,) = doc["checks"]["overflow"]["nonfinite"]
    assert item["tensor_index"] == "Functional.mul.0.forward:output:0"
    assert (item["npu"]["inf"], item["npu"]["nan"]) == (1, 1)  # counted in the file
    assert doc["checks"]["overflow"]["flagged"] is True and done.returncode == 1


def _msprobes_csv_again(tmp_path: Path, npu: Path, bench: Path) -> list[dict]:
    """Our msprobe/compare_result CSV of ``vc -lt NPU -rt BENCH`` (its lines in order)."""
    out = tmp_path / "out"
    done = _tool(tmp_path, "--data", str(tmp_path), "vc", "-lt", str(npu), "-rt", str(bench), "-o", str(out))
    assert done.returncode in (0, 1), done.stderr
    (table,) = (out / "msprobe").glob("compare_result_*.csv")
    return _rows(table)


def _assert_lines_are_msprobes(ours: list[dict], theirs: list[dict]) -> None:
    """Line for line and cell for cell what msprobe wrote, in its order, with its columns;
    EucDist to 1e-12 (summed in another order)."""
    assert [r["NPU Name"] for r in ours] == [r["NPU Name"] for r in theirs]
    assert list(ours[0]) == list(theirs[0])  # msprobe's columns, NPU_Stack_Info and Data_name included
    for mine, row in zip(ours, theirs):
        for column, cell in mine.items():
            expected = row[column]
            where = (row["NPU Name"], column, cell, row[column])
            if column == "EucDist" and _number(expected) is not None:
                assert _number(cell) == pytest.approx(float(expected), rel=1e-12, abs=1.5e-12), where
            else:
                assert cell == expected, where


def test_msprobes_columns_are_the_lines_msprobe_wrote_for_the_same_dumps(tmp_path):
    """Against the CSV mindstudio-probe's compare wrote for tests/data/msprobe_args (a PyTorch
    pair with None, int, float, bool, str, torch.Size and slice arguments, an empty list and a
    list of tensors, an output that is no tensor, a P2POp, a module parameter, a call with no tensor, a
    scalar that differs and an output that drifts;
    bench/msprobe_args_reference.py): every
    line, tensors and other arguments, in msprobe's order, every cell, Result and Err_message
    included. Before, the metric cells were cut to the result CSV's six decimals, the judge
    read them as text (the input/output rules never fired), and no argument had a line."""
    data = Path(__file__).resolve().parent.parent / "data" / "msprobe_args"
    ours = _msprobes_csv_again(tmp_path, data / "npu" / "step0", data / "bench" / "step0")
    _assert_lines_are_msprobes(ours, _rows(data / "expected.csv"))
    results = {r["NPU Name"]: (r["Result"], r["Err_message"]) for r in ours}
    assert results["Functional.dropout.0.forward.input.1"] == (
        "error",
        '["error: The scalar parameters of NPU and Bench are inconsistent."]',
    )


@pytest.mark.parametrize("mode", ["tensor_mode", "md5"])
def test_msprobes_columns_of_a_mindspore_pair_are_the_lines_msprobe_wrote(tmp_path, mode):
    """The same against msprobe's CSVs for tests/data/msprobe_metrics/{tensor_mode,md5}
    (MindSpore dumps): an int argument in a column of numbers alone is written as a float
    (3.0), an infinite float as " inf" (msprobe's, for spreadsheets), the checksums of the
    arguments are msprobe's CRC-32 of their text."""
    data = Path(__file__).resolve().parent.parent / "data" / "msprobe_metrics" / mode
    ours = _msprobes_csv_again(tmp_path, data / "npu", data / "bench")
    _assert_lines_are_msprobes(ours, json.loads((data / "expected.json").read_text())["rows"])
    if mode == "tensor_mode":
        assert {r["NPU Name"]: r["NPU max"] for r in ours}["Functional.param.0.forward.input.1"] == "3.0"


def test_msprobes_statistics_lines_are_the_lines_msprobe_wrote(tmp_path):
    """Statistics mode against msprobe's CSV for tests/data/msprobe_metrics/statistics, whose
    tensor records hold statistics of every kind on purpose (3 for 3.0, true, null, "cpu",
    "inf" as text): msprobe shows them, and computes its differences, as the file has them, and
    so do we (``Tensor.written``; the verdict reads them as numbers)."""
    data = Path(__file__).resolve().parent.parent / "data" / "msprobe_metrics" / "statistics"
    ours = _msprobes_csv_again(tmp_path, data / "npu", data / "bench")
    _assert_lines_are_msprobes(ours, json.loads((data / "expected.json").read_text())["rows"])
    assert {r["NPU Name"]: r["Bench l2norm"] for r in ours}["Functional.cells.0.forward.input.1"] == "True"


def test_a_damaged_stack_json_leaves_the_stacks_out_and_the_run_goes_on(tmp_path):
    """A stack.json that is no JSON: vc compares and writes msprobe's table as usual, its
    NPU_Stack_Info cells N/A (``ni`` says what is wrong with the file)."""
    import shutil

    source = Path(__file__).resolve().parent.parent / "data" / "msprobe_args"
    data = tmp_path / "msprobe_args"
    shutil.copytree(source, data)
    (data / "npu" / "step0" / "rank0" / "stack.json").write_text("{ not json", encoding="utf-8")
    ours = _msprobes_csv_again(tmp_path, data / "npu" / "step0", data / "bench" / "step0")
    expected = _rows(source / "expected.csv")
    assert [r["NPU Name"] for r in ours] == [r["NPU Name"] for r in expected]
    assert {r["NPU_Stack_Info"] for r in ours} == {"N/A"}
    assert [r["Result"] for r in ours] == [r["Result"] for r in expected]
