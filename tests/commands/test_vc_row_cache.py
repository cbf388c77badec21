"""The row cache through the real command line: never a stale, foreign or damaged row.

Each run is ``python -m precision_tool`` in a working directory of the test's choosing, on
copies of the sample; the file tricks are done for real (a rewrite with the size and the
modification time put back, one relative ``--data pd`` from two directories, a damaged
``rows.sqlite``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.compare.result_read import read_result_csv
from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT
from tests.test_cli import _run

CONV2_OUTPUT = "resnet/conv2/Conv2D:output:0"
CONV2_GOLDEN = "tf/dump/resnet_conv2_BiasAdd.0.1764410000001600.npy"  # the fused op's output


def _vc(cwd: Path, data: str, out: Path, *words: str):
    """``precision-tool --data DATA --out OUT vc WORDS`` run in ``cwd``; returns (result, new CSV)."""
    before = set(out.glob("vector_compare/*/result_*.csv"))
    result = _run([sys.executable, "-m", "precision_tool", "--data", data, "--out", str(out), "vc", *words], cwd)
    made = set(out.glob("vector_compare/*/result_*.csv")) - before
    assert result.returncode == ExitStatus.FLAGGED, result.stdout + result.stderr
    (csv,) = made
    return result, csv


def _cosine(csv: Path, tensor: str) -> float:
    (row,) = [r for r in read_result_csv(csv) if r.tensor_index == tensor]
    return row.cosine


def _metric_cells(csv: Path) -> list:
    return [(r.tensor_index, r.metrics, r.std_text, r.fail_reason, r.shape) for r in read_result_csv(csv)]


def _sample_copy(where: Path) -> Path:
    where.mkdir(parents=True)
    shutil.copytree(REPO_ROOT / "precision_data", where / "pd", ignore=shutil.ignore_patterns("temp"))
    return where / "pd"


def _rewrite_keeping_size_and_times(path: Path) -> None:
    """Other values, same byte count, written in place, atime and mtime put back to the ns:
    what ``cp -p`` or a copy tool leaves when it rewrites a file."""
    before = os.stat(path)
    values = np.load(path)
    flat = values.reshape(-1)
    flat[: flat.size // 2] *= -1
    buffer = io.BytesIO()
    np.save(buffer, values)
    assert len(buffer.getvalue()) == before.st_size
    with open(path, "r+b") as handle:
        handle.write(buffer.getvalue())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    kept = ("st_size", "st_mtime_ns", "st_ino")
    assert [getattr(after, k) for k in kept] == [getattr(before, k) for k in kept]


def test_a_rewrite_with_size_and_mtime_restored_is_compared_again(tmp_path):
    data = _sample_copy(tmp_path / "work")
    out = tmp_path / "out"
    _, first = _vc(data.parent, "pd", out)
    _rewrite_keeping_size_and_times(data / CONV2_GOLDEN)
    result, cached = _vc(data.parent, "pd", out)
    _, fresh = _vc(data.parent, "pd", out, "--fresh")
    assert _cosine(fresh, CONV2_OUTPUT) != pytest.approx(_cosine(first, CONV2_OUTPUT), abs=1e-3)
    assert _cosine(cached, CONV2_OUTPUT) == _cosine(fresh, CONV2_OUTPUT)
    assert _metric_cells(cached) == _metric_cells(fresh)
    assert "computed 0" not in result.stdout  # the rows that read the rewritten file


def test_two_data_roots_opened_as_the_same_relative_path_keep_their_own_rows(tmp_path):
    first_data, second_data = _sample_copy(tmp_path / "a"), _sample_copy(tmp_path / "b")
    _rewrite_keeping_size_and_times(second_data / CONV2_GOLDEN)  # b's numbers differ from a's
    out = tmp_path / "out"  # one output root for both
    _, first = _vc(first_data.parent, "pd", out)
    _, second = _vc(second_data.parent, "pd", out)
    _, second_fresh = _vc(second_data.parent, "pd", out, "--fresh")
    assert _cosine(second, CONV2_OUTPUT) != pytest.approx(_cosine(first, CONV2_OUTPUT), abs=1e-3)
    assert _metric_cells(second) == _metric_cells(second_fresh)
    again, first_again = _vc(first_data.parent, "pd", out)  # a's rows are still a's, and reused
    assert "reused 41 row(s)" in again.stdout and "computed 0" in again.stdout
    assert _metric_cells(first_again) == _metric_cells(first)


# --- a damaged rows.sqlite -------------------------------------------------------------------


def _each_outcome(change):
    def damage(db: sqlite3.Connection) -> None:
        rows = db.execute("SELECT key, outcome FROM rows").fetchall()
        db.executemany(
            "UPDATE rows SET outcome = ? WHERE key = ?", [(change(json.loads(outcome)), key) for key, outcome in rows]
        )

    return damage


def _without(name):
    return _each_outcome(lambda o: json.dumps({k: v for k, v in o.items() if k != name}))


def _with(name, value):
    return _each_outcome(lambda o: json.dumps({**o, name: value}))


def _other_columns(db: sqlite3.Connection) -> None:
    db.executescript(
        "ALTER TABLE rows RENAME TO old;"
        "CREATE TABLE rows (key TEXT PRIMARY KEY, value TEXT);"
        "INSERT INTO rows SELECT key, outcome FROM old; DROP TABLE old;"
    )


DAMAGE = {
    "a list": _each_outcome(lambda o: "[1]"),
    "bad JSON": _each_outcome(lambda o: '{"names": ["CosineSimilarity"], "bits": "00'),
    "nested past any depth": _each_outcome(lambda o: "[" * 100_000),
    "a name a number": _with("names", [1]),
    "names a text": _with("names", "CosineSimilarity"),
    "bits not hex": _with("bits", "zz"),
    "bits a number": _with("bits", 0.5),
    "bits one value short": _each_outcome(lambda o: json.dumps({**o, "bits": o["bits"][:-16]})),
    "a name twice": _each_outcome(
        lambda o: json.dumps({**o, "names": o["names"] + o["names"][:1], "bits": o["bits"] + o["bits"][:16]})
    ),
    "no shape": _without("shape"),
    "no reason": _without("reason"),
    "shape a string": _with("shape", "4x12x12x24"),
    "dtype a number": _with("npu_dtype", 16),
    "outcome an integer": _each_outcome(lambda o: 7),
    "outcome bytes": _each_outcome(lambda o: b"\xff\x00 not text"),
    "other columns": _other_columns,
}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A sample copy, a cache its rows are in, and a --fresh run's CSV text."""
    base = tmp_path_factory.mktemp("seeded")
    data = _sample_copy(base / "work")
    _vc(data.parent, "pd", base / "seed")
    cache = base / "seed" / "row_cache" / "rows.sqlite"
    assert not list(cache.parent.glob("rows.sqlite-*"))  # closed: everything is in the one file
    _, fresh = _vc(data.parent, "pd", base / "fresh", "--fresh")
    return data, cache, fresh.read_text(encoding="utf-8")


