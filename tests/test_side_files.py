"""Files of the data root that are not regular files, or far too large, through the real command
line on a copy of the sample (:mod:`precision_tool.formats.files`).

A FIFO at any name the tool reads used to block ``open`` for ever (``vc``, ``ac``, ``ni`` and
``pt`` hung on a FIFO ``mapping.csv``); ``/dev/zero`` as ``mapping.csv`` was read until the
memory ran out. Now each command ends: a side file that is not a regular file or is past its
kind's limit is one line naming it, and the run goes on without it; a tensor file given by path
is the command's one error line. Every run has a timeout: a hang fails the test instead of
stalling the suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.formats.dump_names import MAX_MAPPING_BYTES
from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT

STEP = "npu/debug_0/dump/20261129120000/0/ge_default_20261129120000_1/1/0"
CONV1 = "Conv2D.resnet_conv1_Conv2D.12.0.1764417600000074"
RELU_GOLDEN = "tf/dump/resnet_conv1_Relu.0.1764410000001300.npy"
OVERFLOW_STEP = "overflow/dump/20261129130000/0/ge_default_20261129130000_1/1/0"
GRAPH = "npu/debug_0/graph/ge_proto_00000001_Build.txt"
TIMEOUT = 60  # seconds: the sample's commands take a few; a blocked open never ends
GIB = 1 << 30
_MAIN = "import sys; from precision_tool.cli import main; sys.exit(main(sys.argv[1:]))"
# the address space limit is set in the interpreter itself, before the tool is imported
_LIMITED_MAIN = (
    "import resource, sys; limit = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit)); "
    "from precision_tool.cli import main; sys.exit(main(sys.argv[2:]))"
)


def _cli(root: Path, command: str, memory_limit: int | None = None) -> subprocess.CompletedProcess:
    """``precision-tool --data ROOT COMMAND`` in a fresh interpreter (under an address space
    limit when given), from the directory above ``root``; fails the test when it does not end
    within :data:`TIMEOUT`."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "HOME": str(root.parent),
        "XDG_DATA_HOME": str(root.parent / ".xdg"),
        "COLUMNS": "400",
        "PRECISION_TOOL_WORKERS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    env.pop("PRECISION_TOOL_CONFIG", None)
    head = [_MAIN] if memory_limit is None else [_LIMITED_MAIN, str(memory_limit)]
    try:
        return subprocess.run(
            [sys.executable, "-c", *head, "--data", str(root), *command.split()],
            cwd=root.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{command!r} did not end within {TIMEOUT} s (blocked on a side file?)")


def _lines_naming(done: subprocess.CompletedProcess, path: Path) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if str(path) in line]


def _fifo_at(root: Path, relative: str) -> Path:
    path = root / relative
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


FLAGGED, OK, ERROR = ExitStatus.FLAGGED, ExitStatus.OK, ExitStatus.ERROR
pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")

# where the FIFO goes, the command, its exit status, and what the lines naming it say (None:
# the command goes on without the file, as when it is not there)
STEP_MAPPING, GOLDEN_MAPPING = f"{STEP}/mapping.csv", "tf/dump/mapping.csv"
NOT_REGULAR = "is a FIFO (named pipe), not a regular file"
FIFO_CASES = [
    pytest.param(STEP_MAPPING, "vc", FLAGGED, f"mapping.csv {NOT_REGULAR}", id="dump-mapping-vc"),
    pytest.param(STEP_MAPPING, "ac -c", FLAGGED, f"mapping.csv {NOT_REGULAR}", id="dump-mapping-ac"),
    pytest.param(STEP_MAPPING, "ni resnet/conv1/Conv2D", OK, None, id="dump-mapping-ni"),
    pytest.param(STEP_MAPPING, f"pt {CONV1}", OK, None, id="dump-mapping-pt"),
    pytest.param(GOLDEN_MAPPING, "vc", FLAGGED, f"mapping.csv {NOT_REGULAR}", id="golden-mapping-vc"),
    pytest.param(GOLDEN_MAPPING, "ni resnet/conv1/Relu", OK, None, id="golden-mapping-ni"),
    pytest.param(GOLDEN_MAPPING, "pt tf:resnet/conv1/Relu", OK, None, id="golden-mapping-pt"),
    pytest.param(f"{OVERFLOW_STEP}/mapping.csv", "ac -c", FLAGGED, None, id="overflow-mapping-ac"),
    pytest.param(
        "fusion/fusion_result.json", "ac -c", FLAGGED, f"fusion result file {NOT_REGULAR}", id="fusion-result-ac"
    ),
    pytest.param(f"{STEP}/{CONV1}", "pt {fifo}", ERROR, f"tensor file {NOT_REGULAR}", id="dump-pt"),
    pytest.param(RELU_GOLDEN, "pt {fifo}", ERROR, f"golden file {NOT_REGULAR}", id="golden-pt"),
    # the listings skipped these before: guards
    pytest.param(f"{STEP}/{CONV1}", "vc", FLAGGED, None, id="dump-vc"),
    pytest.param(RELU_GOLDEN, "vc", FLAGGED, None, id="golden-vc"),
    pytest.param(GRAPH, "vc", FLAGGED, None, id="graph-vc"),
    pytest.param(GRAPH, "ni resnet/conv1/Conv2D", OK, None, id="graph-ni"),
]


