"""The commands, one module each; :func:`build_registry` puts them in one registry."""

from __future__ import annotations

import importlib

from .registry import Command, CommandResult, Registry, UsageError

# Command modules in help order; each defines COMMAND.
COMMAND_MODULES = ("ls", "ni", "pt", "dc", "cp", "vc", "vcs", "ac", "why", "report", "explore")


def build_registry() -> Registry:
    """A fresh registry with every command (modules imported on first call, so start-up is fast)."""
    from .help import make_help

    registry = Registry()
    for name in COMMAND_MODULES:
        registry.add(importlib.import_module(f"{__name__}.{name}").COMMAND)
    registry.add(make_help(registry))
    return registry


__all__ = ["Command", "CommandResult", "Registry", "UsageError", "build_registry"]
