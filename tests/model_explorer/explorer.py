"""Model Explorer for the tests: imported when installed (the ``explorer`` extra), skipped
otherwise -- except in CI, which installs it (``.ci/run``), where its absence fails; and a printed
"start it again" command run as a real server (:func:`serving`)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest


def require_explorer():
    """The ``model_explorer`` package, or skip (fail under CI) when it is not installed."""
    try:
        import model_explorer
    except ImportError:
        message = 'ai-edge-model-explorer is not installed: pip install "precision-tool[explorer]"'
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return model_explorer


def extension_manager():
    """Model Explorer's own extension manager with this project's extension loaded."""
    require_explorer()
    from model_explorer.extension_manager import ExtensionManager

    manager = ExtensionManager(["precision_tool.model_explorer"])  # a singleton: first args stick
    manager.custom_extension_modules = ["precision_tool.model_explorer.main"]
    manager.load_extensions()
    return manager


def convert(path) -> dict:
    """The adapter's answer for ``path``, through ``ExtensionManager.run_cmd`` as the server
    calls it (``convert_adapter_response`` applied: plain dicts)."""
    from precision_tool.model_explorer.main import ADAPTER_ID

    return extension_manager().run_cmd(
        {
            "extensionId": ADAPTER_ID,
            "cmdId": "convert",
            "modelPath": str(path),
            "settings": {},
            "deleteAfterConversion": False,
        }
    )


STARTUP = 180.0  # seconds: the server imports flask and every adapter on 2 busy shared cores


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/check_health", timeout=5) as answer:
            return answer.read() == b"model_explorer_ok"
    except OSError:
        return False


@contextlib.contextmanager
def serving(command: str):
    """Run a printed "start it again" command as it is (``--no-browser`` and a free port added)
    as a real process; yields the server's address once it answers, then stops it by its pid."""
    from tests.conftest import REPO_ROOT

    require_explorer()
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [*shlex.split(command), "--no-browser", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + STARTUP
            while not _healthy(base):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"{command!r} did not start: {log.read().decode(errors='replace')[-2000:]}")
                time.sleep(0.3)
            yield base
        finally:
            try:
                os.kill(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
