"""Explain one op: compare its output and inputs with their goldens, replay it, and rank the
causes that hold. Also the explanations of the ops that introduce error in the newest result
(what ``why`` without an op shows, and the panel ``ac`` can end with).

A GE op is read through its Build graph (:mod:`~..compare.op_tensors`); a call of an msprobe
dump (a PyTorch or MindSpore API) through its rank's ``dump.json``
(:mod:`~..compare.msprobe_replay`), its bench tensors the goldens: the same hypotheses, and the
replay line says what the verdict's replay found, whether the call computes the error itself
("computed here") or carries it in, and the dtype it ran in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..compare.divergence import OpCosines
from ..compare.judged import judge_rows, judged_result, local_check
from ..compare.msprobe_replay import DUMP_JSON, MsprobeDumps, find_launch, msprobe_dumps
from ..compare.op_tensors import (
    OpTensors,
    TensorSide,
    first_introducers,
    op_tensors,
)
from ..compare.pair_stats import PairStats, coarsest, compare, count_nonfinite, dtype_facts
from ..compare.replay import ReplayError
from ..compare.replay.launch import GeLaunch
from ..compare.replay.registry import channel_axis
from ..compare.result_csv import newest_result_csvs
from ..compare.result_read import read_result_csv
from ..compare.verdict import LocalCheck
from ..context import Context, OpRef
from ..errors import PrecisionToolError
from .causes import Cause, InputCheck, ReplayCheck, Subject, diagnose
from .criterion import Criterion
from .rounding import op_output_noise, op_replay_noise


@dataclass(frozen=True)
class Explanation:
    """Why one op's output differs from its golden.

    Attributes:
        op, op_type: the NPU op.
        output: the output explained (the one that differs most), None when none could be.
        causes: every cause that held, most likely first (never empty).
        replay: the replay and its comparisons.
        stats: the explained output against its golden, None when not compared.
        dump: the dump file read.
        notes: what could not be read or compared.
    """

    op: str
    op_type: str
    output: int | None
    causes: tuple[Cause, ...]
    replay: ReplayCheck
    stats: PairStats | None = None
    dump: str = ""
    notes: tuple[str, ...] = ()

    @property
    def cause(self) -> str:
        """The most likely cause's name."""
        return self.causes[0].name

    @property
    def cause_text(self) -> str | None:
        """``scale: npu ~ 0.4999 * golden ...``: the most likely cause and its evidence, as the
        verdict carries it (:meth:`~precision_tool.compare.divergence.Divergence.with_causes`);
        None when the cause is unknown."""
        return None if self.cause == "unknown" else f"{self.cause}: {self.causes[0].evidence}"

    @property
    def is_defect(self) -> bool:
        """True unless the op is within rounding of its golden."""
        return self.cause != "precision"


def _read(side: TensorSide) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """(NPU host array, golden array, problem) of one side; a problem instead of raising."""
    try:
        npu = side.npu()
    except PrecisionToolError as exc:
        return None, None, f"{side.label}: {exc.problem}"
    if npu.size == 0:
        return npu, None, f"{side.label}: the tensor is empty"
    try:
        golden = side.golden()
    except PrecisionToolError as exc:
        return npu, None, f"{side.label}: golden {side.source_text}: {exc.problem}"
    if golden is not None and golden.size != npu.size:
        return (
            npu,
            None,
            (
                f"{side.label}: golden {side.source_text} has shape {list(golden.shape)}, "
                f"the NPU tensor {list(npu.shape)}"
            ),
        )
    return (
        npu,
        golden,
        "" if golden is not None or side.source is None else f"{side.label}: no golden {side.source_text}",
    )


def _input_check(side: TensorSide, npu, golden, problem: str) -> InputCheck:
    stats = compare(npu, golden, side.dtype) if npu is not None and golden is not None else None
    if stats is not None:
        nonfinite = stats.npu_nonfinite  # counted in the same pass
    else:
        nonfinite = count_nonfinite(npu) if npu is not None else 0
    return InputCheck(
        side.slot, side.source_text, side.network_input, stats, nonfinite, dtype_facts(side.dtype), problem
    )


