"""Ctrl-C in the middle of a command: it stops promptly, leaves no half-written file under a
final name, and the shell (the same context and registry) goes on working."""

from __future__ import annotations

import multiprocessing
from contextlib import contextmanager
from pathlib import Path

import pytest

from precision_tool.commands import ls_listing, vc_run
from precision_tool.compare import api as compare_api
from precision_tool.formats.output_root import OutputRoot
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command

CONV1 = "Conv2D.resnet_conv1_Conv2D.12.0.1764417600000074"


def _files(directory) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.is_file()) if directory.exists() else []


def _interrupting_progress(monkeypatch, after_rows: int = 1):
    def track(self, label):
        def update(done, _total, _nbytes):
            if done >= after_rows:
                raise KeyboardInterrupt

        return update

    monkeypatch.setattr(vc_run.CompareProgress, "track", track)


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_during_vc_stops_the_workers_and_leaves_no_csv(sample_data, monkeypatch, workers):
    monkeypatch.setattr(compare_api, "POOL_MIN_BYTES", 0)  # a worker pool even for the small sample
    _interrupting_progress(monkeypatch)
    context, out = make_context(sample_data, WORKERS=workers)
    assert run_command(context, "vc") == ExitStatus.INTERRUPTED
    assert "cancelled" in out.getvalue()
    assert multiprocessing.active_children() == []
    results = sample_data / "temp" / "vector_compare"
    left = _files(results)
    assert left == ["run.json"]  # no CSV, no .part: only the note that the run was interrupted
    assert '"interrupted"' in next(results.rglob("run.json")).read_text()
    monkeypatch.undo()
    assert run_command(context, "vc") == ExitStatus.FLAGGED  # the session goes on
    csvs = [f for f in _files(results) if f.endswith(".csv")]
    assert len(csvs) == 1


def test_ctrl_c_while_the_pairing_still_feeds_the_pool_stops_it_all(sample_data, monkeypatch):
    """The plan streamed into the pool (the run's choices settled after 8 KB, as they are after
    256 MiB on a real dump): Ctrl-C with the pairing under way ends the workers, leaves no CSV,
    and the next run writes one."""
    from precision_tool.compare import engine, jobs

    monkeypatch.setattr(compare_api, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(jobs, "POOL_BATCH_BYTES", 1 << 10)
    monkeypatch.setattr(jobs, "workers_have_numba", lambda: True)
    streamed, real = [], engine._streamed_units
    monkeypatch.setattr(engine, "_streamed_units", lambda *a: streamed.append(a[0].ended) or real(*a))
    _interrupting_progress(monkeypatch)
    context, out = make_context(sample_data, WORKERS=2)
    assert run_command(context, "vc") == ExitStatus.INTERRUPTED
    assert streamed == [False]  # the pool started before the last task was paired
    assert multiprocessing.active_children() == []
    results = sample_data / "temp" / "vector_compare"
    assert _files(results) == ["run.json"]
    monkeypatch.undo()
    assert run_command(context, "vc") == ExitStatus.FLAGGED
    assert len([f for f in _files(results) if f.endswith(".csv")]) == 1


REAL_CREATE = OutputRoot.create


@contextmanager
def _interrupted_before_rename(root, path, *args, **kwargs):
    with REAL_CREATE(root, path, *args, **kwargs) as handle:
        yield handle
        raise KeyboardInterrupt  # everything written, not yet renamed


def test_ctrl_c_during_a_pt_export_leaves_no_txt(sample_data, monkeypatch):
    monkeypatch.setattr(OutputRoot, "create", _interrupted_before_rename)
    context, out = make_context(sample_data)
    assert run_command(context, f"pt {CONV1}") == ExitStatus.INTERRUPTED
    assert _files(sample_data / "temp" / "pt") == []
    monkeypatch.undo()
    assert run_command(context, f"pt {CONV1}") == ExitStatus.OK
    assert _files(sample_data / "temp" / "pt") == [f"{CONV1}.output.0.txt"]


def test_ctrl_c_during_dc_keeps_the_complete_files_only(sample_data, monkeypatch):
    calls = []

    def second_interrupted(root, path, *args, **kwargs):
        calls.append(Path(path))
        create = _interrupted_before_rename if len(calls) == 2 else REAL_CREATE
        return create(root, path, *args, **kwargs)

    monkeypatch.setattr(OutputRoot, "create", second_interrupted)
    context, _ = make_context(sample_data)
    assert run_command(context, f"dc {CONV1}") == ExitStatus.INTERRUPTED
    written = _files(sample_data / "temp" / "decode")
    assert written == [calls[0].name]  # the first tensor, complete; the second absent
    monkeypatch.undo()
    assert run_command(context, f"dc {CONV1}") == ExitStatus.OK


def test_ctrl_c_in_any_command_returns_the_prompt(sample_data, monkeypatch):
    def interrupted(refs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ls_listing, "_type_counts", interrupted)
    context, out = make_context(sample_data)
    assert run_command(context, "ls; help") == ExitStatus.INTERRUPTED
    assert "cancelled" in out.getvalue() and "vc" in out.getvalue()  # help still ran after it
    assert run_command(context, "ls -t Conv") == ExitStatus.OK
