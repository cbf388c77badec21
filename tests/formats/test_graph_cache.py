"""The cache of parsed graph dumps (the models' JSON): used when fresh, ignored when stale or
broken.

It is kept for graphs read through a ``ModelDef`` -- atc's JSON here, and TextFormat the fast
reader leaves to protobuf -- and for TextFormat the fast reader takes. A cache is found by what
the graph file is (:mod:`~precision_tool.formats.file_identity`), so a graph rewritten with its
size and modification time put back is parsed again, and by the code that makes the model, so
a changed reader or conversion is not served an older version's model.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from precision_tool.formats import file_identity, files, graph_cache
from precision_tool.formats.graph import load_graph, read_graph
from precision_tool.formats.graph_cache import cache_path, read_graph_cached
from precision_tool.formats.graph_write import (
    OpSpec,
    build_model,
    write_graph_json,
    write_graph_text,
)

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
REAL_TEXT_GRAPHS = sorted(
    str(p.relative_to(REAL)) for p in REAL.rglob("*") if p.is_file() and p.name.endswith("_Build.txt")
)


def _model(ops: int):
    return build_model([OpSpec(f"n/{i}", "Relu", [f"n/{i - 1}:0"] if i else []) for i in range(ops)])


def _graph(tmp_path, ops: int = 3):
    return write_graph_json(_model(ops), tmp_path / "ge_proto_00000001_Build.txt.json")


def test_text_the_fast_reader_takes_is_cached_as_the_model_it_read(tmp_path, monkeypatch):
    path, cache = tmp_path / "ge_proto_00000001_Build.txt", tmp_path / "cache"
    write_graph_text(_model(3), path)
    first = read_graph_cached(path, cache, min_bytes=0)
    assert first == read_graph(path) and len(list(cache.glob("*.json"))) == 1
    monkeypatch.setattr(graph_cache, "load_graph", lambda *a, **k: 1 / 0)  # must not parse
    assert read_graph_cached(path, cache, min_bytes=0) == first


@pytest.mark.parametrize("name", REAL_TEXT_GRAPHS)
def test_a_real_graph_read_back_from_its_cache_equals_the_fast_readers(tmp_path, monkeypatch, name):
    """GE's own printer output (tests/data/real, SOURCES.md there): what the cache holds for a
    graph the fast reader took comes back as the very model that reader made."""
    path = REAL / name
    parsed, proto = load_graph(path)
    assert proto is None  # taken by the fast reader: the case the model is stored for
    cache = tmp_path / "cache"
    assert read_graph_cached(path, cache, min_bytes=0) == parsed
    monkeypatch.setattr(graph_cache, "load_graph", lambda *a, **k: 1 / 0)  # must not parse
    assert read_graph_cached(path, cache, min_bytes=0) == parsed


def test_text_left_to_protobuf_is_cached(tmp_path, monkeypatch):
    path, cache = tmp_path / "ge_proto_00000001_Build.txt", tmp_path / "cache"
    write_graph_text(_model(3), path)
    text = path.read_text()
    assert text.startswith('name: "ge_default_graph"\n')
    path.write_text(text.replace('"ge_default_graph"', '"ge_default"\n  "_graph"', 1))
    first = read_graph_cached(path, cache, min_bytes=0)  # a string continued on the next line
    assert first == read_graph(path) and len(list(cache.glob("*.json"))) == 1
    monkeypatch.setattr(graph_cache, "load_graph", lambda *a, **k: 1 / 0)  # must not parse
    assert read_graph_cached(path, cache, min_bytes=0) == first


def test_a_second_read_comes_from_the_cache_and_equals_the_parse(tmp_path, monkeypatch):
    path, cache = _graph(tmp_path), tmp_path / "temp" / "graph_cache"
    first = read_graph_cached(path, cache, min_bytes=0)
    assert len(list(cache.glob("*.json"))) == 1
    monkeypatch.setattr(graph_cache, "load_graph", lambda *a, **k: 1 / 0)  # must not parse
    assert read_graph_cached(path, cache, min_bytes=0) == first == read_graph(path)


def test_a_changed_graph_is_parsed_again_and_replaces_its_cache(tmp_path):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    read_graph_cached(path, cache, min_bytes=0)
    _graph(tmp_path, ops=5)
    os.utime(path, ns=(1, 2))  # a different mtime whatever the clock did
    assert len(read_graph_cached(path, cache, min_bytes=0).graphs[0].ops) == 5
    assert [p.name for p in cache.glob("*.json")] == [cache_path(path, cache, 0).name]


def _rename_in_place_keeping_times(path, old: bytes, new: bytes) -> None:
    """Every ``old`` replaced by ``new`` (as long) in place, atime and mtime put back to the ns:
    the same inode, size and mtime, as ``cp -p`` leaves a rewritten file."""
    before = os.stat(path)
    content = path.read_bytes()
    assert len(old) == len(new) and old in content
    with open(path, "r+b") as handle:
        handle.write(content.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def _sample_digest(path) -> str:
    return file_identity.FileIdentities().of(path).sample


@pytest.mark.parametrize("ops, renamed", [(3, 1), (400, 50)], ids=["sampled", "only ctime tells"])
def test_a_graph_rewritten_with_its_size_and_mtime_put_back_is_parsed_again(tmp_path, ops, renamed):
    path, cache = _graph(tmp_path, ops), tmp_path / "cache"
    read_graph_cached(path, cache, min_bytes=0)
    sampled = _sample_digest(path)
    for suffix in ('"', ':0"'):  # the op's name, then its consumer's input
        _rename_in_place_keeping_times(path, f'"n/{renamed}{suffix}'.encode(), f'"m/{renamed}{suffix}'.encode())
    assert (_sample_digest(path) == sampled) == (ops == 400)  # 400: outside the sampled blocks
    again = read_graph_cached(path, cache, min_bytes=0)
    assert again.graphs[0].ops[renamed].name == f"m/{renamed}"
    assert again == read_graph(path) and len(list(cache.glob("*.json"))) == 1


def test_a_copy_put_in_its_place_with_the_times_is_parsed_again(tmp_path):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    read_graph_cached(path, cache, min_bytes=0)
    copy = tmp_path / "copy.json"
    copy.write_bytes(path.read_bytes().replace(b'"n/1"', b'"m/1"').replace(b'"n/1:0"', b'"m/1:0"'))
    before = os.stat(path)
    os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(copy, path)  # another inode, the same size and mtime
    assert read_graph_cached(path, cache, min_bytes=0).graphs[0].ops[1].name == "m/1"


def test_a_cache_the_first_key_format_named_is_not_read_and_is_dropped(tmp_path):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    info = path.stat()
    cache.mkdir()
    old = cache / (
        f"{graph_cache._digest(str(path.resolve()))}."  # as format 1 named it
        f"{graph_cache._digest(f'{info.st_size}:{info.st_mtime_ns}:1')}.pb"
    )
    (tmp_path / "other").mkdir()
    other = graph_cache.load_graph(_graph(tmp_path / "other", ops=5))[1]
    old.write_bytes(other.SerializeToString())
    assert read_graph_cached(path, cache, min_bytes=0) == read_graph(path)  # 3 ops, not 5
    assert not old.exists() and len(list(cache.glob("*.json"))) == 1


def test_the_key_reads_a_few_small_blocks_not_the_graph(tmp_path, monkeypatch):
    path = _graph(tmp_path, ops=20_000)
    assert path.stat().st_size > 2 << 20
    counts: list = []

    def counted(descriptor, count, offset):
        data = os.pread(descriptor, count, offset)
        counts.append(len(data))
        return data

    monkeypatch.setattr(files, "_PREAD", counted)
    assert cache_path(path, tmp_path / "cache", 0) is not None
    assert 0 < sum(counts) <= file_identity.SAMPLE_BLOCKS * file_identity.SAMPLE_BLOCK


def test_a_corrupt_cache_is_ignored(tmp_path):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    read_graph_cached(path, cache, min_bytes=0)
    cache_path(path, cache, 0).write_bytes(b"\x0f" * 20)  # not JSON
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


def test_a_cache_made_by_other_model_code_is_not_read(tmp_path, monkeypatch):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    read_graph_cached(path, cache, min_bytes=0)
    monkeypatch.setattr(graph_cache, "_code_digest", lambda: "another version")
    parsed: list = []
    monkeypatch.setattr(graph_cache, "load_graph", lambda p: parsed.append(p) or load_graph(p))
    assert read_graph_cached(path, cache, min_bytes=0) == read_graph(path)
    assert parsed == [path]
    assert [p.name for p in cache.glob("*.json")] == [cache_path(path, cache, 0).name]  # the old one dropped


def test_the_code_digest_changes_with_any_module_that_makes_the_model(tmp_path, monkeypatch):
    source = Path(graph_cache.__file__).parent
    names = sorted({p.relative_to(source) for pattern in graph_cache._MODEL_CODE for p in source.glob(pattern)})
    assert {Path("graph_convert.py"), Path("graph_text_fast.py"), Path("proto/fast_text.py")} <= set(names)
    copy = tmp_path / "formats"
    for name in names:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((source / name).read_bytes())
    monkeypatch.setattr(graph_cache, "__file__", str(copy / "graph_cache.py"))
    graph_cache._code_digest.cache_clear()
    try:
        digests = [graph_cache._code_digest()]
        for name in names:
            with (copy / name).open("a") as handle:
                handle.write("# changed\n")
            graph_cache._code_digest.cache_clear()
            digests.append(graph_cache._code_digest())
        (copy / "graph_new.py").write_text("")  # a new reader module: a new key too
        graph_cache._code_digest.cache_clear()
        digests.append(graph_cache._code_digest())
        assert len(set(digests)) == len(digests)
    finally:
        graph_cache._code_digest.cache_clear()


def test_a_model_the_json_cannot_hold_is_returned_and_not_cached(tmp_path, monkeypatch):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    model, proto = load_graph(path)
    model.graphs[0].ops[0].attrs["odd"] = (1, 2)  # a tuple: no value the readers make
    monkeypatch.setattr(graph_cache, "load_graph", lambda p: (model, proto))
    assert read_graph_cached(path, cache, min_bytes=0) is model
    assert not list(cache.glob("*"))


@pytest.mark.parametrize("content", [b"", b'{"format": 1}', b'{"format": 1, "graphs": [[1]]}', b"[" * 50_000])
def test_a_cache_of_json_that_is_not_a_model_is_ignored(tmp_path, content):
    path, cache = _graph(tmp_path), tmp_path / "cache"
    read_graph_cached(path, cache, min_bytes=0)
    cache_path(path, cache, 0).write_bytes(content)
    assert read_graph_cached(path, cache, min_bytes=0) == read_graph(path)


_LOAD_IN_A_FRESH_PROCESS = """
import sys
from precision_tool.formats.graph_cache import read_graph_cached
model = read_graph_cached(sys.argv[1], sys.argv[2], min_bytes=0)
readers = ("graph", "graph_text_fast", "proto.fast_text", "om_model", "onnx_graph", "proto.atc_json")
print(len(model.graphs[0].ops), *[name for name in readers if "precision_tool.formats." + name in sys.modules])
"""


def test_a_load_from_the_cache_imports_no_graph_reader(tmp_path):
    """A cached model is JSON's: the readers of the graph's own form, and their text parsers,
    load only to parse (each import is part of a run's start)."""
    import subprocess
    import sys

    path, cache = tmp_path / "ge_proto_00000001_Build.txt", tmp_path / "cache"
    write_graph_text(_model(4), path)

    def fresh_load() -> list[str]:
        command = [sys.executable, "-c", _LOAD_IN_A_FRESH_PROCESS, str(path), str(cache)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    first = fresh_load()  # parsed, and the cache written
    assert first[0] == "4" and "graph_text_fast" in first[1:]
    assert fresh_load() == ["4"]  # from the cache
