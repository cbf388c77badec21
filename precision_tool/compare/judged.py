"""The one verdict on a result: :func:`~precision_tool.compare.divergence.analyse` with the
replay of its flagged ops attached, computed once per result file and session.

Whether a flagged op introduces an error or only carries one in is a question about the op
alone, so it is answered by recomputing the op from its *own* NPU inputs
(:mod:`.replay`) and comparing that with its NPU output: the local error, against the noise of
a correct kernel (:func:`~precision_tool.compare.noise.replay_noise`). Only flagged ops are
replayed (the others are clean whatever the replay says), one at a time, each reading just its
own dump file, so the cost follows the number of flagged ops, not the size of the network;
MAX_REPLAYS bounds it. An op whose type has no replay, whose dump is missing or whose tensors
cannot be read keeps the input rule, and the views say so (``decided_by``).

A GE op is found in the Build graphs and replayed by its TF op type (:mod:`.replay`); a result
of msprobe dumps (its manifest names the rank directories, :mod:`.msprobe_replay`) has calls of
PyTorch or MindSpore APIs, found in the NPU rank's ``dump.json`` and replayed from their
arguments (:mod:`.replay.torch_api`). Both are launches (:class:`~.replay.launch.GeLaunch`,
:class:`~.msprobe_replay.MsprobeLaunch`) judged by one :func:`local_check`.

Every view (``vcs``, ``ac``, ``report``, ``ni -s``, Model Explorer, ``why``) gets its
divergence from :func:`judged_result`, so they all tell the same story.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.file_identity import FileIdentities
from .divergence import Divergence, OpCosines, analyse
from .msprobe_replay import MsprobeDumps, find_launch, msprobe_dumps
from .noise import accumulation_length, replay_noise
from .op_tensors import op_tensors
from .pair_stats import compare
from .replay import REGISTRY, ReplayError
from .replay.launch import GeLaunch
from .result_read import read_result_csv
from .verdict import FlagRule, LocalCheck
from .workspace import Workspace

MAX_REPLAYS = 2000  # flagged ops replayed per result; the rest keep the input rule


def _read_all(launch) -> tuple[list, list]:
    def read(side):
        try:
            return side.npu()
        except PrecisionToolError:
            return None

    return [read(s) for s in launch.inputs], [read(s) for s in launch.outputs]


def local_check(launch, slot: int) -> LocalCheck | None:
    """Output ``slot`` of ``launch`` (a :class:`~.replay.launch.GeLaunch` or an
    :class:`~.msprobe_replay.MsprobeLaunch`) against its replay on its own NPU inputs; None when
    it cannot be replayed (the reason does not matter here: the input rule then decides)."""
    inputs, outputs = _read_all(launch)
    if slot >= len(outputs) or outputs[slot] is None:
        return None
    try:
        replayed, label, _ = launch.replay(inputs, outputs)
    except ReplayError:
        return None
    if slot >= len(replayed) or replayed[slot].size != outputs[slot].size:
        return None
    npu, dtype = outputs[slot], launch.outputs[slot].dtype
    stats = compare(npu, replayed[slot].reshape(npu.shape), dtype)
    shapes = [tuple(a.shape) if a is not None else None for a in inputs]
    k = accumulation_length(launch.noise_type, shapes, tuple(npu.shape))
    noise = replay_noise(dtype, launch.noise_type, k)
    return LocalCheck(stats.red, stats.nonfinite_mismatch, noise, label, slot)


def _check_ge(context: Workspace, op: OpCosines, slot: int) -> LocalCheck | None:
    ref = context.find_op(op.name, "debug_0")
    if ref is None or ref.op.type not in REGISTRY:  # no dump read for nothing
        return None
    try:
        launches = op_tensors(context, ref)
    except PrecisionToolError:
        return None
    return local_check(GeLaunch(launches[0]), slot) if launches else None


def _check_call(context: Workspace, dumps: MsprobeDumps, op: OpCosines, slot: int) -> LocalCheck | None:
    try:
        launch = find_launch(context, dumps, op.name)
    except PrecisionToolError:
        return None
    if launch is None or not launch.replayable:  # no tensor read for nothing
        return None
    return local_check(launch, slot)


def _check_op(context: Workspace, op: OpCosines, dumps: MsprobeDumps | None = None) -> LocalCheck | None:
    worst = op.worst_output_tensor
    if worst is None:
        return None
    if dumps is not None:
        return _check_call(context, dumps, op, worst.slot)
    return _check_ge(context, op, worst.slot)


def local_checks(
    context: Workspace, divergence: Divergence, dumps: MsprobeDumps | None = None
) -> dict[tuple[int, str], LocalCheck]:
    """The replay evidence of each flagged op that could be replayed (up to MAX_REPLAYS);
    ``dumps``: the msprobe rank directories the result compares (None: GE dumps)."""
    checks: dict[tuple[int, str], LocalCheck] = {}
    for op in divergence.flagged[:MAX_REPLAYS]:
        found = _check_op(context, op, dumps)
        if found is not None:
            checks[(op.index, op.name)] = found
    return checks


def judge_rows(context: Workspace, rows, rule: FlagRule, dumps: MsprobeDumps | None = None) -> Divergence:
    """The verdict on ``rows`` by ``rule``, the replays of its flagged ops attached; ``dumps``:
    the msprobe rank directories the rows compare (None: GE dumps, found through the graphs)."""
    divergence = analyse(rows, rule)
    return divergence.with_local(local_checks(context, divergence, dumps))


def judge_op_rows(context: Workspace, path: Path, rows, rule: FlagRule) -> Divergence:
    """:func:`judge_rows` of some rows of result ``path`` (one op's: ``ni OP``), with the
    replays its manifest allows; not remembered, since the rows are not the whole result."""
    return judge_rows(context, rows, rule, msprobe_dumps(path))


def judged_rows(context: Workspace, path: Path, rows, rule: FlagRule) -> Divergence:
    """:func:`judge_rows` of ``rows`` (read from result ``path``; its manifest says whether it
    compares msprobe dumps, and which); remembered for the session, so every view of one command
    (and of later ones) shares it."""
    return _remembered(context, path, rule, lambda: rows)


def judged_result(context: Workspace, path: Path, rule: FlagRule, **read) -> Divergence:
    """:func:`judged_rows` of the result CSV ``path`` (read with ``read``'s options), which is
    read only when the session has no verdict on it yet (a 1.5 GB network's CSV takes 0.2-0.4 s).

    Raises:
        PrecisionToolError: the CSV cannot be read.
    """
    return _remembered(context, path, rule, lambda: read_result_csv(path, **read))


def _remembered(context: Workspace, path: Path, rule: FlagRule, rows: Callable[[], list]) -> Divergence:
    """The verdict on result ``path`` by ``rule``, remembered by what the file is (as the row
    cache keys it: a rewritten file is judged again); ``rows`` gives its rows when it is judged."""

    def judge() -> Divergence:
        return judge_rows(context, rows(), rule, msprobe_dumps(path))

    identity = FileIdentities().of(Path(path))
    if identity is None:
        return judge()
    return context.remembered(("verdict", identity, rule), judge)
