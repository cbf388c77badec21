"""Shell input fuzzing: whatever is typed, nothing gets past the one error boundary.

Hypothesis builds command lines from real command names and flags, values the commands take,
quotes, separators, shell metacharacters, control characters and plain noise, plus very long
lines, and feeds them to :func:`execute_line` on a copy of the sample data. Every line must
come back with an exit status (or ExitShell for exit/quit) and without an internal error.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.commands import build_registry, registry
from precision_tool.commands.dispatch import ExitShell, execute_line
from precision_tool.commands.registry import EXIT_WORDS, MAX_LINE
from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT, make_context

REGISTRY = build_registry()
COMMANDS = sorted(REGISTRY.names())
FLAGS = sorted({flag for command in REGISTRY for flag in command.option_strings()})
CONV1 = "Conv2D.resnet_conv1_Conv2D.12.0.1764417600000074"
VALUES = [
    "0",
    "1",
    "-1",
    "3",
    "0.98",
    "1.5",
    "nan",
    "inf",
    "1e309",
    "-0",
    "9" * 40,
    "NCHW",
    "ND",
    "x",
    "resnet/conv1/Conv2D",
    "resnet",
    CONV1,
    f"{CONV1}:input:0",
    f"{CONV1}:output:9",
    "tf:resnet_add_add.0",
    "resnet_add_add.0",
    "npu:",
    "tf:",
    "debug_1:x",
    ":output:0",
    "'",
    '"',
    "\\",
    ";",
    ";;",
    "--",
    "-",
    "*",
    "?",
    "$HOME",
    "`ls`",
    "$(rm -rf x)",
    "|",
    "&&",
    ">",
    "<",
    "#",
    "\x00",
    "\x1b[31m",
    "\t",
    "\r",
    "\n",
    "\x7f",
    "é",
    "网络",
    "\u202e",
    "\ufeff",
    "precision_data",
    "temp",
    "npu/debug_0",
    "tf/dump",
    "..",
    "../..",
    "0|5",
    "3-5",
    "5-3",
]
# No "/" or "~" at the start of free text: an output flag must not name a real place outside
# the test's working directory (relative paths land in a temporary directory).
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/~"), max_size=24)
TOKEN = st.one_of(st.sampled_from(COMMANDS), st.sampled_from(FLAGS), st.sampled_from(VALUES), _TEXT)
WORDS = st.lists(TOKEN, min_size=1, max_size=8)
COMMAND_LINE = st.builds(
    lambda first, rest: " ".join([first, *rest]), st.sampled_from(COMMANDS), st.lists(TOKEN, max_size=7)
)
LONG_LINE = st.builds(lambda words, times: " ".join(words * times), WORDS, st.integers(50, 400))
LINE = st.one_of(COMMAND_LINE, WORDS.map(" ".join), WORDS.map(";".join), _TEXT, LONG_LINE)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """One shell session on a private sample copy, run from a private working directory."""
    base = tmp_path_factory.mktemp("fuzz")
    data = base / "precision_data"
    shutil.copytree(REPO_ROOT / "precision_data", data, ignore=shutil.ignore_patterns("temp"))
    work = base / "cwd"
    work.mkdir()
    context, buffer = make_context(data, width=120, WORKERS=1)
    yield context, buffer, work
    _stop_servers_under(base)


def _stop_servers_under(base) -> None:
    """End the Model Explorer servers a fuzzed ``explore`` line started (they outlive the command
    by design, and would outlive the suite)."""
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"precision_tool.model_explorer.serve" in argv and any(str(base).encode() in a for a in argv):
            try:
                os.kill(int(proc.name), signal.SIGTERM)
            except OSError:
                pass


def _exits(line: str) -> bool:
    return any(word in line for word in EXIT_WORDS)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(line=LINE)
def test_no_line_gets_past_the_boundary(session, line):
    context, buffer, work = session
    buffer.seek(0)
    buffer.truncate()
    cwd = os.getcwd()
    os.chdir(work)
    try:
        status = execute_line(line, REGISTRY, context)
    except ExitShell:
        assert _exits(line), line
        return
    finally:
        os.chdir(cwd)
    assert isinstance(status, ExitStatus)
    output = buffer.getvalue()
    assert "internal error" not in output and "Traceback" not in output, (line, output)


def test_a_huge_line_is_one_quick_usage_error(session, monkeypatch):
    context, buffer, _ = session
    buffer.seek(0)
    buffer.truncate()

    def never(*args, **kwargs):  # shlex alone would take tens of seconds on such a line
        raise AssertionError("the line was split although it is too long")

    monkeypatch.setattr(registry.shlex, "shlex", never)
    status = execute_line("pt " + "x" * 1_000_000, REGISTRY, context)
    assert status == ExitStatus.ERROR
    assert buffer.getvalue().strip() == (
        f"error: the command line is too long (1000003 characters; at most {MAX_LINE})"
    )


def test_the_longest_line_allowed_still_runs(session):
    context, buffer, _ = session
    line = "ls -n " + "x" * (MAX_LINE - 6)
    assert execute_line(line, REGISTRY, context) == ExitStatus.OK
