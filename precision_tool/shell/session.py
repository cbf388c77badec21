"""The interactive shell on a terminal: a prompt_toolkit session around :func:`execute_line`.

Banner, prompt ``PrecisionTool > ``, persistent history, completion; ``exit``, ``quit`` and Ctrl-D
leave; Ctrl-C at the prompt drops the line, Ctrl-C during a command cancels the command (the
boundary in ``app.py`` catches it). Input and output can be injected, so tests drive the real loop
with a pipe instead of a terminal. Lines go to the command registry only, never to a system shell.
"""

from __future__ import annotations

import logging

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.history import History
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from rich.console import RenderableType
from rich.text import Text

from .. import __version__
from ..commands.dispatch import ExitShell, execute_line
from ..commands.registry import Registry
from ..context import Context
from ..errors import PrecisionToolError
from ..formats.data_survey import survey
from ..render.survey import render_survey
from ..status import ExitStatus
from .completer import ShellCompleter
from .history import open_history

log = logging.getLogger("precision_tool")
PROMPT = "PrecisionTool > "
HINT = "type 'help' for the commands, 'help CMD' for one, 'exit' or Ctrl-D to leave"


def banner(context: Context) -> RenderableType:
    """The start-up banner: version, data root and what it holds; one warning line when the data
    root is missing or cannot be surveyed (the shell starts anyway)."""
    root = context.config.data_root_dir
    try:
        return render_survey(survey(root), __version__)
    except PrecisionToolError as exc:
        return Text(f"PrecisionTool {__version__}  warning: {exc}", style="warn")
    except Exception as exc:  # unreadable root, a bug in the survey: say so, start anyway
        log.debug("survey failed", exc_info=True)
        return Text(f"PrecisionTool {__version__}  warning: cannot survey {root}: {exc}", style="warn")


def make_session(
    registry: Registry,
    context: Context,
    input: Input | None = None,
    output: Output | None = None,
    history: History | None = None,
) -> PromptSession:
    """The prompt_toolkit session: prompt, history (default: the user's history file),
    completion in a background thread, suggestions from history. Defaults to the terminal."""
    return PromptSession(
        PROMPT,
        history=open_history() if history is None else history,
        completer=ShellCompleter(registry, context),
        complete_in_thread=True,
        complete_while_typing=True,
        auto_suggest=AutoSuggestFromHistory(),
        input=input,
        output=output,
    )


def read_line(session: PromptSession) -> str | None:
    """The next line typed: ``""`` after Ctrl-C (the line is dropped), None at Ctrl-D or end of input."""
    try:
        return session.prompt()
    except KeyboardInterrupt:
        return ""
    except EOFError:
        return None


def interactive_loop(
    registry: Registry,
    context: Context,
    *,
    input: Input | None = None,
    output: Output | None = None,
    history: History | None = None,
) -> ExitStatus:
    """Prompt, run, repeat, until ``exit``/``quit``, Ctrl-D or the end of input.

    ``input``/``output`` default to the terminal; tests pass a pipe input and a dummy output.
    ``history`` defaults to the user's history file. Returns OK: leaving the shell is no error.
    """
    context.console.print(banner(context))
    context.console.print(Text(HINT, style="muted"))
    session = make_session(registry, context, input, output, history)
    while (line := read_line(session)) is not None:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            execute_line(line, registry, context)
        except ExitShell:
            break
        except KeyboardInterrupt:  # Ctrl-C landing between two commands of the line
            context.console.print(Text("cancelled", style="warn"))
    return ExitStatus.OK
