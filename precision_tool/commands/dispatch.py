"""Running command lines: the one error boundary, for the shell, pipes and the one-shot CLI.

Every command, typed at the prompt, piped in, or given on the command line, runs through
:func:`execute_line`: PrecisionToolError prints one line, a bad flag prints the command's usage,
Ctrl-C cancels the command, and any other exception prints a short message (the traceback with
``--debug``). Nothing escapes but :class:`ExitShell`, so the prompt always comes back. Standard
output going away ends the run through ExitShell too: quietly, with the command's own status,
when the reader of a pipe left (``| head -1``); with one line on standard error and status 2 when
the disk is full. Nothing
here needs a terminal: the prompt_toolkit loop in :mod:`precision_tool.shell.session` calls in.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import OutputClosed, PrecisionToolError
from ..status import ExitStatus
from .registry import CommandResult, Registry, UsageError, run_words, split_commands

if TYPE_CHECKING:
    from ..context import Context


class ExitShell(Exception):
    """Raised by an exit word (``exit``, ``quit``) to leave the loop; ``status``, when set, is
    the status to leave with (the output went away: the last command's own status)."""

    def __init__(self, status: ExitStatus | None = None):
        super().__init__()
        self.status = status


def render_result(result: CommandResult, context: Context) -> None:
    """Print a command's renderables on the context's console: lines of text wrap between
    words only, so a name is never broken (:class:`~precision_tool.render.fit.Words`).

    Raises:
        OutputClosed: standard output went away (a closed pipe, a full disk).
    """
    from rich.text import Text

    # crop=False: a name or OneLine wider than the console is printed whole
    try:
        for renderable in result.renderables:
            if isinstance(renderable, str):
                renderable = Text(renderable)
            if isinstance(renderable, Text):
                from ..render.fit import Words  # with rich's tables: imported when text is printed

                renderable = Words(renderable)
            context.console.print(renderable, crop=False)
    except OSError as exc:  # a full disk or an I/O error; a closed pipe comes as OutputClosed
        getattr(context.console, "output_lost", lambda: None)()
        raise OutputClosed(exc.strerror or str(exc), broken_pipe=False) from None


def _report(context: Context, message: str, style: str = "error") -> None:
    from ..render.lines import OneLine

    (context.error_console or context.console).print(OneLine(message, style), crop=False)


def _report_to_stderr(context: Context, message: str) -> None:
    """One error line on standard error even when errors otherwise go to the (lost) output."""
    from ..render.lines import OneLine
    from ..render.theme import make_console

    (context.error_console or make_console(stderr=True)).print(OneLine(message, "error"), crop=False)


def _usage(context: Context, usage: str) -> None:
    from rich.text import Text

    (context.error_console or context.console).print(Text(usage, style="muted"))


def _run_one(words: list[str], registry: Registry, context: Context) -> ExitStatus:
    if words[0] in registry.exit_words:
        raise ExitShell()
    result = None
    try:
        result = run_words(registry, words, context)
        render_result(result, context)  # inside the boundary: Ctrl-C or a bug while printing too
    except OutputClosed as exc:  # nobody reads any more: stop here, with the command's status
        if exc.broken_pipe:
            raise ExitShell(result.status if result is not None else ExitStatus.OK) from None
        _report_to_stderr(context, exc.line())
        raise ExitShell(ExitStatus.ERROR) from None
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
        import logging  # imported for a bug only: a run that goes well never pays for it

        logging.getLogger("precision_tool").debug("command failed", exc_info=True)
        _report(
            context,
            f"internal error in '{words[0]}': {type(exc).__name__}: {exc}"
            + ("" if context.config.debug else " (run with --debug for the traceback)"),
        )
        if context.config.debug:
            context.console.print(traceback.format_exc(), markup=False)
        return ExitStatus.ERROR
    return result.status


def execute_line(line: str, registry: Registry, context: Context) -> ExitStatus:
    """Run every ``;``-separated command of ``line``; the worst status wins. Never raises
    except :class:`ExitShell` (whose status, when set, is the worst so far)."""
    try:
        commands = split_commands(line)
    except UsageError as exc:
        _report(context, f"error: {exc}")
        return ExitStatus.ERROR
    worst = ExitStatus.OK
    for words in commands:
        try:
            status = _run_one(words, registry, context)
        except ExitShell as leave:
            if leave.status is not None:
                leave.status = ExitStatus(max(worst, leave.status))
            raise
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
    except ExitShell as leave:
        worst = max(worst, leave.status or ExitStatus.OK)
    return ExitStatus(worst)
