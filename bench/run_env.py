"""The environment of a measured run of the tool, one rule for every bench script.

- The shell's own ``PRECISION_TOOL_*`` settings are left out: a run is what the bench asks for.
- Bytecode is read and kept as an installed package has it: a ``PYTHONDONTWRITEBYTECODE`` from
  the shell is dropped (with it, every module changed since bytecode was last written is
  compiled again at every run: a tenth of a second or more in the parent and again in the
  pool's fork server). ``pycache`` keeps the bytecode there instead of beside the code.
- Each tree writes under an output root of its own (:func:`tree_output_args`): the graph cache
  keeps one model a graph, keyed by a digest of the code that makes models, so two trees whose
  code differs there, alternating on one output root, replaced each other's cache at every run
  and both were measured parsing the graph (2026-12-07, docs/performance.md).
- The run imports the tree it is given: ``python -m`` and ``python -c`` put the working
  directory first on ``sys.path``, so a run started in a checkout imported that checkout
  whatever ``PYTHONPATH`` named (every tree of a side-by-side started from one measured that
  checkout). ``PYTHONSAFEPATH`` keeps it off (Python 3.11+), and a run starts in
  :func:`run_dir`, an empty directory (Python 3.10 has no ``PYTHONSAFEPATH``).
"""

from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path


def tool_env(code: Path | None = None, pycache: Path | None = None, **settings: str) -> dict:
    """``os.environ`` for a run of the checkout ``code`` (None: whatever Python finds), with
    ``settings`` (``PRECISION_TOOL_WORKERS="2"``...) set."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    if code is not None:
        env["PYTHONPATH"] = str(code)
    if pycache is not None:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["PYTHONSAFEPATH"] = "1"  # no working directory on sys.path: the tree imported is `code`
    env.update(settings)
    return env


REPO = Path(__file__).resolve().parents[1]  # the checkout these scripts belong to


def add_root_and_trees(parser, root_help: str) -> None:
    """The arguments of a bench that measures code trees side by side on one data root: the
    root, then the trees (none: this checkout)."""
    parser.add_argument("root", help=root_help)
    parser.add_argument("codes", nargs="*", help="code trees to compare (default: this checkout)")


def root_and_trees(args) -> tuple[str, list[Path]]:
    """The data root made absolute (measured runs start in :func:`run_dir`) and the trees
    :func:`add_root_and_trees` parsed, resolved."""
    return os.path.abspath(args.root), [Path(code).resolve() for code in args.codes] or [REPO]


def tree_output_args(scratch: Path, code: Path) -> list[str]:
    """``--out DIR``, the global flag that goes before the command: an output root under
    ``scratch`` for the runs of the tree ``code`` alone (see the module doc)."""
    tag = hashlib.sha256(str(Path(code).resolve()).encode()).hexdigest()[:12]
    return ["--out", str(Path(scratch) / f"out_{Path(code).name}_{tag}")]


@lru_cache(maxsize=1)
def run_dir() -> Path:
    """An empty directory of this bench's own to start measured runs in (see the module doc)."""
    return Path(tempfile.mkdtemp(prefix="bench_run_"))


def start_run(command: list[str], env: dict, **popen) -> subprocess.Popen:
    """``command`` started as a measured run: with ``env`` (:func:`tool_env`) and in
    :func:`run_dir`, so it imports the tree ``env`` names (paths it is given must be absolute)."""
    return subprocess.Popen(command, env=env, cwd=run_dir(), **popen)


def run_once(command: list[str], env: dict, ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one run; a run that
    ends with another status than ``ok`` stops the bench with its last error line (a failing
    run is no fixed cost: a data root with no dumps once timed vc's error path)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = start_run(command, env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in ok:
            errors.seek(0)
            last = last_line(errors.read().decode(errors="replace"))
            raise SystemExit(f"{' '.join(command)} ended with status {code}: {last}")
    return seconds, usage.ru_utime + usage.ru_stime


def timing_line(label: str, runs: list[tuple[float, float]]) -> str:
    """``label: wall median ... (min ...), CPU median ... (min ...)`` of :func:`run_once`'s runs."""
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    return (
        f"{label}: wall median {statistics.median(walls):.3f} s (min {min(walls):.3f}), "
        f"CPU median {statistics.median(cpus):.3f} s (min {min(cpus):.3f})"
    )


def last_line(errors: str) -> str:
    """What a failed run's error output ends with ('' for none): the one line a bench stops with."""
    return (errors.strip().splitlines() or [""])[-1]


def main(argv: list[str] | None = None) -> int:
    """Only explains itself: the module is a helper of the other bench scripts."""
    import argparse

    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
