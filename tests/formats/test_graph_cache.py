"""The binary cache of parsed graph dumps: used when fresh, ignored when stale or broken.

It is kept for graphs read through a ``ModelDef`` -- atc's JSON here, and TextFormat the fast
reader leaves to protobuf; TextFormat the fast reader takes is read again instead.
"""

from __future__ import annotations

import os

from precision_tool.formats import graph_cache
from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_cache import cache_path, read_graph_cached
from precision_tool.formats.graph_write import (
    OpSpec,
    build_model,
    write_graph_json,
    write_graph_text,
)


def _model(ops: int):
    return build_model([OpSpec(f"n/{i}", "Relu", [f"n/{i - 1}:0"] if i else [])
                        for i in range(ops)])


def _graph(tmp_path, ops: int = 3):
    return write_graph_json(_model(ops), tmp_path / "ge_proto_00000001_Build.txt.json")


def test_text_the_fast_reader_takes_is_not_cached(tmp_path, monkeypatch):
    path, cache = tmp_path / "ge_proto_00000001_Build.txt", tmp_path / "cache"
    write_graph_text(_model(3), path)
    assert read_graph_cached(path, cache, min_bytes=0) == read_graph(path)
    assert not cache.exists()


def test_text_left_to_protobuf_is_cached(tmp_path, monkeypatch):
    path, cache = tmp_path / "ge_proto_00000001_Build.txt", tmp_path / "cache"
    write_graph_text(_model(3), path)
    text = path.read_text()
    assert text.startswith('name: "ge_default_graph"\n')
    path.write_text(text.replace('"ge_default_graph"', '"ge_default"\n  "_graph"', 1))
    first = read_graph_cached(path, cache, min_bytes=0)  # a string continued on the next line
    assert first == read_graph(path) and len(list(cache.glob("*.pb"))) == 1
    monkeypatch.setattr(graph_cache, "load_graph", lambda *a, **k: 1 / 0)  # must not parse
    assert read_graph_cached(path, cache, min_bytes=0) == first


def test_a_second_read_comes_from_the_cache_and_equals_the_parse(tmp_path, monkeypatch):
    path, cache = _graph(tmp_path), tmp_path / "temp" / "graph_cache"
    first = read_graph_cached(path, cache, min_bytes=0)
    assert len(list(cache.glob("*.pb"))) == 1
    monkeypatch.setattr(graph_cache, "load_graph", lambda *a, **k: 1 / 0)  # must not parse
    assert read_graph_cached(path, cache, min_bytes=0) == first == read_graph(path)


def test_a_changed_graph_is_parsed_again_and_replaces_its_cache(tmp_path):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    read_graph_cached(path, cache, min_bytes=0)
    _graph(tmp_path, ops=5)
    os.utime(path, ns=(1, 2))  # a different mtime whatever the clock did
    assert len(read_graph_cached(path, cache, min_bytes=0).graphs[0].ops) == 5
    assert [p.name for p in cache.glob("*.pb")] == [cache_path(path, cache, 0).name]


def test_a_corrupt_cache_is_ignored(tmp_path):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    read_graph_cached(path, cache, min_bytes=0)
    cache_path(path, cache, 0).write_bytes(b"\x0f" * 20)  # wire type 7: not protobuf
    assert read_graph_cached(path, cache, min_bytes=0) == read_graph(path)


def test_an_unwritable_cache_is_no_error(tmp_path):
    path = _graph(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would go")
    assert read_graph_cached(path, blocker / "cache", min_bytes=0) == read_graph(path)


def test_small_graphs_are_not_cached(tmp_path):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    read_graph_cached(path, cache)
    assert not cache.exists()
