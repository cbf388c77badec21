"""A graph cache made from the model is written by a forked child in the tool's own process.

``read_graph_cached(..., store_behind=True)`` hands the model back and leaves making and writing
its cache (``model_to_json``, most of a second for a large graph) to a forked child, which the
process's exit waits for; with another thread running it writes the cache itself. Each case
runs in a fresh interpreter (pytest's own process runs threads of its own), with ``_store``
wrapped to record which process wrote the cache.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_cache import cache_path, read_graph_cached

REAL_TEXT = Path(__file__).resolve().parents[1] / "data" / "real" / "ge_proto_00000001_Build.txt"
REPO = Path(__file__).resolve().parents[2]

_SCRIPT = """
import os, sys, threading, time
from precision_tool.formats import graph_cache
graph, cache, marker, mode = sys.argv[1:5]
store = graph_cache._store
def mark():  # whole or absent: the test may look at the marker while it is written
    with open(marker + ".part", "w") as out:
        out.write(str(os.getpid()))
    os.replace(marker + ".part", marker)
def recorded(*args):
    mark()
    return store(*args)
graph_cache._store = recorded
if mode == "slow":  # the child says who it is, then sleeps before making the cache
    make = graph_cache.model_to_json
    def slow(model):
        mark()
        time.sleep(60)
        return make(model)
    graph_cache.model_to_json = slow
if mode == "thread":  # another thread runs: no fork
    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
model = graph_cache.read_graph_cached(graph, cache, min_bytes=0, store_behind=True)
print(os.getpid(), sum(len(g.ops) for g in model.graphs), flush=True)
if mode == "slow":
    time.sleep(60)
"""


def _run(tmp_path: Path, mode: str) -> tuple[int, int, int]:
    """(the command's pid, the ops it read, the pid that wrote the cache)."""
    marker = tmp_path / "writer"
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(REAL_TEXT), str(tmp_path / "cache"), str(marker), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    pid, ops = map(int, done.stdout.split())
    return pid, ops, int(marker.read_text())


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_forked_child_writes_the_cache_and_the_exit_waits_for_it(tmp_path):
    pid, ops, writer = _run(tmp_path, "plain")
    assert writer != pid  # written by another process
    assert _gone(writer)  # waited for: nothing left running after the command
    expected = read_graph(REAL_TEXT)  # parsed anew, no cache: the independent answer
    assert ops == sum(len(g.ops) for g in expected.graphs)
    cached = cache_path(REAL_TEXT, tmp_path / "cache", min_bytes=0)
    assert cached is not None and cached.is_file()
    # the next load comes from what the child wrote, and is the graph
    assert read_graph_cached(REAL_TEXT, tmp_path / "cache", min_bytes=0) == expected
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [cached.name]  # no temporary file


def test_with_another_thread_running_the_process_writes_the_cache_itself(tmp_path):
    pid, _, writer = _run(tmp_path, "thread")
    assert writer == pid
    assert cache_path(REAL_TEXT, tmp_path / "cache", min_bytes=0).is_file()


def test_the_writer_never_outlives_a_killed_command(tmp_path):
    marker = tmp_path / "writer"
    command = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(REAL_TEXT), str(tmp_path / "cache"), str(marker), "slow"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert command.stdout.readline().strip()  # the model is back; the child sleeps
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        writer = int(marker.read_text())
        assert writer != command.pid and not _gone(writer)
    finally:
        command.send_signal(signal.SIGKILL)
        command.wait(30)
    deadline = time.monotonic() + 10
    while not _gone(writer) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(writer)  # the kernel's death signal ended it with the command
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())  # nothing half-written


@pytest.mark.parametrize("store_behind", [False, True])
def test_in_this_process_the_cache_is_as_inline(tmp_path, store_behind):
    """Called from pytest's process (threads of its own, or not under xdist), the result and
    the cache are the same either way."""
    model = read_graph_cached(REAL_TEXT, tmp_path, min_bytes=0, store_behind=store_behind)
    assert model == read_graph(REAL_TEXT)
    cached = cache_path(REAL_TEXT, tmp_path, min_bytes=0)
    for _ in range(100):  # a forked writer may still be at it
        if cached.is_file():
            break
        time.sleep(0.05)
    assert cached.is_file()  # written, by this process or its child
    assert read_graph_cached(REAL_TEXT, tmp_path, min_bytes=0) == model
