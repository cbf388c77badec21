"""``help [CMD]``: the command list, or one command's full usage, generated from its parser.

The texts are plain strings built from the registry alone (no console, no settings), so the
one-shot ``precision-tool help`` and ``--help`` print them without loading the rest of the tool.
"""

from __future__ import annotations

from .registry import Command, CommandParser, CommandResult, Registry

LIST_TITLE = "commands (help CMD for details)"
HELP_NAMES = ("help", "?")  # the command's name and alias (cli.py answers them without a console)


def command_list(registry: Registry, title: str = LIST_TITLE) -> str:
    """Every command and exit word of ``registry`` with its summary, one aligned line each."""
    rows = [(c.name, c.summary) for c in registry] + list(registry.exit_words.items())
    width = max(len(name) for name, _ in rows)
    return "\n".join([title] + [f"  {name:<{width}}  {summary}" for name, summary in rows])


def command_help(registry: Registry, name: str) -> str:
    """One command's usage and options (or an exit word's line). Raises UsageError for a name
    the registry does not know (with close names)."""
    if name in registry.exit_words:
        return f"{name}: {registry.exit_words[name]}"
    return registry.get(name).parser().format_help().rstrip()


def make_help(registry: Registry) -> Command:
    """The help command of ``registry`` (it lists the registry it belongs to)."""

    def add_arguments(parser: CommandParser) -> None:
        parser.add_argument("command", nargs="?", help="the command to explain")

    def run(args, context) -> CommandResult:
        if args.command:
            return CommandResult([command_help(registry, args.command)])
        return CommandResult([command_list(registry)])

    return Command(
        name=HELP_NAMES[0],
        summary="list the commands, or explain one: help CMD",
        add_arguments=add_arguments,
        run=run,
        aliases=HELP_NAMES[1:],
        completions={"": "command"},
    )
