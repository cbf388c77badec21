"""Synthetic data roots for the report tests: a chain graph and its result CSV.

Written with the project's writers (``graph_write``, ``result_csv``), so the files are the real
formats; the metric values follow a curve chosen by the test (flat at 1, a drop at one op, a
slow recovery), with every metric a known function of the cosine.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from precision_tool.compare.result import CompareRow
from precision_tool.compare.result_csv import NUMERIC_METRICS, write_result_csv
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text

HOSTILE_NAMES = (
    "<script>alert(1)</script>",
    "net/</script><script>alert(2)</script>",
    "quote\"d/it's",
    "rtl/\u202eexe.evil",
    "amp/&amp;&lt;b&gt;",
    "rec/{a|b}<c>\\d",
    "ctl/tab\there\x1b[31m",
)
GRAPH_NAME = "ge_default_20261129120000_1"
NEAR_COSINE = 0.99


def curve(count: int, drop: int) -> list[float]:
    """Output cosines: 1 up to ``drop``, 0.3 at ``drop``, then climbing back slowly."""
    out = []
    for k in range(count):
        if k < drop:
            out.append(1.0 - 1e-6 * (k % 7))
        else:
            out.append(round(min(1.0, 0.3 + 0.02 * (k - drop)), 6))
    return out


def metrics_for(cosine: float, k: int) -> dict[str, float]:
    """All ten numeric metrics for a tensor of cosine ``cosine`` (the others derived from it)."""
    err = round(1.0 - cosine, 6)
    values = {
        "CosineSimilarity": cosine,
        "MaxAbsoluteError": round(err * 10 + 1e-3, 6),
        "AccumulatedRelativeError": round(err * 100, 6),
        "RelativeEuclideanDistance": 0.0 if k == 0 else round(err + 1e-4 * (1 + k % 3), 6),
        "KullbackLeiblerDivergence": round(err / 3, 6),
        "MeanAbsoluteError": round(err, 6),
        "RootMeanSquareError": round(err * 1.5, 6),
        "MaxRelativeError": round(err * 7, 6),
        "MeanRelativeError": round(err / 2, 6),
    }
    assert set(values) == set(NUMERIC_METRICS)
    return values


def chain_names(count: int, hostile: bool = False) -> list[str]:
    names = [f"net/block{k // 10}/op{k}" for k in range(count)]
    if hostile:
        for i, name in enumerate(HOSTILE_NAMES):
            names[(i * 3 + 1) % count] = name
    return names


def write_chain(
    root: Path,
    count: int = 40,
    drop: int = 20,
    *,
    hostile: bool = False,
    stamp: str = "20261201120000",
    nan_at: tuple[int, ...] = (),
    near_at: tuple[int, ...] = (),
    cosines: list[float] | None = None,
) -> Path:
    """A data root with a ``count``-op chain graph in npu/debug_0/graph and its result CSV in
    temp/vector_compare/{stamp}/; returns the CSV's path. Op k reads op k-1; ``nan_at`` ops have
    an output cosine that was not computed (NaN); ``near_at`` ops an output cosine of 0.99 (RED
    about 0.01: above the threshold, far beyond float16 rounding); ``cosines`` replaces the
    curve."""
    names = chain_names(count, hostile)
    shape = curve(count, drop) if cosines is None else cosines
    cosines = [NEAR_COSINE if k in near_at else c for k, c in enumerate(shape)]
    nan_at = frozenset(nan_at)
    desc = tensor_desc("DT_FLOAT16", "ND", (4, 8))
    specs = [
        OpSpec(
            name,
            "Add" if k % 2 else "Mul",
            [f"{names[k - 1]}:0"] if k else [],
            input_descs=[desc] if k else [],
            output_descs=[desc],
        )
        for k, name in enumerate(names)
    ]
    graph_dir = root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    write_graph_text(build_model(specs, name=GRAPH_NAME), graph_dir / "ge_proto_00000001_Build.txt")
    rows = []
    for k, name in enumerate(names):
        op_type = specs[k].type
        if k:
            rows.append(_row(k, op_type, name, "input", cosines[k - 1], k - 1, k - 1 in nan_at))
        rows.append(_row(k, op_type, name, "output", cosines[k], k, k in nan_at))
    path = root / "temp" / "vector_compare" / stamp / f"result_{stamp}.csv"
    return write_result_csv(path, rows)


def many_cosines(count: int, introducers: tuple[int, ...], tail: int = 124) -> list[float]:
    """Output cosines of a chain with several introducers: 1 (to rounding) everywhere but at
    each introducer, where the cosine drops, and the ``tail`` ops after it (or up to the next
    introducer), which inherit it and recover slowly, still below 0.98."""
    out = curve(count, count)  # all clean
    starts = sorted(introducers) + [count]
    for start, end in zip(starts, starts[1:]):
        for k in range(start, min(end - 1, start + tail + 1)):
            out[k] = round(0.5 + 0.4 * (k - start) / (tail + 1), 6)
    return out


def write_many(
    root: Path,
    count: int,
    introducers: tuple[int, ...],
    *,
    tail: int = 124,
    nan_at: tuple[int, ...] = (),
    stamp: str = "20261201130000",
) -> Path:
    """A ``count``-op chain (:func:`write_chain`) whose ops ``introducers`` introduce an error
    that the next ``tail`` ops inherit: the 10,000-op network of the report's scale tests is
    ``write_many(root, 10000, 24 introducers, tail=124)`` (3,000 flagged)."""
    return write_chain(root, count, count, stamp=stamp, nan_at=nan_at, cosines=many_cosines(count, introducers, tail))


def _row(index: int, op_type: str, name: str, kind: str, cosine: float, k: int, nan: bool) -> CompareRow:
    metrics = {} if nan else metrics_for(cosine, k)
    return CompareRow(
        index,
        op_type,
        name,
        "float16",
        None,
        name,
        "float32",
        f"{name}:{kind}:0",
        (4, 8),
        metrics,
        fail_reason="not computed" if nan else "",
    )


def csv_ops(path: Path) -> dict[tuple[int, str], dict[str, dict[str, float]]]:
    """Independent of the tool's reader: (Index, NPUDump) -> {"input"/"output": {metric: worst}}
    straight from the CSV text (worst = lowest cosine, highest other metric)."""
    ops: dict = defaultdict(lambda: {"input": {}, "output": {}})
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        for cells in reader:
            cell = dict(zip(header, cells))  # the first DataType/Address wins: not used here
            key = (int(cells[0]), cells[header.index("NPUDump")])
            tensor = cells[header.index("TensorIndex")]
            ops[key]  # every op, with or without tensors
            if tensor == "NaN":
                continue
            kind = tensor.rsplit(":", 2)[1]
            for metric in NUMERIC_METRICS:
                text = cell[metric]
                if text == "NaN":
                    continue
                value = float(text)
                best = ops[key][kind].get(metric)
                better = min if metric == "CosineSimilarity" else max
                ops[key][kind][metric] = value if best is None else better(best, value)
    return dict(ops)
