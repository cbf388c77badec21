"""Shared test helpers: where the test data lives, and the no-skip rule CI runs under."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "tests" / "data"
# The answer keys travel with the code (tests/data/README.md says where each file came from):
# a msaccucmp-checked fixture case and files real CANN installations wrote.
FIXTURES = DATA / "fixtures"
REAL = DATA / "real"
# Set by .ci/run (and the README's test command): a skipped test fails the run, so a test that
# cannot run on a fresh clone with every extra installed is seen rather than silently skipped.
NO_SKIPS = "PRECISION_TOOL_NO_SKIPS"


def skips_fail() -> bool:
    """True when ``PRECISION_TOOL_NO_SKIPS=1``: every skip, at collection or in a test, fails."""
    return os.environ.get(NO_SKIPS) == "1"


@pytest.fixture(autouse=True)
def _terminal_size_not_from_the_runner(monkeypatch):
    """No COLUMNS or LINES from whatever runs the tests: pytest-xdist's workers export
    COLUMNS=80 and LINES=24, which a serial run does not have, and the CLI's layout follows
    COLUMNS (a test that wants a width sets it in the command's environment)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """Under the no-skip rule, name each skipped test and its reason, and fail the run."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if not skips_fail() or not skipped:
        return
    reporter.write_line(f"{len(skipped)} skipped under {NO_SKIPS}=1, which fails the run:", red=True)
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reporter.write_line(f"  {report.nodeid}: {reason.removeprefix('Skipped: ')}")
    if exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def real_dir() -> Path:
    """``tests/data/real``: files real CANN installations wrote (tests/data/README.md)."""
    return REAL


@pytest.fixture
def small_case() -> Path:
    """The ``small`` fixture case directory."""
    return FIXTURES / "small"


@pytest.fixture
def sample_data(tmp_path) -> Path:
    """A private copy of the shipped sample ``precision_data`` (commands write its temp/)."""
    import shutil

    target = tmp_path / "precision_data"
    shutil.copytree(REPO_ROOT / "precision_data", target, ignore=shutil.ignore_patterns("temp"))
    return target


@pytest.fixture
def fixture_data(tmp_path) -> Path:
    """A private copy of the ``small`` fixture's precision_data (commands write its temp/)."""
    import shutil

    source = FIXTURES / "small" / "precision_data"
    target = tmp_path / "fixture_small" / "precision_data"
    shutil.copytree(source, target)
    return target


def make_context(data_root: Path, width: int = 120, **settings):
    """A Context on ``data_root`` whose console writes into a StringIO; returns (context, buffer).

    ``settings`` are upper-case config names (``TF_DUMP_STEP="0"``); no config.py or environment
    variable is read.
    """
    import io

    from precision_tool.config import load_config
    from precision_tool.context import Context
    from precision_tool.render.theme import make_console

    buffer = io.StringIO()
    config = load_config({"DATA_ROOT_DIR": data_root, **settings}, environ={}, cwd=data_root.parent)
    return Context(config, make_console(file=buffer, width=width)), buffer


def run_command(context, line: str):
    """Run ``line`` through the real registry and error boundary; returns the exit status."""
    from precision_tool.commands import build_registry
    from precision_tool.commands.dispatch import execute_line

    return execute_line(line, build_registry(), context)


@pytest.fixture
def reference() -> Path:
    """msaccucmp's result CSV for the ``small`` fixture."""
    return FIXTURES / "small" / "reference_result.csv"


@pytest.fixture
def data_root(tmp_path) -> Path:
    """An empty data root."""
    root = tmp_path / "precision_data"
    root.mkdir()
    return root


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the tests that send it, however the suite was started.

    A non-interactive shell starts a background job (``bash .ci/run &``) with SIGINT ignored, and
    Python then leaves it ignored: the tests that interrupt a command with a real SIGINT (in this
    process, or through a pty to a child, which inherits the disposition) would see the command
    run to its end. Catching it here also gives every child the default action back at exec.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
