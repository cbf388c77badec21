"""The graph cache through the real command line: a rewritten Build graph is read again, an
unchanged one is still served from the cache.

The sample's Build graphs are TextFormat the fast reader takes, and small: neither is cached.
So each copy here holds them as atc's JSON (``.txt.json``, read through a ``ModelDef``), with
JSON whitespace appended past :data:`~precision_tool.formats.graph_cache.MIN_BYTES`, as a big
network's graph would be: graphs the cache keeps. The rewrite is done for real, in place, with
the size and the modification time put back, as ``cp -p`` or a copy tool leaves it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from precision_tool.formats import graph_cache
from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_write import write_graph_json
from tests.conftest import REPO_ROOT, make_context, run_command
from tests.test_cli import _run

SAMPLE_NAME = "ge_proto_00000001_Build.txt"
OLD_NAME, NEW_NAME = "resnet/relu2/Relu", "resnet/relu7/Relu"  # one length: one file size


def _cached_json_sample(where: Path) -> Path:
    """A copy of the sample whose Build graphs are padded atc JSON (see the module doc)."""
    data = where / "pd"
    shutil.copytree(REPO_ROOT / "precision_data", data, ignore=shutil.ignore_patterns("temp"))
    for debug in ("debug_0", "debug_1"):
        text = data / "npu" / debug / "graph" / SAMPLE_NAME
        written = write_graph_json(read_graph(text), text.with_name(SAMPLE_NAME + ".json"))
        text.unlink()
        with written.open("a", encoding="utf-8") as handle:
            handle.write(" " * graph_cache.MIN_BYTES)
    return data


def _graph(data: Path, debug: str = "debug_0") -> Path:
    return data / "npu" / debug / "graph" / (SAMPLE_NAME + ".json")


def _cli(data: Path, *words: str):
    result = _run([sys.executable, "-m", "precision_tool", "--data", "pd", *words], data.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _cache_files(data: Path) -> list[Path]:
    return sorted((data / "temp" / graph_cache.CACHE_DIR).glob("*.json"))


def _rename_keeping_size_and_times(path: Path, old: str, new: str) -> None:
    """Every ``old`` in the file replaced by ``new`` (as long), written in place (same inode),
    atime and mtime put back to the ns."""
    assert len(old) == len(new)
    before = os.stat(path)
    content = path.read_bytes()
    assert old.encode() in content
    with open(path, "r+b") as handle:
        handle.write(content.replace(old.encode(), new.encode()))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    kept = ("st_size", "st_mtime_ns", "st_ino")
    assert [getattr(after, k) for k in kept] == [getattr(before, k) for k in kept]


def test_a_graph_rewritten_with_size_and_mtime_restored_is_read_again_by_ls_and_ni(tmp_path):
    data = _cached_json_sample(tmp_path)
    assert f"[Relu] {OLD_NAME}  (debug_0)" in _cli(data, "ls", "-t", "Relu")
    assert len(_cache_files(data)) == 2  # both graphs went through the cache
    _rename_keeping_size_and_times(_graph(data), OLD_NAME, NEW_NAME)
    listed = _cli(data, "ls", "-t", "Relu")
    assert f"[Relu] {NEW_NAME}  (debug_0)" in listed and f"{OLD_NAME}  (debug_0)" not in listed
    assert f"[Relu] {OLD_NAME}  (debug_1)" in listed  # the other graph is as it was
    info = _cli(data, "ni", NEW_NAME)
    assert info.splitlines()[0].split() == ["op", NEW_NAME] and "[debug_0]" in info
    assert len(_cache_files(data)) == 2  # the stale cache was replaced, not kept beside


def test_an_unchanged_graph_is_served_from_the_cache(tmp_path, monkeypatch):
    data = _cached_json_sample(tmp_path)
    first = _cli(data, "ls", "-t", "Relu")
    cached = {p: os.stat(p).st_ino for p in _cache_files(data)}
    assert len(cached) == 2
    assert _cli(data, "ls", "-t", "Relu") == first  # a second session
    assert {p: os.stat(p).st_ino for p in _cache_files(data)} == cached  # read, not rewritten
    monkeypatch.setattr(graph_cache, "load_graph", lambda *a, **k: 1 / 0)  # no graph is parsed
    context, buffer = make_context(data)
    assert run_command(context, "ls -t Relu") == 0
    assert buffer.getvalue() == first
    assert run_command(context, f"ni {OLD_NAME}") == 0
    assert f"op           {OLD_NAME}" in buffer.getvalue()
