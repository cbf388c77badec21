"""Benchmark loading a big GE graph dump: TextFormat parse, model building, the binary cache.

    python bench/graph_load_bench.py [--ops 100000] [--descs] [--workers N]

Writes a graph of ``--ops`` ops in protobuf's own TextFormat layout (as GE prints it) into a
temporary directory: a chain of Relu ops, each reading the previous one; with ``--descs`` every
op also gets an input and an output tensor descriptor carrying origin format, shape and name
attributes, as real Build graphs do (several times the text per op). Then prints, in seconds:

* ``parse``: protobuf's text parser into a ``ModelDef`` with ``--workers`` processes (and with
  one, for comparison);
* ``model``: :func:`model_from_proto`, the ``ModelDef`` into the tool's objects;
* ``first load``: :func:`read_graph_cached` with an empty cache (parse, model, cache write);
* ``cached load``: the same call again (binary parse of the cache, model).

No numbers are asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from precision_tool.formats.graph import model_from_proto  # noqa: E402
from precision_tool.formats.graph_cache import read_graph_cached  # noqa: E402
from precision_tool.formats.proto import ge_ir  # noqa: E402

_DESC = """    {kind} {{
      dtype: DT_FLOAT16
      shape {{ dim: 8 dim: 64 }}
      layout: "ND"
      attr {{ key: "origin_format" value {{ s: "ND" }} }}
      attr {{ key: "origin_shape" value {{ list {{ i: 8 i: 64 val_type: VT_LIST_INT }} }} }}
      attr {{ key: "_datadump_origin_name" value {{ s: "n/{i}" }} }}
    }}"""


def graph_text(ops: int, descs: bool) -> str:
    """The TextFormat of a chain of ``ops`` Relu ops."""
    lines = ['name: "big"', "graph {", '  name: "big"']
    for i in range(ops):
        lines += ["  op {", f'    name: "n/{i}"', '    type: "Relu"', f"    id: {i}"]
        lines += [f'    input: "n/{i - 1}:0"'] if i else []
        if descs:
            lines += [_DESC.format(kind="input_desc", i=i), _DESC.format(kind="output_desc", i=i)]
        lines.append("  }")
    return "\n".join(lines + ["}", ""])


def timed(label: str, action):
    start = time.perf_counter()
    result = action()
    print(f"{label:<28} {time.perf_counter() - start:8.2f} s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--descs", action="store_true", help="tensor descriptors on every op")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ge_proto_00000001_Build.txt"
        path.write_text(graph_text(args.ops, args.descs))
        print(f"{args.ops} ops{' with descs' if args.descs else ''}: {path.stat().st_size / 1e6:.1f} MB "
              f"of TextFormat, {os.cpu_count()} cores")
        text = path.read_text()
        proto = timed(f"parse ({args.workers} workers)", lambda: ge_ir.parse_text(text, args.workers))
        if args.workers != 1:
            timed("parse (1 worker)", lambda: ge_ir.parse_text(text, 1))
        timed("model", lambda: model_from_proto(proto, path))
        cache = Path(tmp) / "temp" / "graph_cache"
        timed("first load (empty cache)", lambda: read_graph_cached(path, cache, workers=args.workers))
        timed("cached load", lambda: read_graph_cached(path, cache, workers=args.workers))


if __name__ == "__main__":
    main()
