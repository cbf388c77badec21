"""Issue 26.2 and 26.7 without a cluster: the CLUSTER_TIMEOUT setting, the row cache's ``read``
and ``since`` (``--fresh`` stores its rows; its resume reuses only those), and the options a
resume applies beside the run's own, each said in a line."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from precision_tool.commands.vc_cluster import cluster_spec, resumed_options, unreadable_line
from precision_tool.compare.result import CompareRow
from precision_tool.compare.result_dir import ResultDir
from precision_tool.compare.row_cache import RowCache
from precision_tool.config import Config, load_config
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.output_root import OutputRoot


def test_cluster_timeout_is_a_setting_in_seconds(tmp_path):
    assert Config().cluster_timeout == 300.0
    assert load_config(environ={"PRECISION_TOOL_CLUSTER_TIMEOUT": "12.5"}, cwd=tmp_path).cluster_timeout == 12.5
    for bad in ("0", "-3", "nan", "x", str(8 * 24 * 3600)):
        with pytest.raises(
            PrecisionToolError,
            match=r"setting CLUSTER_TIMEOUT: .* is not a number of seconds "
            r"from 1 to 604800|is not a (finite )?number",
        ):
            load_config({"CLUSTER_TIMEOUT": bad}, environ={}, cwd=tmp_path)


def _row(value: float) -> CompareRow:
    return CompareRow(
        index=1,
        op_type="Add",
        npu_name="a",
        npu_dtype="DT_FLOAT",
        npu_address=None,
        ground_truth="a",
        golden_dtype="float32",
        tensor_index="a:output:0",
        shape=(2,),
        metrics={"CosineSimilarity": value},
        std_text="",
        fail_reason="",
    )


def test_a_fresh_cache_stores_its_rows_and_reuses_none(tmp_path):
    root = OutputRoot(tmp_path)
    with RowCache(root) as cache:
        cache.put("old", _row(0.5))
    with RowCache(root, read=False) as fresh:
        assert fresh.outcomes(["old"]) == [None]
        fresh.put("new", _row(0.9))
    rows = dict(sqlite3.connect(tmp_path / "row_cache" / "rows.sqlite").execute("SELECT key, outcome FROM rows"))
    assert set(rows) == {"old", "new"} and isinstance(json.loads(rows["new"])["at"], int)


def test_since_reuses_only_rows_computed_from_then(tmp_path):
    root = OutputRoot(tmp_path)
    with RowCache(root) as cache:
        cache.put("older", _row(0.5))
    db = sqlite3.connect(tmp_path / "row_cache" / "rows.sqlite")
    with db:  # a row of an earlier version: no time at all
        db.execute(
            "INSERT INTO rows VALUES ('untimed', ?)",
            (
                json.dumps(
                    {
                        "names": [],
                        "bits": "",
                        "std": "",
                        "reason": "",
                        "npu_dtype": None,
                        "golden_dtype": None,
                        "shape": None,
                    }
                ),
            ),
        )
    start = time.time_ns()
    with RowCache(root) as cache:
        cache.put("newer", _row(0.9))
    with RowCache(root, since=start) as resumed:
        older, untimed, newer = resumed.outcomes(["older", "untimed", "newer"])
    assert older is None and untimed is None and newer["metrics"] == {"CosineSimilarity": 0.9}


def _dir(tmp_path: Path, fresh_since=None) -> ResultDir:
    return ResultDir(OutputRoot(tmp_path), tmp_path / "run", datetime(2026, 12, 1, 10, 0, 0), (), fresh_since)


def test_a_resume_applies_fresh_scheduler_and_allow_partial_and_says_so(tmp_path):
    directory, lines = resumed_options(_dir(tmp_path), True, None, False)
    assert lines == [] and directory.fresh_since is None
    directory, lines = resumed_options(_dir(tmp_path), False, "tcp://h:1", True)
    assert directory.fresh_since == int(datetime(2026, 12, 1, 10, 0, 0).timestamp() * 1e9)
    assert lines == [
        "vc --resume --fresh: reusing only the rows computed since the run started (2026-12-01 10:00:00)",
        "vc --resume: --scheduler tcp://h:1 and --allow-partial applied (where the rows are "
        "computed, not what they are)",
    ]
    directory, lines = resumed_options(_dir(tmp_path, 5), True, None, False)
    assert directory.fresh_since == 5 and lines == ["resuming a vc --fresh: reusing only the rows it computed"]


def test_a_fresh_runs_start_is_kept_in_run_json_for_its_resume(tmp_path):
    from precision_tool.compare.result_dir import INTERRUPTED, CompareOptions, read_state

    (tmp_path / "run").mkdir()
    _dir(tmp_path, 1234).mark(INTERRUPTED, CompareOptions())
    assert json.loads((tmp_path / "run" / "run.json").read_text())["fresh_since"] == 1234
    assert read_state(tmp_path / "run").fresh_since == 1234
    (tmp_path / "run" / "run.json").write_text(
        json.dumps({"state": "interrupted", "options": {}, "stamp": "20261201100000", "fresh_since": "soon"})
    )
    with pytest.raises(PrecisionToolError, match="fresh_since is 'soon', not a whole number or null"):
        read_state(tmp_path / "run")


def test_the_cluster_spec_comes_from_the_config_and_allow_partial_needs_a_cluster(tmp_path):
    context = SimpleNamespace(output=OutputRoot(tmp_path))
    assert cluster_spec(Config(), context, False) is None
    with pytest.raises(PrecisionToolError, match="no Dask scheduler to go on with part of"):
        cluster_spec(Config(), context, True)
    spec = cluster_spec(Config(scheduler="tcp://h:1", cluster_timeout=9.0), context, True)
    assert (spec.address, spec.allow_partial, spec.timeout, spec.log_root) == ("tcp://h:1", True, 9.0, context.output)
    assert str(unreadable_line(3)).startswith("3 row(s) not compared: a Dask worker could not read their files")
