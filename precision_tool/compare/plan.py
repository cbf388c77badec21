"""Planning: from a data root, or two directories, to the comparisons to run.

A :class:`Comparison` is one result CSV to write: the pair tasks of one (device, sub-graph,
step) directory in execution order, with a label for the user and notes about the pairing.

* :func:`plan_comparisons` without ``left``/``right``: the newest run of ``npu/debug_0`` (the
  steps of TF_DUMP_STEP, or ``steps``) against ``tf/dump``, each step directory paired through
  the Build graph whose name is the step directory's model name (or the only graph; ``graph``
  picks one), by name when there is no graph.
* with ``left``/``right``: any two directories (see :mod:`.dir_pairing`): NPU vs golden npy, NPU vs
  NPU, npy vs npy; two msprobe dumps (PyTorch, MindSpore: :mod:`.msprobe_plan`), one comparison
  per rank pair. A data root whose ``npu/`` is an msprobe dump and which has ``bench/`` is
  compared the same way without ``left``/``right``.

``vc``, ``ac``, the checks and :func:`precision_tool.compare` all plan through here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError
from ..formats.dump_names import MAPPING_FILE, DumpListing
from ..formats.golden import GoldenIndex
from ..formats.graph_model import GraphDesc, Model, TensorName
from ..formats.text import safe_file_name
from ..formats.tree import StepDir
from .dir_pairing import DirSide, match_steps, pair_npu_npu, pair_npy_npy, resolve_dir
from .golden_pairing import PairTask, golden_for, graph_pairs, pair_by_name
from .paired_tasks import PairedTasks
from .workspace import Workspace

if TYPE_CHECKING:  # msprobe's planning is imported only for msprobe dumps (start-up cost)
    from .msprobe_plan import MsprobeSides

MAX_TAG = 180  # "result_{stamp}_{tag}.csv" stays far below the 255 a file name may have


@dataclass
class Comparison:
    """One result to produce: its tasks in execution order, a label, and notes about the pairing.

    Attributes:
        label: what the user reads (``device 0, ge_default_..., step 0``).
        tag: a file-name-safe tag for the CSV name.
        tasks: the pair tasks, in execution order (a list, or :class:`~.paired_tasks.PairedTasks`
            still pairing).
        notes: warnings about the pairing (e.g. no Build graph: paired by name).
        npu_vs_npu: both sides are NPU dumps (the CSV gets a golden-side Address column).
        step: the (left) step directory compared; None for npy vs npy and msprobe dumps.
        msprobe: for msprobe dumps, what was compared and how it was paired.
    """

    label: str
    tag: str
    tasks: Sequence[PairTask]
    notes: list[str] = field(default_factory=list)
    npu_vs_npu: bool = False
    step: StepDir | None = None
    msprobe: MsprobeSides | None = None  # msprobe dumps: the ranks, their dump.json, the pairing


def _all_graphs(models: list[Model]) -> list[tuple[Model, GraphDesc]]:
    return [(m, g) for m in models for g in m.graphs]


def pick_graph(
    models: list[Model], wanted: str | None, workspace: Workspace | None = None, graph_dir: Path | None = None
) -> GraphDesc | None:
    """The graph ``wanted`` names: a graph file on disk (any form, any name: atc's JSON, an
    ``.om``), a model or graph name among ``models``, or a file of ``graph_dir`` by its name
    (read although the Build graphs there are others). Files are read through ``workspace``
    (once per session) when given.

    None when ``wanted`` is None. Raises PrecisionToolError when nothing has that name.
    """
    if wanted is None:
        return None
    from ..formats.graph import read_graph  # its readers import protobuf: not for msprobe dumps

    read = workspace.graph_file if workspace is not None else read_graph
    if Path(wanted).expanduser().is_file():
        model = read(Path(wanted).expanduser())
        return model.graphs[0] if model.graphs else None
    for model, graph in _all_graphs(models):
        file_name = model.source_path.name if model.source_path else None
        if wanted in (graph.name, model.name, file_name):
            return graph
    if graph_dir is not None and Path(wanted).name == wanted and (graph_dir / wanted).is_file():
        model = read(graph_dir / wanted)
        return model.graphs[0] if model.graphs else None
    names = ", ".join(g.name for _, g in _all_graphs(models)) or "none"
    raise PrecisionToolError(f"no Build graph called {wanted!r} (graphs: {names})")


def graph_for_step(step: StepDir, models: list[Model], chosen: GraphDesc | None = None) -> GraphDesc | None:
    """The Build graph of a step directory: ``chosen`` if given, else the graph (or model) named
    like the step directory's model, else the only graph there is; None otherwise."""
    if chosen is not None:
        return chosen
    graphs = _all_graphs(models)
    for model, graph in graphs:
        if step.model_name is not None and step.model_name in (graph.name, model.name):
            return graph
    return graphs[0][1] if len(graphs) == 1 else None


