"""What ``vc -lt LEFT -rt RIGHT`` compares: the two directories, and their pairing.

A directory given to ``-lt`` / ``-rt`` is resolved by :func:`resolve_dir`:

* a directory holding ``.npy`` files directly is an npy directory (golden naming
  ``{name}.{output_index}.{timestamp}.npy``; other ``.npy`` names are matched by file name);
* ``npu/debug_N`` (it has a ``dump/`` folder) is that run's dump tree, and its ``graph/`` folder
  holds the Build graphs;
* anything else is read as an NPU dump tree or part of one (a run, device, model or step
  directory). The newest run is used, in the steps asked for; a step directory given directly
  is used whatever its step number.

Pairing, every result in execution order with the reason when something is not compared:

* NPU vs NPU (:func:`pair_npu_npu`): the latest launch of each left op against the right launch
  of the same op name, tensor by kind and index (``input:0`` with ``input:0``). Ops only on the
  right get one row each at the end.
* npy vs npy (:func:`pair_npy_npy`): the latest file of each golden ``(name, index)`` of the left
  against the right's, left files in timestamp order; names outside the golden naming by
  identical file name. Right-only tensors get a row each at the end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.dump_names import DumpFileRef, DumpListing
from ..formats.golden import GoldenIndex, read_golden
from ..formats.tree import DumpTree, StepDir
from .golden_pairing import DumpSide, NpySide, PairTask, latest_launches, read_header


@dataclass(frozen=True)
class DirSide:
    """One resolved ``-lt`` / ``-rt`` directory."""

    path: Path
    kind: str  # "npu" or "npy"
    steps: list[StepDir] = field(default_factory=list)  # npu: the step directories chosen
    tree: DumpTree | None = None
    golden: GoldenIndex | None = None
    graph_dir: Path | None = None  # npu: where its Build graphs would be

    @property
    def is_npu(self) -> bool:
        return self.kind == "npu"


def _has_npy(path: Path) -> bool:
    return any(p.suffix == ".npy" and p.is_file() for p in path.iterdir())


def graph_dir_for(path: Path) -> Path | None:
    """``.../debug_N/graph`` for a path inside ``.../debug_N/dump``, else None."""
    for parent in [path, *path.parents]:
        if parent.name == "dump" and (parent.parent / "graph").is_dir():
            return parent.parent / "graph"
    return None


def resolve_dir(path: str | Path, steps: str | None, devices: str | None = None) -> DirSide:
    """Resolve one ``-lt``/``-rt`` directory (see the module docstring).

    Raises PrecisionToolError for a path that is not a directory or holds neither ``.npy``
    files nor NPU dumps in the steps asked for.
    """
    path = Path(path)
    if not path.is_dir():
        raise PrecisionToolError("not a directory" if path.exists() else "no such directory", path)
    try:
        if _has_npy(path):
            return DirSide(path, "npy", golden=read_golden(path))
    except OSError as exc:
        raise PrecisionToolError(f"cannot list directory: {exc.strerror or exc}", path) from None
    root = path / "dump" if (path / "dump").is_dir() else path
    tree = DumpTree(root)
    found = tree.step_dirs()
    if len(found) == 1 and found[0].path == root:
        chosen = found  # a step directory given directly: whatever its step number
    else:
        chosen = tree.select(steps=steps, devices=devices)
    if not chosen:
        what = f" in step(s) {steps}" if steps else ""
        raise PrecisionToolError(f"no .npy files and no NPU dump step directories{what}", path)
    graph_dir = path / "graph" if root != path else graph_dir_for(path.resolve())
    if graph_dir is not None and not graph_dir.is_dir():
        graph_dir = None
    return DirSide(path, "npu", chosen, tree, graph_dir=graph_dir)


def match_steps(left: list[StepDir], right: list[StepDir]) -> list[tuple[StepDir, StepDir | None]]:
    """Each left step directory with the right one of the same (device, model id, step).

    Model names carry the run's timestamp, so they are not compared. With one step directory
    on each side, those two are paired whatever their labels.
    """
    if len(left) == 1 and len(right) == 1:
        return [(left[0], right[0])]
    by_key = {(s.device, s.model_id, s.step): s for s in right}
    return [(s, by_key.get((s.device, s.model_id, s.step))) for s in left]


def _npu_op_tasks(position: int, ref: DumpFileRef, right: DumpFileRef | None) -> list[PairTask]:
    left_dump, problem = read_header(ref)
    right_dump, right_problem = read_header(right) if right else (None, "")
    name = left_dump.op_name if left_dump else ref.name.op_name
    truth = right_dump.op_name if right_dump else right.name.op_name if right else "*"
    base = dict(index=position, op_type=ref.name.op_type, npu_name=name, ground_truth=truth)
    if left_dump is None:
        return [PairTask(**base, tensor_index=None, left=None, right=None, reason=problem)]
    tasks = []
    for tensor in left_dump.tensors:
        tensor_index = f"{name}:{tensor.kind}:{tensor.index}"
        left = DumpSide(ref.location, tensor.kind, tensor.index)
        if right is None:
            reason = f"no dump of {name} in the right directory"
        elif right_dump is None:
            reason = f"right dump unreadable: {right_problem}"
        elif tensor.index >= len(right_dump.inputs if tensor.kind == "input" else right_dump.outputs):
            reason = f"the right dump of {name} has no {tensor.kind} {tensor.index}"
        else:
            tasks.append(
                PairTask(
                    **base,
                    tensor_index=tensor_index,
                    left=left,
                    right=DumpSide(right.location, tensor.kind, tensor.index),
                )
            )
            continue
        tasks.append(PairTask(**base, tensor_index=tensor_index, left=left, right=None, reason=reason))
    return tasks


def pair_npu_npu(left: DumpListing, right: DumpListing) -> list[PairTask]:
    """NPU step directory vs NPU step directory, by op name; see the module docstring."""
    tasks: list[PairTask] = []
    seen: set[str] = set()
    refs = latest_launches(left)
    for position, ref in enumerate(refs):
        other = right.latest(ref.name.op_name)
        if other is not None:
            seen.add(other.path.name)
        tasks.extend(_npu_op_tasks(position, ref, other))
    extra = [r for r in latest_launches(right) if r.path.name not in seen]
    for position, ref in enumerate(extra, start=len(refs)):
        tasks.append(
            PairTask(
                position,
                ref.name.op_type,
                ref.name.op_name,
                ref.name.op_name,
                None,
                None,
                None,
                reason=f"{ref.name.op_name} is only in the right directory",
            )
        )
    return tasks


def _npy_task(
    position: int, name: str, index: int, left: str | Path | None, right: str | Path | None, reason: str = ""
) -> PairTask:
    return PairTask(
        position,
        "",
        name,
        name if right else "*",
        f"{name}:output:{index}",
        NpySide(os.fspath(left)) if left else None,
        NpySide(os.fspath(right)) if right else None,
        reason,
    )


def _unnamed_npy(golden: GoldenIndex) -> dict[str, Path]:
    return {p.name: p for p, _ in golden.invalid if p.suffix == ".npy"}


def pair_npy_npy(left: GoldenIndex, right: GoldenIndex) -> list[PairTask]:
    """npy directory vs npy directory; see the module docstring."""
    entries = sorted((left.entry(*key) for key in left.keys()), key=lambda e: (e.timestamp, e.file_name))
    tasks = []
    for entry in entries:
        key = (entry.name, entry.output_index)
        if key in right:
            tasks.append(_npy_task(len(tasks), *key, entry.location, right.entry(*key).location))
        else:
            tasks.append(
                _npy_task(
                    len(tasks),
                    *key,
                    entry.location,
                    None,
                    f"no {entry.name}.{entry.output_index}.*.npy in {right.directory}",
                )
            )
    right_unnamed = _unnamed_npy(right)
    for file_name, path in sorted(_unnamed_npy(left).items()):
        other = right_unnamed.get(file_name)
        tasks.append(
            _npy_task(len(tasks), file_name, 0, path, other, "" if other else f"no {file_name} in {right.directory}")
        )
    for key in right.keys():
        if key not in left:
            tasks.append(
                _npy_task(
                    len(tasks),
                    *key,
                    None,
                    right.entry(*key).location,
                    f"{key[0]}.{key[1]} is only in the right directory",
                )
            )
    return tasks
