"""The commands, one module each; :func:`build_registry` puts them in one registry."""

from __future__ import annotations

import importlib

from .registry import Command, CommandResult, Registry, UsageError

# Command modules in help order; each defines COMMAND.
COMMAND_MODULES = ("ls", "ni", "pt", "dc", "cp", "vc", "vcs", "ac")


def build_registry() -> Registry:
    """A fresh registry with every command (modules imported on first call, so start-up is fast)."""
    from .help import make_help

    registry = Registry()
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue  # a command not written yet
        registry.add(module.COMMAND)
    registry.add(make_help(registry))
    return registry


__all__ = ["Command", "CommandResult", "Registry", "UsageError", "build_registry"]
