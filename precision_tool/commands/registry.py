"""The one registry of commands. The shell and the one-shot command line dispatch through it.

A command is a name, a one-line summary, a function that adds its arguments to a parser, and a
``run(args, context)`` that returns what to show (a :class:`CommandResult` or any rich
renderable). Commands never print; the caller renders.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PrecisionToolError
from ..status import ExitStatus

if TYPE_CHECKING:
    from ..context import Context


class UsageError(PrecisionToolError):
    """Bad command-line words: the message plus the command's usage."""

    def __init__(self, message: str, usage: str = ""):
        self.usage = usage
        super().__init__(message)


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing and exiting."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, add_help=False, exit_on_error=False, allow_abbrev=False, **kwargs)
        self.add_argument("-h", "--help", action="store_true", help="show this help")

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}", self.format_usage().strip())

    def exit(self, status: int = 0, message: str | None = None):
        raise UsageError(message or f"{self.prog}: exited", self.format_usage().strip())


def add_graph_argument(parser: CommandParser) -> None:
    """``-g/--graph``: which graph a command reads (``ls``, ``ni``), spelled once."""
    parser.add_argument(
        "-g",
        "--graph",
        help="only this graph: a graph file's path (a GE dump, atc JSON, an .om), "
        "a graph or model name, a graph file name, a graph id, or a stage "
        "other than Build (PreRunBegin...)",
    )


def setting_arg(name: str):
    """An argparse type for a flag standing for setting ``name`` (``vcs -c`` for
    COSINE_THRESHOLD): the value is checked by the setting's own rule in :mod:`..config`, the
    one home of what each setting accepts, so the flag and config.py refuse the same values."""

    def parse(text: str):
        from ..config import check_flag  # when a flag is parsed: --help and help load no settings

        try:
            return check_flag(name, text)
        except ValueError as bad:
            raise argparse.ArgumentTypeError(f"{text!r} is not {bad}") from None

    parse.__name__ = name.lower()
    return parse


@dataclass
class CommandResult:
    """What a command hands back: renderables in order, its status, the files it wrote."""

    renderables: list[Any] = field(default_factory=list)
    status: ExitStatus = ExitStatus.OK
    files: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Command:
    """One command. ``completions`` maps option strings (or ``""`` for positionals) to what
    completes there: ``"op"`` (op names), ``"optype"`` (op types), ``"path"``, ``"tensor"`` (dump
    files / npy), ``"command"``."""

    name: str
    summary: str
    add_arguments: Callable[[CommandParser], None]
    run: Callable[[argparse.Namespace, Context], Any]
    aliases: tuple[str, ...] = ()
    completions: dict[str, str] = field(default_factory=dict)
    description: str | Callable[[], str] = ""  # a callable is called when the help is shown
    flag_hints: dict[str, str] = field(default_factory=dict)  # option string -> said on its errors
    # called with the parsed words and the settings before a one-shot line runs, to start what
    # the command will need while the rest loads (vc: the pool's fork server)
    prepare: Callable[[argparse.Namespace, Any], None] | None = None
    # whether the command may multiply matrices in this process (a replay: why, vcs): a one-shot
    # line whose commands all do not keeps BLAS to one thread (:func:`multiplies_matrices`)
    multiplies: bool = True

    def hint_for(self, argument_name: str | None) -> str:
        """What ``flag_hints`` says about the option an argparse error names (``-d/--debug``),
        as ``"; hint"``, or ``""``."""
        for option in (argument_name or "").split("/"):
            if option in self.flag_hints:
                return f"; {self.flag_hints[option]}"
        return ""

    def parser(self) -> CommandParser:
        description = self.description() if callable(self.description) else self.description
        parser = CommandParser(prog=self.name, description=description or self.summary)
        self.add_arguments(parser)
        return parser

    def option_strings(self) -> list[str]:
        return [s for action in self.parser()._actions for s in action.option_strings]


EXIT_WORDS = {"exit": "leave the shell (also quit, Ctrl-D)", "quit": "leave the shell"}


