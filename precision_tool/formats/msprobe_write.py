"""Write msprobe dump trees (PyTorch and MindSpore), for tests and the msprobe sample.

What msprobe writes (read from its source, mindstudio-probe 26.2, and the real dumps in its
repository: ``examples/quick_start/gpu_dump``, ``test/.../mindspore_data``):

``{dump_path}/step{N}/rank{R}/`` (``proc{pid}`` when the run has no rank) holds

* ``dump.json``, written with ``json.dump(indent=1)``: ``task`` (``statistics`` | ``tensor``),
  ``level`` (``L0`` | ``L1`` | ``mix``), ``framework`` (``pytorch`` | ``mindspore``),
  ``dump_data_dir`` (``{dump_path}/step{N}/rank{R}/dump_tensor_data`` as the user spelled
  dump_path, null for statistics) and ``data``: one entry per call, in the order msprobe
  first saw it, a module's entry moved to the end when the module returns (so modules come
  after what they call). Forward entries hold ``input_args``, ``input_kwargs``, ``output`` and,
  for a module, ``parameters`` (its own, ``{}`` when it has none); backward entries ``input``
  (gradients of the outputs) and ``output``; ``...parameters_grad.N`` entries ``{name: [grad]}``.
* a tensor: ``type`` (``torch.Tensor`` | ``mindspore.Tensor``), ``dtype`` (``torch.float16`` |
  ``Float16``), ``shape``, ``Max``, ``Min``, ``Mean``, ``Norm``, then ``requires_grad``
  (PyTorch only), ``data_name`` (tensor task), ``md5`` (summary_mode md5: the CRC-32 of the
  tensor's bytes as 8 hex digits; MindSpore takes bfloat16 as float32 first). Statistics are
  computed in the tensor's own dtype (a bfloat16 Mean is a bfloat16 value), integers and
  float64 in float32; bool has only Max (any) and Min (all); a 0-d tensor has its value four
  times; an empty tensor null four times; complex the statistics of its absolute value
  (MindSpore with a Norm, PyTorch without); PyTorch skips float8. Other values are ``{type,
  value}`` (``int``, ``float``, ``bool``, ``str``, ``slice`` with ``[start, stop, step]``),
  None is null, tuples and lists are lists.
* ``dump_tensor_data/{key}.{input|kwargs|output|parameters}.{index path}.pt`` (PyTorch,
  ``torch.save``) or ``.npy`` (MindSpore, bfloat16 saved as float32): ``input.0``,
  ``input.1.0`` for a list's element, ``kwargs.weight``, ``parameters.bias``;
  ``{key}.{param}.pt`` for a parameter gradient.
* ``stack.json``: ``{"0": [[keys...], [frames...]], ...}``, calls with the same stack grouped,
  in the order the calls started (older msprobe: ``{key: [frames]}``); a frame is
  ``"File {path}, line {n}, in {function}, \\n {source line}"``, innermost first.
* ``construct.json``: ``{node: parent}`` (null for a root), ``{}`` at L1; APIs appear only at
  ``mix``, each when it returns, followed by the modules that had started by then.

Decisions: integers are summarised in float32 as msprobe did up to 2026 (26.2 gives an
integer Max and Min and null Mean and Norm); ``is_recompute`` (older PyTorch entries) is not
written.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import PrecisionToolError
from .torch_write import torch_dtype, write_pt

FRAMEWORKS = ("pytorch", "mindspore")
TASKS = ("statistics", "tensor")
LEVELS = ("L0", "L1", "mix")
SUMMARY_MODES = ("statistics", "md5")
MINDSPORE_DTYPES = {
    np.dtype(np.float16): "Float16",
    np.dtype(ml_dtypes.bfloat16): "BFloat16",
    np.dtype(np.float32): "Float32",
    np.dtype(np.float64): "Float64",
    np.dtype(np.int8): "Int8",
    np.dtype(np.int16): "Int16",
    np.dtype(np.int32): "Int32",
    np.dtype(np.int64): "Int64",
    np.dtype(np.uint8): "UInt8",
    np.dtype(np.uint16): "UInt16",
    np.dtype(np.uint32): "UInt32",
    np.dtype(np.uint64): "UInt64",
    np.dtype(np.bool_): "Bool",
    np.dtype(np.complex64): "Complex64",
    np.dtype(np.complex128): "Complex128",
}
_MODULE_KEY = re.compile(r"^(Module|Cell)\.")
_FLOAT8 = {
    np.dtype(t)
    for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz)
}


@dataclass(frozen=True)
class Tensor:
    """A tensor argument or result; a bare numpy array is one with ``requires_grad=False``."""

    array: np.ndarray
    requires_grad: bool = False


@dataclass(frozen=True)
class Value:
    """A value msprobe records with a type name of its own: ``Value("torch.dtype",
    "torch.float32")``, ``Value("torch.Size", [2, 3])``."""

    type: str
    value: Any


@dataclass
class Call:
    """One entry of dump.json.

    ``key`` says what it is: ``Functional.linear.0.forward`` (an API), ``...backward``,
    ``Module.layers.0.attn.Attention.forward.0`` (a module or cell), ``...backward.0``,
    ``Module.x.Linear.parameters_grad.0``. ``inputs`` are the positional arguments (backward:
    the gradients of the outputs), ``outputs`` the result (a tuple is several results; backward:
    the gradients of the inputs), ``parameters`` a module's own parameters (a gradient entry:
    the gradient of each). ``parent`` is the enclosing module's key for construct.json;
    ``stack`` the frames for stack.json (None: none recorded, as for backward calls).
    ``begin`` and ``end`` place the call's start and return on one clock (they order stack.json
    and construct.json); None: just after every time of the calls before it in the list.
    """

    key: str
    inputs: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    outputs: Any = ()
    parameters: Mapping[str, Any] | None = None
    parent: str | None = None
    stack: Sequence[str] | None = None
    begin: int | None = None
    end: int | None = None

    @property
    def is_module(self) -> bool:
        return bool(_MODULE_KEY.match(self.key))

    @property
    def kind(self) -> str:
        """``forward``, ``backward`` or ``parameters_grad``."""
        if ".parameters_grad." in self.key:
            return "parameters_grad"
        return "backward" if re.search(r"\.backward(\.\d+)?$", self.key) else "forward"


@dataclass(frozen=True)
class DumpSpec:
    """How the run was dumped. ``location`` is the device tag of the ``.pt`` files (``npu:0``
    on the NPU, ``cuda:0`` on a GPU: msprobe saves tensors from the device)."""

    framework: str = "pytorch"
    task: str = "tensor"
    level: str = "mix"
    summary_mode: str = "statistics"
    stack_format: str = "grouped"  # or "keyed", as msprobe wrote it before 2026
    location: str = "cpu"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("framework", FRAMEWORKS),
            ("task", TASKS),
            ("level", LEVELS),
            ("summary_mode", SUMMARY_MODES),
            ("stack_format", ("grouped", "keyed")),
        ):
            if getattr(self, name) not in allowed:
                raise PrecisionToolError(f"msprobe {name} {getattr(self, name)!r} is not one of {', '.join(allowed)}")

    @property
    def suffix(self) -> str:
        return ".pt" if self.framework == "pytorch" else ".npy"


def frame(path: str, line: int, function: str, source: str) -> str:
    """One stack.json frame as msprobe formats it."""
    return f"File {path}, line {line}, in {function}, \n {source}"


# --- statistics ----------------------------------------------------------------------------------


def _python(value: np.generic) -> Any:
    """The Python number ``.item()`` gives (a bfloat16 scalar becomes a float too)."""
    if isinstance(value, (np.bool_, np.integer)):
        return value.item()
    return float(value)


def tensor_statistics(array: np.ndarray, framework: str) -> tuple[Any, Any, Any, Any]:
    """Max, Min, Mean and Norm as msprobe records them for a tensor of ``array``'s dtype."""
    a = np.asarray(array)
    if a.size == 0 or a.dtype in _FLOAT8:
        return None, None, None, None  # PyTorch skips float8 (MindSpore has none here)
    if a.dtype.kind == "c":
        magnitude = np.abs(a)
        norm = _python(np.linalg.norm(magnitude)) if framework == "mindspore" else None
        return _python(magnitude.max()), _python(magnitude.min()), _python(magnitude.mean()), norm
    if a.dtype == np.bool_:
        return bool(a.any()), bool(a.all()), None, None
    if a.ndim == 0:
        value = _python(a[()])
        return value, value, value, value
    # float16, bfloat16 and float32 in their own dtype; integers and float64 in float32
    work = a.dtype if a.dtype in (np.float16, ml_dtypes.bfloat16, np.float32) else np.dtype(np.float32)
    wide = a.astype(work).astype(np.float64)  # msprobe casts first (``data.float()``), then reduces
    with np.errstate(over="ignore", invalid="ignore"):  # a float16 Norm past 65504 is inf, as there
        mean = np.float64(wide.mean()).astype(work)
        norm = np.sqrt(np.square(wide).sum()).astype(work)
    return (_python(a.max().astype(work)), _python(a.min().astype(work)), _python(mean), _python(norm))


