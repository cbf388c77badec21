"""``python -m precision_tool``."""

from precision_tool.cli import entry

entry()
