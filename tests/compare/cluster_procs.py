"""Real Dask processes for the cluster tests: a ``dask scheduler`` and ``dask worker`` processes,
each worker started as the test says (another Python, a mount namespace, a preload that makes
it misbehave), and ``vc`` run as the command line the user runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO_ROOT

PRELOAD = '''
"""Test preload: the worker's compare_task misbehaves on its PT_TEST_AFTER-th call."""
import os, signal, time
from precision_tool.compare import engine

# Dask may run a preload twice in one process: the real function is kept once, on the module
if not hasattr(engine, "_test_real_compare_task"):
    engine._test_real_compare_task, engine._test_calls = engine.compare_task, [0]


def compare_task(*args, **kwargs):
    engine._test_calls[0] += 1
    if engine._test_calls[0] == int(os.environ.get("PT_TEST_AFTER", "1")):
        action = os.environ.get("PT_TEST_ACTION", "")
        if action == "kill-scheduler":
            os.kill(int(os.environ["PT_TEST_SCHEDULER_PID"]), signal.SIGKILL)
        elif action == "exit":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "hang":
            time.sleep(3600)
    time.sleep(float(os.environ.get("PT_TEST_DELAY", "0")))
    return engine._test_real_compare_task(*args, **kwargs)


engine.compare_task = compare_task
'''


def clean_env(**extra) -> dict:
    """This process's environment without the tool's and Dask's settings, this tree importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRECISION_TOOL_", "DASK_"))}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return {**env, **extra}


def _wait(ready, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not appear within {timeout} s")
        time.sleep(0.1)


class Cluster:
    """A scheduler on loopback and the workers added to it; :meth:`stop` kills them all."""

    def __init__(self, base: Path, scheduler_flags: list[str] | None = None) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.base, self.file = base, base / "scheduler.json"
        self.file.unlink(missing_ok=True)  # a killed scheduler's, which would name a dead port
        self.log = open(base / "dask.log", "ab")
        self.procs: list[subprocess.Popen] = []
        self.scheduler = self._start(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(self.file),
                *(scheduler_flags or []),
            ],
            clean_env(),
        )
        _wait(lambda: self.file.exists() and self.file.stat().st_size, "the scheduler file")
        self.address = json.loads(self.file.read_text())["address"]
        self.expected = 0

    def _start(self, argv: list[str], env: dict) -> subprocess.Popen:
        proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=self.log, cwd=self.base, start_new_session=True)
        self.procs.append(proc)
        return proc

    def add_worker(
        self,
        *,
        python: str = sys.executable,
        prefix: list[str] | None = None,
        env: dict | None = None,
        preload: dict | None = None,
        nanny: bool = True,
        flags: list[str] | None = None,
    ) -> None:
        """One single-threaded worker; ``preload`` (environment) loads :data:`PRELOAD` in it."""
        argv = [
            *(prefix or []),
            python,
            "-m",
            "distributed.cli.dask_worker",
            self.address,
            "--nthreads",
            "1",
            "--no-dashboard",
            "--death-timeout",
            "20",
            *(flags or []),
        ]
        env = dict(clean_env() if env is None else env)
        if preload is not None:
            script = self.base / "preload_misbehave.py"
            script.write_text(PRELOAD)
            argv += ["--preload", str(script)]
            env.update({"PT_TEST_SCHEDULER_PID": str(self.scheduler.pid), **preload})
        if not nanny:
            argv.append("--no-nanny")
        self._start(argv, env)
        self.expected += 1

    def wait_for_workers(self, count: int | None = None, env: dict | None = None) -> None:
        """Wait for the workers, in a process of its own (``env``: the Dask settings to use)."""
        code = (
            "import sys; from distributed import Client; c = Client(sys.argv[1], set_as_default=False); "
            "c.wait_for_workers(int(sys.argv[2]), timeout=60); c.close()"
        )
        subprocess.run(
            [sys.executable, "-c", code, self.address, str(count or self.expected)],
            env=clean_env(**(env or {})),
            check=True,
            timeout=120,
            capture_output=True,
        )

    def stop(self) -> None:
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait(timeout=30)
        self.log.close()


def hiding(path: Path) -> list[str]:
    """A command prefix: the worker runs in a mount namespace where ``path`` is an empty tmpfs
    (as a machine without the shared storage mounted there), or /dev/null for a file."""
    script = (
        'mount -t tmpfs tmpfs "$0" && shift && exec "$@"'
        if path.is_dir()
        else 'mount --bind /dev/null "$0" && shift && exec "$@"'
    )
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(path), "--"]


def can_unshare() -> bool:
    if not shutil.which("unshare") or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    return done.returncode == 0


def venv_without_the_package(where: Path) -> str:
    """A venv (no pip) that sees the system's site-packages (dask) as a plain directory, so the
    editable install's finder, a .pth file there, is not run: dask imports, this package not."""
    import site
    import venv

    if not (where / "bin" / "python").exists():
        venv.EnvBuilder(with_pip=False).create(where)
    lib = next((where / "lib").glob("python*")) / "site-packages"
    (lib / "system.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return str(where / "bin" / "python")


def vc(data: Path, *args: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    """``precision-tool --data DATA vc ARGS`` as the user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(data), "vc", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=clean_env(**env),
        cwd=data.parent,
    )
