"""Running command lines: the one error boundary, for the shell, pipes and the one-shot CLI.

Every command, typed at the prompt, piped in, or given on the command line, runs through
:func:`execute_line`: PrecisionToolError prints one line, a bad flag prints the command's usage,
Ctrl-C cancels the command, and any other exception prints a short message (the traceback with
``--debug``). Nothing escapes but :class:`ExitShell`, so the prompt always comes back. Nothing
here needs a terminal: the prompt_toolkit loop in :mod:`precision_tool.shell.session` calls in.
"""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Iterable

from ..errors import PrecisionToolError
from ..status import ExitStatus
from .registry import CommandResult, Registry, UsageError, run_words, split_commands

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger("precision_tool")


class ExitShell(Exception):
    """Raised by an exit word (``exit``, ``quit``) to leave the loop."""


def render_result(result: CommandResult, context: Context) -> None:
    """Print a command's renderables on the context's console: lines of text wrap between
    words only, so a name is never broken (:class:`~precision_tool.render.fit.Words`)."""
    from rich.text import Text

    from ..render.fit import Words

    # crop=False: a name or OneLine wider than the console is printed whole
    for renderable in result.renderables:
        if isinstance(renderable, str):
            renderable = Text(renderable)
        if isinstance(renderable, Text):
            renderable = Words(renderable)
        context.console.print(renderable, crop=False)


def _report(context: Context, message: str, style: str = "error") -> None:
    from ..render.lines import OneLine

    (context.error_console or context.console).print(OneLine(message, style), crop=False)


def _usage(context: Context, usage: str) -> None:
    from rich.text import Text

    (context.error_console or context.console).print(Text(usage, style="muted"))


def _run_one(words: list[str], registry: Registry, context: Context) -> ExitStatus:
    if words[0] in registry.exit_words:
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


def run_lines(lines: Iterable[str], registry: Registry, context: Context) -> ExitStatus:
    """Run commands line by line (a script or pipe on standard input) until EOF or an exit word;
    blank lines and ``#`` comments are skipped."""
    worst = ExitStatus.OK
    try:
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                worst = max(worst, execute_line(line, registry, context))
    except ExitShell:
        pass
    return ExitStatus(worst)
