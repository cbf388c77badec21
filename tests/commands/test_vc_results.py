"""Issue 27: a result directory holds one run. ``vc -o DIR`` again replaces the earlier result
(the user's other files stay), ``vc --resume [DIR]`` continues the run named, with its options,
and a damaged ``run.json`` or ``comparisons.json`` is one line, never an internal error."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from precision_tool.commands import vc_run
from precision_tool.compare import manifest
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command

REPORT_LINE = re.compile(r"^report: (?P<path>.+/index\.html)", re.M)


def _interrupt_for_real(monkeypatch, after_rows: int = 10) -> None:
    """A real SIGINT (what Ctrl-C at the terminal sends) once ``after_rows`` rows are done."""

    def track(self, label):
        sent = []  # one signal a run

        def update(done, _total, _nbytes):
            if done >= after_rows and not sent:
                sent.append(done)
                os.kill(os.getpid(), signal.SIGINT)

        return update

    monkeypatch.setattr(vc_run.CompareProgress, "track", track)


def _run(context, out, line: str) -> tuple[ExitStatus, str]:
    out.seek(0), out.truncate()
    status = run_command(context, line)
    return status, out.getvalue()


def _one_error_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), text
    assert "Traceback" not in text and "internal error" not in text, text
    return lines[0]


def _csv_names(directory) -> list[str]:
    return sorted(p.name for p in directory.glob("*.csv"))


def _state(directory) -> dict:
    return json.loads((directory / "run.json").read_text(encoding="utf-8"))


def _vcs_csvs(context, out, directory) -> list[str]:
    status, text = _run(context, out, f"vcs -f {directory} --json")
    assert status == ExitStatus.FLAGGED, text
    document = json.loads(text)
    assert None not in [d["device"] for d in document["devices"]]  # no stale CSV "device null"
    return sorted(os.path.basename(r["csv"]) for r in document["results"])


# --- item 2: vc -o DIR twice ---------------------------------------------------------------------


def test_vc_o_twice_leaves_one_run_which_vcs_and_report_read(sample_data, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "notes.txt").write_text("mine")
    context, out = make_context(sample_data)
    assert _run(context, out, f"vc -o {results}")[0] == ExitStatus.FLAGGED
    (first,) = _csv_names(results)
    assert _run(context, out, f"vc -o {results} -alg 0")[0] == ExitStatus.FLAGGED  # same second too
    (second,) = _csv_names(results)
    assert second != first and (results / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in results.iterdir()) == ["comparisons.json", "notes.txt", second, "run.json"]
    assert list(manifest.read_manifest(results)) == [second]
    assert _state(results)["state"] == "complete"
    assert _vcs_csvs(context, out, results) == [second]
    status, text = _run(context, out, f"report -f {results}")
    assert status == ExitStatus.OK, text
    page = open(REPORT_LINE.search(text)["path"].replace("\n", ""), encoding="utf-8").read()
    assert second in page and first not in page


def test_a_reader_at_the_switch_sees_the_earlier_run_alone(sample_data, tmp_path, monkeypatch):
    """The new CSVs are in place, comparisons.json does not name them yet: a reader then (vcs)
    still sees the earlier run alone; a Ctrl-C then leaves the earlier result whole, and
    ``--resume`` finishes the new one."""
    results = tmp_path / "results"
    context, out = make_context(sample_data)
    run_command(context, f"vc -o {results}")
    (first,) = _csv_names(results)
    real, seen = manifest.write_manifest, []

    def read_first(*args, **kwargs):
        seen.append((_csv_names(results), _vcs_csvs(*make_context(sample_data), results)))
        return real(*args, **kwargs)

    monkeypatch.setattr(manifest, "write_manifest", read_first)
    assert _run(context, out, f"vc -o {results}")[0] == ExitStatus.FLAGGED
    ((present, read),) = seen
    assert len(present) == 2 and read == [first]
    (second,) = _csv_names(results)
    assert _vcs_csvs(context, out, results) == [second]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(manifest, "write_manifest", interrupted)
    assert _run(context, out, f"vc -o {results}")[0] == ExitStatus.INTERRUPTED
    monkeypatch.setattr(manifest, "write_manifest", real)
    assert _csv_names(results) == [second] and _state(results)["state"] == "interrupted"
    assert _vcs_csvs(context, out, results) == [second]
    assert _run(context, out, f"vc --resume {results}")[0] == ExitStatus.FLAGGED
    (third,) = _csv_names(results)
    assert third != second and _vcs_csvs(context, out, results) == [third]


def test_a_dir_with_csvs_vc_did_not_write_is_refused(sample_data, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    theirs = results / "msaccucmp_result.csv"
    theirs.write_text("Index,OpType\n")
    context, out = make_context(sample_data)
    status, text = _run(context, out, f"vc -o {results}")
    assert status == ExitStatus.ERROR
    line = _one_error_line(text)
    assert "msaccucmp_result.csv" in line and "vc did not write" in line and str(results) in line
    assert sorted(p.name for p in results.iterdir()) == ["msaccucmp_result.csv"]
    assert theirs.read_text() == "Index,OpType\n"


def test_a_dir_another_vc_is_writing_is_refused(sample_data, tmp_path):
    results = tmp_path / "results"
    context, out = make_context(sample_data)
    run_command(context, f"vc -o {results}")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state = _state(results)
        state.update(state="running", pid=other.pid)
        (results / "run.json").write_text(json.dumps(state))
        for line in (f"vc -o {results}", f"vc --resume {results}"):
            status, text = _run(context, out, line)
            assert status == ExitStatus.ERROR, line
            assert f"another vc (pid {other.pid}) is writing" in _one_error_line(text)
    finally:
        other.kill()
        other.wait()


# --- item 3: vc --resume [DIR] -------------------------------------------------------------------


@pytest.mark.parametrize("resume", ["vc --resume {dir}", "vc --resume -o {dir}"])
def test_an_interrupted_vc_o_is_resumed_by_naming_its_dir(sample_data, tmp_path, monkeypatch, resume):
    results = tmp_path / "results"
    context, out = make_context(sample_data, WORKERS=1)
    _interrupt_for_real(monkeypatch)
    assert _run(context, out, "vc --step 0")[0] == ExitStatus.INTERRUPTED  # one under temp/ too
    assert _run(context, out, f"vc -o {results} --step 0 -alg 0,1")[0] == ExitStatus.INTERRUPTED
    monkeypatch.undo()
    assert _state(results)["state"] == "interrupted" and not _csv_names(results)
    status, text = _run(context, out, resume.format(dir=results))
    assert status == ExitStatus.FLAGGED, text
    assert int(text.split("reused ")[1].split()[0]) >= 1  # rows the interrupted run computed
    (csv,) = _csv_names(results)
    assert str(results / csv) in text.replace("\n", "")
    header = (results / csv).read_text(encoding="utf-8").splitlines()[0]
    assert "CosineSimilarity" in header and "MaxAbsoluteError" in header and "KullbackLeibler" not in header
    (temp_run,) = (sample_data / "temp" / "vector_compare").iterdir()
    assert _state(temp_run)["state"] == "interrupted"  # not the run resumed


def test_resume_without_a_dir_says_how_to_resume_a_vc_o(sample_data, tmp_path, monkeypatch):
    results = tmp_path / "results"
    context, out = make_context(sample_data, WORKERS=1)
    _interrupt_for_real(monkeypatch)
    assert _run(context, out, f"vc -o {results}")[0] == ExitStatus.INTERRUPTED
    line = _one_error_line(_run(context, out, "vc --resume")[1])
    assert "no interrupted comparison under" in line and "vc --resume DIR" in line


@pytest.mark.parametrize(
    "given, shown", [("-alg 0", "-alg 0"), ("--device 1", "--device 1"), ("--step 0 -alg 0", "-alg 0")]
)
def test_resume_refuses_options_other_than_the_runs(sample_data, monkeypatch, given, shown):
    context, out = make_context(sample_data, WORKERS=1)
    _interrupt_for_real(monkeypatch)
    assert _run(context, out, "vc --step 0")[0] == ExitStatus.INTERRUPTED
    monkeypatch.undo()
    (run_dir,) = (sample_data / "temp" / "vector_compare").iterdir()
    for line in (f"vc --resume {given}", f"vc --resume {run_dir} {given}"):
        status, text = _run(context, out, line)
        assert status == ExitStatus.ERROR, line
        message = _one_error_line(text)
        assert shown in message and "run.json" in message and "--step 0" not in message.split(":", 2)[-1]
    assert _state(run_dir)["state"] == "interrupted"
    assert _run(context, out, "vc --resume --step 0")[0] == ExitStatus.FLAGGED  # the run's own


def test_resume_of_a_complete_run_or_a_plain_dir_is_one_line(sample_data, tmp_path):
    results = tmp_path / "results"
    context, out = make_context(sample_data)
    run_command(context, f"vc -o {results}")
    assert "is complete" in _one_error_line(_run(context, out, f"vc --resume {results}")[1])
    assert "no run.json" in _one_error_line(_run(context, out, f"vc --resume {tmp_path}")[1])
    other = tmp_path / "other"
    line = _one_error_line(_run(context, out, f"vc --resume {results} -o {other}")[1])
    assert "two directories" in line


# --- item 5: damaged run.json and comparisons.json -------------------------------------------------


def _sparse(path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)  # no disk used: the reader must refuse it by its size


def _interrupted_state() -> dict:
    return {"state": "interrupted", "options": {"steps": "0"}, "pid": 1, "stamp": "20240101000000"}


DAMAGED = {
    "options null": lambda p: p.write_text(json.dumps({**_interrupted_state(), "options": None})),
    "a list": lambda p: p.write_text("[1]"),
    "an option a number": lambda p: p.write_text(json.dumps({**_interrupted_state(), "options": {"algorithms": 5}})),
    "a bad stamp": lambda p: p.write_text(json.dumps({**_interrupted_state(), "stamp": 5})),
    "a bad state": lambda p: p.write_text(json.dumps({**_interrupted_state(), "state": [1]})),
    "a bad pid": lambda p: p.write_text(json.dumps({**_interrupted_state(), "pid": "x"})),
    "bad replaces": lambda p: p.write_text(json.dumps({**_interrupted_state(), "replaces": ["../x.csv"]})),
    "nested 100k deep": lambda p: p.write_text("[" * 100_000 + "]" * 100_000),
    "not UTF-8": lambda p: p.write_bytes(b'{"state": "\xff\xfe"}'),
    "not JSON": lambda p: p.write_text("{"),
    "huge": lambda p: _sparse(p, 1 << 30),
    "a FIFO": lambda p: os.mkfifo(p),
    "a directory": lambda p: p.mkdir(),
}
PROBLEMS = {
    "options null": "options",
    "a list": "not an object",
    "an option a number": "algorithms",
    "a bad stamp": "stamp",
    "a bad state": "state",
    "a bad pid": "pid",
    "bad replaces": "replaces",
    "nested 100k deep": "nested",
    "not UTF-8": "UTF-8",
    "not JSON": "JSON",
    "huge": "bytes",
    "a FIFO": "not a regular file",
    "a directory": "not a regular file",
}


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_run_json_is_one_line_naming_it(sample_data, tmp_path, damage):
    results = tmp_path / "results"
    results.mkdir()
    DAMAGED[damage](results / "run.json")
    context, out = make_context(sample_data)
    for line in (f"vc --resume {results}", f"vc -o {results}"):
        status, text = _run(context, out, line)
        assert status == ExitStatus.ERROR, (line, text)
        message = _one_error_line(text)
        assert str(results / "run.json") in message and PROBLEMS[damage] in message, message
    assert not _csv_names(results)


@pytest.mark.parametrize("damage", ["options null", "nested 100k deep", "a FIFO"])
def test_the_newest_search_passes_over_a_damaged_run_json_and_names_it(sample_data, monkeypatch, damage):
    context, out = make_context(sample_data, width=400, WORKERS=1)
    _interrupt_for_real(monkeypatch)
    assert _run(context, out, "vc --step 0")[0] == ExitStatus.INTERRUPTED
    monkeypatch.undo()
    (run_dir,) = (sample_data / "temp" / "vector_compare").iterdir()
    newer = run_dir.with_name("29991231235959")
    newer.mkdir()
    DAMAGED[damage](newer / "run.json")
    status, text = _run(context, out, "vc --resume")
    assert status == ExitStatus.FLAGGED, text
    assert "Traceback" not in text and "internal error" not in text
    warning = next(line for line in text.splitlines() if str(newer / "run.json") in line)
    assert PROBLEMS[damage] in warning
    assert _state(run_dir)["state"] == "complete" and len(_csv_names(run_dir)) == 1


@pytest.mark.parametrize("damage", ["a list", "nested 100k deep", "not UTF-8", "huge", "a FIFO"])
def test_a_damaged_manifest_is_read_around_by_vcs_and_refused_by_vc_o(sample_data, tmp_path, damage):
    results = tmp_path / "results"
    context, out = make_context(sample_data)
    run_command(context, f"vc -o {results}")
    (results / "comparisons.json").unlink()
    DAMAGED[damage](results / "comparisons.json")
    status, text = _run(context, out, f"vcs -f {results}")
    assert status == ExitStatus.FLAGGED and "Traceback" not in text and "internal error" not in text, text
    status, text = _run(context, out, f"vc -o {results}")
    assert status == ExitStatus.ERROR
    assert str(results / "comparisons.json") in _one_error_line(text)


def test_help_vc_documents_resume_dir(sample_data):
    context, out = make_context(sample_data, width=200)
    assert _run(context, out, "help vc")[0] == ExitStatus.OK
    text = " ".join(out.getvalue().split())
    assert "--resume [DIR]" in text and "refused" in text