def step_tag(step: StepDir) -> str:
    """The CSV name's tag: model, id, device, step; safe and short enough for a file name."""
    parts = [
        step.model_name,
        step.model_id,
        f"dev{step.device}" if step.device is not None else None,
        f"step{step.step}" if step.step is not None else None,
    ]
    text = "_".join(str(p) for p in parts if p is not None) or step.path.name
    return safe_file_name(re.sub(r"[^A-Za-z0-9_.-]", "_", text), limit=MAX_TAG)


def step_label(step: StepDir) -> str:
    """``device D, MODEL, step S``: how a step directory is named to the user."""
    return f"device {step.device}, {step.model_name}, step {step.step}"


def unread_mapping_notes(*sides: DumpListing | GoldenIndex) -> list[str]:
    """A note for each side's ``mapping.csv`` that was not read at all (a FIFO, too large):
    the files it aliases are left out of the comparison, and this says why."""
    return [f"{side.directory / MAPPING_FILE}: {side.unread_mapping}" for side in sides if side.unread_mapping]


def npu_vs_golden(step: StepDir, listing: DumpListing, golden: GoldenIndex, graph: GraphDesc | None) -> Comparison:
    """One step directory against the golden index, through ``graph`` (by name without one)."""
    notes = unread_mapping_notes(listing, golden)
    if graph is None:
        notes.insert(
            0, f"{step_label(step)}: no Build graph for {step.model_name}: paired by name (inputs not compared)"
        )
        tasks = pair_by_name(listing, golden)
    else:
        tasks = PairedTasks(graph_pairs(graph, listing, golden))  # paired as the run takes them
    return Comparison(step_label(step), step_tag(step), tasks, notes, step=step)


def plan_msprobe(
    npu: str | Path, bench: str | Path, steps: str | None = None, devices: str | None = None, mapping: str | None = None
) -> list[Comparison]:
    """One comparison per rank pair of two msprobe dumps (:mod:`.msprobe_plan`); ``mapping`` is
    a ``-dm`` style tensor mapping file whose pairs win over the pairing's own."""
    from .msprobe_plan import (
        comparison_tag,
        load_mapping,
        msprobe_tasks,
        rank_label,
        rank_pairs,
        read_sides,
        sides_notes,
    )

    pairs, notes = rank_pairs(npu, bench, steps, devices)
    pairs_given = load_mapping(mapping)
    plans = []
    for npu_rank, bench_rank in pairs:
        sides = read_sides(npu_rank, bench_rank, pairs_given)
        plans.append(
            Comparison(
                rank_label(npu_rank),
                comparison_tag(npu_rank),
                msprobe_tasks(sides),
                notes + sides_notes(sides),
                npu_vs_npu=True,
                msprobe=sides,
            )
        )
    return plans


def _plan_default(
    workspace: Workspace, graph: str | None, steps: str | None, devices: str | None, mapping: str | None = None
) -> list[Comparison]:
    data = workspace.data
    if workspace.is_msprobe:  # npu/ is an msprobe dump: against bench/
        if not data.bench.is_dir():
            raise PrecisionToolError(
                "npu/ holds an msprobe dump but there is no bench/ dump to compare it with (vc -lt npu -rt BENCH_DUMP)",
                data.bench,
            )
        return plan_msprobe(data.npu, data.bench, steps, devices, mapping)
    tree = workspace.dump_tree("debug_0")
    spec = steps if steps is not None else workspace.config.tf_dump_step
    chosen = tree.select(steps=spec, devices=devices)
    if not chosen:
        run = tree.newest_run()
        present = ", ".join(str(s) for s in tree.steps(run)) or "none"
        on = ", ".join(str(d) for d in tree.devices(run)) or "none"
        raise PrecisionToolError(
            f"no step directory for step(s) {spec!r}"
            + (f" on device(s) {devices!r}" if devices else "")
            + f" in the newest run (steps present: {present}; devices: {on}); "
            "use --step / --device",
            tree.root,
        )
    golden, models = workspace.golden(), workspace.models("debug_0")
    picked = pick_graph(models, graph, workspace, workspace.data.graph_dir("debug_0"))
    return [npu_vs_golden(s, tree.listing(s), golden, graph_for_step(s, models, picked)) for s in chosen]