class Registry:
    """Commands by name and alias, in the order they were added, and the words that leave.

    ``exit_words`` maps each word that ends the shell (or a ``-e`` line) to its help; the
    dispatcher, ``help`` and completion all read it here.
    """

    def __init__(self, exit_words: dict[str, str] | None = None) -> None:
        self._commands: dict[str, Command] = {}
        self._names: dict[str, Command] = {}
        self.exit_words = dict(EXIT_WORDS if exit_words is None else exit_words)

    def add(self, command: Command) -> Command:
        for name in (command.name, *command.aliases):
            if name in self._names:
                raise ValueError(f"command name {name!r} registered twice")  # a bug, not user input
            self._names[name] = command
        self._commands[command.name] = command
        return command

    def __iter__(self):
        return iter(self._commands.values())

    def names(self) -> list[str]:
        return list(self._names)

    def get(self, name: str, args: Sequence[str] = ()) -> Command:
        """The command called ``name``; UsageError with the likeliest command when there is none
        (see :meth:`nearest`; ``args`` are the words typed after the name)."""
        try:
            return self._names[name]
        except KeyError:
            near = self.nearest(name, args)
            hint = f"; did you mean '{near}'?" if near else "; type 'help' for the list"
            raise UsageError(f"unknown command '{name}'{hint}") from None

    def nearest(self, name: str, args: Sequence[str] = ()) -> str | None:
        """The command (or exit word) a mistyped ``name`` most likely meant: names that look
        alike (similarity >= 0.5), weighed by how many of the flags in ``args`` each accepts,
        so ``vsc -c 0.98`` means ``vcs`` (which has ``-c``), not ``vc``."""
        import difflib  # for a mistyped word only

        flags = [word.split("=", 1)[0] for word in args if _is_flag(word)]
        scored = []
        for candidate in [*self.names(), *self.exit_words]:
            similarity = difflib.SequenceMatcher(None, name, candidate).ratio()
            if similarity < 0.5:
                continue
            command = self._names.get(candidate)
            known = set(command.option_strings()) if command else set()
            accepted = sum(flag in known for flag in flags) / len(flags) if flags else 0.0
            scored.append((similarity + accepted, similarity, candidate))
        return max(scored)[2] if scored else None


def _is_flag(word: str) -> bool:
    """``-c`` or ``--limit=3``, not a negative number such as ``-1``."""
    if not word.startswith("-") or word == "-":
        return False
    try:
        float(word)
    except ValueError:
        return True
    return False


MAX_LINE = 1 << 16  # characters; shlex slows down quadratically on lines far longer than this


def split_commands(line: str) -> list[list[str]]:
    """Words of each ``;``-separated command of ``line``, shell-quoted; nothing is executed.

    A line longer than :data:`MAX_LINE` characters (a pasted tensor, say) is a UsageError.
    """
    if len(line) > MAX_LINE:
        raise UsageError(f"the command line is too long ({len(line)} characters; at most {MAX_LINE})")
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
    lexer.whitespace_split = True
    lexer.commenters = ""
    commands, words = [], []
    try:
        for token in lexer:
            if token and set(token) == {";"}:
                commands.append(words)
                words = []
            else:
                words.append(token)
    except ValueError as exc:  # "No closing quotation"
        raise UsageError(f"cannot parse the command line: {exc}") from None
    commands.append(words)
    return [c for c in commands if c]


def prepare_words(registry: Registry, words: list[str], config) -> None:
    """Let the command of ``words`` start what it will need (:attr:`Command.prepare`), before a
    one-shot line runs. Words that do not parse are left for the run to report: nothing here
    says anything."""
    command = registry._names.get(words[0]) if words else None
    if command is None or command.prepare is None:
        return
    try:
        args = command.parser().parse_args(words[1:])
    except (argparse.ArgumentError, UsageError):
        return
    if not args.help:
        command.prepare(args, config)


def multiplies_matrices(registry: Registry, commands: list[list[str]]) -> bool:
    """Whether a command of a one-shot line may multiply matrices in this process
    (:attr:`Command.multiplies`); words that name no command count as one that may."""
    for words in commands:
        command = registry._names.get(words[0]) if words else None
        if command is None or command.multiplies:
            return True
    return False


def run_words(registry: Registry, words: list[str], context: Context) -> CommandResult:
    """Parse ``words`` (command name first) and run the command."""
    command = registry.get(words[0], words[1:])
    parser = command.parser()
    try:
        args = parser.parse_args(words[1:])
    except argparse.ArgumentError as exc:
        raise UsageError(
            f"{command.name}: {exc}{command.hint_for(exc.argument_name)}", parser.format_usage().strip()
        ) from None
    if args.help:
        return CommandResult([parser.format_help().rstrip()])
    result = command.run(args, context)
    return result if isinstance(result, CommandResult) else CommandResult([result])
