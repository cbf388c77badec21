"""Benchmark the ways of loading a big GE graph dump, side by side on one graph.

    python bench/graph_load_bench.py [--ops N] [--descs] [--layout compact|printer|ge]
                                     [--json] [--steps fast,tool,cached,...] [--repeat R]

Writes a graph of ``--ops`` ops into a temporary directory. ``compact`` and ``printer``: a chain
of Relu ops, each reading the previous one; with ``--descs`` every op also gets an input and an
output tensor descriptor with origin format, shape and name attributes. ``compact`` writes each
descriptor attribute on one line (about 70 MB for 100k ops with descriptors); ``printer``
protobuf's own layout, one field per line (about 107 MB). ``ge`` is GE's printer layout with a
real Build graph's long attribute lists (see ``ge_graph_text``; about 7.4 KB an op, so
``--ops 6000`` is about 44 MB, the size of the 20k-op graph of issue 28). ``--json`` writes the
graph as ``atc --mode=5`` does instead (the steps that read TextFormat are then left out). Every
step runs in a fresh process, ``--repeat`` times, the steps interleaved so that other programs'
load hits all alike, and prints seconds (best, median, worst), the median CPU seconds (which
that load changes far less), the process's peak RSS and how many cores sat idle just before it
started. The steps (``--steps``, comma-separated; by default all but ``protobuf`` on the ``ge``
layout, where it takes minutes):

* ``protobuf``: protobuf's TextFormat parser, then the model from the ``ModelDef`` (what a
  text the fast reader declines costs);
* ``fast``: the fast reader (:mod:`precision_tool.formats.graph_text_fast`);
* ``tool``: the first load as the tool does it (:func:`read_graph_cached`, empty cache, the
  cache written by a forked child as in the tool's own process: its seconds are what the load
  keeps the command waiting, its CPU includes the child's, waited for after the timing);
* ``cached``: the load from the cache (the model's JSON, written once before the runs): what
  every later session of a graph of 1 MiB or more loads.

Four floors, asked for by name only (``--steps``), for what a reader of another design could at
best take (issue 28's item 4 asks for a first load within 2x of the cached one):

* ``lines``: the text read, split into lines and each line looked up once in a dict: what any
  reader that visits every line in Python takes before it builds anything (no model);
* ``skim``: every ``attr`` block of an op and of a tensor desc found by ``str.find`` (GE's
  printer indents each level by two spaces) and cut out, and the fast reader run on what is
  left: a reader that would parse attributes only when asked for could take no less, before
  it parses the attributes the model itself needs (an op's fused names and kernel, a desc's
  origin format, shape and name; with them kept the text left is about 40% of the lines);
* ``regex``: every attribute's key and the first field of its value found by one
  ``re.findall`` over the text: a reader that leaves the scanning to the regular-expression
  engine (in C, one tuple an attribute) pays this to find the attributes, before it reads a
  value, an op or a desc;
* ``compiled``: numba imported, the tool's kernels loaded from their cache as its fork server
  loads them, and one kernel's pass over the text's bytes: what a reader in compiled code (numba
  is the stack's compiler) pays in the tool's process before it finds anything or makes a
  single Python object (the tool's process does not import numba otherwise).

Then each step's median against the fastest step's. No numbers are asserted.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import resource
import shutil
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
    """The TextFormat of a chain of ``ops`` ops (``layout``: see the module doc)."""
    if layout == "ge":
        return ge_graph_text(ops)
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


# --- GE's printer layout ----------------------------------------------------------------------
# GE prints its graphs with protobuf's TextFormat printer: a field per line, two spaces an
# indent, maps sorted by key. Ops are built as ge_ir messages and printed by protobuf's own
# printer, with what a real Build graph carries (the public ge_proto dumps in tests' real files
# hold 10 to 40 attributes an op and about 10 a descriptor, 5.8 KB an op; these 7.4 KB): fused op names, pass names,
# engine and kernel names, size and type lists, and descriptors with origin format, shape and
# range. A few templates are printed once and repeated with each op's own names and ids.

_KINDS = ("Conv2D", "Relu", "MatMul", "Add", "Cast", "TransData", "BatchMatMul", "Mul")
_PASSES = ("ConvBatchnormFusionPass", "TransdataCastFusionPass", "ZConcatDFusionPass")
_TEMPLATES = 16  # distinct ops (kind, fused names, passes): more than a graph repeats verbatim


def _set_attr(attr, value) -> None:
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, str):
        attr.s = value.encode()
    elif isinstance(value, tuple):  # rows: list_list_int
        attr.list_list_int.SetInParent()
        for row in value:
            attr.list_list_int.list_list_i.add().list_i.extend(row)
    else:
        attr.list.SetInParent()
        if all(isinstance(v, bool) for v in value):
            attr.list.b.extend(value)
            attr.list.val_type = 4  # VT_LIST_BOOL
        elif all(isinstance(v, int) for v in value):
            attr.list.i.extend(value)
            attr.list.val_type = 2  # VT_LIST_INT
        else:
            attr.list.s.extend(v.encode() for v in value)
            attr.list.val_type = 1  # VT_LIST_STRING


def _ge_desc(desc, k: int, origin_name: str) -> None:
    desc.dtype = 2 if k % 3 else 1  # DT_FLOAT16, DT_FLOAT
    desc.layout = "NC1HWC0" if k % 2 else "ND"
    desc.shape.dim.extend([8, 4, 56, 56, 16] if k % 2 else [8, 64, 3136])
    for key, value in (
        ("format_for_int", 3),
        ("origin_data_type", "DT_FLOAT16"),
        ("origin_format", "NCHW"),
        ("origin_format_for_int", 0),
        ("origin_shape", [8, 64, 56, 56]),
        ("origin_shape_initialized", True),
        ("origin_shape_range", ([8, 8], [64, 64], [1, -1], [1, -1])),
        ("shape_range", ()),
        ("_datadump_origin_name", origin_name),
        ("_datadump_origin_output_index", 0),
    ):
        _set_attr(desc.attr[key], value)
    desc.size, desc.device_type, desc.real_dim_cnt = 3211264, "NPU", len(desc.shape.dim)


def _ge_op(op, k: int) -> None:
    """Op template ``k``: ``@I@`` stands for its number, ``@P@`` the previous op's, ``@N@`` the
    next one's, and ``77777777`` its id."""
    kind, before, after = (_KINDS[(k + d) % len(_KINDS)] for d in (0, -1, 1))
    op.name, op.type = f"net/block@I@/{kind}", kind
    op.input.append(f"net/block@P@/{before}:0")
    fused = [f"tf/block@I@/{kind.lower()}_{j}" for j in range(1 + k % 12)]
    kernel = f"te_{kind.lower()}_@I@_0123456789abcdef"
    attrs = {
        "_datadump_original_op_names": fused,
        "_datadump_is_multiop": len(fused) > 1,
        "pass_name": list(_PASSES[: 1 + k % 3]),
        "_ir_attr_names": ["strides", "pads", "dilations", "groups", "data_format", "offset_x"],
        "_input_name_key": ["x", "filter", "bias"],
        "_input_name_value": [0, 1, 2],
        "_output_name_key": ["y"],
        "_output_name_value": [0],
        "_ge_attr_op_kernel_lib_name": "AIcoreEngine",
        "_lxfusion_engine_name": "AIcoreEngine",
        "_kernelname": kernel,
        f"net/block@I@/{kind}_kernelname": kernel,
        "_session_graph_id": "0_1",
        "_is_unknown_shape": False,
        "imply_type": 1,
        "output_memsize_vector": [3211264],
        "t_in_datatype": [1, 1, 1],
        "t_out_datatype": [1],
        "is_input_const": [False, True, True],
        "strides": [1, 1, 1, 1],
        "pads": [1, 1, 1, 1],
        "_fusion_scope": k % 7,
        "compile_info_key": f"{k * 7919:064x}",
        "compile_info_json": '{"_pattern": "Convolution", "block_dim": 32, "op": "@I@"}',
    }
    for key, value in attrs.items():
        _set_attr(op.attr[key], value)
    op.has_out_attr, op.id = True, 77777777
    op.input_name.append("x")
    op.src_name.append(f"net/block@P@/{before}")
    op.src_index.append(0)
    op.dst_name.append(f"net/block@N@/{after}")
    op.dst_index.append(0)
    op.input_i.append(0)
    op.output_i.append(0)
    op.workspace_bytes.append(1024)
    op.is_input_const.append(False)
    _ge_desc(op.input_desc.add(), k, "tf/block@P@/out")
    _ge_desc(op.output_desc.add(), k + 1, "tf/block@I@/out")


