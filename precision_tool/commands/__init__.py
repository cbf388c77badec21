"""The commands, one module each; :func:`build_registry` puts them in one registry."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from .registry import Command, CommandResult, Registry, UsageError

# Command modules in help order; each defines COMMAND.
COMMAND_MODULES = ("ls", "ni", "pt", "dc", "cp", "vc", "vcs", "ac", "why", "report", "explore")


def build_registry(needed: Iterable[str] | None = None) -> Registry:
    """A fresh registry with every command (modules imported on first call, so start-up is fast).

    ``needed``: the command names a caller will run (a one-shot line's); when each is a command
    module's name, only those modules are imported (each one's command is called as its module
    is: tests/commands check it), since a one-shot ``vc`` has no use for ``explore``'s web
    client or ``report``'s renderers. Anything else (``help``, an exit word, a mistyped name
    whose likeliest command is to be found) gets the whole registry.
    """
    from .help import make_help

    names = list(COMMAND_MODULES)
    if needed is not None and set(needed) <= set(COMMAND_MODULES):
        names = [name for name in COMMAND_MODULES if name in set(needed)]
    registry = Registry()
    for name in names:
        registry.add(importlib.import_module(f"{__name__}.{name}").COMMAND)
    if names == list(COMMAND_MODULES):
        registry.add(make_help(registry))
    return registry


__all__ = ["Command", "CommandResult", "Registry", "UsageError", "build_registry"]
