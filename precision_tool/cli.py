"""Entry point: ``precision-tool``, ``python -m precision_tool`` and ``python3 precision_tool/cli.py``.

Without a command it opens the shell; with one (or ``-e "cmd1; cmd2"``) it runs it, prints, and
exits 0 (fine), 1 (suspicious operators found), 2 (usage or input error).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import threading
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python3 ./precision_tool/cli.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precision_tool import __version__  # noqa: E402
from precision_tool.errors import OutputClosed, PrecisionToolError  # noqa: E402
from precision_tool.status import ExitStatus  # noqa: E402


def commands_epilog() -> str:
    """Every command of the registry with its summary, for ``--help``."""
    from precision_tool.commands import build_registry
    from precision_tool.commands.help import command_list

    return command_list(build_registry(), title="commands:") + "\n\n'precision-tool help CMD' explains one."


def plain_help(words: list[str]) -> str | None:
    """The text of a one-shot ``help`` or ``help CMD`` (the registry alone, no settings or
    console: as fast as ``--help``), or None when the words are anything else, or name a
    command that does not exist (the ordinary path says so, with close names)."""
    from precision_tool.commands.help import HELP_NAMES, command_help, command_list

    if not words or words[0] not in HELP_NAMES or len(words) > 2:
        return None
    from precision_tool.commands import UsageError, build_registry

    registry = build_registry()
    if len(words) == 1:
        return command_list(registry)
    try:
        return command_help(registry, words[1])
    except UsageError:
        return None


def write_plain(text: str) -> ExitStatus:
    """Print ``text`` on standard output as the commands' output is: a closed pipe ends quietly,
    a full disk is one line on standard error and status 2."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stdout = None  # nothing more to flush at exit
        return ExitStatus.OK
    except OSError as exc:
        sys.stdout = None
        print(OutputClosed(exc.strerror or str(exc), broken_pipe=False).line(), file=sys.stderr)
        return ExitStatus.ERROR
    return ExitStatus.OK


class _HelpAction(argparse.Action):
    """``-h``: the usage, then the command list, built only now so that ``--version`` and the
    commands themselves do not import every command module for it."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.epilog = commands_epilog()
        parser.exit(int(write_plain(parser.format_help().rstrip())))


def build_parser() -> argparse.ArgumentParser:
    """The one-shot command line's parser (the commands' own parsers take the rest)."""
    parser = argparse.ArgumentParser(
        prog="precision-tool",
        add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Find the operator where a network's numbers go wrong on Ascend NPUs. "
        "Without COMMAND: the interactive shell.",
    )
    parser.add_argument("-h", "--help", action=_HelpAction, help="show this help and the commands")
    parser.add_argument("--data", metavar="DIR", help="data root. Defaults to DATA_ROOT_DIR, else ./precision_data.")
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="output root: where every command writes (results, exports, graphs, "
        "reports, caches). Defaults to OUTPUT_ROOT, else temp/ under the data root.",
    )
    parser.add_argument(
        "--config", metavar="PATH", help="config.py to read (else $PRECISION_TOOL_CONFIG, else ./config.py)"
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    parser.add_argument("-e", dest="execute", metavar="COMMANDS", help='run "cmd1; cmd2" and exit')
    parser.add_argument("--version", action="version", version=f"precision-tool {__version__}")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="a command and its arguments")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the tool; returns the exit status."""
    args = build_parser().parse_args(argv)  # --version and --help end here, before the imports
    text = plain_help(args.command) if args.execute is None else None
    if text is not None:
        return int(write_plain(text))
    from precision_tool.compare.numba_line import claim_process
    from precision_tool.config import load_config

    claim_process()  # the CLI and its shell run no one else's numba code: its BLAS probe is skipped
    try:
        config = load_config(
            {"DATA_ROOT_DIR": args.data, "OUTPUT_ROOT": args.out, "DEBUG": args.debug or None}, args.config
        )
    except PrecisionToolError as exc:
        from precision_tool.render.lines import OneLine
        from precision_tool.render.theme import make_console

        make_console(stderr=True).print(OneLine(f"error: {exc}"), crop=False)  # never wrapped
        return ExitStatus.ERROR
    if args.execute is None and not args.command:
        from precision_tool.context import Context
        from precision_tool.render.theme import make_console
        from precision_tool.shell.app import run_shell

        return int(run_shell(Context(config, make_console())))
    return _one_shot(args.execute if args.execute is not None else shlex.join(args.command), config)


def _one_shot(line: str, config) -> int:
    """Run a ``-e`` line or the command given after the options. Each command may first start
    what it will need (vc: the pool's fork server), before the rest of the tool loads."""
    from precision_tool.commands import UsageError, build_registry
    from precision_tool.commands.registry import multiplies_matrices, prepare_words, split_commands

    try:
        commands = split_commands(line)
    except UsageError:
        commands = None  # execute_line says what is wrong with the line
    registry = build_registry(None if commands is None else [words[0] for words in commands])  # only theirs
    if commands and not multiplies_matrices(registry, commands):
        from precision_tool.compare.pool_server import one_blas_thread

        one_blas_thread()
    for words in commands or ():
        prepare_words(registry, words, config)
    from precision_tool.commands.dispatch import ExitShell, execute_line
    from precision_tool.context import Context
    from precision_tool.render.theme import make_console

    context = Context(config, make_console(), error_console=make_console(stderr=True))
    try:
        return int(execute_line(line, registry, context))
    except ExitShell as leave:
        return int(leave.status or ExitStatus.OK)


def entry() -> None:
    """The program (``precision-tool``, ``python -m precision_tool``): :func:`main`, then the
    process ends with its status without the interpreter's teardown.

    Freeing what a run loaded, one object at a time, is most of a second once numba and LLVM
    are in (0.5-0.9 s of wall time after the last exit handler on the msprobe 500M pair,
    measured; docs/performance.md, "Fixed cost"), for memory the system takes back at once.
    Nothing is lost: the exit handlers run first (logs, temporary files, pools, a coverage
    tool's), then the standard streams are flushed. With another thread still running the
    interpreter ends as usual, so that thread is waited for as before.
    """
    status = main()
    if threading.active_count() > 1:
        sys.exit(status)
    import atexit

    atexit._run_exitfuncs()  # what sys.exit would run, in the same order
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    os._exit(status)


if __name__ == "__main__":
    entry()
