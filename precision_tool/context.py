"""Session state: a :class:`~.compare.workspace.Workspace` (settings and lazily loaded data) plus
the consoles every command's output and errors go through."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .compare.workspace import OpRef, Workspace
from .config import Config

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Context", "OpRef"]


class Context(Workspace):
    """What every command gets: settings, consoles, and the data, each loaded on first use.

    Args:
        config: the settings.
        console: where output goes.
        error_console: where errors go. Defaults to None: the main console.
    """

    def __init__(self, config: Config, console: Console, error_console: Console | None = None) -> None:
        super().__init__(config)
        self.console = console
        self.error_console = error_console

    def temp_dir(self, *parts: str) -> Path:
        """A directory under the output root, created (never through a link): write in it
        through ``self.output`` (:class:`~precision_tool.formats.output_root.OutputRoot`)."""
        return self.output.directory(*parts)
