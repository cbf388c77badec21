"""The row cache's keys found where the files are read (issue 23/28's serial start): a run with
nothing to reuse keys each row from the files as its reader opened them, and those keys are the
very keys a later run finds up front, so the later run reuses every row."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare import engine, jobs, sides, split
from precision_tool.compare.metrics import select_metrics
from precision_tool.compare.row_cache import RowCache, cached_rows
from precision_tool.compare.row_keys import RowKeys, metric_identities, task_key
from precision_tool.formats.file_identity import SAMPLE_BLOCK, FileIdentities
from precision_tool.formats.output_root import OutputRoot
from precision_tool.formats.torch_file import read_pt
from precision_tool.sample import write_sample
from precision_tool.sample.msprobe import write_msprobe_sample
from tests.conftest import make_context


def _msprobe_tasks(tmp_path):
    return _comparable_tasks(write_msprobe_sample(tmp_path / "msprobe_data"))


def _comparable_tasks(root):
    from precision_tool.compare.plan import plan_comparisons

    context, _ = make_context(root)
    (comparison,) = plan_comparisons(context)
    return [t for t in comparison.tasks if t.comparable]


@settings(max_examples=40, deadline=None)
@given(size=st.integers(0, 12 * SAMPLE_BLOCK), seed=st.integers(0, 2**32 - 1))
def test_an_identity_recorded_from_a_readers_bytes_is_the_identity_found_by_opening(tmp_path_factory, size, seed):
    path = tmp_path_factory.mktemp("id") / "t.bin"
    data = random.Random(seed).randbytes(size)
    path.write_bytes(data)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        info = os.fstat(descriptor)
        recorded = FileIdentities().record(path, info, lambda offset, count: data[offset : offset + count])
    finally:
        os.close(descriptor)
    assert recorded == FileIdentities().of(path)


def test_a_pt_read_records_its_identity_and_the_first_identity_of_a_path_stays(tmp_path):
    tasks = _msprobe_tasks(tmp_path)
    files = [side.path for task in tasks for side in (task.left, task.right)]
    assert any(os.path.getsize(f) > 5 * SAMPLE_BLOCK for f in files)  # sampled blocks, not whole
    identities = FileIdentities()
    for path in files:
        read_pt(path, identities=identities)
    opened = FileIdentities()
    assert all(identities.of(path) == opened.of(path) for path in files)
    first = identities.of(files[0])
    os.utime(files[0], ns=(0, 0))  # a later change is another run's to see
    read_pt(files[0], identities=identities)
    assert identities.of(files[0]) == first != FileIdentities().of(files[0])


@pytest.mark.parametrize("npy_limit", [sides.SMALL_NPY_BYTES, 0], ids=["goldens read whole", "goldens streamed"])
def test_ge_dump_and_golden_files_are_identified_as_read_and_keyed_as_up_front(tmp_path, monkeypatch, npy_limit):
    """A GE run's dump files and small goldens are read whole: their identities come from that
    read (no open of their own); a golden streamed from disk opens once more, before its data."""
    monkeypatch.setattr(sides, "SMALL_NPY_BYTES", npy_limit)
    tasks = _comparable_tasks(write_sample(tmp_path / "precision_data"))
    opened_sides = [side for task in tasks for side in (task.left, task.right)]
    assert {type(side).__name__ for side in opened_sides} == {"DumpSide", "NpySide"}
    metrics = select_metrics(None)
    expected = [task_key(task, metric_identities(metrics)) for task in tasks]
    opened = []
    real = FileIdentities._identify
    monkeypatch.setattr(FileIdentities, "_identify", lambda self, path: opened.append(path) or real(self, path))
    rows = engine.run_job(tasks, metrics, keyed=True).rows
    goldens = {os.fspath(side.path) for side in opened_sides if type(side).__name__ == "NpySide"}
    assert sorted(opened) == ([] if npy_limit else sorted(goldens))
    assert [row.cache_key for row in rows] == expected and None not in expected


def test_keys_found_by_the_reader_are_the_keys_found_up_front_and_open_nothing_more(tmp_path, monkeypatch):
    tasks = _msprobe_tasks(tmp_path)
    metrics = select_metrics(None)
    names = metric_identities(metrics)
    expected = [task_key(task, names) for task in tasks]
    opened = []
    real = FileIdentities._identify
    monkeypatch.setattr(FileIdentities, "_identify", lambda self, path: opened.append(path) or real(self, path))
    rows = engine.run_job(tasks, metrics, keyed=True).rows
    assert opened == []  # every .pt identified from the descriptor it was read through
    assert [row.cache_key for row in rows] == expected and None not in expected
    assert all(row.cache_key is None for row in engine.run_job(tasks, metrics).rows)


def test_a_fresh_store_is_filled_from_the_readers_keys_and_a_rerun_reuses_every_row(tmp_path):
    tasks = _msprobe_tasks(tmp_path)
    metrics = select_metrics(None)
    asked = []

    def compute(todo, keyed):
        asked.append(keyed)
        return engine.compare_tasks(todo, metrics, keyed=keyed)

    root = OutputRoot(tmp_path / "out")
    with RowCache(root, "cache") as cache:
        assert not cache.may_reuse()
        first = list(cached_rows(tasks, metric_identities(metrics), cache, compute, keys_where_read=True))
    with RowCache(root, "cache") as cache:
        assert cache.may_reuse()
        counts = {}
        again = list(cached_rows(tasks, metric_identities(metrics), cache, compute, counts, keys_where_read=True))
    assert asked == [True, False]  # keyed where read when nothing could be reused, then looked up
    assert counts == {"reused": len(tasks), "computed": 0}
    assert [(r.tensor_index, r.metrics) for r in again] == [(r.tensor_index, r.metrics) for r in first]
    with RowCache(root, "cache", read=False) as cache:  # --fresh: nothing is looked up
        assert not cache.may_reuse()


@pytest.mark.parametrize("keys_where_read", [True, False])
def test_without_a_key_from_the_engine_a_row_is_not_stored(tmp_path, keys_where_read):
    tasks = _msprobe_tasks(tmp_path)[:4]
    metrics = select_metrics(None)
    root = OutputRoot(tmp_path / "out")
    with RowCache(root, "cache") as cache:  # an engine that ignores `keyed`: nothing is kept
        list(
            cached_rows(
                tasks,
                metric_identities(metrics),
                cache,
                lambda todo, keyed: engine.compare_tasks(todo, metrics),
                keys_where_read=keys_where_read,
            )
        )
    with RowCache(root, "cache") as cache:
        assert cache.may_reuse() is (not keys_where_read)


def test_a_pair_compared_in_ranges_is_keyed_before_any_range_is_read(tmp_path):
    tasks = _msprobe_tasks(tmp_path)
    metrics = select_metrics(None)
    plan = jobs.plan_jobs(tasks, metrics, 1 << 10, keyed=True)
    units = split.split_units(plan.jobs, plan.job_args, plan.sizes, split_bytes=4000)
    pieces = [unit for unit in units if isinstance(unit, split.SplitCompare)]
    assert pieces
    names = metric_identities(metrics)
    assert all(unit.row.cache_key == task_key(unit.task, names) for unit in pieces)
    keys = RowKeys.for_metrics(metrics)
    assert keys.key(pieces[0].task) == task_key(pieces[0].task, names)


def test_a_key_is_the_sha256_of_the_json_list_of_what_makes_the_row(tmp_path):
    """The documented form, spelt out here: a key found by RowKeys (whose run part is hashed
    once) and by task_key are both the SHA-256 of the JSON text of [schema, version, metric
    identities, left, right], each side being its kind, its file identity and its dtype."""
    import hashlib
    import json

    from precision_tool import __version__
    from precision_tool.compare.row_keys import SCHEMA

    tasks = _msprobe_tasks(tmp_path)
    metrics = select_metrics(None)
    names = metric_identities(metrics)
    keys = RowKeys.for_metrics(metrics)
    opened = FileIdentities()
    for task in tasks:
        side_keys = [["tensor file", *opened.of(side.path), side.dtype_name] for side in (task.left, task.right)]
        text = json.dumps([SCHEMA, __version__, names, *side_keys])
        expected = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
        assert keys.key(task) == task_key(task, names) == expected


def _documented_key(task, names, opened) -> str:
    """The key as the module documents it, spelt out with ``json.dumps`` of the whole list."""
    import hashlib
    import json

    from precision_tool import __version__
    from precision_tool.compare.golden_pairing import DumpSide, NpySide
    from precision_tool.compare.row_keys import SCHEMA

    def side_key(side):
        if isinstance(side, DumpSide):
            return ["dump", *opened.of(side.path), side.kind, side.index, side.origin_format]
        assert isinstance(side, NpySide)
        return ["npy", *opened.of(side.path)]

    text = json.dumps([SCHEMA, __version__, names, side_key(task.left), side_key(task.right)])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def test_a_ge_key_is_the_sha256_of_the_json_list_of_what_makes_the_row(tmp_path):
    """As above for the GE sample's dump and golden sides (the key text is made a file at a
    time: it must spell exactly what ``json.dumps`` of the whole list spells)."""
    tasks = _comparable_tasks(write_sample(tmp_path / "pd"))
    assert len(tasks) > 10
    names = metric_identities(select_metrics("0"))
    keys, opened = RowKeys(names), FileIdentities()
    for task in tasks + tasks:  # the second time round from the keys' memo of each file
        assert keys.key(task) == task_key(task, names) == _documented_key(task, names, opened)


@settings(max_examples=60, deadline=None)
@given(
    name=st.text(st.characters(exclude_categories=["Cs"], exclude_characters="/\0"), min_size=1, max_size=12),
    kind=st.sampled_from(["input", "output", 'o"ut\\put']),
    index=st.integers(0, 10**6),
    origin=st.none() | st.text(max_size=6),
)
def test_any_names_spell_the_documented_key(tmp_path_factory, name, kind, index, origin):
    """File names with quotes, backslashes, non-ASCII; any kind, index and origin format."""
    from precision_tool.compare.golden_pairing import DumpSide, NpySide, PairTask

    where = tmp_path_factory.mktemp("k")
    if name in (".", ".."):
        name += "x"
    dump, golden = where / f"d{name}", where / f"g{name}.npy"
    dump.write_bytes(b"d" * 10)
    golden.write_bytes(b"g" * 7000)
    task = PairTask(0, "Op", "op", "op", "op:output:0", DumpSide(dump, kind, index, origin), NpySide(golden))
    names = ["CosineSimilarity=x.y"]
    assert RowKeys(names).key(task) == _documented_key(task, names, FileIdentities())
