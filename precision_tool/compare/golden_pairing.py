"""Pairing: which golden tensor each NPU dump tensor is compared with (SPEC.md "Pairing").

Pairing only reads dump headers and file names; tensor data is read later, by the engine's
workers. The result is :class:`PairTask` s in execution order (a list, or one by one as they
are paired: :func:`graph_pairs`), one per compared tensor plus one per graph op that has no dump
file, each carrying the reason when it cannot be compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ..errors import PrecisionToolError
from ..formats.dump import read_dump, tensor_counts
from ..formats.dump_names import DumpFileRef, DumpListing
from ..formats.dump_tensor import DumpFile
from ..formats.golden import GoldenIndex
from ..formats.graph_model import GraphDesc, InputRef, Op, TensorName

if TYPE_CHECKING:
    from .msprobe_stats import Summary

T = TypeVar("T")

# Layout and dtype conversions the NPU compiler inserts: they carry the value they convert.
STEP_OVER_TYPES = frozenset({"Cast", "TransData"})


# A side names its file by the path's text, not a ``Path``: a run's tasks travel to the workers
# pickled, and a ``Path`` is rebuilt there from its parts (about 5 us each, 15 us a task of the 4 GB
# GE network's calls in all, against 2.5 with text: docs/performance.md). Whatever opens, names
# or keys the file takes the text as it is (os.fspath of a Path given by a caller is the same).
@dataclass(frozen=True)
class DumpSide:
    """One tensor of an NPU dump file, with the host layout to convert it to."""

    path: str
    kind: str  # "input" or "output"
    index: int
    origin_format: str | None = None


@dataclass(frozen=True)
class NpySide:
    """A golden (or any) ``.npy`` tensor."""

    path: str


@dataclass(frozen=True)
class TensorFileSide:
    """A tensor file of an msprobe dump: ``.pt`` (torch's zip, read without torch) or ``.npy``,
    as the dtype ``dump.json`` records (``dtype_name``) says."""

    path: str
    dtype_name: str | None = None


@dataclass(frozen=True)
class StatsSide:
    """A tensor of an msprobe dump known by its dump.json record only (statistics task, or md5
    summary mode): :mod:`.msprobe_rows` makes and compares it."""

    summary: Summary
    md5: str | None = None
    dtype: str | None = None
    shape: tuple[int, ...] | None = None


FileSide = (DumpSide, NpySide, TensorFileSide)  # the sides that name a file (isinstance checks)


@dataclass(frozen=True)
class PairTask:
    """One row of the result: an NPU tensor and what it is compared with, or why it is not."""

    index: int  # the op's position in execution order
    op_type: str
    npu_name: str
    ground_truth: str
    tensor_index: str | None  # "{op}:{input|output}:{i}"; None for an op with no dump
    left: DumpSide | NpySide | TensorFileSide | StatsSide | None
    right: DumpSide | NpySide | TensorFileSide | StatsSide | None
    reason: str = ""  # why it cannot be compared; empty when it can

    @property
    def comparable(self) -> bool:
        return self.left is not None and self.right is not None and not self.reason


def ground_truth_text(op: Op) -> str:
    """GroundTruth: the TF ops this NPU op stands for, ``*`` when it stands for none."""
    if op.original_op_names is None:
        return op.name
    return ",".join(op.original_op_names) or "*"


def _inserted(op: Op) -> bool:
    return op.type in STEP_OVER_TYPES and not op.original_op_names


def golden_source(graph: GraphDesc, ref: InputRef) -> TensorName:
    """The TF tensor that the value on edge ``ref`` equals.

    Walks back through NPU-inserted Cast/TransData to the first other producer, then takes that
    output's origin (:meth:`~precision_tool.formats.graph_model.TensorDesc.origin`), else the
    producer's own name and index.
    """
    seen: set[str] = set()
    op = graph.find_op(ref.src)
    while op is not None and _inserted(op) and op.name not in seen and op.data_inputs:
        seen.add(op.name)
        ref = op.data_inputs[0]
        op = graph.find_op(ref.src)
    if op is None:
        return TensorName(ref.src, ref.index)
    return _output_source(op, ref.index)


def _output_source(op: Op, index: int) -> TensorName:
    desc = op.output_desc(index)
    origin = desc.origin(index) if desc is not None else None
    return origin if origin is not None else TensorName(op.name, index)


def output_golden_source(graph: GraphDesc, op: Op, index: int) -> TensorName:
    """The TF tensor output ``index`` of ``op`` equals (inserted ops: the value they convert)."""
    if _inserted(op) and op.data_inputs:
        return golden_source(graph, op.data_inputs[0])
    return _output_source(op, index)


def golden_for(graph: GraphDesc, op: Op, kind: str, index: int) -> TensorName | None:
    """The one pairing rule: the TF tensor (name, output index) that input or output
    ``index`` of ``op`` is compared with; None for an input the graph does not have.

    ``vc`` compares with it, ``ni`` and ``pt`` show it, the overflow check reads it: outputs take
    their desc's origin name and index (an NPU-inserted Cast/TransData: the value it converts);
    inputs follow the edge back through inserted Cast/TransData to the producer's output.
    """
    if kind == "output":
        return output_golden_source(graph, op, index)
    edges = op.data_inputs
    return golden_source(graph, edges[index]) if 0 <= index < len(edges) else None


def _tensor_task(base: dict, tensor_index: str, left: DumpSide, golden: GoldenIndex, source: TensorName) -> PairTask:
    path = golden.latest_location(*source)
    if path is None:
        return PairTask(
            **{**base, "ground_truth": "*"},
            tensor_index=tensor_index,
            left=left,
            right=None,
            reason=f"no ground truth dump file for {tensor_index} ({source})",
        )
    return PairTask(**base, tensor_index=tensor_index, left=left, right=NpySide(path))


def read_header(ref: DumpFileRef) -> tuple[DumpFile | None, str]:
    """The dump header of ``ref``, or None and the problem when it cannot be read."""
    return _or_problem(lambda: read_dump(ref.path, name=ref.name))  # its name as the listing parsed it


def _or_problem(read: Callable[[], T]) -> tuple[T | None, str]:
    """What ``read()`` gives and "", or None and the problem of the PrecisionToolError it raised."""
    try:
        return read(), ""
    except PrecisionToolError as exc:
        return None, exc.problem


def _op_tasks(graph: GraphDesc, op: Op, position: int, ref: DumpFileRef, golden: GoldenIndex) -> list[PairTask]:
    base = dict(index=position, op_type=op.type, npu_name=op.name, ground_truth=ground_truth_text(op))
    counts, problem = _or_problem(lambda: tensor_counts(ref.location))  # the file checked as read_header checks it
    if counts is None:
        return [PairTask(**base, tensor_index=None, left=None, right=None, reason=problem)]
    inputs, outputs = counts
    tasks = []
    path = ref.location
    data_inputs = op.data_inputs
    for i in range(inputs):
        edge = data_inputs[i] if i < len(data_inputs) else None
        desc = op.input_desc(i)
        left = DumpSide(path, "input", i, desc.origin_format if desc else None)
        tensor_index = f"{op.name}:input:{i}"
        if edge is None:
            tasks.append(
                PairTask(
                    **base,
                    tensor_index=tensor_index,
                    left=left,
                    right=None,
                    reason=f"the graph has no data input {i} for {op.name}",
                )
            )
            continue
        tasks.append(_tensor_task(base, tensor_index, left, golden, golden_for(graph, op, "input", i)))
    for i in range(outputs):
        desc = op.output_desc(i)
        left = DumpSide(path, "output", i, desc.origin_format if desc else None)
        tasks.append(_tensor_task(base, f"{op.name}:output:{i}", left, golden, golden_for(graph, op, "output", i)))
    return tasks


def _no_dump_task(op: Op, position: int) -> PairTask:
    return PairTask(
        position,
        op.type,
        op.name,
        ground_truth_text(op),
        None,
        None,
        None,
        reason=f'[{op.name}] there is no dump file for operator "{op.name}" (type {op.type})',
    )


def pair_with_graph(graph: GraphDesc, listing: DumpListing, golden: GoldenIndex) -> list[PairTask]:
    """Graph-driven pairing of one step's dumps against golden; every graph op gets rows.

    Dump files of ops the graph does not know are paired by name after the graph's ops.
    """
    return list(graph_pairs(graph, listing, golden))


def graph_pairs(graph: GraphDesc, listing: DumpListing, golden: GoldenIndex) -> Iterator[PairTask]:
    """:func:`pair_with_graph`'s tasks as they are paired, op after op (a dump header is read
    only when its op's turn comes)."""
    used: set[str] = set()
    for position, op in enumerate(graph.ops):
        ref = listing.latest(op.name)
        if ref is None:
            yield _no_dump_task(op, position)
            continue
        used.add(ref.location)
        yield from _op_tasks(graph, op, position, ref, golden)
    rest = [ref for ref in latest_launches(listing) if ref.location not in used]
    yield from pair_by_name(rest, golden, first_index=len(graph.ops))


def latest_launches(listing: DumpListing) -> list[DumpFileRef]:
    """The latest launch of every op, in timestamp order (Opdebug files excluded)."""
    latest = [refs[-1] for refs in listing.by_op().values() if refs and not refs[-1].name.is_opdebug]
    return sorted(latest, key=lambda ref: ref.name.timestamp)


def pair_by_name(refs: list[DumpFileRef] | DumpListing, golden: GoldenIndex, first_index: int = 0) -> list[PairTask]:
    """Pairing without a graph: output i against the TF tensor its OriginalOp names, else golden
    ``name.i``; inputs are listed with the reason (their producers are unknown without a graph)."""
    if isinstance(refs, DumpListing):
        refs = latest_launches(refs)
    tasks = []
    for position, ref in enumerate(refs, start=first_index):
        dump, problem = read_header(ref)
        name = dump.op_name if dump else ref.name.op_name
        base = dict(index=position, op_type=ref.name.op_type, npu_name=name, ground_truth=name)
        if dump is None:
            tasks.append(PairTask(**base, tensor_index=None, left=None, right=None, reason=problem))
            continue
        for tensor in dump.inputs:
            tasks.append(
                PairTask(
                    **base,
                    tensor_index=f"{name}:input:{tensor.index}",
                    left=DumpSide(ref.location, "input", tensor.index),
                    right=None,
                    reason="no graph: the producer of this input is unknown",
                )
            )
        for tensor in dump.outputs:
            # The dump's OriginalOp names the TF tensor a fused output stands for.
            origin = tensor.original_op
            source = (
                TensorName(origin.name, origin.output_index)
                if origin and origin.name
                else TensorName(name, tensor.index)
            )
            tasks.append(
                _tensor_task(
                    base,
                    f"{name}:output:{tensor.index}",
                    DumpSide(ref.location, "output", tensor.index),
                    golden,
                    source,
                )
            )
    return tasks