def _plan_dirs(
    workspace: Workspace,
    left: str,
    right: str,
    graph: str | None,
    steps: str | None,
    devices: str | None,
    mapping: str | None = None,
) -> list[Comparison]:
    from ..formats.msprobe_tree import is_msprobe_dump  # the directory modes only

    if is_msprobe_dump(left) or is_msprobe_dump(right):
        return plan_msprobe(left, right, steps, devices, mapping)
    spec = steps if steps is not None else workspace.config.tf_dump_step
    lside, rside = resolve_dir(left, spec, devices), resolve_dir(right, spec, devices)
    if not lside.is_npu and rside.is_npu:
        raise PrecisionToolError(
            "put the NPU dump directory on the left (-lt) and the npy directory on the right (-rt)"
        )
    if not lside.is_npu:
        tasks = pair_npy_npy(lside.golden, rside.golden)
        return [Comparison(f"{lside.path} vs {rside.path}", "npy", tasks)]
    if not rside.is_npu:
        models = workspace.models_in(lside.graph_dir)
        picked = pick_graph(models, graph, workspace, lside.graph_dir)
        return [
            npu_vs_golden(s, lside.tree.listing(s), rside.golden, graph_for_step(s, models, picked))
            for s in lside.steps
        ]
    return _plan_npu_npu(lside, rside)


def _plan_npu_npu(lside: DirSide, rside: DirSide) -> list[Comparison]:
    plans = []
    for lstep, rstep in match_steps(lside.steps, rside.steps):
        if rstep is None:
            raise PrecisionToolError(f"no step directory in {rside.path} matches {lstep.path}")
        left, right = lside.tree.listing(lstep), rside.tree.listing(rstep)
        label = f"{step_label(lstep)} vs {rstep.path.name}"
        plans.append(
            Comparison(
                label,
                step_tag(lstep),
                pair_npu_npu(left, right),
                unread_mapping_notes(left, right),
                npu_vs_npu=True,
                step=lstep,
            )
        )
    return plans


def plan_comparisons(
    workspace: Workspace,
    *,
    left: str | None = None,
    right: str | None = None,
    graph: str | None = None,
    steps: str | None = None,
    devices: str | None = None,
    mapping: str | None = None,
) -> list[Comparison]:
    """The comparisons to run (see the module docstring).

    Args:
        workspace: the data root and its settings.
        left, right: two directories to compare, or both None for debug_0 against tf/dump.
        graph: the Build graph to pair with (a file, or a model/graph name). Defaults to None:
            the graph named like each step directory's model, or the only one.
        steps: the steps to compare, as TF_DUMP_STEP. Defaults to None: the configured steps.
        devices: the devices (ranks) to compare, ``"0,3-5"``. Defaults to None: every device.
            NPU vs NPU pairs device i with device i.
        mapping: msprobe dumps only: a tensor mapping file (msprobe's ``-dm`` YAML) whose pairs
            win over the pairing's own.

    Raises:
        PrecisionToolError: only one of left/right, no dumps, no such step, graph or directory.
    """
    if (left is None) != (right is None):
        raise PrecisionToolError("give both -lt and -rt, or neither")
    if left is not None:
        return _noted_once(_plan_dirs(workspace, left, right, graph, steps, devices, mapping))
    return _noted_once(_plan_default(workspace, graph, steps, devices, mapping))


def _noted_once(plans: list[Comparison]) -> list[Comparison]:
    """``plans`` with each note kept only where it first appears (the golden side's, for one,
    is every step's)."""
    seen: set[str] = set()
    for plan in plans:
        plan.notes = [note for note in plan.notes if note not in seen]
        seen.update(plan.notes)
    return plans


@dataclass(frozen=True)
class GoldenCounterpart:
    """The golden tensor an NPU tensor is compared with, and its file (None: not dumped)."""

    tensor: TensorName
    path: Path | None


def golden_counterpart(workspace: Workspace, op_name: str, kind: str, index: int) -> GoldenCounterpart | None:
    """What ``vc`` compares tensor ``kind:index`` of NPU op ``op_name`` with, by the one pairing
    rule, through the first Build graph (debug_0 first) that holds the op; None when no graph
    does or the graph has no such input. A graph that cannot be read is passed over (the
    caller shows the tensor anyway)."""
    for debug in workspace.debug_names():
        try:
            for ref in workspace.find_ops(op_name, debug):
                source = golden_for(ref.graph, ref.op, kind, index)
                if source is not None:
                    return GoldenCounterpart(source, _golden_path(workspace, source))
        except PrecisionToolError:  # this debug dir's graphs cannot be read: the next one's
            continue
    return None


def _golden_path(workspace: Workspace, source: TensorName) -> Path | None:
    try:
        golden = workspace.golden()
    except PrecisionToolError:
        return None
    return golden.latest_path(*source)
