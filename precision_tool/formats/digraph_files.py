"""Writing a graphviz digraph: the ``.gv`` source, and its ``.svg`` when ``dot`` is installed.

Both files go through the output root (:class:`~.output_root.OutputRoot`): written under a temporary
name and renamed, never through a link. ``dot`` itself writes no file at all: it is run as a
program with an argument list (never through a shell, never opening a viewer), reads the source
on its standard input and hands the SVG back on its standard output, so a link planted at the
``.svg`` name cannot redirect it. A graph of more than :data:`MAX_RENDER_NODES` nodes is saved
but not rendered.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .output_root import OutputRoot

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


def render_svg(source: str) -> bytes:
    """The SVG ``dot`` draws of the DOT ``source`` (through pipes: dot writes no file).

    Raises:
        graphviz.ExecutableNotFound, subprocess.CalledProcessError, OSError: dot failed.
    """
    import graphviz

    return graphviz.pipe("dot", "svg", source.encode("utf-8"), quiet=True)


def write_digraph(root: OutputRoot, source: str, gv_path: Path, node_count: int) -> WrittenGraph:
    """Save the DOT ``source`` as ``gv_path`` under ``root``, and its ``.svg`` beside it when
    the ``dot`` program is installed. PrecisionToolError when a file cannot be written."""
    import graphviz

    written = WrittenGraph(root.write_text(gv_path, source))
    if shutil.which("dot") is None:
        written.note = "graphviz 'dot' is not installed: no SVG (the .gv is written)"
        return written
    if node_count > MAX_RENDER_NODES:
        written.note = f"{node_count} nodes: too many to render to SVG (the .gv is written)"
        return written
    try:
        svg = render_svg(source)
    except (graphviz.ExecutableNotFound, subprocess.CalledProcessError, OSError) as exc:
        written.note = f"dot could not render the SVG: {exc}"
        return written
    written.svg = root.write_bytes(gv_path.with_suffix(".svg"), svg)
    return written
