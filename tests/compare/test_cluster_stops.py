"""Issue 26.2, 26.3 and 26.7: no silent waits and a resume that keeps its word. Real schedulers and
workers whose compare_task misbehaves on its N-th call (a test preload): the scheduler killed
mid-run, the only worker gone, a worker that never answers. Each is one line on stderr (Dask's
traceback is in the log file the line names), the run is left interrupted, and ``vc --resume``
computes only the rows that are missing, also after ``--fresh``."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="dask[distributed] is not installed")

from tests.compare.cluster_procs import Cluster, vc  # noqa: E402


@pytest.fixture
def clusters(tmp_path):
    made: list[Cluster] = []

    def make(name: str) -> Cluster:
        made.append(Cluster(tmp_path / name))
        return made[-1]

    yield make
    for running in made:
        running.stop()


def _one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def _runs(data: Path) -> list[Path]:
    return sorted((data / "temp" / "vector_compare").iterdir())


def _state(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def _reused(done: subprocess.CompletedProcess) -> tuple[int, int]:
    found = re.search(r"reused (\d+) row\(s\) of earlier runs .*, computed (\d+)", done.stdout)
    assert found, done.stdout
    return int(found[1]), int(found[2])


def test_a_scheduler_killed_mid_fresh_run_is_one_line_and_resume_computes_only_the_rest(sample_data, clusters):
    assert vc(sample_data).returncode == 1  # every row in the row cache: --fresh must not reuse them
    doomed = clusters("doomed")
    doomed.add_worker(preload={"PT_TEST_ACTION": "kill-scheduler", "PT_TEST_AFTER": "30", "PT_TEST_DELAY": "0.05"})
    doomed.wait_for_workers()
    done = vc(sample_data, "--fresh", "--scheduler", doomed.address)
    assert done.returncode == 2, done.stderr
    line = _one_line(done)  # not Dask's traceback of the lost connection
    run = _runs(sample_data)[-1]
    assert line.startswith(f"error: lost the Dask scheduler {doomed.address}")
    assert f"the rows computed so far are kept (Dask's log: {sample_data / 'temp' / 'cluster_logs'}" in line
    assert line.endswith(f"; vc --resume {run} computes the rest")
    log = Path(line.split("Dask's log: ", 1)[1].split(")", 1)[0])
    assert log.is_file()
    state = _state(run)
    assert state["state"] == "interrupted" and isinstance(state["fresh_since"], int)
    assert not list(run.glob("result_*.csv"))

    second = clusters("second")
    second.add_worker()
    second.wait_for_workers()
    resumed = vc(sample_data, "--resume", str(run), "--scheduler", second.address)
    assert resumed.returncode == 1, resumed.stderr
    assert "resuming a vc --fresh: reusing only the rows it computed" in resumed.stdout
    assert f"--scheduler {second.address} applied" in resumed.stdout
    reused, computed = _reused(resumed)
    assert (
        0 < reused < 30 and reused + computed == 41
    )  # the fresh run's rows only, 41 in all  # what the fresh run computed, no older row
    assert _state(run)["state"] == "complete"
    here = vc(sample_data, "--fresh")
    assert here.returncode == 1
    ours, local = (next(r.glob("result_*.csv")).read_bytes() for r in (run, _runs(sample_data)[-1]))
    assert ours == local


def test_every_worker_gone_is_one_line_within_the_timeout(sample_data, clusters):
    lonely = clusters("lonely")
    lonely.add_worker(nanny=False, preload={"PT_TEST_ACTION": "exit", "PT_TEST_AFTER": "3"})
    lonely.wait_for_workers()
    done = vc(sample_data, "--scheduler", lonely.address, PRECISION_TOOL_CLUSTER_TIMEOUT="5")
    assert done.returncode == 2, done.stderr
    line = _one_line(done)
    assert re.match(
        rf"error: every Dask worker of {re.escape(lonely.address)} is gone \(none for [1-9] s\); "
        r"the rows computed so far are kept \(Dask's log: .*\); vc --resume .* computes the rest$",
        line,
    ), line
    assert _state(_runs(sample_data)[-1])["state"] == "interrupted"


def test_a_worker_that_never_answers_is_one_line_after_cluster_timeout(sample_data, clusters):
    stuck = clusters("stuck")
    stuck.add_worker(preload={"PT_TEST_ACTION": "hang", "PT_TEST_AFTER": "2"})
    stuck.wait_for_workers()
    done = vc(sample_data, "--scheduler", stuck.address, PRECISION_TOOL_CLUSTER_TIMEOUT="4")
    assert done.returncode == 2, done.stderr
    line = _one_line(done)
    assert re.match(
        rf"error: no result from the Dask workers of {re.escape(stuck.address)} for [4-9] s "
        r"\(setting CLUSTER_TIMEOUT\); the rows computed so far are kept",
        line,
    ), line
    assert _state(_runs(sample_data)[-1])["state"] == "interrupted"


def test_allow_partial_without_a_cluster_is_refused(sample_data):
    done = vc(sample_data, "--allow-partial")
    assert done.returncode == 2
    assert _one_line(done) == (
        "error: vc --allow-partial: there is no Dask scheduler to go on with part "
        "of (--scheduler or the SCHEDULER setting)"
    )


def test_a_wait_that_distributed_ends_with_its_unassigned_result_is_polled_again(monkeypatch):
    """distributed.utils.sync returns its never-assigned ``result`` when the coroutine it waits
    on is cancelled; the session takes that as no answer yet, and the watch decides."""
    from precision_tool.compare import cluster

    class Future:
        key, answers = "job-1", [UnboundLocalError("cannot access local variable 'result'"), 7]

        def result(self, timeout=None):
            answer = self.answers.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return answer

        def done(self):
            return not self.answers

    session = cluster.Session("tcp://127.0.0.1:9")  # never opened: result() asks only the future
    watched = []
    monkeypatch.setattr(session, "_watch", lambda: watched.append(True))
    future = Future()
    session.live[future.key] = future
    assert session.result(future) == 7 and watched == [True] and session.live == {}
