"""``vc``: the whole network into result CSVs, -lt/-rt directory pairs, and what it writes where."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.commands.vc import vector_compare
from precision_tool.compare.result_read import read_result_csv
from precision_tool.render.theme import make_console
from precision_tool.status import ExitStatus
from tests.compare.test_engine import assert_agrees_with_reference
from tests.conftest import FIXTURES, make_context, run_command

STEP = "npu/debug_0/dump/*/*/*/*/*"


def _csvs(root: Path) -> list[Path]:
    return sorted((root / "temp" / "vector_compare").rglob("*.csv"))


def _snapshot(root: Path, data: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` except the data root's temp/, with its size and mtime."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and (data / "temp") not in p.parents
    }


def test_fixture_csv_agrees_with_msaccucmp_and_flags(fixture_data):
    context, out = make_context(fixture_data)
    before = _snapshot(fixture_data.parent, fixture_data)
    assert run_command(context, "vc") == ExitStatus.FLAGGED
    (csv,) = _csvs(fixture_data)
    assert csv.parent.parent == fixture_data / "temp" / "vector_compare"
    assert csv.name == f"result_{csv.parent.name}.csv"
    assert_agrees_with_reference(csv, FIXTURES / "small" / "reference_result.csv")
    rows = read_result_csv(csv)
    assert [r.index for r in rows] == sorted(r.index for r in rows)
    text = " ".join(out.getvalue().split())
    assert "37 tensors compared, 0 not compared" in text and "8 op(s) flagged (output cosine <= 0.98" in text
    assert str(csv) in out.getvalue().replace("\n", "")
    assert _snapshot(fixture_data.parent, fixture_data) == before  # nothing written outside temp/


def test_sample_is_flagged_and_each_run_gets_a_new_directory(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "vc") == ExitStatus.FLAGGED
    assert run_command(context, "vc") == ExitStatus.FLAGGED
    first, second = _csvs(sample_data)
    assert first.parent != second.parent
    assert any(r.is_output and r.cosine <= 0.98 for r in read_result_csv(first))


def test_threshold_below_every_cosine_is_ok(sample_data):
    context, _ = make_context(sample_data, COSINE_THRESHOLD=-1.0)
    assert run_command(context, "vc") == ExitStatus.OK


def test_alg_0_writes_cosine_only(fixture_data):
    context, _ = make_context(fixture_data)
    assert run_command(context, "vc -alg 0") == ExitStatus.FLAGGED
    (csv,) = _csvs(fixture_data)
    # msaccucmp -alg 0 writes this header: the selected metric's column only
    assert csv.read_text(encoding="utf-8").splitlines()[0] == (
        "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
        "CosineSimilarity,CompareFailReason"
    )
    rows = [r for r in read_result_csv(csv) if r.compared]
    assert rows and all(set(r.metrics) == {"CosineSimilarity"} for r in rows)


def test_an_alg_0_csv_is_read_back_by_vcs_through_the_cli(sample_data):
    import subprocess
    import sys

    env = {**os.environ, "HOME": str(sample_data.parent)}
    env.pop("PRECISION_TOOL_CONFIG", None)
    command = [sys.executable, "-m", "precision_tool", "--data", str(sample_data)]
    made = subprocess.run([*command, "vc", "-alg", "0"], env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 1, made.stderr  # flagged
    (csv,) = _csvs(sample_data)
    assert "MaxAbsoluteError" not in csv.read_text(encoding="utf-8").splitlines()[0]
    summary = subprocess.run([*command, "vcs", "-f", str(csv)], env=env, capture_output=True, text=True, timeout=120)
    assert summary.returncode == 1, summary.stderr
    assert "first operator that introduces the error" in summary.stdout


def test_bad_alg_and_unknown_graph_are_one_line_errors(fixture_data):
    context, out = make_context(fixture_data)
    assert run_command(context, "vc -alg 12") == ExitStatus.ERROR
    assert run_command(context, "vc -g no_such_graph") == ExitStatus.ERROR
    assert run_command(context, "vc -lt somewhere") == ExitStatus.ERROR
    text = out.getvalue()
    assert "unknown metric '12'" in text and "no Build graph called 'no_such_graph'" in text
    assert "give both -lt and -rt" in text and not _csvs(fixture_data)


def test_step_that_is_absent_is_an_error(fixture_data):
    context, out = make_context(fixture_data)
    assert run_command(context, "vc --step 7") == ExitStatus.ERROR
    assert "steps present: 0" in out.getvalue()


def test_several_steps_give_one_tagged_csv_each_in_one_directory(sample_data):
    step0 = next(sample_data.glob(STEP))
    shutil.copytree(step0, step0.parent / "1")
    context, out = make_context(sample_data)
    assert run_command(context, "vc --step 0|1") == ExitStatus.FLAGGED
    csvs = _csvs(sample_data)
    assert len(csvs) == 2 and csvs[0].parent == csvs[1].parent
    assert [p.name.endswith(f"_step{s}.csv") for p, s in zip(csvs, (0, 1))] == [True, True]
    assert read_result_csv(csvs[0]) == read_result_csv(csvs[1])
    assert out.getvalue().count("tensors compared") == 2


def test_without_a_graph_tensors_are_paired_by_name(sample_data):
    shutil.rmtree(sample_data / "npu/debug_0/graph")
    context, out = make_context(sample_data)
    run_command(context, "vc")
    assert "paired by name" in out.getvalue()
    rows = read_result_csv(_csvs(sample_data)[0])
    outputs = [r for r in rows if r.is_output]
    assert outputs and all(r.compared for r in outputs)
    assert all("producer of this input is unknown" in r.fail_reason for r in rows if r.is_input)


def test_graph_picked_by_name(sample_data):
    context, _ = make_context(sample_data)
    assert run_command(context, "vc -g ge_default_20261129120000_1") == ExitStatus.FLAGGED
    assert len(read_result_csv(_csvs(sample_data)[0])) > 30


# --- -lt / -rt ----------------------------------------------------------------------------------


def test_npu_step_dir_against_npy_dir(fixture_data):
    step = next(fixture_data.glob(STEP))
    context, _ = make_context(fixture_data)
    assert run_command(context, f"vc -lt {step} -rt {fixture_data / 'tf/dump'}") == ExitStatus.FLAGGED
    (csv,) = _csvs(fixture_data)
    assert_agrees_with_reference(csv, FIXTURES / "small" / "reference_result.csv")  # graph found beside


def test_npu_against_npu_by_op_name(sample_data):
    shutil.rmtree(sample_data / "npu/debug_1")  # the sample's debug_1 is a graph only
    shutil.copytree(sample_data / "npu/debug_0", sample_data / "npu/debug_1")
    context, out = make_context(sample_data)
    status = run_command(context, f"vc -lt {sample_data / 'npu/debug_0'} -rt {sample_data / 'npu/debug_1'}")
    assert status == ExitStatus.OK, out.getvalue()
    rows = read_result_csv(_csvs(sample_data)[0])
    assert rows and all(r.compared and r.cosine == pytest.approx(1.0) for r in rows)
    assert {r.kind for r in rows} == {"input", "output"}
    assert all(r.ground_truth == r.npu_name for r in rows)
    header = _csvs(sample_data)[0].read_text().splitlines()[0].split(",")
    assert header.count("Address") == 2  # msaccucmp's NPU-vs-NPU variant


def test_npu_against_npu_reports_what_one_side_lacks(sample_data):
    shutil.rmtree(sample_data / "npu/debug_1")  # the sample's debug_1 is a graph only
    shutil.copytree(sample_data / "npu/debug_0", sample_data / "npu/debug_1")
    for path in (sample_data / "npu/debug_1/dump").rglob("Add.*"):
        path.unlink()
    context, _ = make_context(sample_data)
    run_command(context, f"vc -lt {sample_data / 'npu/debug_0'} -rt {sample_data / 'npu/debug_1'}")
    rows = [r for r in read_result_csv(_csvs(sample_data)[0]) if r.npu_name == "resnet/add/add"]
    assert rows and all(not r.compared and "no dump of resnet/add/add" in r.fail_reason for r in rows)


def test_npy_against_npy(sample_data, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(sample_data / "tf/dump", other)
    (other / "odd name.npy").write_bytes((other / next(os.walk(other))[2][0]).read_bytes())
    shutil.copy(other / "odd name.npy", sample_data / "tf/dump" / "odd name.npy")
    context, _ = make_context(sample_data)
    assert run_command(context, f"vc -lt {sample_data / 'tf/dump'} -rt {other}") == ExitStatus.OK
    rows = read_result_csv(_csvs(sample_data)[0])
    assert len(rows) == len(list(other.iterdir()))
    assert all(r.compared and r.cosine == pytest.approx(1.0) for r in rows)
    assert any(r.npu_name == "odd name.npy" for r in rows)


def test_npy_on_the_left_of_npu_is_refused(fixture_data):
    context, out = make_context(fixture_data)
    step = next(fixture_data.glob(STEP))
    assert run_command(context, f"vc -lt {fixture_data / 'tf/dump'} -rt {step}") == ExitStatus.ERROR
    assert "NPU dump directory on the left" in out.getvalue()


def test_output_dir_option(fixture_data, tmp_path):
    context, _ = make_context(fixture_data)
    run_command(context, f"vc -o {tmp_path / 'results'}")
    assert len(list((tmp_path / "results").glob("result_*.csv"))) == 1 and not _csvs(fixture_data)


def test_progress_bar_on_a_terminal_leaves_only_the_summary(fixture_data):
    import io

    context, _ = make_context(fixture_data)
    buffer = io.StringIO()
    context.console = make_console(file=buffer, width=200, force_terminal=True)
    result = vector_compare(context)
    assert result.status == ExitStatus.FLAGGED and len(result.files) == 1
    assert "tensors compared" in str(result.renderables[-1])


def test_the_live_display_runs_no_thread_so_workers_can_fork(fixture_data):
    import io
    import threading

    from precision_tool.commands.vc_run import CompareProgress

    console = make_console(file=io.StringIO(), width=120, force_terminal=True)
    with CompareProgress(console) as display:
        update = display.track("step 0")
        update(4, 10, 1 << 20)
        assert threading.active_count() == 1
    assert "step 0" in console.file.getvalue()


def test_csv_names_from_long_model_names_are_capped(sample_data):
    step0 = next(sample_data.glob(STEP))
    model = step0.parents[1]
    long_model = model.rename(model.with_name("m" * 240))  # no Build graph of that name: by name
    shutil.copytree(long_model / "1" / "0", long_model / "1" / "1")
    context, out = make_context(sample_data, width=400)
    assert run_command(context, "vc --step '0|1'") in (ExitStatus.OK, ExitStatus.FLAGGED)
    csvs = _csvs(sample_data)
    assert len(csvs) == 2 and all(len(p.name) <= 255 for p in csvs), out.getvalue()
    assert csvs[0].name != csvs[1].name


# --- starting the pool's fork server before the run ------------------------------------------


@pytest.fixture
def started(monkeypatch):
    """The fork server's start, recorded instead of made; numba's line drawn at 1000 bytes
    (20,000 with cosine alone) so small data crosses it."""
    from precision_tool.compare import numba_line, pool_server

    calls: list[bool] = []
    monkeypatch.setattr(pool_server, "start", lambda: calls.append(True) or True)
    monkeypatch.setattr(numba_line, "numba_min_bytes", lambda cosine_only: 20_000.0 if cosine_only else 1000.0)
    monkeypatch.setattr(numba_line, "numba_enabled", lambda: True)
    return calls


def _prepare(data: Path, line: str, **settings) -> None:
    from dataclasses import replace

    from precision_tool.commands import build_registry
    from precision_tool.commands.registry import prepare_words
    from precision_tool.config import Config

    config = replace(Config(), data_root_dir=data, **{"workers": 2, **settings})
    prepare_words(build_registry(["vc"]), line.split(), config)


def _bytes(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * size)


def test_vc_starts_the_fork_server_when_its_data_will_want_numba(tmp_path, started):
    data = tmp_path / "precision_data"
    _bytes(data / "npu/a.bin", 600)
    _prepare(data, "vc")
    assert started == []  # 600 bytes: under the line
    _bytes(data / "temp/vector_compare/old.csv", 5000)  # the output root's files are not data
    _prepare(data, "vc")
    assert started == []
    _bytes(data / "tf/b.npy", 600)
    _prepare(data, "vc --fresh")
    assert started == [True]
    _prepare(data, "vc -alg 0")  # cosine alone draws its line further
    assert started == [True]


def test_vc_with_left_and_right_measures_those_directories(tmp_path, started):
    left, right = tmp_path / "left", tmp_path / "right"
    _bytes(left / "x.bin", 700)
    _bytes(right / "y.npy", 700)
    _prepare(tmp_path / "empty_root", f"vc -lt {left} -rt {right}")
    assert started == [True]


def test_vc_starts_no_server_where_it_would_not_serve(tmp_path, started, monkeypatch):
    from precision_tool.compare import numba_line

    data = tmp_path / "precision_data"
    _bytes(data / "npu/a.bin", 50_000)
    _prepare(data, "vc", workers=1)  # no pool
    _prepare(data, "vc --resume")  # the resumed run's options are its own
    _prepare(data, "vc --scheduler local:2")  # a cluster's workers
    _prepare(data, "vc -alg nonsense")  # the run says what is wrong
    _prepare(data, "vc --no-such-flag")
    _prepare(data, "vc --help")
    monkeypatch.setattr(numba_line, "numba_enabled", lambda: False)  # switched off or not installed
    _prepare(data, "vc")
    assert started == []


# A one-shot vc in a fresh interpreter, numba's line at one byte: what is imported when the
# fork server would start (recorded, not made).
_AT_START = """
import sys
from precision_tool.compare import numba_line, pool_server
numba_line.numba_min_bytes = lambda cosine_only: 1.0
numba_line.numba_enabled = lambda: True
pool_server.start = lambda: print("numpy imported" if "numpy" in sys.modules else "no numpy", flush=True) or False
from precision_tool import cli
cli.main(sys.argv[1:])
import os
print("BLAS threads:", os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS"), flush=True)
"""


@pytest.mark.parametrize("words", [(), ("-alg", "0"), ("-alg", "CosineSimilarity,4")])
def test_the_fork_server_starts_before_numpy_is_imported(tmp_path, words):
    """The server's load is what the pool waits for: the decision imports no numpy (it costs a
    tenth of a second), ``-alg`` included (its words are read against the metric table)."""
    seen = "no numpy"
    data = tmp_path / "precision_data"
    _bytes(data / "npu/a.bin", 600)
    done = subprocess.run(
        [sys.executable, "-c", _AT_START, "--data", str(data), "vc", *words],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PRECISION_TOOL_WORKERS": "2"},
        cwd=tmp_path,
    )
    assert done.stdout.splitlines()[:1] == [seen], done.stdout + done.stderr


@pytest.mark.parametrize(
    ("line", "blas", "threads"),
    [
        (["vc"], None, "1 1"),  # vc's process multiplies no matrices: OpenBLAS's thread would only spin
        (["-e", "vc; vc -alg 0"], None, "1 1"),
        (["-e", "vc; why model/conv1/Conv2D"], None, "None None"),  # why replays: its BLAS stays whole
        (["-e", "vc; nonsense"], None, "None None"),  # a word that names no command: as if it might
        (["vc"], "3", "3 1"),  # a setting of the user's is kept
    ],
)
def test_a_one_shot_line_of_vc_alone_keeps_blas_to_one_thread(tmp_path, line, blas, threads):
    data = tmp_path / "precision_data"
    _bytes(data / "npu/a.bin", 600)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if blas:
        env["OPENBLAS_NUM_THREADS"] = blas
    done = subprocess.run(
        [sys.executable, "-c", _AT_START, "--data", str(data), *line],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PRECISION_TOOL_WORKERS": "2"},
        cwd=tmp_path,
    )
    assert f"BLAS threads: {threads}" in done.stdout.splitlines(), done.stdout + done.stderr


# A one-shot vc in a fresh interpreter: the modules it imported, after its run.
_IMPORTED = """
import sys
from precision_tool import cli
status = cli.main(sys.argv[1:])
print("imported after", status, *sorted(sys.modules), flush=True)
"""

# What a GE run's own code never calls: msprobe's statistics rows and their records, a Dask
# cluster's session, the flagged ops' analysis (a view asks for it: vc's line counts rows),
# rich's tables (vc prints its line as a Text of its own) and logging (an internal error's);
# the other graph forms' readers (an OM, GE's ONNX, atc's JSON), msprobe's dump.json and the
# shell banner's survey of the data root; and from the standard library, multiprocessing (a
# pool's: this run is inline), difflib (a mistyped command's), strptime's module (a stamp is
# read by output_root) and secrets.
_NOT_FOR_A_GE_RUN = (
    "precision_tool.compare.msprobe_rows",
    "precision_tool.compare.msprobe_stats",
    "precision_tool.compare.cluster",
    "precision_tool.compare.divergence",
    "precision_tool.formats.om_model",
    "precision_tool.formats.onnx_graph",
    "precision_tool.formats.proto.onnx_ir",
    "precision_tool.formats.proto.atc_json",
    "precision_tool.formats.msprobe_json",
    "precision_tool.formats.data_survey",
    "rich.table",
    "logging",
    "multiprocessing",
    "difflib",
    "_strptime",
    "secrets",
)


def test_a_ge_run_imports_nothing_it_does_not_run(fixture_data):
    """Item 2 of the fixed cost: each module costs its import (a frozen dataclass alone about a
    millisecond on a slow core), so a GE run loads none of what only other runs use."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED, "--data", str(fixture_data), "vc"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PRECISION_TOOL_WORKERS": "1"},
        cwd=fixture_data,
    )
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("imported after ")]
    status, *modules = line.split()[2:]
    assert status == str(int(ExitStatus.FLAGGED)), done.stdout + done.stderr
    assert "precision_tool.compare.engine" in modules  # the run ran: its engine was loaded
    assert [name for name in _NOT_FOR_A_GE_RUN if name in modules] == []
