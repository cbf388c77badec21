"""A result directory's state files read as untrusted input, and what a new run in a directory
used before replaces (only what vc wrote there) or refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime

import pytest

from precision_tool.compare.manifest import MANIFEST_NAME, load_manifest, read_manifest, result_csvs
from precision_tool.compare.result_dir import (
    COMPLETE,
    INTERRUPTED,
    RUN_FILE,
    RUNNING,
    CompareOptions,
    interrupted_run,
    new_result_dir,
    read_state,
)
from precision_tool.compare.state_file import read_json_file
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.output_root import STAMP, OutputRoot, stamps


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def _entry(csv: str, **fields) -> dict:
    return {"csv": csv, "label": "device 0", **fields}


def _write_manifest(directory, entries) -> None:
    (directory / MANIFEST_NAME).write_text(json.dumps({"schema": 1, "comparisons": entries}))


@pytest.mark.parametrize(
    "document",
    [
        {"comparisons": "result_a.csv"},  # a string iterated as entries
        {"comparisons": [1]},
        {"comparisons": [_entry("result_a.csv", device="0")]},
        {"comparisons": [_entry("result_a.csv", npu_vs_npu=1)]},
        {"comparisons": [_entry("result_a.csv", step=True)]},
        {"comparisons": [_entry("../result_a.csv")]},
        {"comparisons": [_entry("notes.txt")]},
        {"comparisons": [{"csv": "result_a.csv"}]},
        {"schema": 1},
        ["comparisons"],
    ],
    ids=[
        "a string",
        "a number",
        "device text",
        "flag a number",
        "step a bool",
        "a path",
        "not a csv",
        "no label",
        "no list",
        "a list",
    ],
)
def test_a_damaged_manifest_is_one_line_or_no_labels(tmp_path, document):
    (tmp_path / "result_a.csv").write_text("x")
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(document))
    with pytest.raises(PrecisionToolError) as caught:
        load_manifest(tmp_path)
    assert caught.value.path == str(tmp_path / MANIFEST_NAME) and "\n" not in str(caught.value)
    assert read_manifest(tmp_path) == {}
    assert result_csvs(tmp_path) == [tmp_path / "result_a.csv"]  # read, without labels


def test_a_deeply_nested_manifest_is_no_recursion_error(tmp_path):
    (tmp_path / MANIFEST_NAME).write_text('{"comparisons": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(PrecisionToolError, match="nested too deeply"):
        load_manifest(tmp_path)
    assert read_manifest(tmp_path) == {}


def test_the_manifest_names_the_result_among_other_csvs(tmp_path):
    for name in ("result_old.csv", "result_new.csv", "theirs.csv"):
        (tmp_path / name).write_text("x")
    _write_manifest(tmp_path, [_entry("result_new.csv", device=0, step=3)])
    assert result_csvs(tmp_path) == [tmp_path / "result_new.csv"]
    assert load_manifest(tmp_path)["result_new.csv"].step == 3
    _write_manifest(tmp_path, [_entry("result_gone.csv")])  # lists none that is there: all are read
    assert len(result_csvs(tmp_path)) == 3


def test_read_json_file_is_bounded_and_names_the_file(tmp_path):
    path = tmp_path / "state.json"
    with pytest.raises(FileNotFoundError):
        read_json_file(path)
    path.write_bytes(b'{"a": 1}')
    assert read_json_file(path) == {"a": 1}
    with pytest.raises(PrecisionToolError, match="state.json is larger than 4 bytes"):
        read_json_file(path, limit=4)
    os.symlink("/dev/zero", tmp_path / "zero.json")
    with pytest.raises(PrecisionToolError, match="a character device, not a regular file") as caught:
        read_json_file(tmp_path / "zero.json")
    assert caught.value.path == str(tmp_path / "zero.json")


def test_a_run_json_of_the_wrong_shape_names_the_field(tmp_path):
    state = {"state": RUNNING, "options": {"steps": "0", "future_option": [1]}, "stamp": "20240101000000", "pid": 1}
    (tmp_path / RUN_FILE).write_text(json.dumps(state))
    found = read_state(tmp_path)
    assert found.options == CompareOptions(steps="0") and found.when == datetime(2024, 1, 1)
    for key, value, message in [
        ("stamp", "2024", "stamp is '2024', not YYYYmmddHHMMSS"),
        ("pid", 0, "pid is 0, not a process id"),
        ("pid", 2**70, "not a process id"),
        ("state", "done", "state is 'done', not one of running"),
        ("options", {"steps": 0}, "options.steps is 0, not text or null"),
        ("replaces", ["notes.txt"], "replaces is ['notes.txt'], not a list of CSV"),
    ]:
        (tmp_path / RUN_FILE).write_text(json.dumps({**state, key: value}))
        with pytest.raises(PrecisionToolError, match=message.replace("[", r"\[").replace("]", r"\]")):
            read_state(tmp_path)
    (tmp_path / RUN_FILE).write_text(json.dumps({"state": COMPLETE}))
    with pytest.raises(PrecisionToolError, match="no options: not the run.json of a vc"):
        read_state(tmp_path)


def test_this_process_and_a_dead_one_write_no_run(tmp_path):
    for pid in (os.getpid(), _dead_pid()):
        state = {"state": RUNNING, "options": {}, "stamp": "20240101000000", "pid": pid}
        (tmp_path / RUN_FILE).write_text(json.dumps(state))
        assert not read_state(tmp_path).writer_alive


def test_the_newest_resumable_run_is_neither_complete_nor_written_by_a_live_vc(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for stamp, state, pid in [
            ("20240101000000", INTERRUPTED, 1),
            ("20240102000000", RUNNING, _dead_pid()),
            ("20240103000000", COMPLETE, 1),
            ("20240104000000", RUNNING, live.pid),
        ]:
            run = tmp_path / "vector_compare" / stamp
            run.mkdir(parents=True)
            (run / RUN_FILE).write_text(
                json.dumps({"state": state, "options": {"devices": stamp}, "stamp": stamp, "pid": pid})
            )
        (tmp_path / "vector_compare" / "20240105000000").mkdir()  # no run.json: not a run
        found = interrupted_run(OutputRoot(tmp_path))
        assert found.directory.path.name == "20240102000000" and found.options.devices == "20240102000000"
        assert found.skipped == ()
    finally:
        live.kill()
        live.wait()


def test_a_new_run_replaces_only_what_vc_wrote(tmp_path):
    """The earlier run's CSVs (its manifest's), the leftover of a run killed at its end (its
    run.json's stamp), and none of the user's files, even a manifest naming one."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "result_20240101000000.csv").write_text("old result")
    (out / "result_20240202000000_device_1.csv").write_text("killed run's leftover")
    (out / "notes.txt").write_text("mine")
    (out / "result_20240202000000_device_1.csv.bak").write_text("mine too")
    _write_manifest(out, [_entry("result_20240101000000.csv")])
    (out / RUN_FILE).write_text(
        json.dumps({"state": RUNNING, "options": {}, "stamp": "20240202000000", "pid": _dead_pid()})
    )
    directory = new_result_dir(OutputRoot(tmp_path / "temp"), OutputRoot(out))
    assert directory.replaces == ("result_20240101000000.csv", "result_20240202000000_device_1.csv")
    directory.replace_previous([directory.csv_path(None)])
    assert sorted(p.name for p in out.iterdir()) == [
        "comparisons.json",
        "notes.txt",
        "result_20240202000000_device_1.csv.bak",
        "run.json",
    ]
    _write_manifest(out, [_entry("notes.txt")])
    with pytest.raises(PrecisionToolError, match="names no CSV"):
        new_result_dir(OutputRoot(tmp_path / "temp"), OutputRoot(out))
    assert (out / "notes.txt").read_text() == "mine"


def test_a_new_run_takes_a_stamp_no_csv_there_has(tmp_path):
    taken = list(stamps(datetime.now(), 3))
    for stamp in taken:
        (tmp_path / f"result_{stamp}.csv").write_text("x")
    _write_manifest(tmp_path, [_entry(f"result_{stamp}.csv") for stamp in taken])
    directory = new_result_dir(OutputRoot(tmp_path / "temp"), OutputRoot(tmp_path))
    assert directory.when.strftime(STAMP) > taken[-1]
    assert directory.csv_path(None).name not in os.listdir(tmp_path)


def test_differing_options_are_those_given_otherwise():
    run = CompareOptions(steps="0", algorithms="0,1")
    assert run.differing(CompareOptions()) == []
    assert run.differing(CompareOptions(steps="0", algorithms="0,1")) == []
    assert run.differing(CompareOptions(steps="1", devices="0", algorithms="0,1")) == ["steps", "devices"]