def _ge_templates() -> list[str]:
    from google.protobuf import text_format

    from precision_tool.formats.proto import ge_ir

    graph = ge_ir.GraphDef(name="t")
    for k in range(_TEMPLATES):
        _ge_op(graph.op.add(), k)
    printed = text_format.MessageToString(ge_ir.ModelDef(graph=[graph]))
    body = printed[printed.index("\n  op {\n") : printed.rindex("\n}")]
    return ["  op {\n" + block + "\n" for block in body.split("\n  op {\n")[1:]]


def ge_graph_text(ops: int) -> str:
    """GE's printer layout: a chain of ``ops`` ops of the real attribute mix (see above)."""
    templates = _ge_templates()
    parts = ['name: "ge"\ngraph {\n  name: "ge_default"\n']
    for i in range(1, ops + 1):
        parts.append(
            templates[i % len(templates)]
            .replace("@I@", str(i))
            .replace("@P@", str(i - 1))
            .replace("@N@", str(i + 1))
            .replace("77777777", str(i))
        )
    return "".join(parts + ["}\n"])


STEPS = ("protobuf", "fast", "tool", "cached", "lines", "skim", "regex", "compiled")
FLOORS = ("lines", "skim", "regex", "compiled")  # run only when named
LABELS = {
    "protobuf": "protobuf's parser, one process",
    "fast": "fast reader, one process",
    "tool": "first load as the tool does it",
    "cached": "load from the cache",
    "lines": "floor: every line once",
    "skim": "floor: attributes cut",
    "regex": "floor: attributes found by re",
    "compiled": "floor: numba loaded, one pass",
}
_OP, _OP_END = "\n  op {\n", "\n  }\n"
_OP_ATTR, _DESC_END = "\n    attr {\n", "\n    }\n"  # an op's attribute opens, a desc closes
_BLOCKS = ((_OP_ATTR, _DESC_END), ("\n      attr {\n", "\n      }\n"))  # an op's, a desc's: open, close


