"""One msprobe call as the verdict's replay and ``why`` read it: its tensors on the NPU and the
bench side, its arguments, and its float64 replay (:mod:`.replay.torch_api`).

A result CSV of two msprobe dumps names the rank directories it compared in its manifest
(:func:`msprobe_dumps`); a row's NPUDump is the NPU call's key, its GroundTruth the bench
call's. A rank's ``dump.json`` is parsed once per session and file (keyed by its identity,
:meth:`~.workspace.Workspace.remembered`); only the tensor files of the call replayed are
opened. A tensor's slot is :mod:`.msprobe_plan`'s (inputs, keyword arguments and parameters in
dump order, then outputs), and it pairs with the tensor at the same place of the bench call
(``output.0`` with ``output.0``), the pairing's rule for calls that pair.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PrecisionToolError
from ..formats.file_identity import FileIdentities
from ..formats.msprobe_dump import Call, Tensor, Value, nest, read_dump, tensor_path
from ..formats.msprobe_graph import op_type
from ..formats.npy_file import dump_dtype
from .golden_pairing import TensorFileSide
from .manifest import info_of
from .msprobe_plan import tensor_slots
from .replay import ReplayError
from .replay.torch_api import Api, find_api, replay_call
from .sides import open_tensor_file_side

DUMP_JSON = "dump.json"


@dataclass(frozen=True)
class MsprobeDumps:
    """The rank directories an msprobe comparison compared: the NPU's and the bench's."""

    npu: Path
    bench: Path | None = None


def msprobe_dumps(csv_path: str | Path) -> MsprobeDumps | None:
    """The rank directories of the result CSV ``csv_path`` (from its manifest); None when it is
    no comparison of msprobe dumps."""
    info = info_of(Path(csv_path))
    if info is None or not info.npu_dump:
        return None
    return MsprobeDumps(Path(info.npu_dump), Path(info.bench_dump) if info.bench_dump else None)


def comparison_dumps(comparison) -> MsprobeDumps | None:
    """The rank directories of a planned comparison (:class:`~.plan.Comparison`), None when it
    is no comparison of msprobe dumps."""
    sides = getattr(comparison, "msprobe", None)
    return None if sides is None else MsprobeDumps(sides.npu_rank.path, sides.bench_rank.path)


def read_tensor(rank_dir: Path, tensor: Tensor) -> np.ndarray:
    """The tensor's file (``.pt`` or ``.npy``, as ``dump.json``'s dtype).

    Raises:
        PrecisionToolError: it has no file, or the file cannot be read.
    """
    return open_tensor_file_side(TensorFileSide(os.fspath(tensor_path(rank_dir, tensor)), tensor.dtype)).array


@dataclass(frozen=True)
class MsprobeSide:
    """One tensor of the call and the bench tensor at its place (None: none); what ``why``
    and the verdict read of it, as of a GE op's :class:`~.op_tensors.TensorSide`."""

    kind: str
    slot: int
    leaf: Tensor
    rank_dir: Path
    bench: Tensor | None = None
    bench_dir: Path | None = None
    source_text: str = ""  # msprobe's name of the bench tensor
    network_input: bool = False  # msprobe dumps do not say which tensors the network was fed
    host_format: str | None = None

    @property
    def label(self) -> str:
        """``input:0``, ``output:1``."""
        return f"{self.kind}:{self.slot}"

    @property
    def source(self) -> str | None:
        """The bench tensor's name, None without one."""
        return self.source_text or None

    @property
    def dtype(self) -> np.dtype:
        """The NPU tensor's dtype (float32 for one numpy lacks)."""
        return dump_dtype(self.leaf.dtype or "") or np.dtype(np.float32)

    def npu(self) -> np.ndarray:
        """The NPU tensor (PrecisionToolError when it cannot be read)."""
        return read_tensor(self.rank_dir, self.leaf)

    def golden(self) -> np.ndarray | None:
        """The bench tensor, None without one (PrecisionToolError when it cannot be read)."""
        return None if self.bench is None or self.bench_dir is None else read_tensor(self.bench_dir, self.bench)


