"""Benchmark loading a big GE graph dump: the first load before and after the fast TextFormat
reader, and the load from the binary cache.

    python bench/graph_load_bench.py [--ops 100000] [--descs] [--layout compact|printer]
                                     [--workers N] [--repeat R]

Writes a graph of ``--ops`` ops into a temporary directory: a chain of Relu ops, each reading
the previous one; with ``--descs`` every op also gets an input and an output tensor descriptor
carrying origin format, shape and name attributes, as real Build graphs do (several times the
text per op). ``--layout compact`` (the default, about 70 MB for 100k ops with descriptors)
writes each descriptor attribute on one line; ``printer`` writes protobuf's own layout, one
field per line, as GE's printer does (about 107 MB). Each measurement runs in a fresh process,
``--repeat`` times (the three interleaved, so that other programs' load hits all alike), and
prints seconds (best, median, worst), that process's peak RSS and how many cores sat idle
just before it started:

* ``before``: the first load as it was: protobuf's TextFormat parser (in ``--workers``
  processes), the ``ModelDef`` into the model, the binary cache written;
* ``after``: :func:`read_graph_cached` with an empty cache: the fast reader builds the model
  (it writes no cache: reading the text again is as fast as the cache would be), in several
  processes only when cores are idle (:mod:`precision_tool.formats.graph_text_split`);
* ``cached``: :func:`read_graph_cached` with the binary cache of ``before`` present, the path a
  graph takes that the fast reader does not take.

No numbers are asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_COMPACT_DESC = """    {kind} {{
      dtype: DT_FLOAT16
      shape {{ dim: 8 dim: 64 }}
      layout: "ND"
      attr {{ key: "origin_format" value {{ s: "ND" }} }}
      attr {{ key: "origin_shape" value {{ list {{ i: 8 i: 64 val_type: VT_LIST_INT }} }} }}
      attr {{ key: "_datadump_origin_name" value {{ s: "n/{i}" }} }}
    }}"""

_PRINTER_DESC = """    {kind} {{
      dtype: DT_FLOAT16
      shape {{
        dim: 8
        dim: 64
      }}
      layout: "ND"
      attr {{
        key: "_datadump_origin_name"
        value {{
          s: "n/{i}"
        }}
      }}
      attr {{
        key: "origin_format"
        value {{
          s: "ND"
        }}
      }}
      attr {{
        key: "origin_shape"
        value {{
          list {{
            i: 8
            i: 64
            val_type: VT_LIST_INT
          }}
        }}
      }}
    }}"""


def graph_text(ops: int, descs: bool, layout: str = "compact") -> str:
    """The TextFormat of a chain of ``ops`` Relu ops (``layout``: see the module doc)."""
    desc = _PRINTER_DESC if layout == "printer" else _COMPACT_DESC
    lines = ['name: "big"', "graph {", '  name: "big"']
    for i in range(ops):
        lines += ["  op {", f'    name: "n/{i}"', '    type: "Relu"']
        if layout == "printer":  # protobuf prints fields by number and leaves out zeros
            lines += [f'    input: "n/{i - 1}:0"'] if i else []
            lines += [f"    id: {i}"] if i else []
        else:
            lines += [f"    id: {i}"] + ([f'    input: "n/{i - 1}:0"'] if i else [])
        if descs:
            lines += [desc.format(kind="input_desc", i=i), desc.format(kind="output_desc", i=i)]
        lines.append("  }")
    return "\n".join(lines + ["}", ""])


def _measure(step: str, path: Path, cache: Path, workers: int) -> dict:
    """One step, in this process (see the module doc)."""
    from precision_tool.formats.graph import model_from_proto, read_graph_proto
    from precision_tool.formats.graph_cache import cache_path, read_graph_cached
    from precision_tool.idle_cores import free_cores

    if step == "after" and cache.exists() and any(cache.iterdir()):
        sys.exit("after: the cache must be empty, else the binary cache is what gets measured")
    idle = free_cores()  # what the fast reader's split will see (it looks again itself)
    start = time.perf_counter()
    if step == "before":
        proto = read_graph_proto(path, workers=workers)
        model = model_from_proto(proto, path)
        cached = cache_path(path, cache)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(proto.SerializeToString())
    else:
        model = read_graph_cached(path, cache, workers=workers)
    seconds = time.perf_counter() - start
    ops = sum(len(graph.ops) for graph in model.graphs)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "ops": ops, "rss_mib": own, "workers_rss_mib": workers_rss,
            "idle_cores": idle}


def _run_step(step: str, path: Path, cache: Path, workers: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", step, "--path", str(path), "--cache", str(cache),
         "--workers", str(workers)],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(label: str, runs: list[dict]) -> str:
    times = sorted(run["seconds"] for run in runs)
    rss = max(run["rss_mib"] for run in runs)
    workers = max(run["workers_rss_mib"] for run in runs)
    extra = f", workers {workers:.0f} MiB each" if workers else ""
    idle = ", ".join(f"{run['idle_cores']:.1f}" for run in runs)
    return (f"{label:<31} {times[0]:7.2f} {statistics.median(times):7.2f} {times[-1]:7.2f} s"
            f"  peak RSS {rss:.0f} MiB{extra}; idle cores at start {idle}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_write_flag(parser)
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--descs", action="store_true", help="tensor descriptors on every op")
    parser.add_argument("--layout", choices=("compact", "printer"), default="compact")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.path, args.cache, args.workers)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ge_proto_00000001_Build.txt"
        path.write_text(graph_text(args.ops, args.descs, args.layout))
        print(f"{args.ops} ops{' with descs' if args.descs else ''}, {args.layout} layout: "
              f"{path.stat().st_size / 1e6:.1f} MB of TextFormat; {os.cpu_count()} cores, "
              f"{args.workers} workers; {args.repeat} runs each (best, median, worst)",
              flush=True)
        results: dict[str, list[dict]] = {"before": [], "after": [], "cached": []}
        for run in range(args.repeat):  # interleaved, so that load from others hits all alike
            written = Path(tmp) / f"run{run}" / "temp" / "graph_cache"  # by "before"
            empty = Path(tmp) / f"run{run}" / "empty" / "graph_cache"
            for step in results:
                cache = empty if step == "after" else written
                results[step].append(_run_step(step, path, cache, args.workers))
        labels = {"before": "first load, protobuf's parser", "after": "first load, fast reader",
                  "cached": "load from the binary cache"}
        for step, runs in results.items():
            print(_summary(labels[step], runs), flush=True)
        ratios = sorted(b["seconds"] / a["seconds"]
                        for b, a in zip(results["before"], results["after"]))
        print(f"first load before / after: {statistics.median(ratios):.1f}x "
              f"(runs: {', '.join(f'{r:.1f}' for r in ratios)})")


SECTION = "Graph loading"  # of docs/performance.md, which --write fills (bench/perf_doc.py)
INTRO = ('`bench/graph_load_bench.py`: the first load of a large GE graph dump by the fast '
         "TextFormat reader against protobuf's parser, and the load from the binary cache (the "
         "script's doc says what each line measures).")


if __name__ == "__main__":
    sys.exit(run_writing(main, "graph_load_bench.py", SECTION, INTRO))
