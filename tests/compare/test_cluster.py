"""Issue 16.3: the engine's jobs on a real Dask cluster: a scheduler and two worker processes
(started here as the ``dask scheduler`` / ``dask worker`` commands, as on a real cluster), and
``local:N`` LocalClusters. CSVs equal the local pool's byte for byte; a worker killed mid-run
loses no row; a scheduler that goes away is one error, not a hang; nothing outlives the run."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask[distributed] is not installed (pip install precision-tool[cluster])"
)

from precision_tool import read_golden, read_graph  # noqa: E402
from precision_tool.compare import cluster, engine  # noqa: E402
from precision_tool.compare.engine import compare_tasks  # noqa: E402
from precision_tool.compare.golden_pairing import DumpSide, NpySide, PairTask, pair_with_graph  # noqa: E402
from precision_tool.compare.metric_data import Metric, StatGroup  # noqa: E402
from precision_tool.compare.metrics import select_metrics  # noqa: E402
from precision_tool.compare.result_csv import write_result_csv  # noqa: E402
from precision_tool.compare.stat_groups import register_group  # noqa: E402
from precision_tool.compare.window import JobResult, LostWork  # noqa: E402
from precision_tool.errors import PrecisionToolError  # noqa: E402
from precision_tool.formats.dump_write import TensorSpec, write_dump  # noqa: E402
from precision_tool.formats.golden import write_golden  # noqa: E402
from precision_tool.formats.tree import DumpTree  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402

psutil = pytest.importorskip("psutil", reason="psutil comes with dask[distributed]")
GRAPH = "npu/debug_0/graph/ge_proto_00000001_Build.txt"
KILL_MARKER_ENV = "PT_TEST_KILL_WORKER_MARKER"
SCHEDULER_PID_ENV = "PT_TEST_SCHEDULER_PID"
SCHEDULER_SIGNAL_ENV = "PT_TEST_SCHEDULER_SIGNAL"


def _tasks(root: Path) -> list[PairTask]:
    graph = read_graph(root / GRAPH).graphs[0]
    tree = DumpTree(root / "npu/debug_0/dump")
    (step,) = tree.select()
    return pair_with_graph(graph, tree.listing(step), read_golden(root / "tf/dump"))


def _csv(path: Path, rows, metrics=None) -> bytes:
    return write_result_csv(path, rows, metrics=metrics or select_metrics(None)).read_bytes()


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRECISION_TOOL_", "DASK_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**env, **extra}


class ExternalCluster:
    """``dask scheduler`` and ``dask worker --nworkers N`` as processes of their own."""

    def __init__(self, base: Path, workers: int = 2, worker_env: dict | None = None, threads: int = 1) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.file, self.log = base / "scheduler.json", open(base / "dask.log", "ab")
        common = dict(stdout=self.log, stderr=self.log, cwd=base, start_new_session=True)
        self.scheduler = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(self.file),
            ],
            env=_env(),
            **common,
        )
        self._wait(lambda: self.file.exists() and self.file.stat().st_size, "the scheduler file")
        self.address = json.loads(self.file.read_text())["address"]
        env = _env(**{SCHEDULER_PID_ENV: str(self.scheduler.pid), **(worker_env or {})})
        self.workers = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                self.address,
                "--nworkers",
                str(workers),
                "--nthreads",
                str(threads),
                "--no-dashboard",
                "--death-timeout",
                "20",
            ],
            env=env,
            **common,
        )
        self.wait_for_workers(workers)

    def _wait(self, ready, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not appear within {timeout} s")
            time.sleep(0.1)

    def wait_for_workers(self, count: int) -> None:
        with cluster.Session(self.address) as session:
            session.client.wait_for_workers(count, timeout=60)

    def stop(self) -> None:
        """Kill both process groups (the worker command's nannies and workers included)."""
        for process in (self.workers, self.scheduler):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A scheduler and two single-threaded workers; the workers kill themselves once when the
    kill metric runs (a marker file says it happened)."""
    base = tmp_path_factory.mktemp("dask")
    running = ExternalCluster(base / "cluster", worker_env={KILL_MARKER_ENV: str(base / "killed")})
    running.marker = base / "killed"
    yield running
    running.stop()


def _left_behind(before: set[int]) -> list[str]:
    """The command lines of this process's children not in ``before``, multiprocessing's
    resource tracker aside (started with the first spawned process, it lives as long as this
    process). A child an earlier test left as a zombie is in ``before``: never read."""
    left = []
    for process in psutil.Process().children(recursive=True):
        if process.pid in before:
            continue
        try:
            command = " ".join(process.cmdline())
        except psutil.ZombieProcess:  # ended but not waited for: left behind all the same
            command = f"zombie {process.pid}"
        except psutil.NoSuchProcess:  # ended and waited for while being listed
            continue
        if "resource_tracker" not in command:
            left.append(command)
    return left


@pytest.fixture
def leaves_nothing_behind():
    """After the test: no child process and no thread that was not there before it."""
    threads, children = threading.active_count(), {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    left = _left_behind(children)
    assert not left, left
    assert threading.active_count() == threads, [t.name for t in threading.enumerate()]


# --- byte for byte --------------------------------------------------------------------------


@pytest.mark.parametrize("metrics", [None, "0"])
def test_cluster_csvs_equal_the_local_pools_byte_for_byte(sample_data, tmp_path, dask_cluster, metrics):
    tasks = _tasks(sample_data)
    chosen = select_metrics(metrics)
    here = _csv(tmp_path / "pool.csv", compare_tasks(tasks, chosen, workers=2), chosen)
    there = _csv(tmp_path / "dask.csv", compare_tasks(tasks, chosen, scheduler=dask_cluster.address), chosen)
    assert here == there
    assert here.count(b"\n") == len(tasks) + 1


def test_a_split_tensor_on_the_cluster_equals_the_local_pool(tmp_path, dask_cluster):
    rng = np.random.default_rng(21)
    golden = rng.standard_normal((500, 80)).astype(np.float32)
    npu = (golden + 0.01 * rng.standard_normal(golden.shape)).astype(np.float16)
    path = write_dump(tmp_path / "Op.s.1.0.1700000000000000", "s", [], [TensorSpec(npu, "FLOAT16")])
    task = PairTask(
        0, "Op", "s", "s", "s:output:0", DumpSide(path, "output", 0), NpySide(write_golden(tmp_path, "s", 0, 1, golden))
    )
    whole = _csv(tmp_path / "whole.csv", compare_tasks([task]))
    pool = _csv(tmp_path / "pool.csv", compare_tasks([task], workers=2, split_bytes=40_000))
    there = _csv(tmp_path / "dask.csv", compare_tasks([task], scheduler=dask_cluster.address, split_bytes=40_000))
    assert whole == pool == there


def test_a_worker_running_four_calls_at_once_gives_each_pair_its_own_values(tmp_path):
    """``dask worker --nthreads 4``: four calls at once in one process, each streaming its
    pairs block by block (goldens over 1 MiB are read block by block from the file, and a read
    lets the other threads run). Every row equals the one computed here, one pair at a time."""
    rng = np.random.default_rng(5)
    tasks = []
    for i in range(12):
        golden = rng.standard_normal(300_000).astype(np.float32)
        npu = (golden + (i % 5) * 0.1 * rng.standard_normal(golden.shape)).astype(np.float32)
        name = f"op{i}"
        path = write_dump(tmp_path / f"Op.{name}.{i}.0.1700000000000000", name, [], [TensorSpec(npu, "FLOAT")])
        right = NpySide(write_golden(tmp_path, name, 0, 1, golden))
        tasks.append(PairTask(i, "Op", name, name, f"{name}:output:0", DumpSide(path, "output", 0), right))
    chosen = select_metrics("0,1,3")
    alone = _csv(tmp_path / "alone.csv", compare_tasks(tasks, chosen, chunk=4096), chosen)
    threaded = ExternalCluster(tmp_path / "threaded", workers=1, threads=4)
    try:
        there = compare_tasks(tasks, chosen, chunk=4096, scheduler=threaded.address)
        assert _csv(tmp_path / "threads.csv", there, chosen) == alone
    finally:
        threaded.stop()


def test_relative_paths_reach_workers_whose_cwd_is_elsewhere(sample_data, tmp_path, dask_cluster, monkeypatch):
    monkeypatch.chdir(sample_data.parent)
    tasks = _tasks(Path(sample_data.name))
    assert not os.path.isabs(next(t for t in tasks if t.comparable).left.path)
    rows = list(compare_tasks(tasks, scheduler=dask_cluster.address))
    assert sum(r.compared for r in rows) == sum(t.comparable for t in tasks)


# --- a worker killed mid-run ------------------------------------------------------------------


def _fold_kill_once(stats, x, y):
    """Kills the worker process the first time it runs on a worker of the test cluster."""
    marker = os.environ.get(KILL_MARKER_ENV)
    if marker and not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    stats.extra["n"] = stats.extra.get("n", 0) + x.size


def _merge_count(into, other):
    into.extra["n"] = into.extra.get("n", 0) + other.extra.get("n", 0)


def _count(stats):
    return stats.extra.get("n", 0)


register_group(StatGroup("kill_once", _fold_kill_once, _merge_count))
KILL_ONCE = Metric("ElementsSeen", frozenset({"kill_once"}), _count)


def test_a_worker_killed_mid_run_loses_no_row(sample_data, tmp_path, dask_cluster):
    tasks = _tasks(sample_data)
    metrics = select_metrics(["0", KILL_ONCE])
    assert not dask_cluster.marker.exists()
    there = list(compare_tasks(tasks, metrics, scheduler=dask_cluster.address))
    assert dask_cluster.marker.exists()  # a worker did die
    assert not psutil.pid_exists(int(dask_cluster.marker.read_text()))
    here = list(compare_tasks(tasks, metrics, workers=2))  # no marker variable here: nothing dies
    assert _csv(tmp_path / "a.csv", there, metrics) == _csv(tmp_path / "b.csv", here, metrics)
    assert all(math.prod(r.shape) == r.metrics["ElementsSeen"] for r in there if r.compared)
    dask_cluster.wait_for_workers(2)  # the nanny restarted it


class _Gone:
    """A Dask future whose task Dask gave up on."""

    key = "job-1"

    def result(self, timeout=None):
        raise distributed.KilledWorker("job-1", SimpleNamespace(address="tcp://10.0.0.9:40000"), 3)


def test_a_job_dask_gives_up_on_becomes_rows_with_the_reason(sample_data):
    session = cluster.Session("tcp://127.0.0.1:1")
    with pytest.raises(
        LostWork,
        match=r"died and Dask gave up retrying \(4 tries, the last on "
        r"tcp://10.0.0.9:40000\)\.",
    ):
        session.result(_Gone())
    job = _tasks(sample_data)[:3]
    unit = engine.JobUnit(job, (select_metrics(None), 1 << 20, False))
    unit.future = _Gone()
    result = unit.finish(None, session.result)
    assert isinstance(result, JobResult) and len(result.rows) == 3
    for row, task in zip(result.rows, job):
        assert not row.compared and row.tensor_index == task.tensor_index
        assert ("gave up retrying" in row.fail_reason) == task.comparable


# --- the scheduler goes away ------------------------------------------------------------------


def _fold_signal_scheduler(stats, x, y):
    """Sends the test cluster's scheduler the signal named in the environment, then works on."""
    pid, name = os.environ.get(SCHEDULER_PID_ENV), os.environ.get(SCHEDULER_SIGNAL_ENV)
    if pid and name:
        try:
            os.kill(int(pid), getattr(signal, name))
        except ProcessLookupError:
            pass
    time.sleep(0.05)


def _merge_nothing(into, other):
    pass


register_group(StatGroup("signal_scheduler", _fold_signal_scheduler, _merge_nothing))
SIGNAL_SCHEDULER = Metric("SchedulerSignalled", frozenset({"signal_scheduler"}), _count)


@pytest.mark.parametrize("how, expected", [("SIGKILL", "lost the Dask scheduler"), ("SIGSTOP", "does not answer")])
def test_a_scheduler_that_goes_away_is_one_error_not_a_hang(sample_data, tmp_path, monkeypatch, how, expected):
    monkeypatch.setattr(cluster, "PING_AFTER_SECONDS", 2.0)
    monkeypatch.setattr(cluster, "PING_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(cluster, "CLOSE_SECONDS", 2.0)
    doomed = ExternalCluster(tmp_path / "doomed", workers=1, worker_env={SCHEDULER_SIGNAL_ENV: how})
    threads = threading.active_count()
    try:
        with pytest.raises(PrecisionToolError) as failed:
            list(compare_tasks(_tasks(sample_data), select_metrics(["0", SIGNAL_SCHEDULER]), scheduler=doomed.address))
    finally:
        doomed.stop()
    message = str(failed.value)
    assert expected in message and doomed.address in message and "\n" not in message
    assert threading.active_count() == threads


# --- local:N, Ctrl-C, leftovers ------------------------------------------------------------------


def test_local_n_starts_a_cluster_and_leaves_no_process_or_thread(sample_data, tmp_path, leaves_nothing_behind):
    tasks = _tasks(sample_data)
    there = _csv(tmp_path / "dask.csv", compare_tasks(tasks, scheduler="local:2"))
    assert there == _csv(tmp_path / "pool.csv", compare_tasks(tasks, workers=2))


def test_ctrl_c_cancels_the_futures_and_closes_the_local_cluster(sample_data, leaves_nothing_behind):
    def interrupt(done, total, nbytes):
        if done >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        for _ in compare_tasks(_tasks(sample_data), scheduler="local:2", progress=interrupt):
            pass


def test_closing_the_stream_early_closes_the_cluster(sample_data, leaves_nothing_behind):
    rows = compare_tasks(_tasks(sample_data), scheduler="local:2")
    next(rows)
    rows.close()


def test_an_unreachable_scheduler_is_one_error_line(sample_data):
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(sample_data), "vc", "--scheduler", "tcp://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s"),
        cwd=sample_data.parent,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Dask scheduler tcp://127.0.0.1:9: "), done.stderr


def test_vc_scheduler_local_writes_the_pools_csv_and_bad_addresses_are_refused(sample_data):
    def vc(*args):
        return subprocess.run(
            [sys.executable, "-m", "precision_tool", "--data", str(sample_data), "vc", "--fresh", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=_env(PRECISION_TOOL_WORKERS="2"),
            cwd=sample_data.parent,
        )

    for args in (["--scheduler", "local:2"], []):
        assert vc(*args).returncode == 1  # the sample's defect is flagged
    first, second = sorted((sample_data / "temp" / "vector_compare").rglob("*.csv"))
    assert first.read_bytes() == second.read_bytes()
    bad = vc("--scheduler", "local:0")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "error: vc --scheduler: setting SCHEDULER: 'local:0' is not a Dask "
        "scheduler address like 'tcp://HOST:8786', or 'local:N' (N 1 to "
        "1024), or ''"
    )
