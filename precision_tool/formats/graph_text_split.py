"""A large TextFormat graph read by the fast reader in several processes, when cores are free.

The text is cut as for protobuf's parser (:func:`.proto.ge_ir.split_ops`): the ``op`` blocks of
each graph into runs. Worker processes read some of the runs and send their ops back as JSON --
plain data, the model's own values, much cheaper to take in than the text -- while this process
reads the rest of the text and its share of the runs. Ops whose attributes JSON cannot carry
exactly (bytes, descriptors or tensors inside attributes) make their worker decline its run,
which is then read here. Anything unexpected (a run holding more than ops, no worker processes
to be had) gives up the split: the caller reads the text in one piece.

A worker takes more time per op than this process (the JSON, its start), and this process
still takes in the workers' ops and builds every graph after them, and two processes busy at
once each run slower per op than one alone: so the split pays only when two cores are idle, and
with a core busy it is slower than one process (``bench/graph_load_bench.py``; the figures are
in docs/performance.md, "Graph loading"). So it counts the idle cores while the file is read
(:func:`free_cores`, from a mark the caller takes) and reads in one process unless two are free.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..idle_cores import CpuMark, free_cores
from ..lifetime import init_worker_lifetime
from .graph_convert import OpFields, gc_paused
from .graph_model import Model, TensorDesc
from .graph_text_fast import NotPlain, model_from_fields, model_from_text, model_schema, ops_schema
from .proto.fast_text import Unsupported, parse
from .proto.text_schema import MessageType
from .proto.ge_ir import split_ops

_DESC_FIELDS = [f.name for f in fields(TensorDesc)]
_DESC_TUPLES = [i for i, name in enumerate(_DESC_FIELDS) if name in ("shape", "origin_shape")]

# Time per op of the benchmark graph (bench/graph_load_bench.py --descs --layout printer, the
# layout GE writes), in microseconds, timed in split reads (docs/performance.md, "Graph
# loading"): reading it here, and reading it and writing its JSON in a worker, whose start and
# first touches of memory count too. Taking the JSON in and building the graphs follow here once
# the workers are done, whatever the shares; so this process reads the share of the runs that it
# finishes when they do.
_READ, _READ_AND_SEND = 49.6, 65.6
_RUNS_PER_PROCESS = 16  # fine enough for the shares to come out near what they should be

SPLIT_MIN_CHARS = 32_000_000
"""Smaller texts are read in one process: below about 45k ops the look at the cores and the
workers' start take most of what a second core would save (docs/performance.md)."""


def own_share(workers: int) -> float:
    """The fraction of the op text this process reads itself when ``workers`` processes read
    (itself included)."""
    return _READ_AND_SEND / ((workers - 1) * _READ + _READ_AND_SEND)


class _NotOps(Exception):
    """A run cut out of a graph held more than its ops: the cut was wrong."""


def _ops(run: dict) -> list[OpFields]:
    if any(name != "op" for name in run):
        raise _NotOps
    return run.get("op", [])


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} does not go as JSON")


def _desc(values: list) -> TensorDesc:
    for index in _DESC_TUPLES:
        if values[index] is not None:
            values[index] = tuple(values[index])
    return TensorDesc(*values)


def ops_json(run: str, schema: MessageType | None = None) -> str | None:
    """Worker: the ops of ``run`` (whole ``op`` blocks of one graph) as JSON; None when the fast
    reader does not take the run, it holds more than ops, or an attribute does not go as JSON.
    ``schema``: an ``ops_schema(for_json=True)`` to read with, and learn into, run after run."""
    try:
        ops = _ops(parse(run, schema or ops_schema(for_json=True)))
        return json.dumps([[*op[:3], list(op[3]), *op[4:]] for op in ops], default=_refuse,
                          ensure_ascii=False)
    except (Unsupported, _NotOps, NotPlain, TypeError):
        return None


def ops_from_json(text: str) -> list[OpFields]:
    """The ops of :func:`ops_json`'s JSON, with their descriptors as :class:`TensorDesc`."""
    return [(name, kind, op_id, inputs, [_desc(d) for d in ins], [_desc(d) for d in outs],
             attrs, stream, subgraphs)
            for name, kind, op_id, inputs, ins, outs, attrs, stream, subgraphs
            in json.loads(text)]


_worker_text = ""
"""In a worker process only: the text it reads runs of, handed over when the process starts
(inherited, when forked) rather than sent through a pipe. The executor's threads that feed and
drain the pipes need the interpreter lock, which the busy parsing here rarely yields: sending
the runs so made the worker wait for its input half of the time."""


