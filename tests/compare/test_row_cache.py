"""Resumable and incremental: rows of earlier runs are reused when their files and metrics are
unchanged, an interrupted vc is resumed in its own directory, and the CSVs stay the same."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare.result_read import read_result_csv
from precision_tool.compare.row_cache import RowCache, cached_rows
from precision_tool.compare.row_keys import task_key
from precision_tool.formats.held_dir import OutputError
from precision_tool.formats.output_root import OutputRoot
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
    from precision_tool.compare.engine import compare_tasks
    from precision_tool.compare.metrics import select_metrics
    from precision_tool.compare.plan import plan_comparisons

    context, _ = make_context(sample_data)
    tasks = plan_comparisons(context)[0].tasks
    metrics = select_metrics(None)
    names = [m.name for m in metrics]
    asked = []

    def compute(todo, keyed):
        asked.append(len(todo))
        return compare_tasks(todo, metrics, keyed=keyed)

    root = OutputRoot(tmp_path / "out")
    with RowCache(root, "cache") as cache:
        first = list(cached_rows(tasks[:10], names, cache, compute))
    with RowCache(root, "cache") as cache:
        counts = {}
        both = list(cached_rows(tasks, names, cache, compute, counts))
    assert [r.tensor_index for r in both] == [t.tensor_index for t in tasks]
    assert counts["reused"] == sum(1 for r in first if r.compared) and asked[1] == len(tasks) - counts["reused"]
    assert [r.metrics for r in both[:10]] == [r.metrics for r in first]
    stored = next(t for t, r in zip(tasks, first) if r.compared)  # a first run's row, under its task's key
    with RowCache(root, "cache") as cache:
        assert cache.get(task_key(stored, names)) is not None


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


def _golden_task(sample_data):
    """A comparable task of the sample whose golden side is an npy file, and the metric names."""
    from precision_tool.compare.golden_pairing import NpySide
    from precision_tool.compare.metrics import select_metrics
    from precision_tool.compare.plan import plan_comparisons
    from precision_tool.compare.row_keys import metric_identities

    context, _ = make_context(sample_data)
    task = next(t for t in plan_comparisons(context)[0].tasks if t.comparable and isinstance(t.right, NpySide))
    return task, metric_identities(select_metrics(None))


def test_the_key_is_what_the_files_are_not_how_their_paths_are_typed(sample_data, monkeypatch):
    from dataclasses import replace

    from precision_tool.compare.golden_pairing import NpySide

    task, names = _golden_task(sample_data)
    key = task_key(task, names)
    assert key is not None and task_key(task, names) == key  # nothing changed: the same key
    golden = Path(task.right.path)
    monkeypatch.chdir(golden.parent)
    assert task_key(replace(task, right=NpySide(golden.name)), names) == key  # relative text
    assert task_key(replace(task, right=NpySide(Path(golden.name))), names) == key  # a caller's Path


def test_the_key_changes_with_the_inode_the_ctime_or_the_sampled_bytes(sample_data):
    task, names = _golden_task(sample_data)
    golden = Path(task.right.path)
    keys = [task_key(task, names)]

    def put_times_back(stat):
        os.utime(golden, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    stat = golden.stat()
    golden.write_bytes(golden.read_bytes())  # the same bytes again: ctime moves, nothing else
    put_times_back(stat)
    keys.append(task_key(task, names))
    copy = golden.with_name("copy")
    shutil.copy2(golden, copy)  # the same bytes and mtime, another inode
    os.replace(copy, golden)
    keys.append(task_key(task, names))
    data = bytearray(golden.read_bytes())
    data[-1] ^= 0xFF  # a sampled byte (the last block), same size
    golden.write_bytes(bytes(data))
    put_times_back(stat)
    keys.append(task_key(task, names))
    assert golden.stat().st_size == stat.st_size and golden.stat().st_mtime_ns == stat.st_mtime_ns
    assert len(set(keys)) == len(keys)


def test_each_file_is_identified_once_a_run(sample_data, tmp_path, monkeypatch):
    from precision_tool.compare.engine import compare_tasks
    from precision_tool.compare.metrics import select_metrics
    from precision_tool.compare.plan import plan_comparisons
    from precision_tool.formats.file_identity import FileIdentities

    context, _ = make_context(sample_data)
    tasks = plan_comparisons(context)[0].tasks
    metrics = select_metrics(None)
    files = {side.path for t in tasks if t.comparable for side in (t.left, t.right)}
    identified = []
    real = FileIdentities._identify

    def counted(self, path):
        identified.append(path)
        return real(self, path)

    monkeypatch.setattr(FileIdentities, "_identify", counted)
    with RowCache(OutputRoot(tmp_path / "out"), "cache") as cache:
        rows = list(
            cached_rows(
                tasks, [m.name for m in metrics], cache, lambda todo, keyed: compare_tasks(todo, metrics, keyed=keyed)
            )
        )
    assert len(rows) == len(tasks) and sorted(map(str, identified)) == sorted(map(str, files))
    assert len(files) < sum(1 for t in tasks if t.comparable) * 2  # files are shared by tensors


def test_rows_of_an_older_schema_are_dropped_when_the_cache_opens(tmp_path):
    import sqlite3

    from precision_tool.compare.row_keys import SCHEMA

    directory = tmp_path / "out" / "cache"
    directory.mkdir(parents=True)
    old = sqlite3.connect(directory / "rows.sqlite")  # as SCHEMA 1 left it: user_version 0
    with old:
        old.execute("CREATE TABLE rows (key TEXT PRIMARY KEY, outcome TEXT NOT NULL)")
        old.execute("INSERT INTO rows VALUES ('k', '{}')")
    old.close()
    with RowCache(OutputRoot(tmp_path / "out"), "cache") as cache:
        assert cache.get("k") is None and cache.warning is None
    db = sqlite3.connect(directory / "rows.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA
    assert db.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == 0


def test_a_lookup_of_more_keys_than_one_query_takes_finds_each_as_sqlite_holds_it(tmp_path):
    import sqlite3

    from precision_tool.compare import row_cache

    outcome = {"names": ["CosineSimilarity"], "bits": struct.pack("<d", 0.5).hex(), "std": "NaN", "reason": ""}
    outcome["npu_dtype"] = None
    outcome.update(golden_dtype=None, shape=[2, 3], at=1)
    stored = [f"k{n:05d}" for n in range(0, 3 * row_cache._LOOKUP_KEYS, 2)]  # every other key
    with RowCache(OutputRoot(tmp_path / "out"), "cache") as cache:
        with cache._db:
            cache._db.executemany(
                "INSERT INTO rows VALUES (?, ?)",
                [(key, json.dumps(dict(outcome, at=n))) for n, key in enumerate(stored)],
            )
    asked = [f"k{n:05d}" for n in range(3 * row_cache._LOOKUP_KEYS + 7)] + [None, "k00000", "k00001"]
    with RowCache(OutputRoot(tmp_path / "out"), "cache") as cache:
        found = cache.outcomes(asked)
        lone = [cache.get(key) for key in ("k00002", "k00003")]
    db = sqlite3.connect(tmp_path / "out" / "cache" / "rows.sqlite")  # the answer, a key a query
    expected = [
        json.loads(row[0]) if (row := db.execute("SELECT outcome FROM rows WHERE key = ?", (key,)).fetchone()) else None
        for key in asked
    ]
    for each in expected:
        if each is not None:
            each["metrics"] = {"CosineSimilarity": 0.5}  # as the checked outcome reads the bits
    assert len(found) == len(asked) and found == expected
    assert sum(f is not None for f in found) == len(stored) + 1  # k00000 asked twice, k00001 never stored
    assert json.loads(lone[0])["at"] == 1 and lone[1] is None


_texts = st.text(st.characters(codec="utf-8"), max_size=30)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(_texts, st.floats(allow_nan=True, allow_infinity=True), max_size=12),
    _texts,
    _texts,
    st.none() | _texts,
    st.none() | st.lists(st.integers(0, 2**40), max_size=6),
)
def test_a_stored_outcome_reads_back_as_the_row_held_it(metrics, std, reason, dtype, shape):
    """The outcome is written as text by hand (floats as their bits): JSON's own parser reads it,
    and every value comes back exactly: NaN's bits, -0.0, infinities, any text."""
    from precision_tool.compare import row_cache
    from precision_tool.compare.result import CompareRow

    row = CompareRow(
        index=1,
        op_type="Conv2D",
        npu_name="n",
        npu_dtype=dtype,
        npu_address=None,
        ground_truth="g",
        golden_dtype="float32",
        tensor_index="output:0",
        shape=None if shape is None else tuple(shape),
        metrics=metrics,
        std_text=std,
        fail_reason=reason,
    )
    stored = row_cache._outcome(row)
    data = json.loads(stored)
    assert (data["std"], data["reason"], data["npu_dtype"], data["golden_dtype"]) == (std, reason, dtype, "float32")
    assert data["shape"] == shape and isinstance(data["at"], int)
    checked = row_cache._checked_outcome(stored)
    assert list(checked["metrics"]) == list(metrics)
    bits = [struct.pack("<d", v) for v in checked["metrics"].values()]
    assert bits == [struct.pack("<d", v) for v in metrics.values()]
    again = row_cache._with_outcome(row_task(), checked)
    assert again.shape == row.shape and again.std_text == std and again.npu_dtype == dtype
    assert all(math.isnan(a) if math.isnan(b) else a == b for a, b in zip(again.metrics.values(), metrics.values()))


def row_task():
    """A task to make a row of (only its names are read)."""
    from types import SimpleNamespace

    return SimpleNamespace(index=1, op_type="Conv2D", npu_name="n", ground_truth="g", tensor_index="output:0")
