"""Writing a graphviz digraph: the ``.gv`` source, and its ``.svg`` when ``dot`` is installed.

``dot`` is run as a program with an argument list (never through a shell, never opening a
viewer); a graph of more than :data:`MAX_RENDER_NODES` nodes is saved but not rendered.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MAX_RENDER_NODES = 1500  # dot takes minutes beyond this; the .gv is still written


@dataclass
class WrittenGraph:
    """What :func:`write_digraph` wrote, and why there is no SVG when there is none."""

    gv: Path
    svg: Path | None = None
    note: str | None = None

    @property
    def files(self) -> list[Path]:
        """The files written: the ``.gv``, then the ``.svg`` when there is one."""
        return [p for p in (self.gv, self.svg) if p is not None]


def write_digraph(source: str, gv_path: Path, node_count: int) -> WrittenGraph:
    """Save the DOT ``source`` as ``gv_path``, and render it to ``.svg`` beside it when the
    ``dot`` program is installed."""
    import graphviz

    gv_path.write_text(source, encoding="utf-8")
    written = WrittenGraph(gv_path)
    if shutil.which("dot") is None:
        written.note = "graphviz 'dot' is not installed: no SVG (the .gv is written)"
    elif node_count > MAX_RENDER_NODES:
        written.note = f"{node_count} nodes: too many to render to SVG (the .gv is written)"
    else:
        svg_path = gv_path.with_suffix(".svg")
        try:
            graphviz.render("dot", "svg", gv_path, outfile=svg_path, quiet=True)
            written.svg = svg_path
        except (graphviz.ExecutableNotFound, subprocess.CalledProcessError, OSError) as exc:
            written.note = f"dot could not render the SVG: {exc}"
    return written
