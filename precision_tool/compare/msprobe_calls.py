"""The calls of an msprobe data root as ``ni``, ``pt`` and the report ask for them: a call's
tensors (with their files), and its bench counterpart.

The bench counterpart of an NPU call is the one ``vc`` compared it with: the GroundTruth of its
rows in the newest result, in the bench rank directory that result's manifest names; without a
result holding it, the call of the same key in the matching bench rank directory (same path
under ``bench/`` as under ``npu/``, or the only one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.graph_model import Model, Op
from ..formats.msprobe_dump import tensor_path
from ..formats.msprobe_graph import call_slots, msprobe_source
from ..formats.msprobe_leaves import Tensor
from .manifest import read_manifest, result_csvs
from .result_csv import latest_result_dir
from .result_read import read_result_csv
from .workspace import MSPROBE_BENCH, OpRef, Workspace


@dataclass(frozen=True)
class CallTensor:
    """One tensor of a call: its kind and slot (``input``, 0: the row ``KEY:input:0``), its
    ``dump.json`` record, and its file (None when the dump holds statistics only, with
    ``problem`` saying so)."""

    kind: str
    slot: int
    tensor: Tensor
    name: str  # msprobe's full name: KEY.input.0
    path: Path | None
    problem: str = ""

    @property
    def index_name(self) -> str:
        """``input:0``: the slot as a TensorIndex ends."""
        return f"{self.kind}:{self.slot}"


def call_tensors(model: Model, op: Op) -> list[CallTensor]:
    """Every tensor of the call ``op`` of the msprobe model ``model``, inputs then outputs."""
    source = msprobe_source(model)
    if source is None:
        raise PrecisionToolError(f"{op.name} is no msprobe call")
    call = source.call(op)
    rank_dir = source.rank.path if source.rank is not None else Path(".")
    found = []
    for kind, tensors in zip(("input", "output"), call_slots(call)):
        for slot, tensor in enumerate(tensors):
            try:
                path, problem = tensor_path(rank_dir, tensor), ""
            except PrecisionToolError as exc:
                path, problem = None, exc.problem
            found.append(CallTensor(kind, slot, tensor, call.msprobe_name(tensor), path, problem))
    return found


@dataclass(frozen=True)
class Counterpart:
    """The bench call an NPU call is compared with (None when there is none), how it was found,
    and why there is none."""

    ref: OpRef | None
    how: str = ""
    note: str = ""


def rank_dir_of(ref: OpRef) -> Path | None:
    """The rank directory of an msprobe call's model, None for a GE op."""
    source = msprobe_source(ref.model)
    return source.rank.path if source is not None and source.rank is not None else None


def bench_counterpart(workspace: Workspace, ref: OpRef) -> Counterpart:
    """The bench call of the NPU call ``ref`` (see the module's docstring)."""
    rank_dir = rank_dir_of(ref)
    if rank_dir is None:
        return Counterpart(None, note="not an msprobe call")
    found = _from_result(workspace, ref, rank_dir)
    return found if found is not None else _same_key(workspace, ref)


def _ground_truths(workspace: Workspace, csv: Path) -> dict[str, str]:
    """NPU call key -> its GroundTruth in the result ``csv`` (the first row naming one)."""

    def load() -> dict[str, str]:
        truths: dict[str, str] = {}
        for row in read_result_csv(csv):
            if row.ground_truth and row.ground_truth != "*":
                truths.setdefault(row.npu_name, row.ground_truth)
            else:
                truths.setdefault(row.npu_name, "")
        return truths

    try:
        stamp = csv.stat().st_mtime_ns
    except OSError:
        stamp = None
    return workspace.remembered(("msprobe ground truths", csv, stamp), load)


def _from_result(workspace: Workspace, ref: OpRef, rank_dir: Path) -> Counterpart | None:
    try:
        directory = latest_result_dir(workspace.output_dir)
    except PrecisionToolError:
        return None
    if directory is None:
        return None
    manifest = read_manifest(directory)
    for csv in result_csvs(directory):
        info = manifest.get(csv.name)
        if info is None or not info.npu_dump or not _same_dir(Path(info.npu_dump), rank_dir):
            continue
        try:
            truth = _ground_truths(workspace, csv).get(ref.op.name)
        except PrecisionToolError:
            return None
        if truth is None:
            continue
        how = f"the GroundTruth of the newest result ({csv})"
        if not truth:
            return Counterpart(None, how, "the newest result compares it with no bench call")
        return _in_bench(workspace, info.bench_dump, truth, how)
    return None


def _in_bench(workspace: Workspace, bench_dir: str | None, key: str, how: str) -> Counterpart:
    if not bench_dir:
        return Counterpart(None, how, "the result names no bench rank directory")
    try:
        model = workspace.msprobe_model_at(bench_dir)
    except PrecisionToolError as exc:
        return Counterpart(None, how, f"the bench dump cannot be read: {exc}")
    graph = model.graphs[0]
    op = graph.get(key)
    if op is None:
        return Counterpart(None, how, f"no call {key} in {bench_dir}")
    return Counterpart(OpRef(MSPROBE_BENCH, model, graph, op), how)


def _same_key(workspace: Workspace, ref: OpRef) -> Counterpart:
    how = f"the same key in {MSPROBE_BENCH}/ (no result compares it yet)"
    try:
        models = workspace.msprobe_models(MSPROBE_BENCH)
    except PrecisionToolError as exc:
        return Counterpart(None, how, f"the bench dump cannot be read: {exc}")
    if not models:
        return Counterpart(None, how, f"no msprobe dump in {workspace.data.bench}")
    named = [m for m in models if m.name == ref.model.name]
    if not named and len(models) > 1:
        return Counterpart(None, how, f"no bench rank directory {ref.model.name}")
    model = (named or models)[0]
    op = model.graphs[0].get(ref.op.name)
    if op is None:
        return Counterpart(None, how, f"no call {ref.op.name} in {MSPROBE_BENCH}/{model.name}")
    return Counterpart(OpRef(MSPROBE_BENCH, model, model.graphs[0], op), how)


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
