"""The plan as the tasks come: jobs and sizes of a stream, the pool started before the pairing
ends, and rows, units and choices the same as those of the whole plan."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool import read_golden, read_graph
from precision_tool.compare import engine, jobs, split
from precision_tool.compare.engine import compare_tasks
from precision_tool.compare.golden_pairing import DumpSide, NpySide, PairTask, graph_pairs
from precision_tool.compare.jobs import JobStream, plan_jobs
from precision_tool.compare.metrics import select_metrics
from precision_tool.compare.result_csv import write_result_csv
from precision_tool.formats.tree import DumpTree
from tests.compare.test_engine import GRAPH, assert_agrees_with_reference
from tests.conftest import FIXTURES


def _pairing(root: Path):
    graph = read_graph(root / GRAPH).graphs[0]
    tree = DumpTree(root / "npu/debug_0/dump")
    (step,) = tree.select()
    return graph_pairs(graph, tree.listing(step), read_golden(root / "tf/dump"))


class Watched:
    """An iterator over ``tasks`` that says how many were taken and whether it ran out."""

    def __init__(self, tasks) -> None:
        self._tasks, self.taken, self.ended = iter(tasks), 0, False

    def __iter__(self):
        return self

    def __next__(self):
        try:
            task = next(self._tasks)
        except StopIteration:
            self.ended = True
            raise
        self.taken += 1
        return task


# --- JobStream against an independent grouping ------------------------------------------------


def _reference_jobs(tasks: list[PairTask]) -> list[list[PairTask]]:
    """Consecutive tasks of the same non-empty tuple of dump paths share a job (SPEC's rule,
    written out again here)."""
    out: list[list[PairTask]] = []
    previous = None
    for task in tasks:
        paths = tuple(s.path for s in (task.left, task.right) if isinstance(s, DumpSide))
        if out and paths and paths == previous:
            out[-1].append(task)
        else:
            out.append([task])
        previous = paths
    return out


_SLOTS = st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans(), st.booleans())


@settings(max_examples=60, deadline=None)
@given(st.lists(_SLOTS, max_size=30))
def test_a_stream_groups_and_sizes_as_the_whole_list(tmp_path_factory, slots):
    root = tmp_path_factory.mktemp("stream")
    dumps = [root / f"dump{k}" for k in range(4)]
    goldens = [root / f"golden{k}.npy" for k in range(3)]
    for k, path in enumerate(dumps + goldens[:2]):  # golden2.npy is missing: not sized, no error
        path.write_bytes(b"x" * (10 + 7 * k))
    tasks = []
    for n, (dump, golden, has_golden, comparable) in enumerate(slots):
        right = NpySide(goldens[golden]) if has_golden else None
        reason = "" if comparable and right is not None else "not compared"
        tasks.append(
            PairTask(n, "Op", f"op{n}", "gt", f"op{n}:output:0", DumpSide(dumps[dump], "output", 0), right, reason)
        )
    stream = JobStream(Watched(tasks))
    assert list(stream.jobs()) == _reference_jobs(tasks)
    read = {s.path for t in tasks if t.comparable for s in (t.left, t.right) if s.path.exists()}
    assert stream.sizes == {path: os.path.getsize(path) for path in read}
    assert stream.data_bytes == sum(os.path.getsize(path) for path in read)
    assert stream.count == len(tasks) and stream.ended


def test_a_job_is_given_before_the_tasks_after_it_are_taken(fixture_data):
    pairing = Watched(_pairing(fixture_data))
    stream = JobStream(pairing)
    first = next(stream.jobs())
    assert pairing.taken == len(first) + 1  # the job and the task that ends it
    assert not pairing.ended


# --- the engine on a stream ---------------------------------------------------------------------


@pytest.fixture
def small_settle(monkeypatch):
    """The choices of a pool of 2 settle at 8 KB (calls of 1 KB), and workers come with numba,
    as under the CLI's fork server: so the fixture's 100 KB stream past the point."""
    monkeypatch.setattr(jobs, "POOL_BATCH_BYTES", 1 << 10)
    monkeypatch.setattr(jobs, "workers_have_numba", lambda: True)


def _pool_started_when(monkeypatch, pairing: Watched) -> list:
    """Records, as the pool starts, how many tasks the pairing had made and whether it had ended."""
    seen, real = [], engine._pooled

    def pooled(units, job_args, workers, tracker):
        seen.append((pairing.taken, pairing.ended, workers, job_args[2]))
        return real(units, job_args, workers, tracker)

    monkeypatch.setattr(engine, "_pooled", pooled)
    return seen


def test_the_pool_starts_while_the_pairing_goes_on_and_agrees_with_msaccucmp(
    fixture_data, tmp_path, monkeypatch, small_settle
):
    pairing = Watched(_pairing(fixture_data))
    started = _pool_started_when(monkeypatch, pairing)
    rows = list(compare_tasks(pairing, workers=2))
    ((taken, ended, workers, numba),) = started
    assert not ended and 0 < taken < pairing.taken and (workers, numba) == (2, True)
    assert pairing.ended  # every task was taken in the end, and has its row
    out = write_result_csv(tmp_path / "streamed.csv", rows)
    assert_agrees_with_reference(out, FIXTURES / "small" / "reference_result.csv")
    inline = write_result_csv(tmp_path / "inline.csv", compare_tasks(list(_pairing(fixture_data)), workers=1))
    assert out.read_bytes() == inline.read_bytes()


def test_progress_counts_the_tasks_taken_and_ends_at_all_of_them(fixture_data, monkeypatch, small_settle):
    calls = []
    tasks = list(_pairing(fixture_data))
    rows = list(compare_tasks(iter(tasks), workers=2, progress=lambda *call: calls.append(call)))
    assert len(rows) == len(tasks)
    done, totals = [c[0] for c in calls], [c[1] for c in calls]
    assert done == sorted(done) and totals == sorted(totals) and all(d <= t for d, t in zip(done, totals))
    assert calls[-1][:2] == (len(tasks), len(tasks))


def test_a_run_that_never_settles_plans_the_whole_list_first(fixture_data, monkeypatch):
    pairing = Watched(_pairing(fixture_data))  # 100 KB: far below the 256 MiB that settle a pool of 2
    started = _pool_started_when(monkeypatch, pairing)
    rows = list(compare_tasks(pairing, workers=2))
    assert len(rows) == pairing.taken and started and all(ended for _, ended, _, _ in started)


def test_streamed_units_are_the_whole_plans_units(fixture_data, monkeypatch, small_settle):
    """Calls, splits and their order: the same as those of the plan made from every task, also
    when a pair to split comes after the pool started: the split size of 7 workers is the run's
    bytes over 14 (7.3 KB here: the eleven pairs of 8.3 KB are split, the 6.3 KB one is not),
    not that of the bytes taken by then (4 KB, which would split that one too)."""
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 4 << 10)
    tasks = list(_pairing(fixture_data))
    metrics = select_metrics(None)
    plan = plan_jobs(tasks, metrics, 4096)
    whole = engine._units(plan, 7, 0, jobs.pool_batch_bytes(plan, 7))
    assert sum(isinstance(unit, split.SplitCompare) for unit in whole) == 11
    pairing = Watched(tasks)
    stream = JobStream(pairing)
    stream.take_until(lambda: engine._settled(stream, metrics, 7, 0))
    assert not stream.ended
    taken = pairing.taken
    streamed = list(engine._streamed_units(stream, plan.job_args, 7, 0))
    assert taken < pairing.taken
    assert [_shape(u) for u in streamed] == [_shape(u) for u in whole]


def _shape(unit) -> tuple:
    if isinstance(unit, split.SplitCompare):
        return ("split", unit.task.tensor_index, tuple(unit.bounds))
    return ("call", tuple(task.tensor_index for task in unit.job))


def test_a_pairing_that_fails_while_the_pool_runs_ends_the_workers(fixture_data, monkeypatch, small_settle):
    import multiprocessing

    from precision_tool.errors import PrecisionToolError

    def failing():
        for n, task in enumerate(_pairing(fixture_data)):
            if n == 30:
                raise PrecisionToolError("the dump directory went away")
            yield task

    pairing = Watched(failing())
    started = _pool_started_when(monkeypatch, pairing)
    with pytest.raises(PrecisionToolError, match="went away"):
        list(compare_tasks(pairing, workers=2))
    assert len(started) == 1 and started[0][0] < 30  # the pool ran when the pairing failed
    assert multiprocessing.active_children() == []
