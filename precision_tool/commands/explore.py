"""``explore``: Google's Model Explorer on a result, opened at the first op that introduces the
error, with the verdict overlay first and one overlay per metric after it, each op coloured by
its verdict in all of them.

It writes the node data and ``explore.json`` into ``temp/explore/{timestamp}/`` (or ``-o DIR``;
:func:`precision_tool.model_explorer.prepare.prepare`), starts Model Explorer in the background
on them (:mod:`precision_tool.model_explorer.serve`, its output in ``serve.log`` there), waits
until it answers, opens the browser (not with ``--no-browser``) and says where it is, how to stop
it, and the short command that starts it again.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError
from .registry import Command, CommandParser, CommandResult
from .result_args import cosine_arg, result_sources

if TYPE_CHECKING:  # the result's readers load numpy: only when explore runs
    from ..context import Context
    from ..formats.output_root import OutputRoot
    from ..model_explorer.launch import Launch

DEFAULT_PORT = 8080  # Model Explorer's; the first free one from here is taken
PORT_RANGE = 20  # as Model Explorer looks for a free port: 8080..8099
STARTUP = 180.0  # seconds: the server imports flask and every adapter on busy shared cores
LOG_NAME = "serve.log"
PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # so the server loads this same package


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "source",
        nargs="?",
        metavar="CSV|DIR",
        help="a result CSV or a directory of them; defaults to the newest result under temp/vector_compare/",
    )
    parser.add_argument(
        "-c", "--cosine", type=cosine_arg, metavar="COS", help="the cosine threshold; defaults to the config's (0.98)"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write the node data and explore.json into DIR instead of temp/explore/{timestamp}/",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address Model Explorer listens on (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"its port (default {DEFAULT_PORT}: the first free one from there)",
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="start Model Explorer without opening a browser; print the address"
    )


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def choose_port(host: str, port: int) -> int:
    """``port``, or for the default the first free one of 8080..8099.

    Raises:
        PrecisionToolError: the port (or every one of the range) is taken.
    """
    if not 0 < port < 65536:
        raise PrecisionToolError(f"explore: --port {port} is not a port number (1-65535)")
    candidates = range(port, port + PORT_RANGE) if port == DEFAULT_PORT else [port]
    for candidate in candidates:
        if _port_free(host, candidate):
            return candidate
    taken = f"ports {port}-{port + PORT_RANGE - 1} are" if port == DEFAULT_PORT else f"port {port} is"
    raise PrecisionToolError(f"explore: {taken} in use on {host}: give a free one with --port")


def _chosen_result(context: Context, source: str | None, rule) -> tuple[Path, list[str]]:
    """The CSV to show: the only one, else the first whose verdict names an introducer."""
    from ..model_explorer.prepare import judged_view

    paths = result_sources(source, context)
    if len(paths) == 1:
        return paths[0], []
    errors = []
    for path in paths:
        try:
            if judged_view(context, path, rule).first_introducer is not None:
                return path, errors
        except PrecisionToolError as exc:
            errors.append(str(exc))
    return paths[0], errors


def _environment() -> dict[str, str]:
    paths = [str(PACKAGE_PARENT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def start_server(root: OutputRoot, config: Path, host: str, port: int, browser: bool) -> subprocess.Popen:
    """Model Explorer on ``config`` in its own session (Ctrl-C at the prompt leaves it running),
    its output into ``serve.log`` beside ``config`` (written under ``root``), reaped when it
    exits."""
    from ..model_explorer.launch import SERVE_MODULE

    command = [sys.executable, "-m", SERVE_MODULE, str(config), "--host", host, "--port", str(port)]
    if not browser:
        command.append("--no-browser")
    with root.create(config.parent / LOG_NAME, binary=True) as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_environment(),
            start_new_session=True,
        )
    # The server is this process's child: once it exits (killed, or it fails) it stays a zombie
    # until waited for, for as long as the shell runs. A daemon thread waits for it, reaping it
    # the moment it exits; poll() then gives the status the thread collected.
    threading.Thread(target=process.wait, name=f"reap-{process.pid}", daemon=True).start()
    return process


def _answers(host: str, port: int) -> bool:
    shown = f"[{host}]" if ":" in host else host
    try:
        with urllib.request.urlopen(f"http://{shown}:{port}/check_health", timeout=5) as answer:
            return answer.read() == b"model_explorer_ok"
    except OSError:
        return False


def _last_line(log: Path) -> str:
    from ..formats.files import read_text
    from ..render.lines import one_line

    try:
        lines = read_text(log, "Model Explorer's log", 1 << 20).strip().splitlines()
    except PrecisionToolError as exc:
        return str(exc)
    return one_line(lines[-1]) if lines else "no output"


def wait_until_serving(process: subprocess.Popen, host: str, port: int, log: Path) -> None:
    """Return once Model Explorer answers on ``host:port``.

    Raises:
        PrecisionToolError: it ended first (its last line of output) or did not answer within
            :data:`STARTUP` seconds (then it is stopped).
    """
    deadline = time.monotonic() + STARTUP
    while not _answers(host, port):
        if process.poll() is not None:
            raise PrecisionToolError(f"Model Explorer stopped (status {process.returncode}): {_last_line(log)}", log)
        if time.monotonic() > deadline:
            process.terminate()
            raise PrecisionToolError(f"Model Explorer did not answer within {STARTUP:.0f} s", log)
        time.sleep(0.3)


def _lines(launch: Launch, url: str, pid: int, config: Path, errors: list[str]) -> list:
    from rich.text import Text

    from ..model_explorer.launch import serve_command
    from ..render.lines import OneLine, OneLineText, data_text, one_line
    from ..render.palette import marked, swatch

    focus = Text("nothing flagged: opened at the top", style="muted")
    if launch.focus:
        state = launch.focus_state
        focus = Text.assemble(data_text(launch.focus), "  ", (marked(state), swatch(state).style))
    out: list = [OneLineText(Text.assemble(("model explorer: ", "title"), (one_line(url), "path")))]
    out.append(OneLineText(Text.assemble(("opened at: ", "title"), focus)))
    out.append(OneLineText(Text.assemble(("result: ", "title"), data_text(launch.result, "path"))))
    out.append(OneLine(f"running as process {pid}; stop it with: kill {pid}", "muted"))
    out.append(OneLineText(Text.assemble(("start it again: ", "title"), (one_line(serve_command(config)), "path"))))
    out += [OneLine(f"error: {e}") for e in errors]
    return out


def run(args, context: Context) -> CommandResult:
    """Write the node data, start Model Explorer and say where it is."""
    from ..compare.verdict import FlagRule
    from ..formats.output_root import stamps
    from ..model_explorer.launch import CONFIG_NAME
    from ..model_explorer.prepare import prepare

    if importlib.util.find_spec("model_explorer") is None:
        raise PrecisionToolError('explore: Model Explorer is not installed: pip install "precision-tool[explorer]"')
    rule = FlagRule.from_config(context.config, args.cosine)
    port = choose_port(args.host, args.port)
    csv, errors = _chosen_result(context, args.source, rule)
    if args.output:
        root = context.output_at(args.output)
        directory = root.directory()
    else:
        root = context.output
        directory = root.new_directory(["explore"], stamps(datetime.now()))
    launch = prepare(context, csv, rule, root, directory)
    config = directory / CONFIG_NAME
    process = start_server(root, config, args.host, port, not args.no_browser)
    try:
        wait_until_serving(process, args.host, port, directory / LOG_NAME)
    except BaseException:  # Ctrl-C while it starts: stop the server this command started
        if process.poll() is None:
            process.terminate()
        raise
    url = launch.url(args.host, port)
    return CommandResult(_lines(launch, url, process.pid, config, errors), files=[*launch.node_data, config])


COMMAND = Command(
    name="explore",
    summary="open Model Explorer at the first op that introduces the error, coloured by the verdict",
    add_arguments=_add_arguments,
    run=run,
    completions={"": "path", "-o": "path", "--output": "path"},
    description="Write Model Explorer node data for a result (default: the newest) into "
    "temp/explore/{timestamp}/ (or -o DIR) with explore.json, start Model Explorer "
    "(the 'explorer' extra: pip install \"precision-tool[explorer]\") in the background "
    "with this project's GE graph adapter, and open the browser at the first operator "
    "that introduces the error, selected: the verdict overlay first, one overlay per "
    "metric after it (each op coloured by its verdict in every one), the compiler's trans_* ops in the layer of the op they serve. Prints the "
    "address, the process to stop, and the short command that starts it again.",
)
