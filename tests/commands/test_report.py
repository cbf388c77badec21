"""``report`` through the real command line: where it writes (and nothing else), what it says,
bad input as one line, ``--model-explorer``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from precision_tool.compare.result_csv import NUMERIC_METRICS
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command
from tests.model_explorer.explorer import require_explorer, serving
from tests.report.synthetic import write_chain

REPORT_LINE = re.compile(r"^report: (?P<path>.+/index\.html)  \((?P<kib>[\d.]+) KiB\)$", re.M)


def cli(*args, cwd):
    script = shutil.which("precision-tool")
    assert script, "the console script is missing: install the package (README test command)"
    env = {**os.environ, "HOME": str(cwd)}
    env.pop("PRECISION_TOOL_CONFIG", None)
    return subprocess.run([script, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return answer.read()


def tree(root):
    """Every file under ``root`` with its size and mtime."""
    return {p.relative_to(root): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_report_after_vc_writes_only_under_temp_report(sample_data):
    cwd = sample_data.parent
    assert cli("--data", str(sample_data), "vc", cwd=cwd).returncode == ExitStatus.FLAGGED
    before = tree(cwd)
    result = cli("--data", str(sample_data), "report", cwd=cwd)
    assert result.returncode == 0, result.stderr
    match = REPORT_LINE.search(result.stdout)
    assert match, result.stdout
    index = Path(match["path"])
    written = [p for p, v in tree(cwd).items() if before.get(p) != v]
    assert written == [index.relative_to(cwd)]
    assert index.parent.parent == sample_data / "temp" / "report"
    assert re.fullmatch(r"\d{14}", index.parent.name)
    text = index.read_text(encoding="utf-8")
    assert re.search(
        r"first operator that introduces the error: <b class=\"name\">resnet/conv2/Conv2D"
        r"</b> \(Conv2D\), Index 13",
        text,
    )
    assert abs(float(match["kib"]) - len(text.encode()) / 1024) < 0.1
    for title in ("overflow check", "fusion check", "cast check", "graph similarity"):
        assert title in text


def test_output_dir_and_file_option(data_root, tmp_path):
    csv_path = write_chain(data_root, 30, 10)
    out = tmp_path / "shared" / "run1"
    result = cli("--data", str(data_root), "report", "-f", str(csv_path), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]
    assert not (data_root / "temp" / "report").exists()
    assert "net/block1/op10" in (out / "index.html").read_text(encoding="utf-8")


def test_model_explorer_prints_the_short_command_that_starts_it_verdict_first(data_root, tmp_path):
    """The report prints what ``explore`` prints to start Model Explorer again: the short command
    on its ``explore.json`` (the verdict overlay first, the cosine last, as explore's), and that
    command, run as printed, starts the server on that graph and node data."""
    require_explorer()
    csv_path = write_chain(data_root, 30, 10)
    result = cli("--data", str(data_root), "report", "--model-explorer", "-o", str(tmp_path / "r"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("model explorer: "))
    command = line.removeprefix("model explorer: ")
    config = tmp_path / "r" / "model_explorer" / csv_path.stem / "explore.json"
    assert command == f"python3 -m precision_tool.model_explorer.serve {config}" and len(command) < 200
    launch = json.loads(config.read_text(encoding="utf-8"))
    graph = data_root / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt"
    assert launch["graph"] == str(graph.resolve()) and launch["focus"] == "net/block1/op10"
    paths = launch["node_data"]
    others = [m for m in NUMERIC_METRICS if m != "CosineSimilarity"]
    assert [os.path.basename(p) for p in paths] == [
        "verdict.json",
        *[f"{m}.json" for m in others],
        "CosineSimilarity.json",
    ]  # explore's order
    assert all(os.path.isfile(p) for p in paths)
    with serving(command) as base:
        served = json.loads(get(base + "/api/v1/read_text_file?path=" + urllib.parse.quote(paths[0])))
        (verdict,) = json.loads(served["content"]).values()
        assert verdict["results"]["net/block1/op10"]["value"] == "\u25b2 introduces"


def test_bad_input_is_one_line_and_exit_status_2(data_root, tmp_path):
    missing = cli("--data", str(data_root), "report", "-f", "nope.csv", cwd=tmp_path)
    assert missing.returncode == ExitStatus.ERROR
    assert missing.stderr.strip().splitlines() == ["error: nope.csv: no such result file or directory"]
    nothing = cli("--data", str(data_root), "report", cwd=tmp_path)
    assert nothing.returncode == ExitStatus.ERROR and "run 'vc' (or 'ac -c') first" in nothing.stderr
    assert len(nothing.stderr.strip().splitlines()) == 1
    garbage = tmp_path / "garbage.csv"
    garbage.write_text("a,b\n1,2\n", encoding="utf-8")
    bad = cli("--data", str(data_root), "report", "-f", str(garbage), cwd=tmp_path)
    assert bad.returncode == ExitStatus.ERROR
    assert bad.stderr.strip() == f"error: {garbage}: not a comparison result: no Index column"
    depth = cli("--data", str(data_root), "report", "-s", "-1", cwd=tmp_path)
    assert depth.returncode == ExitStatus.ERROR and "-s DEPTH must be 0 or more" in depth.stderr
    assert not (data_root / "temp" / "report").exists()


def test_one_bad_csv_among_several_is_an_error_section(data_root):
    good = write_chain(data_root, 20, 5)
    (good.parent / "result_bad.csv").write_text("Index,NPUDump\n", encoding="utf-8")
    context, out = make_context(data_root)
    status = run_command(context, f"report -f {good.parent}")
    assert status == ExitStatus.ERROR
    text = out.getvalue()
    assert "error: " in text and "not a comparison result: no TensorIndex column" in text
    page = next((data_root / "temp" / "report").glob("*/index.html")).read_text(encoding="utf-8")
    assert page.count('<section class="result') == 2
    assert '<section class="result error">' in page and "net/block0/op5" in page


def test_reports_in_one_second_get_their_own_directories(data_root):
    write_chain(data_root, 10, 5)
    context, _ = make_context(data_root)
    for _ in range(3):
        assert run_command(context, "report") == ExitStatus.OK
    assert len(list((data_root / "temp" / "report").glob("*/index.html"))) == 3


def test_the_shell_runs_report_from_piped_input(sample_data):
    cwd = sample_data.parent
    script = shutil.which("precision-tool")
    result = subprocess.run(
        [script, "--data", str(sample_data)],
        input="vc\nreport -s 1\nexit\n",
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(cwd)},
    )
    assert REPORT_LINE.search(result.stdout), result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("line", ["report -h", "help report"])
def test_help(data_root, line):
    context, out = make_context(data_root)
    assert run_command(context, line) == ExitStatus.OK
    assert "--model-explorer" in out.getvalue() or "self-contained HTML report" in out.getvalue()
