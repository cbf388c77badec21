"""Planning an msprobe comparison: two msprobe dumps (PyTorch or MindSpore) to the comparisons
to run, one per rank directory pair, through the same engine, CSV and verdict as NPU dumps.

Each side is a dump root, a step directory or a rank directory (:func:`~..formats.msprobe_tree.
find_tree`). Rank directories pair by (mode, step, rank); with one on each side, those two.
Tensors pair by :mod:`.msprobe_pairing`. A row's TensorIndex is ``KEY:input:N`` /
``KEY:output:N`` (N counts the call's inputs, its arguments, keyword arguments and parameters in
dump order, or its outputs), so everything that reads a row by op and slot reads these too; the
row's NPUDump and GroundTruth are the two call keys; msprobe's full tensor names
(``Functional.linear.0.forward.input.0``, the names of its compare and mapping file) are the
pairing's (:func:`tensor_names`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.msprobe_dump import Call, MsprobeDump, read_dump, tensor_path
from ..formats.msprobe_graph import call_slots, op_type
from ..formats.msprobe_leaves import Tensor
from ..formats.msprobe_mapping import read_mapping_file
from ..formats.msprobe_tree import RankDir, find_tree
from ..formats.text import safe_file_name
from ..formats.tree import parse_device_spec, parse_step_spec
from .golden_pairing import PairTask, StatsSide, TensorFileSide
from .msprobe_pairing import CallPairing, TensorPair, pair_calls
from .msprobe_rows import stats_side


@dataclass(frozen=True)
class MsprobeSides:
    """What an msprobe comparison compared: the two rank directories, their dumps, the pairing."""

    npu_rank: RankDir
    bench_rank: RankDir
    npu: MsprobeDump
    bench: MsprobeDump
    pairing: CallPairing


def rank_label(rank: RankDir) -> str:
    """``step 0, rank 1`` (``proc2016`` for a process directory, the mode for MindSpore's two)."""
    who = f"rank {rank.rank}" if rank.rank is not None else rank.name
    parts = [rank.mode, f"step {rank.step}" if rank.step is not None else None, who]
    return ", ".join(p for p in parts if p)


def _rank_key(rank: RankDir) -> tuple:
    return rank.mode, rank.step, rank.rank if rank.rank is not None else rank.name


def _chosen(ranks, steps: str | None, devices: str | None) -> list[RankDir]:
    wanted_steps, wanted_ranks = parse_step_spec(steps), parse_device_spec(devices)
    return [
        r
        for r in ranks
        if (wanted_steps is None or r.step is None or r.step in wanted_steps)
        and (wanted_ranks is None or r.rank in wanted_ranks)
    ]


def rank_pairs(
    npu: str | Path, bench: str | Path, steps: str | None = None, devices: str | None = None
) -> tuple[list[tuple[RankDir, RankDir]], list[str]]:
    """The (NPU, bench) rank directories to compare, and notes about the two trees.

    Raises:
        PrecisionToolError: a side is no msprobe dump, no rank is left after ``steps`` /
            ``devices``, or an NPU rank has no bench rank.
    """
    left, right = find_tree(npu), find_tree(bench)
    notes = [*left.problems, *right.problems]
    lranks = _chosen(left.ranks, steps, devices)
    rranks = _chosen(right.ranks, steps, devices) if len(right.ranks) > 1 else list(right.ranks)
    if not lranks:
        raise PrecisionToolError(
            f"no rank directory for step(s) {steps!r} / rank(s) {devices!r} "
            f"(present: {', '.join(rank_label(r) for r in left.ranks) or 'none'})",
            left.given,
        )
    if len(lranks) == 1 and len(rranks) == 1:
        return [(lranks[0], rranks[0])], notes
    by_key = {_rank_key(r): r for r in rranks}
    pairs = []
    for rank in lranks:
        match = by_key.get(_rank_key(rank))
        if match is None:
            raise PrecisionToolError(f"no bench rank directory matches {rank_label(rank)} ({rank.path})", right.given)
        pairs.append((rank, match))
    return pairs, notes


def tensor_slots(call: Call) -> dict[int, tuple[str, int]]:
    """id(tensor) -> (kind, slot) for the tensors of a call, as a row's TensorIndex numbers
    them (:func:`~..formats.msprobe_graph.call_slots`, the one rule)."""
    inputs, outputs = call_slots(call)
    return {
        **{id(t): ("input", i) for i, t in enumerate(inputs)},
        **{id(t): ("output", i) for i, t in enumerate(outputs)},
    }


def _side(rank: RankDir, call: Call | None, tensor: Tensor | None) -> tuple[object | None, str]:
    """The file side of a tensor (its record, when the dump holds statistics or checksums
    only), or why there is none."""
    if tensor is None:
        return None, ""
    if tensor.data_name is None:
        return stats_side(tensor), ""
    try:
        return TensorFileSide(os.fspath(tensor_path(rank.path, tensor)), tensor.dtype), ""
    except PrecisionToolError as exc:
        return None, str(exc)


def _task(pair: TensorPair, slot: tuple[str, int], npu_rank: RankDir, bench_rank: RankDir) -> PairTask:
    key = pair.npu_call.key
    left, left_problem = _side(npu_rank, pair.npu_call, pair.npu)
    right, right_problem = _side(bench_rank, pair.bench_call, pair.bench)
    reason = pair.reason or left_problem or right_problem
    if not reason and right is None:
        reason = "no bench tensor"
    if not reason and isinstance(left, StatsSide) != isinstance(right, StatsSide):
        reason = "one side holds the tensor, the other its statistics only: compare two tensor dumps"
    bench = pair.bench_call.key.text if pair.bench_call is not None and pair.bench is not None else "*"
    return PairTask(
        index=pair.npu_call.order,
        op_type=op_type(key),
        npu_name=key.text,
        ground_truth=bench,
        tensor_index=f"{key.text}:{slot[0]}:{slot[1]}",
        left=left,
        right=right,
        reason=reason,
    )


def msprobe_tasks(sides: MsprobeSides) -> list[PairTask]:
    """The pair tasks of one rank pair, in NPU call order (a row per NPU tensor)."""
    slots: dict[int, tuple[str, int]] = {}
    for call in sides.npu.calls:
        slots.update(tensor_slots(call))
    return [_task(pair, slots[id(pair.npu)], sides.npu_rank, sides.bench_rank) for pair in sides.pairing.pairs]


def tensor_names(sides: MsprobeSides) -> dict[str, TensorPair]:
    """TensorIndex -> the tensor pair of that row (its msprobe names, records and files)."""
    slots: dict[int, tuple[str, int]] = {}
    for call in sides.npu.calls:
        slots.update(tensor_slots(call))
    out = {}
    for pair in sides.pairing.pairs:
        kind, slot = slots[id(pair.npu)]
        out[f"{pair.npu_call.key.text}:{kind}:{slot}"] = pair
    return out


def read_sides(npu_rank: RankDir, bench_rank: RankDir, mapping: dict[str, str] | None) -> MsprobeSides:
    """Read both ranks' dump.json and pair them."""
    npu, bench = read_dump(npu_rank.dump_json), read_dump(bench_rank.dump_json)
    return MsprobeSides(npu_rank, bench_rank, npu, bench, pair_calls(npu, bench, mapping))


def load_mapping(path: str | None) -> dict[str, str] | None:
    """The ``--mapping`` file's pairs (None without one)."""
    return read_mapping_file(path) if path else None


def comparison_tag(rank: RankDir) -> str:
    """The CSV name's tag of a rank pair: ``msprobe_step0_rank1``."""
    return safe_file_name("msprobe_" + rank_label(rank).replace(", ", "_").replace(" ", ""), limit=120)


def sides_notes(sides: MsprobeSides) -> list[str]:
    """What the user should know about one rank pair: damaged dumps, fused or absorbed calls,
    bench calls with nothing on the NPU side, another framework on each side."""
    notes = [*sides.npu.problems, *sides.bench.problems, *sides.pairing.notes]
    if sides.pairing.bench_only:
        first = sides.pairing.bench_only[0].key.text
        notes.append(
            f"{rank_label(sides.npu_rank)}: {len(sides.pairing.bench_only)} bench call(s) "
            f"have no NPU counterpart, the first {first}"
        )
    if sides.npu.framework and sides.bench.framework and sides.npu.framework != sides.bench.framework:
        notes.append(
            f"the NPU dump is {sides.npu.framework}, the bench dump {sides.bench.framework}: "
            "calls pair by name and order only where both frameworks name them alike"
        )
    return notes
