"""The overflow check: decode the overflow-debug dumps and find the ops that overflowed.

Two parts (SPEC.md ``ac``, FORMATS.md section 7):

1. The ``Opdebug.Node_OpDebug.*`` files of the newest run under ``overflow/dump``, oldest first,
   at most ``limit``. For each: the status words in words, and the op that overflowed: the first
   ordinary dump (timestamp order) in the same directory whose task id and stream id equal the
   payload's info words -- the payload's ids are authoritative, the Opdebug file name carries
   the debug task's own ids. A file name without a stream id matches on the task id alone.
2. The NPU dump tensors of ``debug_0`` (newest run, TF_DUMP_STEP) that hold Inf/NaN where their
   golden tensor does not, in execution order. Pairing is ``vc``'s; a tensor without a golden
   counterpart is not listed (there is nothing to say its Inf/NaN is new).

Statistics are taken in host layout when the dump can be converted, else in device layout.
Nothing here prints; problems with single files go into the result, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..compare.golden_pairing import DumpSide, NpySide, PairTask
from ..compare.msprobe_plan import tensor_names
from ..compare.plan import graph_for_step, npu_vs_golden, plan_msprobe
from ..compare.sides import ReadCache, device_values
from ..compare.tensor_summary import TensorStats, has_inf_nan, tensor_stats
from ..context import Context
from ..errors import PrecisionToolError
from ..formats.dump import read_dump
from ..formats.dump_names import DumpFileRef, DumpListing
from ..formats.dump_tensor import DumpFile, DumpTensor
from ..formats.golden import GoldenIndex, load_npy
from ..formats.graph_model import Model
from ..formats.msprobe_dump import read_tensor_file
from ..formats.overflow import OverflowPayload, read_overflow_payload
from ..formats.tree import DumpTree, StepDir

DEFAULT_LIMIT = 3
OPDEBUG_GLOB = "Opdebug.Node_OpDebug.*"


@dataclass(frozen=True)
class TensorReport:
    """One input or output of the op that overflowed; ``stats`` is None when unreadable."""

    name: str  # "input:0" / "output:0"
    dtype: str
    stats: TensorStats | None
    note: str = ""  # why it is unreadable, or "device layout" when not converted

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape the statistics were taken in; empty when unreadable."""
        return self.stats.shape if self.stats is not None else ()

    @property
    def has_inf_nan(self) -> bool:
        """Whether the tensor holds any Inf or NaN."""
        return self.stats is not None and not self.stats.finite


@dataclass(frozen=True)
class OverflowOp:
    """The ordinary dump the Opdebug payload points at."""

    op_type: str
    op_name: str
    path: Path
    file_name: str
    tensors: tuple[TensorReport, ...]

    @property
    def has_inf_nan(self) -> bool:
        """Whether any of its inputs or outputs holds Inf or NaN."""
        return any(t.has_inf_nan for t in self.tensors)


@dataclass(frozen=True)
class OverflowFinding:
    """One Opdebug file: its decoded payload (or why not) and the op it points at (or why not)."""

    path: Path
    file_name: str
    timestamp: int
    step: StepDir
    payload: OverflowPayload | None = None
    problem: str = ""  # why the file could not be decoded, e.g. "... is not supported"
    op: OverflowOp | None = None
    op_problem: str = ""  # why no op is shown

    @property
    def overflowed(self) -> bool:
        """Whether the payload reports any overflow."""
        return self.payload is not None and self.payload.overflowed

    @property
    def types(self) -> list[str]:
        """The overflow types in words (``"AI Core: floating-point overflow"``)."""
        return self.payload.types() if self.payload is not None else []


@dataclass(frozen=True)
class NonFiniteTensor:
    """An NPU dump tensor holding Inf/NaN whose golden counterpart is finite."""

    position: int  # the op's place in execution order
    step: StepDir | None  # None for msprobe dumps
    op_type: str
    op_name: str
    tensor_index: str  # "{op}:{input|output}:{i}"
    npu: TensorStats
    golden_path: Path
    golden: TensorStats


@dataclass(frozen=True)
class OverflowCheckResult:
    """What the overflow check found.

    ``looked_in`` is the overflow dump root; ``absent`` says what was looked for there when it
    is missing (empty when present). ``debug_files`` counts the Opdebug files of the newest run;
    ``findings`` are all of them, decoded, in timestamp order (the first to overflow first);
    ``limit`` only says how many a panel shows (:attr:`shown`), so counts, the conclusion and
    ``--json`` never depend on it. ``nonfinite_absent`` says why the Inf/NaN-vs-golden part
    could not run (empty when it ran).
    """

    looked_in: Path
    limit: int = DEFAULT_LIMIT  # 0: every file
    absent: str = ""
    run: str | None = None
    debug_files: int = 0
    findings: tuple[OverflowFinding, ...] = ()
    nonfinite: tuple[NonFiniteTensor, ...] = ()
    nonfinite_absent: str = ""

    @property
    def present(self) -> bool:
        """Whether the overflow dump directory exists."""
        return not self.absent

    @property
    def found(self) -> bool:
        """Whether any Opdebug file was found."""
        return self.debug_files > 0

    @property
    def shown(self) -> tuple[OverflowFinding, ...]:
        """The findings a panel shows: the first ``limit`` (0: all)."""
        return self.findings if self.limit == 0 else self.findings[: self.limit]

    @property
    def overflowed_ops(self) -> list[str]:
        """The ops that overflowed, in the order they first did (each once)."""
        names = [f.op.op_name for f in self.findings if f.overflowed and f.op is not None]
        return list(dict.fromkeys(names))

    @property
    def flagged(self) -> bool:
        """Whether there is something to look at: an overflow, or a new Inf/NaN."""
        return any(f.overflowed for f in self.findings) or bool(self.nonfinite)