def _every_line(text: str) -> None:
    """The ``lines`` floor: each line of ``text`` looked up once."""
    seen: dict = {}
    for line in text.split("\n"):
        seen.get(line)


def _skimmed(text: str) -> str:
    """The ``skim`` floor's text: each op's run of ``attr`` blocks, and each of its descs', cut
    out, found by indentation alone (GE's printer layout); the newlines around them kept."""
    find, rfind = text.find, text.rfind
    kept, at, pos = [], 0, 0
    while (start := find(_OP, pos)) >= 0:
        end = find(_OP_END, start + 1)
        for opening, closing in _BLOCKS:
            while (first := find(opening, max(start, at), end)) >= 0:
                bound = end if opening == _OP_ATTR else find(_DESC_END, first, end + 1)  # its desc's end
                last = rfind(opening, first, bound)  # the run's last block, closed by the next close
                close = find(closing, last + 1, bound + 1)
                if bound < 0 or close < 0:
                    raise ValueError("not GE's printer layout: a block is not closed at its indent")
                kept.append(text[at:first])
                at = close + len(closing) - 1
        pos = end
    kept.append(text[at:])
    return "".join(kept)


# an attribute's key, and the name of its value's first field (s, i, list...): GE's printer
# puts each on a line of its own (a key with an escaped quote is not found: a floor, not a reader)
_ATTR_KEY = re.compile(r'key: "([^"\n]*)"\n *value \{\n *(\w+)')


