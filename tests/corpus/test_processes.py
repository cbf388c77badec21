"""Processes: a ``vc`` killed with SIGTERM, SIGHUP or SIGKILL leaves no worker alive and no
temporary file behind, through the real binary and real worker processes.

The data root is a chain of ops whose tensors are big enough (sparse files: they cost no disk)
for the comparison to be running when the signal arrives, compared by two worker processes.
Everything is waited for by polling with a bound, never by timing.
"""

from __future__ import annotations

import io
import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from precision_tool.compare.result_dir import INTERRUPTED, RUN_FILE, RUNNING, interrupted_run
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from precision_tool.formats.held_dir import temp_name
from precision_tool.formats.output_root import OutputRoot
from precision_tool.formats.proto.dump_enums import DATA_TYPE_VALUES, FORMAT_VALUES
from precision_tool.formats.proto.dumpdata import DumpData
from tests.conftest import REPO_ROOT

from .base import RUN, TS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads processes from /proc (Linux)")

MODEL = f"ge_default_{RUN}_1"
OPS, ELEMENTS = 6, 1 << 24  # 12 pairs of 64 MiB float32 tensors: seconds of work for two workers
BOUND_S = 120  # far above what any wait here takes; only a hang gets near it
POLL_S = 0.02


# --- a data root with big tensors ------------------------------------------------------------


def _sparse(path: Path, head: bytes, data_bytes: int) -> None:
    """``head`` followed by ``data_bytes`` zero bytes that take no disk space."""
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(len(head) + data_bytes)


def _dump_head(op: str, elements: int) -> bytes:
    message = DumpData(version="2.0", dump_time=TS, op_name=op)
    for tensor in (message.input.add(), message.output.add()):
        tensor.data_type, tensor.format = DATA_TYPE_VALUES["FLOAT"], FORMAT_VALUES["ND"]
        tensor.shape.dim.append(elements)
        tensor.size = 4 * elements
    header = message.SerializeToString()
    return struct.pack("<Q", len(header)) + header


def _npy_head(elements: int) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": (elements,)})
    return buffer.getvalue()


def big_chain(root: Path, ops: int = OPS, elements: int = ELEMENTS) -> Path:
    """net/op0 (Data) -> net/op1 -> ... -> net/op{ops} (Relu), every tensor ``elements`` floats."""
    step = root / f"npu/debug_0/dump/{RUN}/0/{MODEL}/1/0"
    golden = root / "tf/dump"
    graph = root / "npu/debug_0/graph/ge_proto_00000001_Build.txt"
    for directory in (step, golden, graph.parent):
        directory.mkdir(parents=True)
    desc = tensor_desc("DT_FLOAT", "ND", (elements,), origin_format="ND", origin_shape=(elements,))
    specs = [OpSpec("net/op0", "Data", input_descs=[desc], output_descs=[desc])]
    specs += [OpSpec(f"net/op{k}", "Relu", [f"net/op{k - 1}:0"], [desc], [desc]) for k in range(1, ops + 1)]
    write_graph_text(build_model(specs, name=MODEL), graph)
    for k in range(1, ops + 1):
        _sparse(step / f"Relu.net_op{k}.{k}.0.{TS + k}", _dump_head(f"net/op{k}", elements), 8 * elements)
    for k in range(ops + 1):
        _sparse(golden / f"net_op{k}.0.{TS}.npy", _npy_head(elements), 4 * elements)
    return root


# --- processes -------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process from /proc, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = text.rsplit(")", 1)[1].split()[:2]
    return state, int(ppid)