# --- part 1: the Opdebug files ----------------------------------------------------------------


def _effective_limit(limit: int | None) -> int:
    return DEFAULT_LIMIT if limit is None else max(int(limit), 0)


def _opdebug_refs(tree: DumpTree, steps: list[StepDir]) -> list[tuple[StepDir, DumpListing, DumpFileRef]]:
    found = []
    for step in steps:
        listing = tree.listing(step)
        found += [(step, listing, ref) for ref in listing.files if ref.name.is_opdebug]
    found.sort(key=lambda item: (item[2].name.timestamp, item[2].name.file_name, item[2].location))
    return found


def find_overflows(overflow_root: Path, limit: int | None = DEFAULT_LIMIT) -> OverflowCheckResult:
    """Part 1 on ``overflow_root``: every Opdebug file of its newest run, decoded, each with the
    op it points at (``limit``: how many a panel shows, 0 all). A missing root gives a result
    saying so."""
    overflow_root, limit = Path(overflow_root), _effective_limit(limit)
    if not overflow_root.is_dir():
        return OverflowCheckResult(overflow_root, limit, absent=f"{OPDEBUG_GLOB} files")
    try:
        tree = DumpTree(overflow_root)
    except PrecisionToolError as exc:
        return OverflowCheckResult(overflow_root, limit, absent=f"{OPDEBUG_GLOB} files ({exc.problem})")
    run = tree.newest_run()
    refs = _opdebug_refs(tree, tree.select(run=run))
    findings = tuple(_finding(step, listing, ref) for step, listing, ref in refs)
    return OverflowCheckResult(overflow_root, limit, run=run, debug_files=len(refs), findings=findings)


def _finding(step: StepDir, listing: DumpListing, ref: DumpFileRef) -> OverflowFinding:
    base = OverflowFinding(ref.path, ref.name.file_name, ref.name.timestamp, step)
    try:
        payload = read_overflow_payload(ref.path, ref.name.file_name)
    except PrecisionToolError as exc:
        return replace(base, problem=exc.problem)
    base = replace(base, payload=payload)
    op_ref = find_op(listing, payload.task_id, payload.stream_id)
    if op_ref is None:
        return replace(
            base,
            op_problem=f"no dump with task id {payload.task_id} and stream id "
            f"{payload.stream_id} in {listing.directory}",
        )
    try:
        dump = read_dump(op_ref.path, op_ref.name.file_name)
    except PrecisionToolError as exc:
        return replace(base, op_problem=f"{op_ref.name.file_name}: {exc.problem}")
    return replace(base, op=_overflow_op(op_ref, dump))


def find_op(listing: DumpListing, task_id: int, stream_id: int | None) -> DumpFileRef | None:
    """The first non-Opdebug dump of ``listing`` (timestamp order) with these task and stream
    ids; a file name without a stream id matches on the task id alone."""
    for ref in listing.files:
        name = ref.name
        if name.is_opdebug or name.task_id != task_id:
            continue
        if name.stream_id is None or stream_id is None or name.stream_id == stream_id:
            return ref
    return None


def _overflow_op(ref: DumpFileRef, dump: DumpFile) -> OverflowOp:
    reports = tuple(tensor_report(t) for t in dump.tensors)
    return OverflowOp(ref.name.op_type, dump.op_name, ref.path, ref.name.file_name, reports)


def tensor_report(tensor: DumpTensor, origin_format: str | None = None) -> TensorReport:
    """Shape, dtype, max, min, mean and Inf/NaN counts of one dump tensor, in host layout when
    it converts (else device layout, noted); the reason instead when it cannot be read."""
    if tensor.problem:
        return TensorReport(tensor.name, tensor.dtype_name, None, tensor.problem)
    stats, note = _stats(tensor, origin_format)
    return TensorReport(tensor.name, tensor.dtype_name, stats, note)


def _stats(tensor: DumpTensor, origin_format: str | None) -> tuple[TensorStats | None, str]:
    try:
        return tensor_stats(tensor.host(origin_format), tensor.dtype_name), ""
    except PrecisionToolError:
        pass
    try:
        return tensor_stats(tensor.device(), tensor.dtype_name), "device layout"
    except PrecisionToolError as exc:
        return None, exc.problem


