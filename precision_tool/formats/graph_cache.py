"""A cache of parsed graph dumps, as the models' JSON (:mod:`.graph_json`) under the output
root (``temp/``).

Every graph of 1 MiB or more is cached: the first session to load it keeps the model it read
under ``temp/graph_cache/``, and later sessions read that instead, whatever the graph's own
form was (atc's JSON, GE's printer text, ONNX text, an offline model). A cached load is JSON's
C parser and the model's objects, without converting any attribute again: the 4 GB bench
network's 9,767 ops take 0.20-0.26 s of CPU where the ``ModelDef`` this cache held before took
0.39-0.53 s (docs/performance.md, "Graph loading"). Every later ``vc``, ``ac`` or shell
session gains that before anything else runs, and imports none of the graph readers
(:func:`load_graph`). In the tool's own process (``store_behind``) the JSON is made and written
by a forked child while the command goes on with the model (on the other core), and the
command's exit waits for it; a process with other threads running (where a fork may deadlock)
or without ``fork`` writes it itself, as an API caller's does.

A cache is keyed by what the graph file is (:mod:`.file_identity`): its absolute path with the
directories' links resolved, device and inode, size, modification and status-change times in
ns, and a digest of sampled bytes (five 1 KiB blocks of a graph this large). So a graph
rewritten with its size and modification time put back (``cp -p``, a copy tool, a re-dump that
keeps times) is parsed again: its status-change time moved, whatever the blocks say. What is
trusted: a graph file whose device, inode, size, both times and sampled blocks are all as they
were holds the graph it held; a change outside the sampled blocks on a file system that leaves
the status-change time untouched is the one change that goes unseen. Finding the key costs a
stat, an open, an fstat and five small reads, never a read of the graph. The identity is taken
before the graph is read, so a graph rewritten while it is parsed leaves a cache under its old
identity, which the new file never matches.

A stale, corrupt or unwritable cache is never an error: the graph is parsed from its own file
as if there were no cache. The cache is data only (JSON, read by :func:`json.loads`);
nothing in it is executed. It is read and written through :class:`~.output_root.OutputRoot`, so a
link planted in the cache directory is never followed.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import PrecisionToolError
from ..lifetime import init_worker_lifetime
from .file_identity import FileIdentities
from .graph_json import model_from_json, model_to_json
from .graph_memory import names_the_file_when_out_of_memory
from .graph_model import Model
from .output_root import OutputRoot

CACHE_DIR = "graph_cache"
MIN_BYTES = 1 << 20  # smaller graphs parse in well under a second: not worth a cache file
_FORMAT = "3"  # bump when what is stored or the key changes; 2: the key is the file identity; 3: JSON and code
SUFFIX = ".json"
_OLD_SUFFIXES = (".pb", SUFFIX)  # what a cache of the same graph was called: dropped when one is written


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


# The code that decides the model a graph file becomes: the graph readers and conversion
# (graph*.py), the formats they read (an offline model, ONNX) and the protobuf schemas and text
# parsers (proto/). A cache holds that model, so a change to any of it must not be served an
# older version's model: their text is part of every key (_code_digest). A few modules more
# than strictly needed (the cache, the writer) only make a change start a new cache sooner.
_MODEL_CODE = ("graph*.py", "om_model.py", "onnx_graph.py", "proto/*.py")


@functools.cache
def _code_digest() -> str:
    """A digest of :data:`_MODEL_CODE`'s files, names and text (read once a process), or the
    tool's version where the sources cannot be read."""
    here = Path(__file__).parent
    files = sorted({path for pattern in _MODEL_CODE for path in here.glob(pattern)})
    digest = hashlib.sha256()
    try:
        for path in files:
            digest.update(f"{path.relative_to(here).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    except OSError:
        return __version__
    return digest.hexdigest()[:16] if files else __version__


def cache_path(path: Path, cache_dir: Path, min_bytes: int = MIN_BYTES) -> Path | None:
    """Where the cache of ``path`` lives: named by the file's resolved path, then by its whole
    identity (see the module doc); None when ``path`` is smaller than ``min_bytes`` or is not
    a regular file that can be read."""
    try:
        if os.stat(path).st_size < min_bytes:  # a small graph costs a stat only
            return None
    except OSError:
        return None
    identity = FileIdentities().of(path)
    if identity is None:
        return None
    return cache_dir / f"{_digest(identity.path)}.{_digest(json.dumps([_FORMAT, _code_digest(), *identity]))}{SUFFIX}"


def _load(root: OutputRoot, cached: Path, path: Path) -> Model | None:
    """The model the cache at ``cached`` holds, or None: there is none, or it cannot be read
    or is not a cache of this format (written by another version, cut short, changed)."""
    try:
        return model_from_json(root.read_bytes(cached), path)
    except (OSError, PrecisionToolError, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
        return None


def _store(root: OutputRoot, model: Model, cached: Path) -> None:
    """Write atomically (temporary name, then rename), dropping older caches of the same file;
    nothing when the model has a value the cache's form cannot hold."""
    try:
        data = model_to_json(model)
    except (TypeError, ValueError, RecursionError):  # written never rather than wrong
        return
    try:
        root.write_bytes(cached, data)
    except PrecisionToolError:  # a read-only data root, a full disk: no cache, no error
        return
    prefix = cached.name.split(".")[0] + "."
    for name in root.names(*root.parts(cached.parent)):
        if name.startswith(prefix) and name.endswith(_OLD_SUFFIXES) and name != cached.name:
            root.remove(cached.parent / name)


def write_graph_cache(
    path: str | os.PathLike, cache_dir: str | os.PathLike, model: Model, *, min_bytes: int = MIN_BYTES
) -> Path | None:
    """Keep ``model`` as the cache of the graph file ``path`` in ``cache_dir`` (what a load
    through :func:`read_graph_cached` writes; for a caller that read the graph itself, as a
    bench does); the cache's path, or None when the file is not cached or nothing was written."""
    cached = cache_path(Path(path), Path(cache_dir), min_bytes)
    if cached is None:
        return None
    _store(OutputRoot(cache_dir), model, cached)
    return cached if cached.exists() else None


@names_the_file_when_out_of_memory
def read_graph_cached(
    path: str | os.PathLike,
    cache_dir: str | os.PathLike | None,
    *,
    min_bytes: int = MIN_BYTES,
    root: OutputRoot | None = None,
    store_behind: bool = False,
) -> Model:
    """:func:`~.graph.read_graph`, through the cache in ``cache_dir`` for graph files of at
    least ``min_bytes`` (see the module doc). ``cache_dir`` lies in ``root`` (defaults to
    ``cache_dir`` itself); None: no cache. ``store_behind``: a cache made from the model is
    written by a forked child (the tool's own processes only: see the module doc)."""
    path = Path(path)
    if cache_dir is None:
        return load_graph(path)[0]
    root = OutputRoot(cache_dir) if root is None else root
    cached = cache_path(path, Path(cache_dir), min_bytes)
    found = _load(root, cached, path) if cached is not None else None
    if found is not None:
        return found
    model, _ = load_graph(path)
    if cached is None:
        return model
    if store_behind and _store_in_child(root, model, cached):
        return model
    _store(root, model, cached)
    return model


def load_graph(path: Path) -> tuple[Model, Any]:
    """:func:`.graph.load_graph`, imported at the first parse: a load from the cache needs
    none of the readers and their text parsers (docs/performance.md, stop 57)."""
    from . import graph

    return graph.load_graph(path)


def _store_in_child(root: OutputRoot, model: Model, cached: Path) -> bool:
    """Make and write the cache of ``model`` in a forked child (waited for at this process's
    exit); False, writing nothing, where no child can be forked safely (another thread runs, or
    the system has no fork)."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    parent = os.getpid()
    try:
        child = os.fork()
    except OSError:  # no memory or no process slot for a child: written here instead
        return False
    if child == 0:
        status = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle
            init_worker_lifetime(parent)  # dies with the command, SIGKILL included
            _store(root, model, cached)
            status = 0
        finally:  # never the parent's exit handlers, buffers or exceptions
            os._exit(status)
    atexit.register(_wait_for, child)
    return True


def _wait_for(child: int) -> None:
    try:
        os.waitpid(child, 0)
    except ChildProcessError:  # already reaped
        pass