def _replay_check(launch, inputs, outputs, slot: int | None, golden) -> ReplayCheck:
    try:
        replayed, label, notes = launch.replay(inputs, outputs)
    except ReplayError as exc:
        return ReplayCheck(False, str(exc))
    if slot is None or slot >= len(replayed) or outputs[slot] is None:
        return ReplayCheck(True, f"replayed {label}", tuple(notes))
    npu, value = outputs[slot], replayed[slot]
    if value.size != npu.size:
        return ReplayCheck(
            False,
            f"the replay of {label} gives shape {list(value.shape)}, the NPU output has {list(npu.shape)}",
            tuple(notes),
        )
    value = value.reshape(npu.shape)
    against_golden = compare(golden, value, golden.dtype) if golden is not None else None
    return ReplayCheck(
        True, f"replayed {label}", tuple(notes), compare(npu, value, launch.outputs[slot].dtype), against_golden
    )


def _worst_output(pairs: list[tuple[int, PairStats]]) -> int | None:
    if not pairs:
        return None
    return max(pairs, key=lambda p: (p[1].nonfinite_mismatch > 0, _finite_or_max(p[1].red), -p[0]))[0]


def _finite_or_max(value: float) -> float:
    return value if not math.isnan(value) else math.inf


def explain_op(tensors: OpTensors, criterion: Criterion) -> Explanation:
    """The explanation of one op launch."""
    return explain_launch(GeLaunch(tensors), criterion)


def explain_launch(launch, criterion: Criterion) -> Explanation:
    """The explanation of one launch: a :class:`~..compare.replay.launch.GeLaunch` or an
    :class:`~..compare.msprobe_replay.MsprobeLaunch` (its bench tensors the goldens)."""
    ins = [_read(side) for side in launch.inputs]
    outs = [_read(side) for side in launch.outputs]
    notes = [problem for _, _, problem in ins + outs if problem]
    checks = tuple(_input_check(side, *read) for side, read in zip(launch.inputs, ins))
    compared = [
        (side.slot, compare(npu, golden, side.dtype))
        for side, (npu, golden, _) in zip(launch.outputs, outs)
        if npu is not None and golden is not None
    ]
    slot = _worst_output(compared)
    golden = outs[slot][1] if slot is not None else None
    replay = _replay_check(launch, [n for n, _, _ in ins], [n for n, _, _ in outs], slot, golden)
    base = dict(op=launch.name, op_type=launch.op_type, replay=replay, dump=launch.dump_name)
    if slot is None:
        cause = Cause(
            "unknown",
            "no output could be compared with a golden: " + ("; ".join(notes) or "the dump has no output"),
            {},
            0.0,
        )
        return Explanation(output=None, causes=(cause,), notes=tuple(notes), **base)
    side, npu = launch.outputs[slot], outs[slot][0]
    shapes = [tuple(n.shape) if n is not None else None for n, _, _ in ins]
    subject = Subject(
        npu,
        golden,
        dict(compared)[slot],
        _facts(side, checks),
        criterion,
        checks,
        replay,
        channel_axis(side.host_format, npu.ndim) if side.host_format else None,
        op_output_noise(launch.noise_type, side.dtype, golden.dtype, checks, shapes, npu.shape),
        op_replay_noise(launch.noise_type, side.dtype, shapes, npu.shape),
    )
    return Explanation(output=slot, causes=diagnose(subject), stats=subject.stats, notes=tuple(notes), **base)


def output_noise_of(tensors: OpTensors, slot: int):
    """The noise of output ``slot`` of one launch against its golden, from its inputs measured
    against theirs (what ``why`` judges that output by; ``cp`` asks the same)."""
    ins = [_read(side) for side in tensors.inputs]
    checks = tuple(_input_check(side, *read) for side, read in zip(tensors.inputs, ins))
    side = tensors.outputs[slot]
    shape = tuple(side.tensor.original_shape or side.tensor.shape)
    golden = side.golden() if side.golden_path is not None else None
    return op_output_noise(
        tensors.op.type,
        side.tensor.dtype,
        golden.dtype if golden is not None else None,
        checks,
        [tuple(n.shape) if n is not None else None for n, _, _ in ins],
        shape,
    )


def _facts(side: TensorSide, checks: tuple[InputCheck, ...]):
    return coarsest([side.dtype, *(check.facts for check in checks)])


def explain_ref(context: Context, ref: OpRef, criterion: Criterion | None = None) -> list[Explanation]:
    """The explanation of ``ref``'s latest launch in each selected step dir (usually one)."""
    criterion = criterion or Criterion.from_config(context.config)
    return [explain_op(tensors, criterion) for tensors in op_tensors(context, ref)]


def _not_found(name: str, op_type: str, why: str) -> Explanation:
    return Explanation(name, op_type, None, (Cause("unknown", why, {}, 0.0),), ReplayCheck(False, why))


