"""Running command lines: the one error boundary, the shell loop, and the one-shot path.

Every command, typed at the prompt, piped in, or given on the command line, runs through
:func:`execute_line`: PrecisionToolError prints one line, a bad flag prints the command's usage,
Ctrl-C cancels the command, and any other exception prints a short message (the traceback with
``--debug``). Nothing escapes, so the prompt always comes back.
"""

from __future__ import annotations

import logging
import sys
import traceback
from typing import IO

from rich.text import Text

from ..commands import build_registry
from ..commands.registry import CommandResult, Registry, UsageError, run_words, split_commands
from ..context import Context
from ..render.lines import OneLine
from ..errors import PrecisionToolError
from ..status import ExitStatus

log = logging.getLogger("precision_tool")
EXIT_WORDS = ("exit", "quit")


class ExitShell(Exception):
    """Raised by ``exit`` / ``quit`` to leave the loop."""


def render_result(result: CommandResult, context: Context) -> None:
    # crop=False: a OneLine wider than the console is printed whole (nothing else is that wide)
    for renderable in result.renderables:
        if isinstance(renderable, str):
            context.console.print(renderable, markup=False, crop=False)
        else:
            context.console.print(renderable, crop=False)


def _report(context: Context, message: str, style: str = "error") -> None:
    (context.error_console or context.console).print(OneLine(message, style), crop=False)


def _usage(context: Context, usage: str) -> None:
    (context.error_console or context.console).print(Text(usage, style="muted"))


def _run_one(words: list[str], registry: Registry, context: Context) -> ExitStatus:
    if words[0] in EXIT_WORDS:
        raise ExitShell()
    try:
        result = run_words(registry, words, context)
        render_result(result, context)  # inside the boundary: Ctrl-C or a bug while printing too
    except UsageError as exc:
        _report(context, f"error: {exc}")
        if exc.usage:
            _usage(context, exc.usage)
        return ExitStatus.ERROR
    except PrecisionToolError as exc:
        _report(context, f"error: {exc}")
        return ExitStatus.ERROR
    except KeyboardInterrupt:
        _report(context, "cancelled", "warn")
        return ExitStatus.INTERRUPTED
    except Exception as exc:  # a bug: say so briefly, keep the session alive
        log.debug("command failed", exc_info=True)
        _report(context, f"internal error in '{words[0]}': {type(exc).__name__}: {exc}"
                         + ("" if context.config.debug else " (run with --debug for the traceback)"))
        if context.config.debug:
            context.console.print(traceback.format_exc(), markup=False)
        return ExitStatus.ERROR
    return result.status


def execute_line(line: str, registry: Registry, context: Context) -> ExitStatus:
    """Run every ``;``-separated command of ``line``; the worst status wins. Never raises
    except :class:`ExitShell`."""
    try:
        commands = split_commands(line)
    except UsageError as exc:
        _report(context, f"error: {exc}")
        return ExitStatus.ERROR
    worst = ExitStatus.OK
    for words in commands:
        status = _run_one(words, registry, context)
        worst = max(worst, status)
    return ExitStatus(worst)


def run_lines(lines, registry: Registry, context: Context) -> ExitStatus:
    """Run commands line by line (a script or pipe on standard input) until EOF or ``exit``."""
    worst = ExitStatus.OK
    try:
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                worst = max(worst, execute_line(line, registry, context))
    except ExitShell:
        pass
    return ExitStatus(worst)


def run_shell(context: Context, stdin: IO[str] | None = None) -> ExitStatus:
    """The shell: interactive on a terminal, line by line from a pipe or file otherwise."""
    registry = build_registry()
    stdin = stdin or sys.stdin
    if not stdin.isatty():
        return run_lines(stdin, registry, context)
    from .session import interactive_loop  # prompt_toolkit only when there is a terminal

    return interactive_loop(registry, context)
