"""A cache of parsed graph dumps, as binary protobuf under the output root (``temp/``).

Every graph of 1 MiB or more is cached: the first session to load it keeps its binary form
under ``temp/graph_cache/``, and later sessions read that instead (for atc's JSON about a third
of the first load's time: ``docs/performance.md``, "Graph loading"). A graph read through a
``ModelDef`` (atc's JSON, GE's ONNX text, an offline model, TextFormat the fast reader leaves to
protobuf's parser) stores that message; TextFormat the fast reader (:mod:`.graph_text_fast`)
takes stores the model it read, made a ``ModelDef`` (:func:`.graph_write.model_to_proto`): that
adds about a third to the first load, and a later load (protobuf's C parser, then the model)
takes about a third of the fast reader's time (7.5 MB of GE's printer text: 0.64 s first, 0.23 s
cached, CPU), which every later ``vc``, ``ac`` or shell session gains before anything else runs.
In the tool's own process (``store_behind``) that making and writing is done by a forked child
while the command goes on with the model (on the other core), and the command's exit waits for
it; a process with other threads running (where a fork may deadlock) or without ``fork`` writes
it itself, as an API caller's does.

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
as if there were no cache. The cache is data only (a serialized message of the same schema);
nothing in it is executed. It is read and written through :class:`~.output_root.OutputRoot`, so a
link planted in the cache directory is never followed.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import signal
import threading
from pathlib import Path

from google.protobuf.message import DecodeError

from ..errors import PrecisionToolError
from ..lifetime import init_worker_lifetime
from .file_identity import FileIdentities
from .graph import load_graph, model_from_proto
from .graph_memory import names_the_file_when_out_of_memory
from .graph_model import Model
from .graph_write import model_to_proto
from .output_root import OutputRoot
from .proto import ge_ir

CACHE_DIR = "graph_cache"
MIN_BYTES = 1 << 20  # smaller graphs parse in well under a second: not worth a cache file
_FORMAT = "2"  # bump when what is stored or the key changes; 2: the key is the file identity


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


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
    return cache_dir / f"{_digest(identity.path)}.{_digest(json.dumps([_FORMAT, *identity]))}.pb"


def _load(root: OutputRoot, cached: Path):
    proto = ge_ir.ModelDef()
    try:
        proto.ParseFromString(root.read_bytes(cached))
    except (OSError, PrecisionToolError, DecodeError):
        return None
    return proto


def _store(root: OutputRoot, proto, cached: Path) -> None:
    """Write atomically (temporary name, then rename), dropping older caches of the same file."""
    try:
        root.write_bytes(cached, proto.SerializeToString())
    except PrecisionToolError:  # a read-only data root, a full disk: no cache, no error
        return
    prefix = cached.name.split(".")[0] + "."
    for name in root.names(*root.parts(cached.parent)):
        if name.startswith(prefix) and name.endswith(".pb") and name != cached.name:
            root.remove(cached.parent / name)


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
    proto = _load(root, cached) if cached is not None else None
    if proto is not None:
        return model_from_proto(proto, path)
    model, proto = load_graph(path)
    if cached is None:
        return model
    if proto is None and store_behind and _store_in_child(root, model, cached):
        return model
    _store(root, proto if proto is not None else model_to_proto(model), cached)
    return model


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
            _store(root, model_to_proto(model), cached)
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
