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
seen = {{"registries": "numba.np.arraymath" in sys.modules, "scipy_loaded": "scipy.linalg" in sys.modules}}
import numba.np.arraymath as arraymath  # its first import (here, or in the kernels' load) probes
seen["blas"] = arraymath._HAVE_BLAS
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
    assert seen == {"registries": True, "blas": True, "scipy_loaded": True, "scipy_after": True}


def test_a_claimed_process_loads_cached_kernels_without_numbas_registries_or_scipy():
    """The kernels come from the cache (warmed by a first probe) with neither numba's lowering
    registries (numba.np.arraymath) nor scipy; both import as usual afterwards."""
    claimed = "from precision_tool.compare.numba_line import claim_process; claim_process()"
    _probe(claimed)  # the cache holds the kernels from here on
    seen = _probe(claimed)
    assert seen == {"registries": False, "blas": True, "scipy_loaded": False, "scipy_after": True}


# a claimed process's kernels: whether numba's registries came in, and the fused kernel's sums
# against numpy's on the same values (float64 sums of float32 values: exact to rounding)
FUSED_CHECK = """
import json, sys
import numpy as np
from precision_tool.compare.numba_line import claim_process
claim_process()
from precision_tool.compare import kernels
module = kernels.numba_kernels()
assert module is not None
registries = "numba.np.arraymath" in sys.modules
x = np.linspace(-3, 5, 10007, dtype=np.float32)
y = (x * np.float32(1.25) + np.float32(0.5)).astype(np.float32)
out = np.zeros(len(kernels.FUSED_FIELDS))
module.fused(x, y, out)
xs, ys = x.astype(np.float64), y.astype(np.float64)
expected = [xs.size, float(xs @ ys), float(xs @ xs), float(ys @ ys)]
close = bool(np.allclose(out[:4], expected, rtol=1e-12))
print(json.dumps({"registries": registries, "close": close}))
"""


def test_a_kernel_missing_from_the_cache_is_compiled_with_the_registries_then_loaded_without(tmp_path):
    """A cold cache (a first run): the compiler refreshes numba's target in full and the kernels
    compute numpy's sums; the next process loads them from that cache without the registries
    and computes the same."""
    env = {k: v for k, v in os.environ.items() if k != "PRECISION_TOOL_KERNELS"}
    env.update(PYTHONPATH=str(REPO), NUMBA_CACHE_DIR=str(tmp_path / "cold"))
    seen = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", FUSED_CHECK], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        seen.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert seen == [{"registries": True, "close": True}, {"registries": False, "close": True}]


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
