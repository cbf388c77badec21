"""Tensor names on an msprobe data root, for ``pt`` and ``cp``: what the user types to a tensor
of a call and its ``.pt`` / ``.npy`` file.

NAME is ``[npu:|bench:][RANK:]TENSOR``:

- ``TENSOR``: msprobe's full name of a tensor, as its compare and mapping files write it
  (``Functional.linear.0.forward.input.0``, ``...forward.output.0``, ``...input.weight``,
  ``Module.fc.Linear.forward.0.parameters.weight``, ``Module.fc.Linear.parameters_grad.0.weight``),
  its file name under ``dump_tensor_data`` (``Functional.linear.0.forward.input.0.pt``), a call
  key with ``:input:N`` / ``:output:N`` (a result row's TensorIndex), or a call key alone (its
  ``output:0``, else its ``input:0``);
- ``bench:`` looks in the bench dump (``bench/``), ``npu:`` (the default) in ``npu/``;
- ``RANK:`` (``step0/rank1:``) picks a rank directory, by its name as ``ls`` shows it; without
  it, a name that several rank directories hold is ambiguous and the error lists each.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..errors import PrecisionToolError
from ..formats.graph_model import Model, Op
from .msprobe_calls import CallTensor, call_tensors
from .workspace import MSPROBE_BENCH, MSPROBE_NPU, OpRef, Workspace

MAX_CANDIDATES = 10
_SIDE = re.compile(r"^(?P<side>npu|bench):(?P<rest>.+)$")
_SELECTOR = re.compile(r"^(?P<name>.+):(?P<kind>input|output):(?P<slot>[0-9]+)$")


@dataclass(frozen=True)
class MsprobeTensor:
    """A tensor NAME designates: the call (``ref``: its side, rank directory and op) and the
    tensor of it."""

    ref: OpRef
    tensor: CallTensor


@dataclass(frozen=True)
class _Spec:
    side: str
    rank: str | None
    name: str
    kind: str | None = None
    slot: int | None = None


def _parse(text: str) -> _Spec:
    side = MSPROBE_NPU
    found = _SIDE.match(text)
    if found:
        side, text = found["side"], found["rest"]
    kind = slot = None
    selector = _SELECTOR.match(text)
    if selector:
        text, kind, slot = selector["name"], selector["kind"], int(selector["slot"])
    rank, _, name = text.rpartition(":")  # call keys and tensor names hold no ':'
    if not name.strip():
        raise PrecisionToolError(f"empty tensor name in '{text}'")
    return _Spec(side, rank or None, name, kind, slot)


def _names(workspace: Workspace, model: Model) -> dict[str, tuple[Op, str, int]]:
    """Full tensor name and file name -> (op, kind, slot) of one model, built once."""

    def build() -> dict[str, tuple[Op, str, int]]:
        index: dict[str, tuple[Op, str, int]] = {}
        for op in model.graphs[0].ops:
            for kind, descs in (("input", op.input_descs), ("output", op.output_descs)):
                for slot, desc in enumerate(descs):
                    index.setdefault(desc.name, (op, kind, slot))
                    file_name = desc.attrs.get("data_name")
                    if isinstance(file_name, str):
                        index.setdefault(file_name, (op, kind, slot))
        return index

    return workspace.remembered(("msprobe tensor names", id(model)), build)


def _in_model(workspace: Workspace, model: Model, spec: _Spec) -> tuple[Op, str, int] | None:
    graph = model.graphs[0]
    op = graph.get(spec.name)
    if op is not None:
        if spec.kind is not None:
            return op, spec.kind, spec.slot
        return (op, "output", 0) if op.output_descs else (op, "input", 0)
    if spec.kind is not None:
        return None  # a selector follows a call key only
    return _names(workspace, model).get(spec.name)


def _models(workspace: Workspace, spec: _Spec) -> list[Model]:
    models = workspace.msprobe_models(spec.side)
    if not models:
        raise PrecisionToolError(
            f"no msprobe dump in {spec.side}/ to look '{spec.name}' up in", workspace.data.path / spec.side
        )
    if spec.rank is None:
        return models
    chosen = [m for m in models if m.name == spec.rank]
    if not chosen:
        present = ", ".join(m.name for m in models[:MAX_CANDIDATES])
        raise PrecisionToolError(f"no rank directory '{spec.rank}' in {spec.side}/ (present: {present})")
    return chosen


def _label(spec: _Spec, model: Model, several: bool, name: str) -> str:
    rank = f"{model.name}:" if several or spec.rank else ""
    return f"{'bench:' if spec.side == MSPROBE_BENCH else ''}{rank}{name}"


def _no_match(workspace: Workspace, spec: _Spec, models: list[Model]) -> PrecisionToolError:
    keys = [op.name for model in models for op in model.graphs[0].ops]
    near = difflib.get_close_matches(spec.name, list(dict.fromkeys(keys)), n=5, cutoff=0.6)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    what = f"{spec.name}:{spec.kind}:{spec.slot}" if spec.kind else spec.name
    return PrecisionToolError(
        f"no tensor of the msprobe dump in {spec.side}/ matches '{what}' (give "
        "KEY.input.0, KEY:output:0 or a call key; bench:NAME for the bench "
        f"side){hint}"
    )


def find_msprobe_tensor(workspace: Workspace, text: str) -> tuple[MsprobeTensor, str]:
    """The tensor NAME ``text`` designates and its label (see the module docstring).

    Raises:
        PrecisionToolError: no such tensor or call, no such slot, or several rank
            directories hold it (the error names each as ``RANK:NAME``).
    """
    spec = _parse(text)
    models = _models(workspace, spec)
    found = [(model, hit) for model in models if (hit := _in_model(workspace, model, spec)) is not None]
    if not found:
        raise _no_match(workspace, spec, models)
    if len(found) > 1:
        shown = [f"{m.name}:{spec.name}" for m, _ in found[:MAX_CANDIDATES]]
        more = f" (and {len(found) - MAX_CANDIDATES} more)" if len(found) > MAX_CANDIDATES else ""
        raise PrecisionToolError(f"'{spec.name}' is in several rank directories; give one: {', '.join(shown)}{more}")
    model, (op, kind, slot) = found[0]
    items = [t for t in call_tensors(model, op) if t.kind == kind]
    if slot >= len(items):
        have = ", ".join(f"{t.index_name}" for t in call_tensors(model, op)) or "none"
        raise PrecisionToolError(f"{op.name} has no {kind}:{slot} (it has: {have})")
    ref = OpRef(spec.side, model, model.graphs[0], op)
    return MsprobeTensor(ref, items[slot]), _label(spec, model, len(models) > 1, items[slot].name)