@pytest.mark.parametrize("relative, command, status, said", FIFO_CASES)
def test_a_fifo_where_the_tool_reads_never_blocks_a_command(sample_data, relative, command, status, said):
    fifo = _fifo_at(sample_data, relative)
    done = _cli(sample_data, command.format(fifo=fifo))
    assert done.returncode == status, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    if said is None:
        assert not [line for line in _lines_naming(done, fifo) if "FIFO" in line], done.stdout
    else:  # said on a line of its own (ac says it in its fusion panel and in the summary)
        saying = [line for line in (done.stdout + done.stderr).splitlines() if said in line]
        assert saying and all(str(fifo) in line for line in saying), done.stdout + done.stderr


def test_vc_says_it_of_the_golden_mapping_csv_once_for_all_devices(sample_data):
    device = sample_data / STEP.split("/ge_default")[0]
    shutil.copytree(device, device.with_name("1"))
    fifo = _fifo_at(sample_data, GOLDEN_MAPPING)
    done = _cli(sample_data, "vc")
    assert done.returncode == FLAGGED and done.stdout.count("tensors compared") == 2, done.stdout
    assert len(_lines_naming(done, fifo)) == 1, done.stdout


def test_a_config_file_that_is_a_fifo_is_one_line(sample_data):
    fifo = _fifo_at(sample_data.parent, "config.py")
    done = _cli(sample_data, f"--config {fifo} ls")
    assert done.returncode == ERROR
    assert done.stderr.splitlines() == [
        f"error: {fifo}: config file is a FIFO (named pipe), not a regular file: not read"
    ]


def _vc_says_once(root: Path, mapping: Path, said: str, memory_limit: int | None = None) -> None:
    """``vc`` compares the step as if ``mapping`` were not there, and says why in one line."""
    done = _cli(root, "vc", memory_limit)
    assert done.returncode == FLAGGED, done.stdout + done.stderr
    naming = _lines_naming(done, mapping)
    assert len(naming) == 1 and said in naming[0], done.stdout + done.stderr
    assert "tensors compared" in done.stdout and "Traceback" not in done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
def test_dev_zero_as_mapping_csv_under_a_memory_limit_is_one_line(sample_data):
    """Read as a file, /dev/zero never ends: under a 2 GiB limit the old reader ran out of
    memory (without one, it grew to 24 GB and was killed)."""
    mapping = sample_data / STEP / "mapping.csv"
    mapping.symlink_to("/dev/zero")
    _vc_says_once(sample_data, mapping, "mapping.csv is a character device, not a regular file", memory_limit=2 * GIB)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
@pytest.mark.parametrize("size", [MAX_MAPPING_BYTES + 1, 1 << 40], ids=["just-past", "1-TiB"])
def test_a_mapping_csv_past_its_limit_is_one_line_and_not_read(sample_data, size):
    """A sparse file (a hole: no disk used) one byte past the limit, and of a terabyte, under a
    2 GiB limit: the old reader read both whole (the second until the memory ran out)."""
    mapping = sample_data / STEP / "mapping.csv"
    mapping.touch()
    os.truncate(mapping, size)
    _vc_says_once(
        sample_data, mapping, f"mapping.csv is larger than 64 MiB ({size:,} bytes): not read", memory_limit=2 * GIB
    )


@pytest.mark.parametrize("command", ["vcs -f {fifo}", "report -f {fifo}"])
def test_a_fifo_given_as_a_result_csv_is_one_line(sample_data, command):
    """The result readers (``vcs``, ``report``: ``compare.result_csv``) open through the same
    bounded reader: a FIFO named as the CSV is refused at once, never waited on."""
    fifo = sample_data.parent / "result.csv"
    os.mkfifo(fifo)
    done = _cli(sample_data, command.format(fifo=fifo))
    assert done.returncode == ERROR, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert [line for line in _lines_naming(done, fifo) if f"result CSV {NOT_REGULAR}" in line]
