"""An op's neighbourhood as a tree of text: the op, its producers (upstream) and its consumers
(downstream) with their other inputs, each line with the port's device dtype, format and shape,
its host view, and the newest result's cosine.

The tree is built with an explicit stack and drawn by :class:`~.fit.FitTree`, never by
recursion (a 100k-op chain at depth 100000 would exhaust Python's stack), and is cut at
:data:`MAX_TREE_NODES` lines and :data:`MAX_TREE_LEVELS` levels of nesting, with a note saying
so (the ``.gv`` has the rest). Lines wrap between words only: no name is broken.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from ..formats.graph_model import Op, TensorDesc
from ..formats.graph_query import Neighbourhood
from .fit import FitTree as Tree
from .lines import visible
from .op_graph import NodeCosine, device_text, host_text
from .palette import swatch

MAX_TREE_NODES = 200
MAX_TREE_LEVELS = 16


@dataclass
class _Budget:
    """Lines left to add, and whether something was left out for want of them."""

    left: int = MAX_TREE_NODES
    cut_nodes: bool = False
    cut_levels: bool = False

    def take(self) -> bool:
        if self.left <= 0:
            self.cut_nodes = True
            return False
        self.left -= 1
        return True


def _cosine(text: Text, cosine: NodeCosine | None) -> None:
    if cosine is not None:
        look = swatch(cosine.verdict)
        marker = f"{look.marker} " if look.marker else ""
        text.append(f"  {marker}{cosine.text('=')}", style=look.style)


def _op_text(
    arrow: str, port: str, other: str, op: Op | None, desc: TensorDesc | None, cosine: NodeCosine | None
) -> Text:
    text = Text.assemble((f"{port} {arrow} ", "muted"), (visible(other), "op.name"))
    if op is not None:
        text.append(f" [{visible(op.type)}]", style="op.type")
    if desc is not None:
        host = host_text(desc)
        text.append(f" {visible(device_text(desc))}" + (f" ({visible(host)})" if host else ""), style="muted")
    if op is not None:
        _cosine(text, cosine)
    return text


def _producers(op: Op):
    for port, ref in enumerate(op.data_inputs):
        yield "<-", f"in{port}", f"{ref.src}:{ref.index}", ref.src, op.input_desc(port), op.name


def _consumers(op: Op):
    for index, users in enumerate(op.consumers):
        for name, slot in users:
            yield "->", f"out{index}", f"{name}:in{slot}", name, op.output_desc(index), op.name


class _Walk:
    """The state of one tree build: the neighbourhood, the colours, what was expanded where."""

    def __init__(self, hood: Neighbourhood, cosines: dict[str, NodeCosine] | None) -> None:
        self.hood, self.cosines = hood, cosines or {}
        self.budget = _Budget()
        self.seen = {hood.root.name: hood.depth}

    def add(self, branch: Tree, arrow: str, port: str, ref: str, name: str, desc) -> tuple[Tree, Op | None] | None:
        if not self.budget.take():
            return None
        op = self.hood.nodes.get(name)
        return branch.add(_op_text(arrow, port, ref, op, desc, self.cosines.get(name))), op

    def expand(self, child: Tree, name: str, left: int, level: int) -> bool:
        """Whether to expand ``name`` under ``child`` with ``left`` levels to go: not when it
        was already expanded at least as deep (a diamond would repeat whole subtrees), nor
        beyond :data:`MAX_TREE_LEVELS`."""
        if left <= 0:
            return False
        if level >= MAX_TREE_LEVELS:
            self.budget.cut_levels = True
            return False
        if self.seen.get(name, -1) >= left:
            child.label.append(" (expanded above)", style="muted")
            return False
        self.seen[name] = left
        return True

    def walk(self, top: Tree, downstream: bool) -> None:
        """Depth first from the root, as a recursion would go (so the same op is expanded
        where a recursion would), with an explicit stack of each branch's ports to go."""
        items = _consumers if downstream else _producers
        self.seen = {self.hood.root.name: self.hood.depth}  # each direction on its own
        stack = [(top, items(self.hood.root), self.hood.depth, 0)]
        while stack:
            branch, pending, left, level = stack[-1]
            item = next(pending, None)
            if item is None:
                stack.pop()
                continue
            arrow, port, ref, name, desc, parent = item
            added = self.add(branch, arrow, port, ref, name, desc)
            if added is None:
                return
            child, op = added
            if op is None:
                continue
            if downstream and not self.other_inputs(child, op, parent):
                return
            if self.expand(child, name, left - 1, level + 1):
                stack.append((child, items(op), left - 1, level + 1))

    def other_inputs(self, branch: Tree, consumer: Op, parent: str) -> bool:
        """The consumer's inputs from other producers than ``parent`` (its weight, its bias);
        False when the budget ran out."""
        for port, ref in enumerate(consumer.data_inputs):
            if (
                ref.src != parent
                and self.add(branch, "<-", f"in{port}", f"{ref.src}:{ref.index}", ref.src, consumer.input_desc(port))
                is None
            ):
                return False
        return True


def neighbourhood_tree(hood: Neighbourhood, cosines: dict[str, NodeCosine] | None = None) -> Tree:
    """``hood`` as a rich tree: the root, its producers (upstream) and consumers (downstream),
    each op with its cosine from ``cosines`` when given; cut with a note beyond
    :data:`MAX_TREE_NODES` lines or :data:`MAX_TREE_LEVELS` levels."""
    root = hood.root
    label = Text.assemble((visible(root.name), "op.name"), (f" [{visible(root.type)}]", "op.type"))
    _cosine(label, (cosines or {}).get(root.name))
    tree = Tree(label)
    up = tree.add(Text(f"upstream (producers, depth {hood.depth})", style="title"))
    down = tree.add(Text(f"downstream (consumers, depth {hood.depth})", style="title"))
    walk = _Walk(hood, cosines)
    if hood.depth > 0:
        walk.walk(up, downstream=False)
        walk.walk(down, downstream=True)
    controls = [e.src for e in hood.edges if e.control and e.dst == root.name]
    if controls:
        tree.add(Text("control inputs: " + ", ".join(visible(c) for c in controls), style="muted"))
    cut = []
    if walk.budget.cut_nodes:
        cut.append(f"at {MAX_TREE_NODES} lines")
    if walk.budget.cut_levels:
        cut.append(f"at {MAX_TREE_LEVELS} levels")
    if cut:
        tree.add(
            Text(
                f"... the tree is cut {' and '.join(cut)} ({len(hood.nodes)} ops in the "
                "neighbourhood: the .gv has them all)",
                style="warn",
            )
        )
    return tree