def explain_newest(context: Context, limit: int | None = None, paths=None) -> list[Explanation]:
    """The explanations of the first ops that introduce error in the newest result (or in the
    CSVs ``paths``): up to ``limit`` per CSV (None: the config's vcs limit, 0: all).

    Raises:
        PrecisionToolError: no result to read, or a CSV that cannot be read.
    """
    limit = context.config.vcs_limit if limit is None else limit
    criterion = Criterion.from_config(context.config)
    found: list[Explanation] = []
    for path in paths or newest_result_csvs(context.output_dir):
        divergence = judged_result(context, path, criterion.rule)
        dumps = msprobe_dumps(path)
        ops = first_introducers(divergence)
        for op in ops[:limit] if limit else ops:
            if dumps is not None:
                found.append(explain_call(context, dumps, op, criterion))
                continue
            ref = context.find_op(op.name, "debug_0")
            if ref is None:
                found.append(_not_found(op.name, op.op_type, f"{op.name} is not in the Build graph"))
                continue
            try:
                found.extend(explain_ref(context, ref, criterion))
            except PrecisionToolError as exc:
                found.append(_not_found(op.name, op.op_type, str(exc)))
    return found


# --- msprobe calls ----------------------------------------------------------------------------


def _finding(local: LocalCheck, flagged: bool, dtype) -> str:
    """The verdict's replay in words: ``computed here: replay of Functional.linear: local RED
    0.47 > rounding 1e-05 (...; it ran in float16)``."""
    if local.beyond:
        head = "computed here"
    elif flagged:
        head = "carried in (its NPU output is what its own NPU inputs give)"
    else:
        head = "computed faithfully"
    ran = f"it ran in {dtype.name}" if dtype is not None else "its dtype is not known"
    return f"{head}: {local.describe()} (recomputed in float64 from its own NPU inputs; {ran})"


def explain_call(context: Context, dumps: MsprobeDumps, op: OpCosines, criterion: Criterion) -> Explanation:
    """The explanation of the msprobe call ``op`` of a result comparing ``dumps``: its causes as
    for a GE op (the bench call's tensors its goldens), and on the replay line the verdict's
    replay (:func:`~..compare.judged.local_check`): computed here, or carried in."""
    try:
        launch = find_launch(context, dumps, op.name, op.ground_truth)
    except PrecisionToolError as exc:
        return _not_found(op.name, op.op_type, str(exc))
    if launch is None:
        return _not_found(op.name, op.op_type, f"{op.name} is not a call of {dumps.npu / DUMP_JSON}")
    explanation = explain_launch(launch, criterion)
    worst = op.worst_output_tensor
    local = op.local
    if local is None and worst is not None and launch.replayable:
        local = local_check(launch, worst.slot)
    if local is None or not explanation.replay.supported:
        return explanation
    reason = _finding(local, op.flagged, launch.run_dtype)
    return replace(explanation, replay=replace(explanation.replay, reason=reason))


def _chosen_call(text: str, names: set[str]) -> str | None:
    """The call key ``text`` names: itself, else the one key holding it; None when none does.

    Raises:
        PrecisionToolError: several keys hold it.
    """
    if text in names:
        return text
    holding = sorted(name for name in names if text in name)
    if len(holding) > 1:
        shown = ", ".join(holding[:5]) + (", ..." if len(holding) > 5 else "")
        raise PrecisionToolError(f"{text!r} is part of {len(holding)} calls' keys ({shown}): give the whole key")
    return holding[0] if holding else None


def explain_named_call(context: Context, text: str, criterion: Criterion | None = None) -> list[Explanation] | None:
    """``why NAME`` for msprobe dumps: the explanation of the call ``text`` names (its key, or
    the one key holding it) in each msprobe CSV of the newest result, judged on its own rows;
    None when the newest result compares no msprobe dumps (or there is none), [] when no call
    of it is named so.

    Raises:
        PrecisionToolError: ``text`` is part of several keys, or a CSV cannot be read.
    """
    criterion = criterion or Criterion.from_config(context.config)
    try:
        paths = [(path, msprobe_dumps(path)) for path in newest_result_csvs(context.output_dir)]
    except PrecisionToolError:
        return None
    if all(dumps is None for _, dumps in paths):
        return None
    found: list[Explanation] = []
    for path, dumps in paths:
        if dumps is None:
            continue
        rows = read_result_csv(path)
        chosen = _chosen_call(text, {row.npu_name for row in rows})
        if chosen is not None:
            divergence = judge_rows(context, [row for row in rows if row.npu_name == chosen], criterion.rule, dumps)
            found.extend(explain_call(context, dumps, op, criterion) for op in divergence.ops)
    return found
