"""msprobe's ``dump.json``: the calls of one rank and step, each with its tensors and values.

``dump.json`` is ``{"task", "level", "framework", "dump_data_dir", "data": {KEY: ENTRY}}``
(:mod:`.msprobe_json`). ``data`` holds one entry per call, in the order msprobe finished
recording them: an API's entry when its output was seen, a module's forward entry after the
calls inside it (msprobe re-inserts it when the module's output comes), backward entries in the
order autograd ran them. A key is taken apart by :mod:`.msprobe_keys`. An entry holds:

- forward: ``input_args`` (a list), ``input_kwargs`` (a dict), ``output`` (a list) and, for a
  module, ``parameters`` (``{"weight": TENSOR, ...}``); PyTorch writes ``is_recompute`` too;
- backward: ``input`` (the gradients coming in, i.e. of the forward outputs) and ``output``
  (the gradients going out, of the forward inputs);
- parameter gradients: ``{"weight": [TENSOR], "bias": [TENSOR]}`` (a tensor outside a list is
  taken too).

Every section is a leaf or lists and dicts of them (:mod:`.msprobe_leaves`). A tensor is
``{"type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "data_name"}``:
``type`` ``torch.Tensor`` (or ``torch.distributed.tensor.DTensor``, ``FakeTensor``, ...),
``mindspore.Tensor`` or ``numpy.ndarray``; ``dtype`` ``torch.float32`` / ``Float32``; the
statistics are numbers, ``NaN``/``Infinity``, ``null`` (an empty tensor, an integer tensor's
mean and norm in PyTorch), true/false (a bool tensor's any/all), or strings in files other tools
wrote; a complex tensor's are of its absolute values. ``md5`` is a CRC-32 in 8 hex digits with
``summary_mode`` md5 (``0x`` and 16 hex digits with xor); ``requires_grad`` is PyTorch's;
``data_name`` is the tensor's file under ``dump_tensor_data`` (task ``tensor``, or the APIs of
``tensor_list``). Other leaves are ``{"type", "value"}``: ``int float bool str`` (and numpy
scalar types), ``slice`` (value ``[start, stop, step]``), ``ellipsis``, ``torch.Size`` (a list),
``torch.dtype`` / ``mindspore.dtype`` (``"torch.float32"``), ``torch.device``;
``torch.ProcessGroup`` carries ``group_ranks`` and ``group_id``, ``torch.memory_format`` a
``format``. ``null`` is an argument that was None (or ignored by msprobe's rules).

Tensor bytes are never read here: :func:`tensor_path` says where they are.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PrecisionToolError
from .files import read_regular
from .msprobe_json import (
    MAX_DUMP_JSON_BYTES,
    DumpHeader,
    Members,
    counted,
    decode_text,
    parse_members,
)
from .msprobe_keys import PARAMETERS_GRAD, CallKey, parse_key
from .msprobe_leaves import Leaf, Tensor, Value, flatten, nest, path_name

TENSOR_DIR = "dump_tensor_data"
INPUT_SECTIONS = ("input_args", "input_kwargs", "input")
OUTPUT_SECTIONS = ("output",)
PARAMETER_SECTIONS = ("parameters", PARAMETERS_GRAD)
_MSPROBE_SECTION = {
    "input_args": "input",
    "input_kwargs": "input",
    "input": "input",
    "output": "output",
    "parameters": "parameters",
}
_CUT = "cut short after {calls} (the run probably crashed before msprobe's stop())"

__all__ = [
    "Call",
    "CallKey",
    "DumpHeader",
    "Leaf",
    "MsprobeDump",
    "Tensor",
    "Value",
    "nest",
    "parse_dump",
    "path_name",
    "read_dump",
    "tensor_path",
]


@dataclass(frozen=True)
class Call:
    """One entry of ``data``: its key taken apart, its place among the calls (``order``, from 0,
    the file's order) and its leaves, section by section (``input_args``, ``input_kwargs``,
    ``input``, ``output``, ``parameters``), each in file order; ``recompute`` is PyTorch's
    ``is_recompute`` (None if absent)."""

    key: CallKey
    order: int
    leaves: tuple[Leaf, ...]
    recompute: bool | None = None

    def _of(self, sections: tuple[str, ...]) -> tuple[Leaf, ...]:
        return tuple(leaf for leaf in self.leaves if leaf.section in sections)

    @property
    def inputs(self) -> tuple[Leaf, ...]:
        """``input_args`` then ``input_kwargs`` leaves (forward), or ``input`` (backward)."""
        return self._of(INPUT_SECTIONS)

    @property
    def outputs(self) -> tuple[Leaf, ...]:
        """The ``output`` leaves."""
        return self._of(OUTPUT_SECTIONS)

    @property
    def parameters(self) -> tuple[Leaf, ...]:
        """A module's ``parameters`` (forward) or the gradients of a ``parameters_grad`` key."""
        return self._of(PARAMETER_SECTIONS)

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """Every tensor of the call, in file order."""
        return tuple(leaf for leaf in self.leaves if isinstance(leaf, Tensor))

    def msprobe_name(self, leaf: Leaf) -> str:
        """The name msprobe's compare gives ``leaf``: ``KEY.input.0`` (args and kwargs alike,
        ``KEY.input.weight``), ``KEY.output.0``, ``KEY.parameters.weight``; ``KEY.weight`` for a
        parameter gradient."""
        rest = [str(step) for step in leaf.path[1:]]
        if leaf.section == PARAMETERS_GRAD:
            return ".".join([self.key.text, *rest[:1]])
        return ".".join([self.key.text, _MSPROBE_SECTION.get(leaf.section, leaf.section), *rest])


