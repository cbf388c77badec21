"""A GE graph dump as plain Python objects: a :class:`Model` of graphs of ops.

Ops keep the file's order, which is GE's execution order, and each graph looks its ops up by
name, exactly or in the dump-file spelling (:func:`.dump_names.normalise_op_name`). Attribute
values (``attrs``) are the Python values listed in :mod:`.graph`, which builds these objects.

All of them are values: nothing changes them once built. :class:`InputRef`, :class:`TensorDesc`
and :class:`Op` are not declared ``frozen`` only because a frozen dataclass sets each field through
``object.__setattr__``, several times slower than plain assignment, and a 100k-op graph builds
400k of them (the figures are in docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .dump_names import normalise_op_name
from .graph_names import file_graph_id


@dataclass(slots=True, unsafe_hash=True)  # hashable by value, as if frozen: see the module doc
class InputRef:
    """One entry of an op's ``input`` list: output ``index`` of op ``src``, or a control edge.

    ``slot`` is the entry's position in the op's input list (so ``input_descs[slot]`` describes
    it); it is ignored by ``==`` because hand-built references need not know it.
    """

    src: str
    index: int
    is_control: bool
    slot: int | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.src}:{-1 if self.is_control else self.index}"


class TensorName(NamedTuple):
    """A TF tensor: output ``index`` of the TF op ``name``, the golden file ``{name}.{index}.*``.

    ``str()`` gives ``name:index``, the one spelling pairing, ``ni``, ``why`` and Model
    Explorer show; as a tuple it is ``(name, index)``.
    """

    name: str
    index: int

    def __str__(self) -> str:
        return f"{self.name}:{self.index}"


@dataclass(slots=True)
class TensorDesc:
    """An op's input or output tensor: device dtype/layout/shape and the host (origin) view."""

    dtype: str
    layout: str
    shape: tuple[int, ...]
    origin_format: str | None
    origin_shape: tuple[int, ...] | None
    origin_name: str | None
    origin_output_index: int | None
    origin_data_type: str | None
    attrs: dict[str, Any]
    name: str = ""

    def origin(self, position: int) -> TensorName | None:
        """The TF tensor output ``position`` (this desc) equals, by its ``_datadump_origin_name``
        and ``_datadump_origin_output_index``; None without an origin name.

        Without an index (absent, or not a number 0 or more) it is output ``position`` of the
        origin op: GE's fusion passes give an output the index of the origin output it comes
        from, and Huawei's own graph parser (msquickcmp) falls back to the output's position.
        """
        if not self.origin_name:
            return None
        index = self.origin_output_index
        return TensorName(self.origin_name, position if index is None or index < 0 else index)


@dataclass(slots=True)
class Op:
    """One graph op (``OpDef``) with the attributes the tool uses pulled out of ``attrs``.

    ``consumers[i]`` lists ``(consumer op name, consumer input slot)`` for output ``i``.
    ``original_op_names`` is None when ``_datadump_original_op_names`` is missing (the op stands
    for itself) and ``[]`` when it is empty (an op the NPU compiler inserted).
    """

    name: str
    type: str
    id: int
    inputs: list[InputRef]
    input_descs: list[TensorDesc]
    output_descs: list[TensorDesc]
    consumers: list[list[tuple[str, int]]]
    attrs: dict[str, Any]
    original_op_names: list[str] | None
    pass_name: list[str]
    original_op_types: list[str]
    is_multiop: bool
    kernel_name: str | None
    kernel_lib: str | None
    session_graph_id: str | None
    stream_id: int
    subgraph_names: list[str] = field(default_factory=list)
    # data_inputs, built on first use: input_desc(port) is asked once per port, and building
    # the list each time made showing or pairing an op of n inputs O(n**2)
    _data_inputs: list[InputRef] | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:  # by identity in the graph, so ops can key dicts and sets
        return hash((self.name, self.id))

    @property
    def data_inputs(self) -> list[InputRef]:
        """The inputs that carry data, in order (control edges left out). The list is built once
        and shared: do not change it."""
        found = self._data_inputs
        if found is None:
            found = [ref for ref in self.inputs if not ref.is_control]
            object.__setattr__(self, "_data_inputs", found)
        return found

    @property
    def control_inputs(self) -> list[InputRef]:
        """The control-edge inputs (``"src:-1"``)."""
        return [ref for ref in self.inputs if ref.is_control]

    def input_desc(self, port: int) -> TensorDesc | None:
        """The desc of data input ``port`` (its slot in the input list when known); None when
        the graph has none for it."""
        refs = self.data_inputs
        slot = refs[port].slot if 0 <= port < len(refs) else None
        slot = port if slot is None else slot
        return self.input_descs[slot] if 0 <= slot < len(self.input_descs) else None

    def output_desc(self, index: int) -> TensorDesc | None:
        """The desc of output ``index``; None when the graph has none for it."""
        return self.output_descs[index] if 0 <= index < len(self.output_descs) else None

    @property
    def output_count(self) -> int:
        """How many output ports the op has: described or consumed."""
        return max(len(self.output_descs), len(self.consumers))


