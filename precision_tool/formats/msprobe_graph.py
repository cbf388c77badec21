"""One msprobe rank directory as a :class:`~.graph_model.Model`, so ``ls``, ``ni``, the report
and Model Explorer read an msprobe dump as they read a GE Build graph.

The model has one :class:`~.graph_model.GraphDesc` whose ops are the calls of ``dump.json`` in
call (file) order: an op's name is the call key (``Functional.linear.0.forward``), its type
``{prefix}.{name}`` (``Functional.linear``, ``Module.Attention``: a module's path is left out so
that every ``Attention`` counts as one type), its id the call's position. Its input descs are
the call's tensors other than outputs (``input_args``, ``input_kwargs``, ``input``, then
``parameters`` or ``parameters_grad``), its output descs the ``output`` tensors, numbered as a
result row's TensorIndex numbers them (``KEY:input:N``: :func:`call_slots`). A desc's dtype and
shape are msprobe's (``torch.float32``, ``BFloat16``), its name msprobe's full tensor name
(``KEY.input.0``), its attrs the ``dump.json`` statistics and file name.

An op's attrs (:data:`ATTRS`) hold its direction, module path, the module calls it ran in
(``construct.json``, nearest first), its stack (``stack.json``, either layout) and the values of
its non-tensor arguments. The model's ``attrs["msprobe"]`` is the :class:`MsprobeSource` it was
built from (the rank directory, the dump, what was wrong with the side files).

**Dataflow edges are inferred**, for msprobe records none: an input whose dtype, shape and
``Max``, ``Min``, ``Mean``, ``Norm`` all equal those of an output of an earlier call is taken to
be that output, and when several earlier outputs match, the latest is. Forward calls are fed by
forward calls only, backward calls and parameter gradients by backward calls only. Never on
missing statistics: a tensor lacking any of the six (an integer tensor's mean in PyTorch, an
empty tensor, a dump without statistics) or holding a NaN statistic gets no edge. A module's
input is never taken from a call that ran inside it (its descendants in ``construct.json``),
since the module had its input before they ran; without ``construct.json`` that is not known.
The rule can be wrong: two different tensors with equal statistics (two all-zero masks of one
shape) are taken for one, and then the later feeds both consumers. ``ni`` and the report say the
edges are inferred. The model is built in one pass over the calls with dict lookups (a module's
check walks its candidates' parents), so building it costs less than reading the ``dump.json``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..collector import gc_paused
from ..errors import PrecisionToolError
from .graph_model import GraphDesc, InputRef, Model, Op, TensorDesc
from .msprobe_dump import Call, MsprobeDump, read_dump
from .msprobe_keys import FORWARD, CallKey, parse_key
from .msprobe_leaves import Tensor, Value
from .msprobe_side import Construct, Stacks, read_construct, read_stack
from .msprobe_tree import RANK, RankDir, find_tree

SOURCE_ATTR = "msprobe"  # Model.attrs: the MsprobeSource
DIRECTION, MODULE_PATH, MODULES, STACK, VALUES = "direction", "module_path", "modules", "stack", "values"
RECOMPUTE, MICRO_STEP = "is_recompute", "micro_step"
ATTRS = (DIRECTION, MODULE_PATH, MODULES, STACK, VALUES, RECOMPUTE, MICRO_STEP)
"""The op attrs this module sets: ``direction`` (``forward``, ``backward``,
``parameters_grad``), ``module_path`` (the path of the module the call belongs to:
``layers.0.attn``; ``""`` for the root module; absent when unknown), ``modules`` (the module
calls it ran in, nearest first, from ``construct.json``), ``stack`` (its frames as
``stack.json`` has them), ``values`` (msprobe name -> text of each non-tensor argument),
``is_recompute`` and ``micro_step`` (when msprobe wrote them)."""
STAT_ATTRS = ("Max", "Min", "Mean", "Norm")
MAX_PARENT_CHAIN = 1000  # deeper than any model; a construct.json with a cycle stops here


@dataclass(frozen=True)
class MsprobeSource:
    """What a model was built from: the rank directory (None for a dump read on its own), its
    dump, its construct tree and stacks (empty when the files are absent), and one line per
    problem with the three files."""

    rank: RankDir | None
    dump: MsprobeDump
    construct: Construct = field(default_factory=lambda: Construct({}))
    stacks: Stacks = field(default_factory=lambda: Stacks({}))
    problems: tuple[str, ...] = ()

    def call(self, op: Op) -> Call:
        """The call ``op`` stands for (its id is the call's order)."""
        return self.dump.calls[op.id]


def msprobe_source(model: Model) -> MsprobeSource | None:
    """The :class:`MsprobeSource` of a model built here; None for a GE graph."""
    found = model.attrs.get(SOURCE_ATTR)
    return found if isinstance(found, MsprobeSource) else None


def module_chain(op: Op) -> tuple[str, ...]:
    """The module calls an msprobe call ran in, nearest first; empty for a GE op, or a call at
    the top or without ``construct.json``."""
    chain = op.attrs.get(MODULES)
    return chain if isinstance(chain, tuple) and all(isinstance(k, str) for k in chain) else ()


def module_namespace(op: Op) -> str | None:
    """The path of the module an msprobe call ran in, ``/``-separated as Model Explorer nests
    layers (``layers/0/attn``; ``""`` in the root module); None when not known (a GE op)."""
    chain = module_chain(op)
    if not chain:
        return None
    path = parse_key(chain[0]).module_path
    if path is None:  # the nearest parent is an API: msprobe's tree never has one
        return None
    return "/".join(part for part in path.split(".") if part)


def call_slots(call: Call) -> tuple[list[Tensor], list[Tensor]]:
    """The call's tensors as a result row numbers them: (inputs, outputs), ``KEY:input:N``
    being ``inputs[N]``: every tensor that is no ``output`` counts as an input (arguments,
    keyword arguments, parameters, parameter gradients), each kind in dump order."""
    inputs, outputs = [], []
    for tensor in call.tensors:
        (outputs if tensor.path[0] == "output" else inputs).append(tensor)
    return inputs, outputs


def op_type(key: CallKey) -> str:
    """``Functional.linear``, ``Module.Attention``: the prefix and the API or module class."""
    return f"{key.prefix}.{key.name}" if key.name else key.prefix


def read_model(rank: RankDir, name: str | None = None) -> Model:
    """The model of the rank directory ``rank`` (its ``dump.json``, and ``construct.json`` and
    ``stack.json`` when present), called ``name`` (default: the directory's name). A side
    file that cannot be read is a problem line (:attr:`MsprobeSource.problems`), not an error.

    Raises:
        PrecisionToolError: its ``dump.json`` cannot be read (:func:`~.msprobe_dump.read_dump`).
    """
    dump = read_dump(rank.dump_json)
    problems = list(dump.problems)
    construct = _side(rank.construct_json, read_construct, problems) or Construct({})
    stacks = _side(rank.stack_json, read_stack, problems) or Stacks({})
    problems += [*construct.problems, *stacks.problems]
    source = MsprobeSource(rank, dump, construct, stacks, tuple(problems))
    return build_model(source, name or rank.name)


def read_model_at(path: str | os.PathLike, name: str | None = None) -> Model:
    """:func:`read_model` of the rank directory ``path`` (or its ``dump.json``).

    Raises:
        PrecisionToolError: ``path`` is no rank directory of an msprobe dump, or its
            ``dump.json`` cannot be read.
    """
    found = find_tree(path)
    if found.kind != RANK:
        raise PrecisionToolError("not an msprobe rank directory (no dump.json in it)", path)
    return read_model(found.ranks[0], name)


def _side(path: Path, read, problems: list[str]):
    if not os.path.lexists(path):
        return None
    try:
        return read(path)
    except PrecisionToolError as exc:
        problems.append(f"{exc} (read without it)")
        return None


def build_model(source: MsprobeSource, name: str) -> Model:
    """The model of ``source`` (see the module's docstring), its graph and model called
    ``name``; its ``source_path`` is the ``dump.json``."""
    builder = _Builder(source.construct)
    frames = source.stacks.frames
    with gc_paused():  # a model is many small objects and no cycles (precision_tool.collector)
        ops = [builder.add(call, frames.get(call.key.text, ())) for call in source.dump.calls]
    graph = GraphDesc(name, ops, {}, [], [])
    return Model(name, [graph], {SOURCE_ATTR: source}, source.dump.path)


class _Builder:
    """The ops, built in call order with their inferred edges (see the module's docstring)."""

    def __init__(self, construct: Construct) -> None:
        self.parents = construct.parents
        self.micro_steps = construct.micro_steps
        self.keys: dict[str, CallKey] = {}
        # (group, statistics) -> [(producer key, output slot)], oldest first
        self.outputs: dict[tuple, list[tuple[str, int]]] = {}
        self.consumers: dict[str, list[list[tuple[str, int]]]] = {}

    def add(self, call: Call, frames: tuple[str, ...]) -> Op:
        key = call.key
        inputs, outputs = call_slots(call)
        group = _group(key)
        chain = self.chain(key.text)
        refs = []
        for slot, tensor in enumerate(inputs):
            producer = self.producer(group, signature(tensor), key, chain)
            if producer is not None:
                refs.append(InputRef(producer[0], producer[1], False, slot))
                self.consumers[producer[0]][producer[1]].append((key.text, slot))
        users: list[list[tuple[str, int]]] = [[] for _ in outputs]
        self.consumers.setdefault(key.text, users)
        if group is not None:
            for slot, tensor in enumerate(outputs):
                found = signature(tensor)
                if found is not None:
                    self.outputs.setdefault((group, found), []).append((key.text, slot))
        return Op(
            key.text,
            op_type(key),
            call.order,
            refs,
            [tensor_desc(call, t) for t in inputs],
            [tensor_desc(call, t) for t in outputs],
            users,
            self.attrs(call, chain, frames),
            None,
            [],
            [],
            False,
            None,
            None,
            None,
            0,
        )

    def producer(
        self, group: str | None, found: tuple | None, key: CallKey, chain: tuple[str, ...]
    ) -> tuple[str, int] | None:
        """The latest earlier output matching ``found``, not of a call that ran inside the
        module call ``key`` (for a module: see the module's docstring)."""
        if group is None or found is None:
            return None
        candidates = self.outputs.get((group, found))
        for candidate in reversed(candidates or ()):
            if not key.is_module or key.text not in self.chain(candidate[0]):
                return candidate
        return None

    def chain(self, text: str) -> tuple[str, ...]:
        """The module calls ``text`` ran in, nearest first (``construct.json``'s parents)."""
        chain: list[str] = []
        parent = self.parents.get(text)
        while parent and parent != text and parent not in chain and len(chain) < MAX_PARENT_CHAIN:
            chain.append(parent)
            parent = self.parents.get(parent)
        return tuple(chain)

    def module_path(self, key: CallKey, chain: tuple[str, ...]) -> str | None:
        if key.is_module:
            return key.module_path
        for parent in chain:
            found = self.keys.get(parent)
            if found is None:
                found = self.keys[parent] = parse_key(parent)
            if found.is_module:
                return found.module_path
        return None

    def attrs(self, call: Call, chain: tuple[str, ...], frames: tuple[str, ...]) -> dict[str, Any]:
        key = call.key
        attrs: dict[str, Any] = {DIRECTION: key.direction}
        path = self.module_path(key, chain)
        if path is not None:
            attrs[MODULE_PATH] = path
        if chain:
            attrs[MODULES] = chain
        if frames:
            attrs[STACK] = frames
        values = {
            call.msprobe_name(leaf): value_text(leaf)
            for leaf in call.leaves
            if isinstance(leaf, Value) and len(leaf.path) > 1
        }  # not an empty section
        if values:
            attrs[VALUES] = values
        if call.recompute is not None:
            attrs[RECOMPUTE] = call.recompute
        if key.text in self.micro_steps:
            attrs[MICRO_STEP] = self.micro_steps[key.text]
        return attrs


def _group(key: CallKey) -> str | None:
    """Which calls may feed each other: forward ones, or backward ones and parameter
    gradients; a key outside msprobe's grammar, none."""
    if key.direction is None:
        return None
    return FORWARD if key.direction == FORWARD else "backward"


def signature(tensor: Tensor) -> tuple | None:
    """(dtype, shape, Max, Min, Mean, Norm) of ``tensor``; None when any is missing or a
    statistic is NaN (which equals nothing)."""
    found = (tensor.dtype, tensor.shape, tensor.max, tensor.min, tensor.mean, tensor.norm)
    if None in found or any(s != s for s in found[2:]):  # s != s: NaN
        return None
    return found


def tensor_desc(call: Call, tensor: Tensor) -> TensorDesc:
    """The desc of one tensor: msprobe's dtype and shape (``()`` when ``dump.json`` gives
    none), its full msprobe name, the statistics and file name as attrs."""
    attrs: dict[str, Any] = {"type": tensor.type}
    for name, value in (
        ("Max", tensor.max),
        ("Min", tensor.min),
        ("Mean", tensor.mean),
        ("Norm", tensor.norm),
        ("md5", tensor.md5),
        ("data_name", tensor.data_name),
        ("requires_grad", tensor.requires_grad),
    ):
        if value is not None:
            attrs[name] = value
    return TensorDesc(
        tensor.dtype or "?", "", tensor.shape or (), None, None, None, None, None, attrs, call.msprobe_name(tensor)
    )


def value_text(leaf: Value) -> str:
    """A non-tensor argument as ``ni`` shows it: ``int 3``, ``slice (0, 4, None)``,
    ``None``; the other members of a process group after it."""
    if leaf.type == "None" and leaf.value is None:
        return "None"
    text = leaf.type if leaf.value is None else f"{leaf.type} {leaf.value!r}"
    if leaf.fields:
        text += " (" + ", ".join(f"{k}={v!r}" for k, v in leaf.fields) + ")"
    return text


# --- stack frames ----------------------------------------------------------------------------

LIBRARY_PARTS = ("site-packages", "dist-packages", "/msprobe/", "/lib/python")
"""A frame whose file path holds one of these is the libraries' (torch, MindSpore, msprobe,
Python's own), not the user's code."""


@dataclass(frozen=True)
class Frame:
    """One stack frame of ``stack.json``: ``File {path}, line {line}, in {function}, \\n
    {source}``; ``text`` is the frame as written (a frame of another form keeps only it)."""

    text: str
    path: str = ""
    line: int | None = None
    function: str = ""
    source: str = ""

    @property
    def is_library(self) -> bool:
        """Whether the frame is in a library rather than the user's code."""
        where = self.path.replace("\\", "/")
        return any(part in where for part in LIBRARY_PARTS)


def parse_frame(text: str) -> Frame:
    """A frame as msprobe writes it taken apart; any other text kept whole (no path)."""
    head, _, source = text.partition("\n")
    if not head.startswith("File "):
        return Frame(text)
    path, sep, rest = head[len("File ") :].rpartition(", line ")
    number, sep2, function = rest.partition(", in ")
    if not sep or not sep2 or not number.strip().isdigit():
        return Frame(text)
    return Frame(text, path, int(number), function.strip().rstrip(",").strip(), source.strip())


def user_frames_first(frames: tuple[str, ...]) -> tuple[list[Frame], list[Frame]]:
    """(the user's frames, the libraries' frames), each in ``stack.json``'s order."""
    parsed = [parse_frame(text) for text in frames]
    return [f for f in parsed if not f.is_library], [f for f in parsed if f.is_library]
