"""numba's BLAS probe is skipped only in the tool's own processes (the CLI, its shell, their
pool workers), never in a program that calls the API: numba keeps the probe's answer for the
process, so a caller compiling ``np.correlate`` with numba must find the BLAS scipy gives it.

Each case runs in a fresh interpreter: numba loads once a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")
pytest.importorskip("scipy.linalg")

from precision_tool.compare import engine, kernels  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

# what a process shows after loading the kernels: numba's BLAS answer, and whether scipy came in
PROBE = """
import json, sys
{setup}
from precision_tool.compare import kernels
assert kernels.numba_kernels() is not None
import numba.np.arraymath as arraymath
seen = {{"blas": arraymath._HAVE_BLAS, "scipy_loaded": "scipy.linalg" in sys.modules}}
import scipy.linalg  # importable as usual afterwards
seen["scipy_after"] = "scipy.linalg" in sys.modules
print(json.dumps(seen))
"""


def _probe(setup: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PRECISION_TOOL_KERNELS"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(setup=setup)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_api_path_leaves_numbas_blas_alone():
    """A program importing the public API and loading the kernels: numba probed scipy for BLAS."""
    seen = _probe("import precision_tool; precision_tool.compare  # the API, as a caller has it")
    assert seen == {"blas": True, "scipy_loaded": True, "scipy_after": True}


def test_a_claimed_process_skips_the_probe_and_still_imports_scipy():
    seen = _probe("from precision_tool.compare.numba_line import claim_process; claim_process()")
    assert seen == {"blas": False, "scipy_loaded": False, "scipy_after": True}


# a cffi of the test's own, first on the path: numba imports it (and makes its FFI) unless hidden
FAKE_CFFI = """
import sys
sys.path.insert(0, {where!r})
{setup}
from precision_tool.compare import kernels
assert kernels.numba_kernels() is not None
loaded = "cffi" in sys.modules
import cffi  # importable as usual afterwards
print(loaded, cffi.MADE_BY_THE_TEST)
"""


@pytest.mark.parametrize(
    "setup, loaded",
    [
        ("from precision_tool.compare.numba_line import claim_process; claim_process()", False),
        ("import precision_tool", True),
    ],
    ids=["claimed: hidden", "the API: left alone"],
)
def test_cffi_is_hidden_while_numba_loads_in_a_claimed_process_only(tmp_path, setup, loaded):
    package = tmp_path / "cffi"
    package.mkdir()
    package.joinpath("__init__.py").write_text(
        "MADE_BY_THE_TEST = True\nclass FFI:\n    def typeof(self, obj):\n        raise TypeError(obj)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PRECISION_TOOL_KERNELS"}
    env["PYTHONPATH"] = str(REPO)
    code = FAKE_CFFI.format(where=str(tmp_path), setup=setup)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(loaded), "True"]


def test_the_cli_claims_its_process(monkeypatch, tmp_path):
    """cli.main claims the process before it runs a command (here one that fails on its input)."""
    from precision_tool import cli
    from precision_tool.compare import numba_line

    monkeypatch.setitem(numba_line._OWN, "process", False)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--data", str(tmp_path), "vc"]) == 2  # no dumps here: one line, status 2
    assert kernels.process_claimed()


def test_pool_workers_take_the_claim_from_their_parent(monkeypatch):
    """A spawned worker is told (a forked one inherits the flag); an API caller's are not claimed."""
    from precision_tool.compare import numba_line

    monkeypatch.setattr(engine, "init_worker_lifetime", lambda pid: None)
    monkeypatch.setattr(engine.signal, "signal", lambda *a: None)
    monkeypatch.setitem(numba_line._OWN, "process", False)
    engine._init_worker(os.getpid(), False)
    assert not kernels.process_claimed()
    engine._init_worker(os.getpid(), True)
    assert kernels.process_claimed()