@dataclass(frozen=True)
class GraphDesc:
    """One ``GraphDef``: its ops in execution order, with lookups by name built once."""

    name: str
    ops: list[Op]
    attrs: dict[str, Any]
    inputs: list[str]
    outputs: list[str]
    _by_name: dict[str, Op] = field(init=False, repr=False, compare=False)
    # built on the first lookup that needs it: normalising every name costs a fifth of
    # building a 100k-op graph, and most sessions find ops by their exact names
    _by_key: dict[str, Op] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, Op] = {}
        for op in self.ops:
            by_name.setdefault(op.name, op)  # first wins, as in file order
        object.__setattr__(self, "_by_name", by_name)

    def _keys(self) -> dict[str, Op]:
        by_key = self._by_key
        if by_key is None:
            by_key = {}
            for op in self.ops:
                by_key.setdefault(normalise_op_name(op.name), op)  # first wins, as above
            object.__setattr__(self, "_by_key", by_key)
        return by_key

    def op(self, name: str) -> Op:
        """The op called exactly ``name``; raises ``KeyError`` when there is none."""
        return self._by_name[name]

    def get(self, name: str) -> Op | None:
        """The op called exactly ``name``, or None."""
        return self._by_name.get(name)

    def find_op(self, name: str) -> Op | None:
        """The op called ``name``, else the one whose dump-file form (``/`` and ``.`` as ``_``)
        equals that of ``name``, else None."""
        found = self._by_name.get(name)
        return found if found is not None else self._keys().get(normalise_op_name(name))

    def __contains__(self, name: object) -> bool:
        return name in self._by_name


@dataclass(frozen=True)
class Model:
    """One graph dump file (``ModelDef``). ``source_path`` is ignored by ``==``."""

    name: str
    graphs: list[GraphDesc]
    attrs: dict[str, Any]
    source_path: Path | None = field(default=None, compare=False)
    version: int = 0
    custom_version: str = ""

    @property
    def graph_id(self) -> int | None:
        """GE's graph id as the file name gives it (``ge_proto_00000001_graph_31_Build.txt``:
        31), else None. Every graph of the file (a graph and its sub-graphs) shares it."""
        return file_graph_id(self.source_path)

    def graph(self, name: str) -> GraphDesc | None:
        """The graph called ``name``, or None."""
        return next((g for g in self.graphs if g.name == name), None)

    def find_ops(self, name: str) -> Iterator[tuple[GraphDesc, Op]]:
        """Each graph holding an op found by :meth:`GraphDesc.find_op`, and that op, in order."""
        for graph in self.graphs:
            op = graph.find_op(name)
            if op is not None:
                yield graph, op

    def find_op(self, name: str) -> tuple[GraphDesc, Op] | None:
        """The first of :meth:`find_ops`, or None."""
        return next(self.find_ops(name), None)