def _keep_text(text: str, parent_pid: int) -> None:  # the worker processes' initializer
    global _worker_text
    init_worker_lifetime(parent_pid)  # dies with the parent, like the comparison's workers
    _worker_text = text


def _runs_json(spans: list[tuple[int, int]]) -> list[str | None]:
    """Worker: :func:`ops_json` of the runs at ``spans`` of the text, all at once at the end,
    when the parent waits for them (see :data:`_worker_text`)."""
    with gc_paused():  # millions of small objects, none of them garbage
        schema = ops_schema(for_json=True)  # one for all: what a run learnt serves the next
        return [ops_json(_worker_text[start:end], schema) for start, end in spans]


def _shares(spans: list[tuple[int, int, int]], workers: int) -> list[list[int]]:
    """The indexes of the runs each process reads, this one first: contiguous shares of the
    op text, this one's :func:`own_share` of it, the workers' equal."""
    total = sum(end - start for _, start, end in spans)
    own = own_share(workers) * total
    bounds = [own + (total - own) * k / (workers - 1) for k in range(workers)]
    shares: list[list[int]] = [[] for _ in range(workers)]
    done = 0
    for index, (_, start, end) in enumerate(spans):
        middle = done + (end - start) / 2
        reader = next((k for k, bound in enumerate(bounds) if middle <= bound), workers - 1)
        shares[reader].append(index)
        done += end - start
    return shares


def model_from_split(text: str, source: Path | None, workers: int,
                     since: CpuMark | None = None) -> Model | None:
    """The model of ``text`` read in ``workers`` processes; None when the text is too small,
    not laid out as protobuf prints, no worker processes are to be had or fewer than two cores
    idle (watched from ``since``, see :func:`~precision_tool.idle_cores.free_cores`).

    Raises :class:`~.proto.fast_text.Unsupported` when a part of the text is not something the
    fast reader takes (protobuf's parser then reads it all).
    """
    if workers < 2 or len(text) < SPLIT_MIN_CHARS:
        return None
    workers = min(workers, round(free_cores(since)))  # a worker sharing a core costs more
    if workers < 2:
        return None
    split = split_ops(text, max(1, len(text) // (workers * _RUNS_PER_PROCESS)))
    if split is None:
        return None
    kept, graph_count, spans = split
    shares = _shares(spans, workers)
    try:
        pool = ProcessPoolExecutor(max_workers=workers - 1, initializer=_keep_text,
                                   initargs=(text, os.getpid()))
        sent = [pool.submit(_runs_json, [spans[i][1:] for i in share]) for share in shares[1:]]
    except Exception:  # noqa: BLE001 -- no workers to be had here (a daemon, a sandbox)
        return None
    with pool:
        try:
            return _assemble(text, kept, graph_count, spans, shares, sent, source)
        except _NotOps:
            return None
        finally:
            for future in sent:
                future.cancel()


def _assemble(text: str, kept: str, graph_count: int, spans: list[tuple[int, int, int]],
              shares: list[list[int]], sent: list, source: Path | None) -> Model | None:
    model = parse(kept, model_schema())
    graphs = model.get("graph", [])
    if len(graphs) != graph_count or any(graph[1] for graph in graphs):
        return None  # the "graph {" lines were not the graphs: not protobuf's layout
    schema = ops_schema()
    runs: dict[int, list[OpFields]] = {}
    for index in shares[0]:
        runs[index] = _ops(parse(text[spans[index][1]:spans[index][2]], schema))
    for share, future in zip(shares[1:], sent):
        try:
            answers = future.result()
        except Exception:  # noqa: BLE001 -- a worker that died: read its runs here
            answers = [None] * len(share)
        for index, answer in zip(share, answers):
            _, start, end = spans[index]
            runs[index] = (ops_from_json(answer) if answer is not None
                           else _ops(parse(text[start:end], schema)))
    for index, (graph_index, _, _) in enumerate(spans):
        graphs[graph_index][1].extend(runs[index])
    return model_from_fields(model, source)


def model_from_text_parallel(text: str, source: Path | None = None, workers: int = 1,
                             since: CpuMark | None = None) -> Model | None:
    """:func:`.graph_text_fast.model_from_text`, in ``workers`` processes when the text is large,
    laid out as protobuf prints and cores are idle (:func:`model_from_split`), else in one."""
    try:
        if workers > 1:
            model = model_from_split(text, source, workers, since)
            if model is not None:
                return model
    except Unsupported:
        return None
    return model_from_text(text, source)