@dataclass(frozen=True)
class MsprobeDump:
    """One ``dump.json``: its header, its calls in file order, and what was wrong with it
    (one line each: cut short, damaged, entries that are no call); ``complete`` is False when
    calls may be missing."""

    path: Path | None
    header: DumpHeader
    calls: tuple[Call, ...]
    problems: tuple[str, ...] = ()
    complete: bool = True

    @property
    def framework(self) -> str | None:
        """The header's framework, else the one the tensor types show (``torch.`` pytorch,
        ``mindspore.`` mindspore), else None."""
        if self.header.framework:
            return self.header.framework
        for call in self.calls:
            for tensor in call.tensors:
                if tensor.type.startswith("torch."):
                    return "pytorch"
                if tensor.type.startswith("mindspore."):
                    return "mindspore"
        return None

    @property
    def has_md5(self) -> bool:
        """Whether the tensors carry checksums (``summary_mode`` md5 or xor)."""
        return any(t.md5 is not None for call in self.calls for t in call.tensors)


def read_dump(path: str | os.PathLike) -> MsprobeDump:
    """Read the ``dump.json`` at ``path`` (see the module's docstring); a file cut short or
    damaged gives every call before the cut, and a problem line saying so.

    Raises:
        PrecisionToolError: one line naming ``path``: missing, not a regular file, larger than
            2 GiB, not UTF-8, no JSON object, no ``data`` object, damaged before any call.
    """
    data = read_regular(path, "dump.json", MAX_DUMP_JSON_BYTES)
    return parse_dump(decode_text(data, "dump.json", path), path)


def parse_dump(text: str, path: str | os.PathLike | None = None) -> MsprobeDump:
    """The calls of the ``dump.json`` text ``text``; ``path`` names it in messages."""
    label = os.fspath(path) if path is not None else "dump.json"
    try:
        members = parse_members(text, nested="data")
    except ValueError as exc:
        raise PrecisionToolError(f"not an msprobe dump.json: {exc}", path) from None
    data = members.nested.get("data")
    if data is None and members.complete:
        raise PrecisionToolError(_no_data(members.items), path)
    entries = data.items if data is not None else {}
    if members.damage and not entries:
        raise PrecisionToolError(f"not an msprobe dump.json: {members.damage}", path)
    calls, skipped = _calls(entries)
    problems = [f"{label}: {line}" for line in _damage_lines(members, len(calls)) + skipped]
    return MsprobeDump(
        None if path is None else Path(path),
        DumpHeader.of(members.items),
        tuple(calls),
        tuple(problems),
        members.complete,
    )


def _no_data(items: dict[str, Any]) -> str:
    if "data" in items:
        return f'not an msprobe dump.json: "data" is {type(items["data"]).__name__}, not an object'
    return 'not an msprobe dump.json: it has no "data" object'


