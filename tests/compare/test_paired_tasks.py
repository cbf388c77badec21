"""A comparison's tasks paired as the run takes them: each paired once, the same tasks as the
whole pairing, and the engine's pool started before the pairing ends (vc's own path)."""

from __future__ import annotations

import csv
import pickle

import pytest

from precision_tool.compare import api, engine, jobs
from precision_tool.compare.golden_pairing import PairTask, pair_with_graph
from precision_tool.compare.metrics import select_metrics
from precision_tool.compare.paired_tasks import PairedTasks
from precision_tool.compare.plan import plan_comparisons
from precision_tool.compare.row_cache import RowCache, cached_rows
from precision_tool.formats.output_root import OutputRoot
from tests.compare.test_job_stream import Watched, _pairing
from tests.conftest import FIXTURES, make_context


def _task(n: int) -> PairTask:
    return PairTask(n, "Op", f"op{n}", "gt", f"op{n}:output:0", None, None, "not compared")


class Counted:
    """A pairing of ``n`` tasks that counts the tasks it made."""

    def __init__(self, n: int) -> None:
        self.n, self.made = n, 0

    def __iter__(self):
        for k in range(self.n):
            self.made += 1
            yield _task(k)


def test_tasks_are_paired_as_they_are_taken_and_only_once():
    pairing = Counted(5)
    tasks = PairedTasks(pairing)
    first = iter(tasks)
    assert next(first) == _task(0) and pairing.made == 1
    second = iter(tasks)  # a second walk takes what is kept, then pairs on
    assert [next(second) for _ in range(3)] == [_task(0), _task(1), _task(2)] and pairing.made == 3
    assert list(first) == [_task(k) for k in range(1, 5)] and pairing.made == 5
    assert list(second) == [_task(3), _task(4)]
    assert list(tasks) == [_task(k) for k in range(5)] and pairing.made == 5


def test_len_index_and_equality_pair_the_rest_first():
    pairing = Counted(4)
    tasks = PairedTasks(pairing)
    assert len(tasks) == 4 and pairing.made == 4
    assert tasks[1] == _task(1) and tasks[-1] == _task(3) and tasks[1:3] == [_task(1), _task(2)]
    assert tasks == [_task(k) for k in range(4)] and tasks == PairedTasks(Counted(4))
    assert tasks != [_task(0)] and pairing.made == 4


def test_a_pairing_that_fails_keeps_what_it_paired_and_says_so_where_taken():
    def pairing():
        yield _task(0)
        raise ValueError("header unreadable")

    tasks = PairedTasks(pairing())
    walk = iter(tasks)
    assert next(walk) == _task(0)
    with pytest.raises(ValueError, match="header unreadable"):
        next(walk)
    assert list(tasks) == [_task(0)]  # the pairing ended where it failed


def test_pickled_it_is_the_list_of_all_its_tasks():
    tasks = PairedTasks(Counted(3))
    assert pickle.loads(pickle.dumps(tasks)) == [_task(0), _task(1), _task(2)]


def test_the_graph_pairing_streamed_is_the_graph_pairing(fixture_data):
    from precision_tool import read_golden, read_graph
    from precision_tool.formats.tree import DumpTree
    from tests.compare.test_job_stream import GRAPH

    graph = read_graph(fixture_data / GRAPH).graphs[0]
    tree = DumpTree(fixture_data / "npu/debug_0/dump")
    (step,) = tree.select()
    whole = pair_with_graph(graph, tree.listing(step), read_golden(fixture_data / "tf/dump"))
    assert len(whole) == 49 and list(PairedTasks(_pairing(fixture_data))) == whole
    # msaccucmp's own rows of the fixture, in its order: the same ops and tensors
    with open(FIXTURES / "small" / "reference_result.csv", newline="") as handle:
        reference = [(int(r["Index"]), r["NPUDump"], r["TensorIndex"]) for r in csv.DictReader(handle)]
    streamed = [(t.index, t.npu_name, t.tensor_index or "NaN") for t in PairedTasks(_pairing(fixture_data))]
    assert streamed == reference


def test_vc_plans_pair_as_the_run_takes_them(fixture_data):
    context, _ = make_context(fixture_data)
    (comparison,) = plan_comparisons(context)
    assert isinstance(comparison.tasks, PairedTasks) and "pairing" in repr(comparison.tasks)


def test_a_fresh_run_starts_its_pool_before_the_pairing_ends(fixture_data, tmp_path, monkeypatch):
    """run_comparisons and the row cache's fresh path hand the engine the tasks as they are
    paired: the pool starts with the pairing under way, and the counts are the run's."""
    monkeypatch.setattr(jobs, "POOL_BATCH_BYTES", 1 << 10)
    monkeypatch.setattr(jobs, "workers_have_numba", lambda: True)
    monkeypatch.setattr(api, "POOL_MIN_BYTES", 0)
    context, _ = make_context(fixture_data)
    (comparison,) = plan_comparisons(context)
    pairing = Watched(_pairing(fixture_data))
    comparison.tasks = PairedTasks(pairing)
    started, real = [], engine._pooled

    def pooled(units, job_args, workers, tracker):
        started.append(pairing.ended)
        return real(units, job_args, workers, tracker)

    monkeypatch.setattr(engine, "_pooled", pooled)
    counts: dict = {}
    with RowCache(OutputRoot(tmp_path / "out"), "cache", read=False) as cache:
        rows = list(api.run_comparisons([comparison, comparison], select_metrics("0"), 2, cache=cache, stats=counts))
    assert started == [False]
    tasks = list(comparison.tasks)
    assert [owner for owner, _ in rows] == [0] * len(tasks) + [1] * len(tasks)
    assert [row.tensor_index for _, row in rows] == [t.tensor_index for t in tasks] * 2
    assert counts == {"reused": 0, "computed": 2 * sum(t.comparable for t in tasks)}


def test_cached_rows_with_rows_to_reuse_still_takes_every_task_first(fixture_data, tmp_path):
    metrics = select_metrics("0")
    names = [m.name for m in metrics]
    tasks = list(_pairing(fixture_data))
    root = OutputRoot(tmp_path / "out")
    with RowCache(root, "cache") as cache:
        list(
            cached_rows(tasks[:10], names, cache, lambda todo, keyed: engine.compare_tasks(todo, metrics, keyed=keyed))
        )
    pairing, asked = Watched(tasks), []

    def compute(todo, keyed):
        asked.append(pairing.ended)
        return engine.compare_tasks(todo, metrics, keyed=keyed)

    with RowCache(root, "cache") as cache:
        counts: dict = {}
        rows = list(cached_rows(pairing, names, cache, compute, counts, keys_where_read=True))
    assert asked == [True] and len(rows) == len(tasks)  # the keys of all were looked up first
    assert counts["reused"] == sum(t.comparable for t in tasks[:10])
