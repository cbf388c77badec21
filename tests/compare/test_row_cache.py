"""Resumable and incremental: rows of earlier runs are reused when their files and metrics are
unchanged, an interrupted vc is resumed in its own directory, and the CSVs stay the same."""

from __future__ import annotations

import json
import os
import shutil

import pytest


from precision_tool.compare.result_csv import read_result_csv
from precision_tool.compare.row_cache import RowCache, cached_rows, task_key
from precision_tool.formats.atomic import OutputRoot, OutputError
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command


def _csvs(root):
    return sorted((root / "temp" / "vector_compare").rglob("result_*.csv"))


def _metric_cells(path):
    return [(r.tensor_index, r.metrics, r.std_text, r.fail_reason) for r in read_result_csv(path)]


def test_a_rerun_reuses_every_row_and_writes_the_same_result(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "vc") == ExitStatus.FLAGGED
    assert "reused" not in out.getvalue()
    out.seek(0), out.truncate()
    assert run_command(context, "vc") == ExitStatus.FLAGGED
    first, second = _csvs(sample_data)
    compared = sum(1 for r in read_result_csv(first) if r.compared)
    assert f"reused {compared} row(s) of earlier runs" in out.getvalue() and "computed 0" in out.getvalue()
    assert _metric_cells(first) == _metric_cells(second)
    out.seek(0), out.truncate()
    assert run_command(context, "vc --fresh") == ExitStatus.FLAGGED
    assert "reused" not in out.getvalue()


def test_a_changed_file_is_compared_again(sample_data):
    context, out = make_context(sample_data)
    run_command(context, "vc")
    golden = next((sample_data / "tf" / "dump").glob("resnet_add_add.0.*.npy"))
    stat = golden.stat()
    os.utime(golden, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    out.seek(0), out.truncate()
    run_command(context, "vc")
    text = out.getvalue()
    computed = int(text.split("computed ")[1].split()[0])
    assert 1 <= computed <= 3  # the rows that read that golden: add's output, relu's input...


def test_the_metric_set_is_part_of_the_key(sample_data):
    context, out = make_context(sample_data)
    run_command(context, "vc")
    out.seek(0), out.truncate()
    run_command(context, "vc -alg 0")
    assert "reused" not in out.getvalue()  # cosine only is another set: computed again
    rows = [r for r in read_result_csv(_csvs(sample_data)[-1]) if r.compared]
    assert rows and all(set(r.metrics) == {"CosineSimilarity"} for r in rows)


def test_resume_continues_an_interrupted_run_in_its_directory(sample_data, monkeypatch):
    from precision_tool.compare import api

    context, out = make_context(sample_data, WORKERS=1)
    real = api.run_comparisons

    def stop_after_some(*args, **kwargs):
        for number, item in enumerate(real(*args, **kwargs)):
            if number == 30:
                raise KeyboardInterrupt  # Ctrl-C part way through the network
            yield item

    monkeypatch.setattr(api, "run_comparisons", stop_after_some)
    assert run_command(context, "vc --step 0") == ExitStatus.INTERRUPTED
    monkeypatch.setattr(api, "run_comparisons", real)
    (run_dir,) = [d for d in (sample_data / "temp" / "vector_compare").iterdir() if d.is_dir()]
    state = json.loads((run_dir / "run.json").read_text())
    assert state["state"] == "interrupted" and state["options"]["steps"] == "0"
    assert not list(run_dir.glob("*.csv"))
    out.seek(0), out.truncate()
    assert run_command(context, "vc --resume") == ExitStatus.FLAGGED
    reused = int(out.getvalue().split("reused ")[1].split()[0])
    assert reused >= 10  # what the interrupted run had computed
    (csv,) = list(run_dir.glob("*.csv"))  # in the interrupted run's own directory
    assert json.loads((run_dir / "run.json").read_text())["state"] == "complete"
    fresh = sample_data.parent / "fresh"
    shutil.copytree(sample_data, fresh, ignore=shutil.ignore_patterns("temp"))
    other, _ = make_context(fresh)
    run_command(other, "vc --fresh")
    assert _metric_cells(csv) == _metric_cells(_csvs(fresh)[0])


def test_resume_without_an_interrupted_run_is_one_line(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "vc --resume") == ExitStatus.ERROR
    assert "no interrupted comparison" in out.getvalue()


def test_cached_rows_keeps_task_order_and_computes_only_what_is_missing(sample_data, tmp_path):
    from precision_tool.compare.metrics import select_metrics
    from precision_tool.compare.plan import plan_comparisons
    from precision_tool.compare.engine import compare_tasks

    context, _ = make_context(sample_data)
    tasks = plan_comparisons(context)[0].tasks
    metrics = select_metrics(None)
    names = [m.name for m in metrics]
    asked = []

    def compute(todo):
        asked.append(len(todo))
        return compare_tasks(todo, metrics)

    root = OutputRoot(tmp_path / "out")
    with RowCache(root, "cache") as cache:
        first = list(cached_rows(tasks[:10], names, cache, compute))
    with RowCache(root, "cache") as cache:
        counts = {}
        both = list(cached_rows(tasks, names, cache, compute, counts))
    assert [r.tensor_index for r in both] == [t.tensor_index for t in tasks]
    assert counts["reused"] == sum(1 for r in first if r.compared) and asked[1] == len(tasks) - counts["reused"]
    assert [r.metrics for r in both[:10]] == [r.metrics for r in first]
    assert task_key(tasks[0], names) is None or isinstance(task_key(tasks[0], names), str)


def test_a_link_planted_at_the_cache_is_refused(sample_data, tmp_path):
    target = tmp_path / "victim.db"
    target.write_text("mine")
    cache = sample_data / "temp" / "row_cache"
    cache.mkdir(parents=True)
    (cache / "rows.sqlite").symlink_to(target)
    context, out = make_context(sample_data)
    assert run_command(context, "vc") == ExitStatus.ERROR
    assert "symbolic link" in out.getvalue() and target.read_text() == "mine"
    with pytest.raises(OutputError):
        RowCache(OutputRoot(sample_data / "temp")).__enter__()