def _damage_lines(members: Members, count: int) -> list[str]:
    if members.cut:
        return [_CUT.format(calls=counted(count, "call", "calls"))]
    if members.damage:
        return [f"damaged: {members.damage}; read {counted(count, 'call', 'calls')} before it"]
    return []


def _calls(entries: dict[str, Any]) -> tuple[list[Call], list[str]]:
    calls, bad, deep = [], [], []
    for key, entry in entries.items():
        if not isinstance(entry, dict):
            bad.append(key)
            continue
        try:
            calls.append(_call(parse_key(key), len(calls), entry))
        except RecursionError:  # a value nested as deep as json could read, and deeper here
            deep.append(key)
    lines = []
    if bad:
        lines.append(f"not an object, skipped: {counted(len(bad), 'entry', 'entries')} of data (the first: {bad[0]!r})")
    if deep:
        lines.append(f"nested too deeply, skipped: {counted(len(deep), 'entry', 'entries')} (the first: {deep[0]!r})")
    odd = [call.key.text for call in calls if call.key.direction is None]
    if odd:
        lines.append(
            f"outside msprobe's grammar, read but naming no forward or backward call: "
            f"{counted(len(odd), 'key', 'keys')} (the first: {odd[0]!r})"
        )
    return calls, lines


def _call(key: CallKey, order: int, entry: dict[str, Any]) -> Call:
    leaves: list[Leaf] = []
    recompute = entry.get("is_recompute")
    if key.direction == PARAMETERS_GRAD:
        for name, grads in entry.items():
            # msprobe puts each gradient in a list of one; its compare names it without the 0
            one = grads[0] if isinstance(grads, list) and len(grads) == 1 else grads
            flatten(one, (PARAMETERS_GRAD, name), leaves)
        recompute = None
    else:
        for section in (*INPUT_SECTIONS, *OUTPUT_SECTIONS, "parameters"):
            if section in entry:
                flatten(entry[section], (section,), leaves)
    return Call(key, order, tuple(leaves), recompute if isinstance(recompute, bool) else None)


@functools.lru_cache(maxsize=64)
def _tensor_dir(rank_dir: str | os.PathLike) -> Path:
    """``{rank_dir}/dump_tensor_data``, made once per rank: a plan asks it for every tensor,
    and each Path made costs a parse of its parts."""
    return Path(rank_dir) / TENSOR_DIR


def tensor_path(rank_dir: str | os.PathLike, tensor: Tensor) -> Path:
    """Where ``tensor``'s file is: ``{rank_dir}/dump_tensor_data/{data_name}`` (``.pt`` for
    PyTorch, ``.npy`` for MindSpore). Nothing is opened: the file may be missing.

    Raises:
        PrecisionToolError: the tensor has no file (statistics only), or its ``data_name``
            would leave ``dump_tensor_data`` (a path separator, ``..``, a NUL).
    """
    name = tensor.data_name
    where = _tensor_dir(rank_dir)
    if name is None:
        why = f"{tensor.name!r} has no tensor file (the dump holds statistics only)"
        raise PrecisionToolError(why, where)
    if "/" in name or "\\" in name or "\0" in name or name in (".", ".."):
        why = f"data_name {name!r} of {tensor.name!r} leaves the directory: refused"
        raise PrecisionToolError(why, where)
    return where / name


def read_tensor_file(path: str | os.PathLike, dtype_name: str | None = None, identities=None):
    """The array of an msprobe tensor file: ``.npy`` (MindSpore; as the dump.json dtype
    ``dtype_name`` says) or ``.pt`` (PyTorch: torch's zip, read without torch or unpickling).
    ``identities`` (a :class:`~.file_identity.FileIdentities`) gets the file's identity, found
    before its data is read (a ``.pt``'s from the descriptor it is read through).

    Raises:
        PrecisionToolError: one line naming the file (missing, damaged, refused).
    """
    from .npy_file import read_npy
    from .torch_file import read_pt

    if os.path.splitext(path)[1] == ".npy":  # as Path.suffix says, without making a Path
        if identities is not None:
            identities.of(path)
        return read_npy(path, dtype_name)
    return read_pt(path, identities=identities)
