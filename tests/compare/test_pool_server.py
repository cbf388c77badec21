"""The pool's fork server: workers forked from it have what it preloaded, and a vc whose data
will want numba starts it before planning and computes the rows a forked pool computes.

Every case runs in a fresh interpreter (a fork server belongs to the process that started it),
through real processes.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no fork server on Windows")

_POOL = """
import json, os, sys
from concurrent.futures import ProcessPoolExecutor


def what_it_has(_):
    import gc
    from precision_tool.compare.numba_line import process_claimed
    return [os.getppid(), "precision_tool.compare.kernels_numba" in sys.modules,
            "precision_tool.compare.pair_compare" in sys.modules, process_claimed(), gc.get_freeze_count(),
            "precision_tool.formats.proto.dumpdata" in sys.modules,
            gc.isenabled(), sum(g["collections"] for g in gc.get_stats())]


if __name__ == "__main__":
    from precision_tool.compare import engine, pool_server
    assert pool_server.server_context() is None
    assert pool_server.start()
    context = engine._mp_context()
    tie = pool_server.parent_of_workers(context)
    with ProcessPoolExecutor(2, mp_context=context, initializer=engine._init_worker, initargs=(tie, False)) as pool:
        seen = [pool.submit(what_it_has, 0).result() for _ in range(4)]
    from multiprocessing import forkserver
    server = forkserver._forkserver._forkserver_pid
    print(json.dumps({"method": context.get_start_method(), "tie": tie, "server": server, "me": os.getpid(), "seen": seen}))
"""


def _env(**extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **extra}
    env.pop("PRECISION_TOOL_CONFIG", None)
    return env


def test_workers_come_from_the_server_with_what_it_preloaded(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(_POOL)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=_env(), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["method"] == "forkserver"
    assert found["tie"] is None  # tied to this process through the sentinel, not by pid
    assert found["server"] not in (None, found["me"])
    for parent, has_numba, has_jobs, claimed, frozen, has_parser, collecting, passes in found["seen"]:
        assert parent == found["server"]  # forked by the server, not by this process
        assert has_numba and has_jobs  # loaded there, before any job
        assert has_parser  # a GE dump header's parser too (the parent imports it only when read)
        assert claimed  # the server's preload marks its processes as the tool's
        assert frozen > 50_000  # what it loaded (numba, the tool): the collector's passes in a worker skip it
        assert collecting  # on again in the workers
        # off while the server loaded: its start makes about 30 passes, its preload ~150 more
        assert passes < 100


# A vc run in a fresh interpreter, with numba's line drawn at one byte so that the small fixture
# wants it; "fork" keeps the server from starting, for the same run through a forked pool.
_VC = """
import sys
from precision_tool.compare import numba_line, pool_server
numba_line.numba_min_bytes = lambda cosine_only: 1.0
if sys.argv[1] == "fork":
    pool_server.start = lambda: False
from precision_tool import cli
status = cli.main(sys.argv[2:])
print("server" if pool_server.server_context() is not None else "no server", file=sys.stderr)
sys.exit(status)
"""


def _vc(tmp_path: Path, data: Path, how: str) -> tuple[list[list[str]], str]:
    out = tmp_path / how
    done = subprocess.run(
        [sys.executable, "-c", _VC, how, "--data", str(data), "vc", "--fresh", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(PRECISION_TOOL_WORKERS="2"),
        cwd=tmp_path,
    )
    assert done.returncode in (0, 1), done.stderr
    (result,) = out.glob("result_*.csv")
    with open(result, newline="") as handle:
        return list(csv.reader(handle)), done.stderr.strip().splitlines()[-1]


def test_vc_through_the_server_writes_the_rows_of_a_forked_pool(tmp_path, fixture_data):
    served, said = _vc(tmp_path, fixture_data, "server")
    forked, said_forked = _vc(tmp_path, fixture_data, "fork")
    assert (said, said_forked) == ("server", "no server")
    assert len(served) > 1 and served == forked


def test_a_run_whose_workers_come_with_numba_uses_it(monkeypatch, fixture_data):
    """numba's load is paid once the server loaded it: a run too small to load it itself uses it."""
    from precision_tool.compare import jobs, pool_server
    from precision_tool.compare.metrics import select_metrics
    from precision_tool.compare.plan import plan_comparisons
    from tests.conftest import make_context

    tasks = plan_comparisons(make_context(fixture_data)[0])[0].tasks
    metrics = select_metrics(None)
    assert jobs.plan_jobs(tasks, metrics, 1 << 20).job_args[2] is False  # a few KB: numpy
    monkeypatch.setitem(pool_server._SERVER, "context", object())  # a server runs: numba is loaded
    assert jobs.plan_jobs(tasks, metrics, 1 << 20).job_args[2] is True