def _checksum(array: np.ndarray, framework: str) -> str:
    a = np.asarray(array)
    if framework == "mindspore" and a.dtype == ml_dtypes.bfloat16:
        a = a.astype(np.float32)  # MindSpore hashes bfloat16 as float32, PyTorch its own bytes
    return f"{zlib.crc32(np.ascontiguousarray(a).tobytes()):08x}"


def dtype_text(array: np.ndarray, framework: str) -> str:
    """``torch.bfloat16`` or ``BFloat16``: how the framework prints the tensor's dtype."""
    if framework == "pytorch":
        return torch_dtype(array).text
    try:
        return MINDSPORE_DTYPES[np.asarray(array).dtype]
    except KeyError:
        raise PrecisionToolError(f"no MindSpore dtype for numpy {np.asarray(array).dtype}") from None


# --- dump.json entries ---------------------------------------------------------------------------


@dataclass
class _Files:
    """The tensors of one rank, described and (task tensor) written to dump_tensor_data/."""

    spec: DumpSpec
    directory: Path | None  # None: statistics only

    def tensor(self, tensor: Tensor, data_name: str) -> dict:
        array = np.asarray(tensor.array)
        framework = self.spec.framework
        peak, low, mean, norm = tensor_statistics(array, framework)
        entry = {
            "type": f"{'torch' if framework == 'pytorch' else 'mindspore'}.Tensor",
            "dtype": dtype_text(array, framework),
            "shape": [int(d) for d in array.shape],
            "Max": peak,
            "Min": low,
            "Mean": mean,
            "Norm": norm,
        }
        if framework == "pytorch":
            entry["requires_grad"] = bool(tensor.requires_grad)
        if self.directory is not None:
            entry["data_name"] = data_name
            self._save(array, self.directory / data_name)
        if self.spec.summary_mode == "md5":
            entry["md5"] = _checksum(array, framework)
        return entry

    def _save(self, array: np.ndarray, path: Path) -> None:
        if self.spec.framework == "pytorch":
            write_pt(path, array, location=self.spec.location)
            return
        if array.dtype == ml_dtypes.bfloat16:
            array = array.astype(np.float32)  # MindSpore saves bfloat16 as float32
        with open(path, "wb") as handle:  # a handle, so np.save cannot append a suffix
            np.save(handle, array, allow_pickle=False)

    def describe(self, value: Any, name: str, path: tuple = ()) -> Any:
        """The dump.json form of ``value``; tensors are named ``name`` + ``.{index path}``."""
        if isinstance(value, np.ndarray):
            value = Tensor(value)
        if isinstance(value, Tensor):
            suffix = "".join(f".{part}" for part in path)
            return self.tensor(value, f"{name}{suffix}{self.spec.suffix}")
        if isinstance(value, Value):
            return {"type": value.type, "value": value.value}
        if value is None:
            return None
        if isinstance(value, (bool, int, float, str)):
            return {"type": type(value).__name__, "value": value}
        if value is Ellipsis:
            return {"type": "ellipsis", "value": "..."}
        if isinstance(value, slice):
            return {
                "type": "slice",
                "value": [None if v is None else int(v) for v in (value.start, value.stop, value.step)],
            }
        if isinstance(value, np.generic):
            return {"type": type(value).__name__, "value": value.item()}
        if isinstance(value, (list, tuple)):
            return [self.describe(v, name, path + (i,)) for i, v in enumerate(value)]
        if isinstance(value, Mapping):
            return {str(k): self.describe(v, name, path + (k,)) for k, v in value.items()}
        raise PrecisionToolError(f"msprobe records no {type(value).__name__} value")