def _damaged_cache_run(seeded, out: Path, damage) -> tuple:
    data, cache, fresh_text = seeded
    (out / "row_cache").mkdir(parents=True)
    shutil.copy(cache, out / "row_cache" / "rows.sqlite")
    damage(out / "row_cache" / "rows.sqlite")
    result, csv = _vc(data.parent, "pd", out)
    return result, csv.read_text(encoding="utf-8"), fresh_text


def _in_sqlite(damage):
    def apply(path: Path) -> None:
        db = sqlite3.connect(path)
        with db:
            damage(db)
        db.close()

    return apply


def test_an_intact_copied_cache_is_reused_so_the_damaged_ones_are_read(seeded, tmp_path):
    result, text, fresh_text = _damaged_cache_run(seeded, tmp_path / "out", lambda path: None)
    assert "reused 41 row(s)" in result.stdout and "computed 0" in result.stdout
    assert "row cache" not in result.stdout + result.stderr
    assert text == fresh_text


def _assert_one_warning_and_fresh_rows(result, text, fresh_text, cache: Path, problem: str):
    lines = [line for line in (result.stdout + result.stderr).splitlines() if "row cache" in line]
    assert len(lines) == 1, result.stdout + result.stderr
    assert lines[0].startswith(f"{cache}: row cache turned off (") and problem in lines[0]
    assert "Traceback" not in result.stderr and "reused" not in result.stdout
    assert text == fresh_text  # every row computed, as --fresh computes it


@pytest.mark.parametrize("form", sorted(DAMAGE))
def test_a_damaged_row_or_table_is_one_warning_and_every_row_computed(seeded, tmp_path, form):
    out = tmp_path / "out"
    result, text, fresh_text = _damaged_cache_run(seeded, out, _in_sqlite(DAMAGE[form]))
    problem = "columns (key, value)" if form == "other columns" else "a stored row"
    _assert_one_warning_and_fresh_rows(result, text, fresh_text, out / "row_cache" / "rows.sqlite", problem)


@pytest.mark.parametrize(
    "content", [b"not a database, only text " * 40, os.urandom(8192)], ids=["text", "random bytes"]
)
def test_a_cache_file_that_is_not_sqlite_is_one_warning_and_every_row_computed(seeded, tmp_path, content):
    out = tmp_path / "out"
    result, text, fresh_text = _damaged_cache_run(seeded, out, lambda path: path.write_bytes(content))
    _assert_one_warning_and_fresh_rows(result, text, fresh_text, out / "row_cache" / "rows.sqlite", "not a database")
