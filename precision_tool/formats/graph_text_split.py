"""A large TextFormat graph read by the fast reader in several processes, when cores are free.

The text is cut as for protobuf's parser (:func:`.proto.ge_ir.split_ops`): the ``op`` blocks of
each graph into runs. Worker processes read most runs and send their ops back as JSON -- plain
data, the model's own values, much cheaper to take in than the text -- while this process reads
the rest of the text and a share of the runs itself. Ops whose attributes JSON cannot carry
exactly (bytes, descriptors or tensors inside attributes) make their worker decline its run,
which is then read here. Anything unexpected (a run holding more than ops, no worker processes
to be had) gives up the split: the caller reads the text in one piece.

The workers cost a third more CPU in all (the JSON, and each learning the lines anew), and this
process still takes in every op and builds every graph, so the split only pays with idle cores.
On the benchmark graph with two processes this one spends 3.5 s of CPU against 5.5 s reading
alone, the worker about 4 s: at best 1.35 times as fast on two idle cores (more with more
cores, where this process only takes in and builds), and slower when another program keeps a
core busy, as measured. So it counts the cores idle at the start (:func:`free_cores`).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import fields
from pathlib import Path
from typing import Any

from .graph import OpFields
from .graph_model import Model, TensorDesc
from .graph_text_fast import NotPlain, model_from_fields, model_schema, ops_schema
from .proto.fast_text import Unsupported, parse
from .proto.ge_ir import split_ops

_DESC_FIELDS = [f.name for f in fields(TensorDesc)]
_DESC_TUPLES = [i for i, name in enumerate(_DESC_FIELDS) if name in ("shape", "origin_shape")]

# CPU per op of the benchmark graph (bench/graph_load_bench.py), in microseconds: reading it
# here, reading it and writing its JSON in a worker, taking the JSON in here, and what else
# this process does (building the graphs, sending the runs). They set the share of the runs
# this process reads so that it finishes when the workers do.
_READ, _READ_AND_SEND, _TAKE_IN, _BUILD = 44.0, 46.0, 13.3, 16.9
_LOOK = 0.1  # seconds free_cores watches the machine

SPLIT_MIN_CHARS = 32_000_000
"""Smaller texts are read in one process: below about 45k ops (2 s) the look at the cores and
the workers' start take most of what a second core would save."""


def own_share(workers: int) -> float:
    """The fraction of the op text this process reads itself when ``workers`` processes read
    (itself included)."""
    worker = _READ_AND_SEND / (workers - 1)
    return max(0.0, (worker - _TAKE_IN - _BUILD) / (_READ - _TAKE_IN + worker))


def _cpu_times() -> tuple[int, int]:
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(t) for t in stat.readline().split()[1:9]]
    return sum(ticks), ticks[3] + ticks[4]  # all, idle + waiting for I/O


def free_cores() -> float:
    """How many cores sat idle over the last moment (Linux's /proc/stat, else the load
    average): the current load of other programs, not the last minute's."""
    cores = os.cpu_count() or 1
    try:
        total, idle = _cpu_times()
        time.sleep(_LOOK)
        total_after, idle_after = _cpu_times()
        return cores * (idle_after - idle) / max(1, total_after - total)
    except (OSError, ValueError, IndexError):
        try:
            return max(0.0, cores - os.getloadavg()[0])
        except OSError:
            return float(cores)


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


def ops_json(run: str) -> str | None:
    """Worker: the ops of ``run`` (whole ``op`` blocks of one graph) as JSON; None when the fast
    reader does not take the run, it holds more than ops, or an attribute does not go as JSON."""
    try:
        ops = _ops(parse(run, ops_schema(for_json=True)))
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


def _shares(jobs: list[tuple[int, str]], workers: int) -> int:
    """How many of the runs, from the first, this process reads itself."""
    total = sum(len(run) for _, run in jobs)
    wanted, taken = own_share(workers) * total, 0
    for count, (_, run) in enumerate(jobs):
        if taken + len(run) / 2 > wanted:
            return count
        taken += len(run)
    return len(jobs)


def model_from_split(text: str, source: Path | None, workers: int) -> Model | None:
    """The model of ``text`` read in ``workers`` processes; None when the text is too small,
    not laid out as protobuf prints, or no worker processes are to be had.

    Raises :class:`~.proto.fast_text.Unsupported` when a part of the text is not something the
    fast reader takes (protobuf's parser then reads it all).
    """
    if workers < 2 or len(text) < SPLIT_MIN_CHARS:
        return None
    workers = min(workers, round(free_cores()))  # a worker sharing a core costs more than it gives
    if workers < 2:
        return None
    split = split_ops(text, max(1, len(text) // (workers * 8)))
    if split is None:
        return None
    kept, graph_count, jobs = split
    own = _shares(jobs, workers)
    try:
        pool = ProcessPoolExecutor(max_workers=workers - 1)
        sent = [pool.submit(ops_json, run) for _, run in jobs[own:]]
    except Exception:  # noqa: BLE001 -- no workers to be had here (a daemon, a sandbox)
        return None
    with pool:
        try:
            return _assemble(kept, graph_count, jobs, own, sent, source)
        except _NotOps:
            return None
        finally:
            for future in sent:
                future.cancel()


def _assemble(kept: str, graph_count: int, jobs: list[tuple[int, str]], own: int,
              sent: list, source: Path | None) -> Model | None:
    model = parse(kept, model_schema())
    graphs = model.get("graph", [])
    if len(graphs) != graph_count or any(graph[1] for graph in graphs):
        return None  # the "graph {" lines were not the graphs: not protobuf's layout
    schema = ops_schema()
    runs = [_ops(parse(run, schema)) for _, run in jobs[:own]]
    for (_, run), future in zip(jobs[own:], sent):
        try:
            answer = future.result()
        except Exception:  # noqa: BLE001 -- a worker that died: read its run here
            answer = None
        runs.append(ops_from_json(answer) if answer is not None
                    else _ops(parse(run, schema)))
    for (graph_index, _), ops in zip(jobs, runs):
        graphs[graph_index][1].extend(ops)
    return model_from_fields(model, source)
