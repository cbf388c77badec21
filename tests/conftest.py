"""Shared test helpers: where the shared fixtures live, and a skip when they do not."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"
REAL = SHARED / "real"
FIXTURES_SKIP_REASON = "../shared/fixtures not present beside this clone"
REAL_SKIP_REASON = "../shared/real not present beside this clone"


def skip_reason(path: Path) -> str:
    """The one reason a test that needs ``path`` (inside ../shared) skips with."""
    return REAL_SKIP_REASON if path.is_relative_to(REAL) else FIXTURES_SKIP_REASON


def require_shared(path: Path) -> Path:
    """``path`` inside ../shared, or skip the test with the reason when it is absent."""
    if not path.exists():
        pytest.skip(skip_reason(path))
    return path


@pytest.fixture
def real_dir() -> Path:
    """``../shared/real``: files real CANN installations wrote (skips when it is absent)."""
    if not REAL.is_dir():
        pytest.skip(REAL_SKIP_REASON)
    return REAL


@pytest.fixture
def small_case() -> Path:
    """The ``small`` fixture case directory."""
    return require_shared(FIXTURES / "small")


@pytest.fixture
def sample_data(tmp_path) -> Path:
    """A private copy of the shipped sample ``precision_data`` (commands write its temp/)."""
    import shutil

    target = tmp_path / "precision_data"
    shutil.copytree(REPO_ROOT / "precision_data", target, ignore=shutil.ignore_patterns("temp"))
    return target


@pytest.fixture
def fixture_data(tmp_path) -> Path:
    """A private copy of the shared ``small`` fixture's precision_data (../shared is read-only)."""
    import shutil

    source = require_shared(FIXTURES / "small" / "precision_data")
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
    """msaccucmp's result CSV for the ``small`` fixture (skips when ../shared is absent)."""
    return require_shared(FIXTURES / "small" / "reference_result.csv")


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