def _plain(value: Any, arrays: dict) -> Any:
    """An argument as the replay takes it: tensors as arrays, values as Python values."""
    if isinstance(value, Tensor):
        return arrays[value.path]
    if isinstance(value, Value):
        if value.fields:  # a process group, a memory format: nothing a replay computes with
            return value
        if value.type == "slice" and isinstance(value.value, tuple) and len(value.value) == 3:
            return slice(*value.value)
        return list(value.value) if isinstance(value.value, tuple) else value.value
    if isinstance(value, list):
        return [_plain(item, arrays) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item, arrays) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class MsprobeLaunch:
    """One msprobe call, as :class:`~.replay.launch.GeLaunch` is one GE op launch: its name and
    API, its tensor sides (slot order), the API's replay (None: no replay for it)."""

    call: Call
    framework: str | None
    inputs: tuple[MsprobeSide, ...]
    outputs: tuple[MsprobeSide, ...]
    api: Api | None
    dump_name: str = DUMP_JSON
    returned: Call | None = None  # a module call: the inner call whose outputs it returns
    rank_dir: Path | None = None

    @property
    def name(self) -> str:
        """The call's key."""
        return self.call.key.text

    @property
    def op_type(self) -> str:
        """``Functional.linear``."""
        return op_type(self.call.key)

    @property
    def noise_type(self) -> str:
        """The TF op type whose noise model fits the API (:mod:`.noise`)."""
        return self.api.op_type if self.api is not None else self.op_type

    @property
    def replayable(self) -> bool:
        """Whether :meth:`replay` can run: the API has a replay, or the call is a module whose
        outputs an inner call returned."""
        return self.api is not None or self.returned is not None

    @property
    def run_dtype(self) -> np.dtype | None:
        """The dtype the call ran in: its first output's."""
        return self.outputs[0].dtype if self.outputs else None

    def replay(self, inputs: list, outputs: list) -> tuple[list[np.ndarray], str, list[str]]:
        """The call replayed from its NPU inputs (arrays in slot order, None where unreadable):
        (outputs, what was replayed, notes). Raises ReplayError."""
        if self.api is None and self.returned is not None and self.rank_dir is not None:
            return self._returned_outputs()
        if self.api is None:
            raise ReplayError(f"no replay for {self.op_type}")
        missing = [side.label for side, array in zip(self.inputs, inputs) if array is None]
        if missing:
            raise ReplayError(f"{', '.join(missing)} cannot be read")
        arrays = {side.leaf.path: array for side, array in zip(self.inputs, inputs)}
        args = _plain(nest(self.call.leaves, "input_args"), arrays) or []
        kwargs = _plain(nest(self.call.leaves, "input_kwargs"), arrays) or {}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ReplayError(f"{self.name}: input_args is no list or input_kwargs no dict")
        replayed, notes = replay_call(self.api, args, kwargs, self.framework, self.run_dtype)
        return replayed, self.op_type, notes

    def _returned_outputs(self) -> tuple[list[np.ndarray], str, list[str]]:
        """A module computes nothing itself: its outputs are those of the inner call that
        returned them, read from that call's NPU files, so the module is judged by whether it
        changes them (it never does: the error is the inner call's)."""
        outputs = [t for t in self.returned.tensors if t.section == "output"]
        try:
            arrays = [np.asarray(read_tensor(self.rank_dir, t), dtype=np.float64) for t in outputs]
        except PrecisionToolError as exc:
            raise ReplayError(f"{self.returned.key.text}'s output cannot be read ({exc})") from None
        return arrays, f"{self.returned.key.text}'s output, which the module returns", []


def _record(tensor: Tensor) -> tuple:
    return tensor.dtype, tensor.shape, tensor.max, tensor.min, tensor.mean, tensor.norm


def returned_by(module: Call, calls: dict[str, Call]) -> Call | None:
    """The latest call before ``module`` whose first output has the record of the module's
    first output (dtype, shape and the four statistics): the call the module returned. None
    when no record matches, or the records hold no statistics to match on."""
    outputs = [t for t in module.tensors if t.section == "output"]
    if not outputs or outputs[0].norm is None or outputs[0].max is None:
        return None
    want = _record(outputs[0])
    found = None
    for call in calls.values():
        if call.order >= module.order or call.key.is_module:
            continue
        first = next((t for t in call.tensors if t.section == "output"), None)
        if first is not None and _record(first) == want and (found is None or call.order > found.order):
            found = call
    return found


def _calls(context, rank_dir: Path) -> tuple[str | None, dict[str, Call]]:
    """(framework, calls by key) of a rank's ``dump.json``, parsed once per session and file."""
    path = rank_dir / DUMP_JSON

    def load():
        dump = read_dump(path)
        return dump.framework, {call.key.text: call for call in dump.calls}

    identity = FileIdentities().of(path)
    return context.remembered(("msprobe calls", identity if identity is not None else str(path)), load)


def _sides(call: Call, rank_dir: Path, bench: Call | None, bench_dir: Path | None) -> tuple[list, list]:
    at_place = {t.path: t for t in bench.tensors} if bench is not None else {}
    sides: dict[str, list[MsprobeSide]] = {"input": [], "output": []}
    slots = tensor_slots(call)
    for tensor in call.tensors:
        kind, slot = slots[id(tensor)]
        twin = at_place.get(tensor.path)
        sides[kind].append(
            MsprobeSide(
                kind,
                slot,
                tensor,
                rank_dir,
                twin,
                bench_dir if twin else None,
                bench.msprobe_name(twin) if twin is not None else "",
            )
        )
    return sides["input"], sides["output"]


def find_launch(context, dumps: MsprobeDumps, name: str, bench_key: str | None = None) -> MsprobeLaunch | None:
    """The NPU call ``name`` (a key of the NPU rank's ``dump.json``), paired with the bench call
    ``bench_key`` when given (its tensors become the sides' goldens); None when the NPU dump
    has no such call. A bench dump that cannot be read leaves the sides without goldens.

    Raises:
        PrecisionToolError: the NPU rank's ``dump.json`` cannot be read.
    """
    framework, calls = _calls(context, dumps.npu)
    call = calls.get(name)
    if call is None:
        return None
    bench = None
    if dumps.bench is not None and bench_key and bench_key != "*":
        try:
            bench = _calls(context, dumps.bench)[1].get(bench_key)
        except PrecisionToolError:
            bench = None
    inputs, outputs = _sides(call, dumps.npu, bench, dumps.bench)
    returned = returned_by(call, calls) if call.key.is_module else None
    return MsprobeLaunch(
        call,
        framework,
        tuple(inputs),
        tuple(outputs),
        find_api(call.key, framework),
        returned=returned,
        rank_dir=dumps.npu,
    )