def _outputs(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def entry(call: Call, files: _Files) -> dict:
    """The dump.json value of one call."""
    key = call.key
    if call.kind == "parameters_grad":
        return {name: [files.describe(grad, f"{key}.{name}")] for name, grad in (call.parameters or {}).items()}
    if call.kind == "backward":
        return {
            "input": files.describe(list(call.inputs), f"{key}.input"),
            "output": files.describe(list(_outputs(call.outputs)), f"{key}.output"),
        }
    result = {
        "input_args": files.describe(list(call.inputs), f"{key}.input"),
        "input_kwargs": files.describe(dict(call.kwargs), f"{key}.kwargs"),
        "output": files.describe(list(_outputs(call.outputs)), f"{key}.output"),
    }
    if call.is_module:
        result["parameters"] = files.describe(dict(call.parameters or {}), f"{key}.parameters")
    return result


# --- stack.json and construct.json ---------------------------------------------------------------


def _clock(calls: Sequence[Call]) -> list[tuple[int, int]]:
    """(begin, end) of each call; a missing one is just after every time before it in the list."""
    now, clock = 0, []
    for call in calls:
        begin = now + 1 if call.begin is None else call.begin
        end = max(begin, now) + 1 if call.end is None else call.end
        now = max(now, begin, end)
        clock.append((begin, end))
    return clock


def stack_json(calls: Sequence[Call], stack_format: str = "grouped") -> dict:
    """stack.json's content: calls in the order they started; equal stacks grouped."""
    clock = _clock(calls)
    started = [calls[i] for i in sorted(range(len(calls)), key=lambda i: clock[i][0])]
    if stack_format == "keyed":
        return {c.key: list(c.stack) for c in started if c.stack is not None}
    groups: dict[tuple, list[str]] = {}
    for c in started:
        if c.stack is not None:
            groups.setdefault(tuple(c.stack), []).append(c.key)
    return {str(i): [keys, list(frames)] for i, (frames, keys) in enumerate(groups.items())}


def construct_json(calls: Sequence[Call], level: str) -> dict:
    """construct.json's content: each API when it returns (mix only), then the modules that
    had started by then and were not yet listed."""
    if level == "L1":
        return {}
    clock = _clock(calls)
    modules = sorted(
        (i for i, c in enumerate(calls) if c.is_module and c.kind != "parameters_grad"), key=lambda i: clock[i][0]
    )
    tree: dict[str, str | None] = {}
    for i in sorted(range(len(calls)), key=lambda i: clock[i][1]):
        call = calls[i]
        if level == "mix" and not call.is_module and call.kind != "parameters_grad":
            tree[call.key] = call.parent
        for m in modules:
            if clock[m][0] <= clock[i][1] and calls[m].key not in tree:
                tree[calls[m].key] = calls[m].parent
    return tree


# --- writing -------------------------------------------------------------------------------------


def _write_json(path: Path, content: Any) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(content, handle, indent=1)


def write_rank(
    directory: str | os.PathLike, calls: Sequence[Call], spec: DumpSpec, dump_data_dir: str | None = None
) -> Path:
    """Write one rank's dump (dump.json, stack.json, construct.json, dump_tensor_data/) into
    ``directory``, created if needed; returns it. ``dump_data_dir`` is the text dump.json
    records for the tensor directory (default: its path as given here)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = directory / "dump_tensor_data" if spec.task == "tensor" else None
    if tensors is not None:
        tensors.mkdir(exist_ok=True)
    seen = set()
    for call in calls:
        if call.key in seen:
            raise PrecisionToolError(f"{call.key}: written twice in one rank's dump.json")
        seen.add(call.key)
    files = _Files(spec, tensors)
    data = {call.key: entry(call, files) for call in calls}
    text = None if tensors is None else (dump_data_dir if dump_data_dir is not None else str(tensors))
    _write_json(
        directory / "dump.json",
        {"task": spec.task, "level": spec.level, "framework": spec.framework, "dump_data_dir": text, "data": data},
    )
    _write_json(directory / "stack.json", stack_json(calls, spec.stack_format))
    _write_json(directory / "construct.json", construct_json(calls, spec.level))
    return directory


def rank_directory_name(rank: int | str) -> str:
    """``rank3`` for rank 3; a string (``proc2016``) is used as it is."""
    return f"rank{rank}" if isinstance(rank, int) else rank


def write_dump(
    dump_path: str | os.PathLike,
    steps: Mapping[int, Mapping[int | str, Sequence[Call]]],
    spec: DumpSpec,
    dump_path_text: str | None = None,
) -> Path:
    """Write ``{dump_path}/step{N}/rank{R}/`` for every step and rank of ``steps``; returns
    ``dump_path``. ``dump_path_text`` is how the run's configuration spelled dump_path (it
    prefixes ``dump_data_dir``; default: ``dump_path`` as given)."""
    dump_path = Path(dump_path)
    prefix = str(dump_path) if dump_path_text is None else dump_path_text
    for step, ranks in steps.items():
        for rank, calls in ranks.items():
            name = rank_directory_name(rank)
            text = os.path.join(prefix, f"step{step}", name, "dump_tensor_data")
            write_rank(dump_path / f"step{step}" / name, calls, spec, text)
    return dump_path