def _attribute_keys(text: str) -> list[tuple[str, str]]:
    """The ``regex`` floor: ``(key, first field of the value)`` of every attribute, in order."""
    return _ATTR_KEY.findall(text)


def _compiled_pass(raw: bytes):
    """The ``compiled`` floor: numba and the tool's kernels loaded as the fork server loads them
    (a claimed process, the kernels from numba's cache), then one kernel over ``raw`` read as
    float16 bits; the kernel's ``[NaN, Inf]`` counts (bytes like ``}`` make such bits)."""
    import numpy as np

    from precision_tool.compare.numba_line import claim_process
    from precision_tool.compare.numba_load import numba_kernels

    claim_process()
    kernels = numba_kernels()
    if kernels is None:
        sys.exit("compiled: numba's kernels did not load")
    counts = np.zeros(2, np.int64)
    kernels.count_nonfinite(np.frombuffer(raw, np.uint16, len(raw) // 2), counts)
    return counts


def _load(step: str, path: Path, cache: Path):
    from precision_tool.collector import gc_paused
    from precision_tool.formats.graph import _graph_text, model_from_proto
    from precision_tool.formats.graph_cache import read_graph_cached
    from precision_tool.formats.graph_model import Model
    from precision_tool.formats.graph_text_fast import model_from_text
    from precision_tool.formats.proto import ge_ir

    if step == "imports":
        return None
    if step == "protobuf":
        return model_from_proto(ge_ir.parse_text(_graph_text(path)), path)
    if step == "fast":
        with gc_paused():  # as the tool reads it
            return model_from_text(_graph_text(path), path)
    if step == "skim":
        with gc_paused():
            return model_from_text(_skimmed(_graph_text(path)), path)
    passes = {
        "lines": lambda: _every_line(_graph_text(path)),
        "regex": lambda: _attribute_keys(_graph_text(path)),
        "compiled": lambda: _compiled_pass(path.read_bytes()),
    }
    if step in passes:
        passes[step]()
        return Model("", [], {})  # these floors build nothing: an empty model, no ops
    return read_graph_cached(path, cache, min_bytes=0, store_behind=True)


def _measure(step: str, path: Path, cache: Path) -> dict:
    """One step, in this process (see the module doc)."""
    from precision_tool.idle_cores import free_cores

    _load("imports", path, cache)  # the imports are not what is measured
    if step == "tool" and cache.exists() and any(cache.iterdir()):
        sys.exit("tool: the cache must be empty, else the cache is what gets measured")
    idle = free_cores()  # how loaded the machine is
    start, cpu = time.perf_counter(), _cpu_seconds()
    model = _load(step, path, cache)
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    atexit._run_exitfuncs()  # the tool's exit: the cache's writer (``tool``) is waited for
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    if model is None:
        sys.exit(f"{step}: the reader declined the graph")
    ops = sum(len(graph.ops) for graph in model.graphs)
    own = _peak_rss_mib()
    return {"seconds": seconds, "cpu": cpu, "ops": ops, "rss_mib": own, "idle_cores": idle}


def _peak_rss_mib() -> float:
    """This process's peak RSS in MiB: ``VmHWM``, the high-water mark of its own memory since
    its ``exec``. Not ``ru_maxrss``, into which Linux carries the spawning parent's peak (the
    bench's, which made the graph's text: every step showed its 321 MiB)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
    """CPU seconds of this process: what other programs' load on a shared machine changes far
    less than the wall-clock time."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _run_step(step: str, path: Path, cache: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", step, "--path", str(path), "--cache", str(cache)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(label: str, runs: list[dict]) -> str:
    times = sorted(run["seconds"] for run in runs)
    cpu = statistics.median(run["cpu"] for run in runs)
    rss = max(run["rss_mib"] for run in runs)
    idle = ", ".join(f"{run['idle_cores']:.1f}" for run in runs)
    return (
        f"{label:<31} {times[0]:7.2f} {statistics.median(times):7.2f} {times[-1]:7.2f} s"
        f" (CPU {cpu:.2f} s)  peak RSS {rss:.0f} MiB; idle cores at start {idle}"
    )


def _write_cache(path: Path, cache: Path) -> None:
    """The cache of ``path`` for ``cached``: written from the fast reader's model, through the
    cache's own writer."""
    from precision_tool.formats.graph import read_graph
    from precision_tool.formats.graph_cache import write_graph_cache

    if write_graph_cache(path, cache, read_graph(path), min_bytes=0) is None:
        sys.exit("cached: the cache could not be written")


def _steps(args) -> list[str]:
    if args.steps:
        steps = args.steps.split(",")
        unknown = sorted(set(steps) - set(STEPS))
        if unknown:
            sys.exit(f"unknown steps {unknown}: choose from {', '.join(STEPS)}")
        return [step for step in STEPS if step in steps]
    if args.json:
        return ["tool", "cached"]
    return [step for step in STEPS if step not in FLOORS and (args.layout != "ge" or step != "protobuf")]


def _bench(args, tmp: Path, steps: list[str]) -> dict[str, list[dict]]:
    path = tmp / "ge_proto_00000001_Build.txt"
    path.write_text(graph_text(args.ops, args.descs, args.layout))
    if args.json:
        from precision_tool.formats.graph import read_graph
        from precision_tool.formats.graph_write import write_graph_json

        path = write_graph_json(read_graph(path), path.with_name(path.name + ".json"))
    print(
        f"{args.ops} ops{' with descs' if args.descs else ''}, {args.layout} layout: "
        f"{path.stat().st_size / 1e6:.1f} MB of {'atc JSON' if args.json else 'TextFormat'}; "
        f"{os.cpu_count()} cores, "
        f"{args.repeat} runs each (best, median, worst); "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    results: dict[str, list[dict]] = {step: [] for step in steps}
    first_cache = tmp / "first" / "graph_cache"
    if "cached" in steps:
        _write_cache(path, first_cache)
    for run in range(args.repeat):  # interleaved, so that load from others hits all alike
        written = tmp / f"run{run}" / "temp" / "graph_cache"  # a copy of the one written first
        empty = tmp / f"run{run}" / "empty" / "graph_cache"
        if "cached" in steps:
            shutil.copytree(first_cache, written)
        for step in steps:
            cache = empty if step == "tool" else written
            results[step].append(_run_step(step, path, cache))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_write_flag(parser)
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--descs", action="store_true", help="tensor descriptors on every op")
    parser.add_argument("--layout", choices=("compact", "printer", "ge"), default="compact")
    parser.add_argument("--json", action="store_true", help="the graph as atc's JSON")
    parser.add_argument("--steps", help=f"comma-separated, of {', '.join(STEPS)}")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.path, args.cache)))
        return
    steps = _steps(args)
    with tempfile.TemporaryDirectory() as tmp:
        results = _bench(args, Path(tmp), steps)
    for step, runs in results.items():
        print(_summary(LABELS[step], runs), flush=True)
    for what in ("seconds", "cpu"):
        medians = {step: statistics.median(r[what] for r in runs) for step, runs in results.items()}
        fastest = min(medians, key=medians.get)
        print(
            f"median {'wall' if what == 'seconds' else 'CPU'} time against the fastest "
            f"({LABELS[fastest]}): "
            + ", ".join(f"{step} {value / medians[fastest]:.2f}x" for step, value in medians.items())
        )
    print(f"load average now {os.getloadavg()[0]:.1f}")


SECTION = "Graph loading"  # of docs/performance.md, which --write fills (bench/perf_doc.py)
INTRO = (
    "`bench/graph_load_bench.py`: the first load of a large GE graph dump by the fast "
    "TextFormat reader against protobuf's parser, and the load from the cache (the model's JSON; the "
    "script's doc says what each line measures)."
)


if __name__ == "__main__":
    sys.exit(run_writing(main, "graph_load_bench.py", SECTION, INTRO))