def _alive(pid: int) -> bool:
    """Running, or stopped: anything but gone or a zombie (a container's init may never reap)."""
    found = _stat(pid)
    return found is not None and found[0] not in ("Z", "X")


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None and info[1] == pid and info[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


def descendants(pid: int) -> list[int]:
    """The live processes under ``pid``: its children, theirs (a fork server's workers) ..."""
    found, todo = [], [pid]
    while todo:
        below = children(todo.pop())
        found += below
        todo += below
    return found


def wait_for(condition, what: str):
    """Poll ``condition()`` until it returns something true; fail after BOUND_S."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(POLL_S)
    raise AssertionError(f"still waiting after {BOUND_S} s for {what}")


def _env(**extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **extra}
    env.pop("PRECISION_TOOL_CONFIG", None)
    return env


# Starts the tool (same pid, through exec) with SIGHUP as given: "default" whatever this test
# run inherited (a run under nohup ignores it), or "ignore" as nohup leaves it.
_WITH_SIGHUP = (
    "import os, signal, sys; signal.signal(signal.SIGHUP, signal.SIG_IGN if "
    "sys.argv[1] == 'ignore' else signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable] + sys.argv[2:])"
)


def _tool(root: Path, *words: str, sighup: str = "default", **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _WITH_SIGHUP, sighup, "-m", "precision_tool", "--data", str(root), *words],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=root.parent,
        **kwargs,
    )


def _end(tool: subprocess.Popen, workers: list[int]) -> None:
    """Whatever happened, leave no process of this test behind (these pids only)."""
    for pid in [tool.pid] * (tool.poll() is None) + [p for p in workers if _alive(p)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    tool.wait(timeout=BOUND_S)
    for stream in (tool.stdout, tool.stderr):
        stream.close()


def _parts(temp: Path) -> list[Path]:
    return sorted(temp.rglob("*.part"))


@pytest.fixture(scope="module")
def big_root(tmp_path_factory) -> Path:
    return big_chain(tmp_path_factory.mktemp("big") / "precision_data")


# The big data wants numba, so vc forks its workers from a fork server it starts first
# (compare.pool_server): the workers are the server's children. With the kernels switched off
# no server starts and vc forks them itself.
_POOLS = {"server": {}, "fork": {"PRECISION_TOOL_KERNELS": "numpy"}}


@pytest.mark.parametrize(
    ("signum", "pool"),
    [
        (signal.SIGTERM, "server"),
        (signal.SIGHUP, "server"),
        (signal.SIGKILL, "server"),
        (signal.SIGTERM, "fork"),
        (signal.SIGKILL, "fork"),
    ],
    ids=["SIGTERM", "SIGHUP", "SIGKILL", "SIGTERM-forked", "SIGKILL-forked"],
)
def test_a_killed_vc_leaves_no_worker_and_its_reader_gets_eof(big_root, tmp_path, signum, pool):
    temp = tmp_path / "out"
    tool = _tool(big_root, "--out", str(temp), "vc", "--fresh", env=_env(PRECISION_TOOL_WORKERS="2", **_POOLS[pool]))
    workers: list[int] = []
    try:
        workers += wait_for(lambda: _workers(tool.pid, pool), "vc's two worker processes")
        wait_for(lambda: _parts(temp), "vc to start writing its CSV")
        workers = sorted(set(workers) | set(descendants(tool.pid)))
        os.kill(tool.pid, signum)
        # EOF on both pipes: no worker holds them any more (communicate reads until EOF)
        out, err = tool.communicate(timeout=BOUND_S)
        wait_for(lambda: not any(_alive(pid) for pid in workers), "the workers to end")
    finally:
        _end(tool, workers)
    assert tool.returncode == -signum, (out, err)
    assert b"Traceback" not in err and b"internal error" not in err, err
    run_dir = next((temp / "vector_compare").iterdir())
    assert not list(run_dir.glob("*.csv"))  # it was stopped mid-run: no CSV, complete or not
    state = json.loads((run_dir / RUN_FILE).read_text())["state"]
    if signum == signal.SIGKILL:  # nothing can run on SIGKILL: the temporary file stays ...
        assert state == RUNNING and _parts(temp)
    else:  # ... SIGTERM and SIGHUP stop as Ctrl-C does
        assert state == INTERRUPTED and not _parts(temp)
        found = interrupted_run(OutputRoot(temp))
        assert found is not None and found[0].path == run_dir  # what vc --resume continues
    _next_run_removes_stale_parts(temp, tmp_path)


def _workers(pid: int, pool: str) -> list[int] | None:
    """The two workers under the tool ``pid`` (with the fork server above them, and the
    resource tracker multiprocessing starts beside it, when there is one), or None while they
    are not both there."""
    below = children(pid)
    if pool == "server":
        workers = [worker for child in below for worker in children(child)]
        return below + workers if len(workers) >= 2 else None
    return below if len(below) >= 2 else None


def _next_run_removes_stale_parts(temp: Path, tmp_path: Path) -> None:
    """A small vc writing into the same output root removes what the killed one left."""
    from .base import Case, make_case, root_of

    small = root_of(make_case(tmp_path / "small", Case("small", "the base network", lambda c: None, ())))
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(small), "--out", str(temp), "vc"],
        capture_output=True,
        timeout=BOUND_S,
        env=_env(),
        cwd=tmp_path,
    )
    assert done.returncode in (0, 1), done.stderr
    assert _parts(temp) == []


def test_under_nohup_a_hangup_does_not_stop_vc(big_root, tmp_path):
    temp = tmp_path / "out"
    tool = _tool(big_root, "--out", str(temp), "vc", "--fresh", sighup="ignore", env=_env(PRECISION_TOOL_WORKERS="2"))
    workers: list[int] = []
    try:
        workers += wait_for(lambda: _workers(tool.pid, "server"), "vc's fork server and its two workers")
        wait_for(lambda: _parts(temp), "vc to start writing its CSV")
        for pid in [tool.pid, *workers]:  # as a terminal's hangup reaches its process group
            os.kill(pid, signal.SIGHUP)
        os.kill(tool.pid, signal.SIGTERM)  # then a real stop, which must still work
        out, err = tool.communicate(timeout=BOUND_S)
    finally:
        _end(tool, workers)
    assert tool.returncode == -signal.SIGTERM, (out, err)  # the hangup stopped nothing
    assert b"Traceback" not in err and b"lost" not in err, err  # no worker died of it either
    run_dir = next((temp / "vector_compare").iterdir())
    assert json.loads((run_dir / RUN_FILE).read_text())["state"] == INTERRUPTED


# --- the worker's ties to its parent, one by one ---------------------------------------------

_POOL_PARENT = """
import os, sys, time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from precision_tool import lifetime

# only the watchdog the tool uses where Linux's death signal is not to be had
pool = ProcessPoolExecutor(2, mp_context=get_context(sys.argv[1]), initializer=lifetime.watch_parent,
                           initargs=(os.getpid(),))
pids = {pool.submit(os.getpid).result() for _ in range(20)}
print(" ".join(map(str, sorted(pids))), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_the_watchdog_ends_workers_whose_parent_was_killed(tmp_path, method):
    parent = subprocess.Popen(
        [sys.executable, "-c", _POOL_PARENT, method], stdout=subprocess.PIPE, env=_env(), cwd=tmp_path
    )
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert workers and all(_alive(pid) for pid in workers)
        parent.kill()
        parent.wait(timeout=BOUND_S)
        wait_for(lambda: not any(_alive(pid) for pid in workers), "the watched workers to end")
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.stdout.close()


def test_a_worker_keeps_an_ignored_hangup_ignored(tmp_path):
    code = (
        "import os, signal; from precision_tool.lifetime import init_worker_lifetime; "
        "signal.signal(signal.SIGHUP, signal.SIG_IGN); "
        "signal.signal(signal.SIGTERM, lambda *a: None); init_worker_lifetime(os.getppid()); "
        "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN, "
        "signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=BOUND_S, env=_env(), cwd=tmp_path
    )
    assert done.stdout.split() == ["True", "True"], done


def test_a_worker_whose_parent_is_already_gone_exits_at_once(tmp_path):
    """The race between fork and prctl: a worker whose parent is not the one that started it."""
    code = (
        "import os; from precision_tool.lifetime import init_worker_lifetime; "
        "init_worker_lifetime(os.getppid() + 1); print('still here')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=BOUND_S, env=_env(), cwd=tmp_path
    )
    assert done.returncode == 1 and "still here" not in done.stdout, done


# --- stale temporary files -------------------------------------------------------------------


def _dead_pid(tmp_path: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        cwd=tmp_path,
    )
    pid = int(done.stdout)
    assert not _alive(pid)
    return pid


def _part_of(path: Path, pid: int) -> Path:
    name = temp_name(path).name
    stem, _, rest = name.rpartition(f".{os.getpid()}.")
    return path.with_name(f"{stem}.{pid}.{rest}")


def test_only_stale_temporary_files_under_the_root_are_removed(tmp_path):
    root = tmp_path / "temp"
    (root / "vector_compare" / "20260101000000").mkdir(parents=True)
    dead = _dead_pid(tmp_path)
    stale = [_part_of(root / "vector_compare" / "20260101000000" / "result.csv", dead), _part_of(root / "x.txt", dead)]
    live = [_part_of(root / "y.txt", os.getpid()), _part_of(root / "z.txt", os.getppid())]
    other = [root / "vector_compare" / "result.csv", root / f".a.{dead}.part"]  # not temp names
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    beyond_link = _part_of(outside / "w.txt", dead)  # reached only through a link
    target = _part_of(tmp_path / "target.txt", dead)
    for path in stale + live + other + [beyond_link, target]:
        path.write_text("x")
    (root / "linked").symlink_to(outside)
    link = _part_of(root / "l.txt", dead)
    link.symlink_to(target)  # a link named like a stale file: neither it nor its target goes

    assert OutputRoot(root).remove_stale_parts() == len(stale)
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in live + other + [beyond_link, target]) and link.is_symlink()


def test_a_sweep_of_a_missing_or_linked_root_does_nothing(tmp_path):
    assert OutputRoot(tmp_path / "absent").remove_stale_parts() == 0
    real = tmp_path / "real"
    real.mkdir()
    stale = _part_of(real / "a.txt", _dead_pid(tmp_path))
    stale.write_text("x")
    (tmp_path / "temp").symlink_to(real)
    assert OutputRoot(tmp_path / "temp").remove_stale_parts() == 0
    assert stale.exists()