# --- part 2: Inf/NaN on the NPU where golden has none -----------------------------------------


def find_nonfinite(
    listings: dict[StepDir, DumpListing], models: list[Model], golden: GoldenIndex
) -> list[NonFiniteTensor]:
    """Part 2: the NPU tensors holding Inf/NaN whose golden tensor is finite, in execution order
    (step directories in the order given, then graph order)."""
    found: list[NonFiniteTensor] = []
    for step, listing in listings.items():
        plan = npu_vs_golden(step, listing, golden, graph_for_step(step, models))
        found += _scan_tasks(step, plan.tasks)
    return found


def _scan_tasks(step: StepDir, tasks: list[PairTask]) -> list[NonFiniteTensor]:
    reads = ReadCache()  # as a comparison reads them: a small dump file once for all its tensors
    found = []
    for task in tasks:
        if not isinstance(task.left, DumpSide) or not isinstance(task.right, NpySide):
            continue
        item = _nonfinite_item(step, task, reads)
        if item is not None:
            found.append(item)
    return found


def _nonfinite_item(step: StepDir, task: PairTask, reads: ReadCache) -> NonFiniteTensor | None:
    try:
        data = reads.data(task.left.path)
        tensor = reads.tensor(task.left)
        if tensor.problem or not has_inf_nan(device_values(tensor, data)):  # padding is zero:
            return None  # no conversion needed to ask
        golden = load_npy(task.right.path)
    except PrecisionToolError:
        return None
    if has_inf_nan(golden):
        return None
    npu, _ = _stats(tensor, task.left.origin_format)
    if npu is None:
        return None
    return NonFiniteTensor(
        task.index,
        step,
        task.op_type,
        task.npu_name,
        task.tensor_index,
        npu,
        Path(task.right.path),
        tensor_stats(golden),
    )


def _stat_nonfinite(tensor) -> bool:
    """Whether dump.json's statistics of an msprobe tensor show Inf or NaN (None: unknown)."""
    values = [v for v in (tensor.max, tensor.min, tensor.mean) if v is not None]
    return any(not np.isfinite(v) for v in values)


def _file_stats(side) -> TensorStats | None:
    try:
        return tensor_stats(read_tensor_file(side.path, side.dtype_name))
    except PrecisionToolError:
        return None


def msprobe_nonfinite(context: Context) -> list[NonFiniteTensor]:
    """Part 2 on msprobe dumps: the NPU tensors holding Inf/NaN whose bench tensor is finite,
    in call order. dump.json's statistics pick the candidates (no file is read for a finite
    tensor); the tensor files, where the dump has them, give the counts."""
    found: list[NonFiniteTensor] = []
    for plan in plan_msprobe(context.data.npu, context.data.bench):
        pairs = tensor_names(plan.msprobe)
        for task in plan.tasks:
            pair = pairs.get(task.tensor_index or "")
            if pair is None or pair.bench is None or not _stat_nonfinite(pair.npu) or _stat_nonfinite(pair.bench):
                continue
            npu = _file_stats(task.left) if task.left is not None else None
            golden = _file_stats(task.right) if task.right is not None else None
            if npu is None or golden is None or npu.finite or not golden.finite:
                continue
            found.append(
                NonFiniteTensor(
                    task.index, None, task.op_type, task.npu_name, task.tensor_index, npu, Path(task.right.path), golden
                )
            )
    return found


def _nonfinite_for(context: Context) -> tuple[list[NonFiniteTensor], str]:
    if context.is_msprobe:
        try:
            return msprobe_nonfinite(context), ""
        except PrecisionToolError as exc:
            return [], str(exc)
    dump_root, golden_dir = context.data.dump_root("debug_0"), context.data.golden_dir
    if not dump_root.is_dir():
        return [], f"no NPU dumps: looked for debug_0 dumps in {dump_root}"
    if not golden_dir.is_dir():
        return [], f"no TF golden dumps: looked for .npy files in {golden_dir}"
    try:
        listings, golden = context.step_listings("debug_0"), context.golden()
    except PrecisionToolError as exc:
        return [], str(exc)
    try:
        models = context.models("debug_0")
    except PrecisionToolError:
        models = []  # pair by name, as vc does without a graph
    return find_nonfinite(listings, models, golden), ""


def check_overflow(context: Context, limit: int | None = DEFAULT_LIMIT) -> OverflowCheckResult:
    """Both parts on the context's data root: the first ``limit`` Opdebug files (None: the
    default 3, 0: all) and the debug_0 tensors holding Inf/NaN where golden does not."""
    result = find_overflows(context.data.overflow_root, limit)
    nonfinite, why = _nonfinite_for(context)
    return replace(result, nonfinite=tuple(nonfinite), nonfinite_absent=why)
