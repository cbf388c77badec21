"""``help [CMD]``: the command list, or one command's full usage, generated from its parser."""

from __future__ import annotations

from .registry import Command, CommandParser, CommandResult, Registry

def make_help(registry: Registry) -> Command:
    """The help command of ``registry`` (it lists the registry it belongs to)."""

    def add_arguments(parser: CommandParser) -> None:
        parser.add_argument("command", nargs="?", help="the command to explain")

    def run(args, context) -> CommandResult:
        if args.command:
            if args.command in registry.exit_words:
                return CommandResult([f"{args.command}: {registry.exit_words[args.command]}"])
            return CommandResult([registry.get(args.command).parser().format_help().rstrip()])
        from rich.table import Table

        table = Table(show_header=False, box=None, title="commands (help CMD for details)", title_justify="left")
        for command in registry:
            table.add_row(command.name, command.summary)
        for word, summary in registry.exit_words.items():
            table.add_row(word, summary)
        return CommandResult([table])

    return Command(name="help", summary="list the commands, or explain one: help CMD",
                   add_arguments=add_arguments, run=run, aliases=("?",),
                   completions={"": "command"})
