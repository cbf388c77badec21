"""Issue 26.1: before any tensor is sent, every worker is checked; a worker that lacks what the run
needs is one line naming it (exit 2), and ``--allow-partial`` goes on with the workers that pass.
Real schedulers and workers: one in a mount namespace where the data root is an empty tmpfs,
one from a venv without this package, one that cannot read a single golden file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="dask[distributed] is not installed")

from precision_tool import __version__  # noqa: E402
from precision_tool.compare import cluster_preflight as pre  # noqa: E402
from precision_tool.errors import PrecisionToolError  # noqa: E402
from tests.compare.cluster_procs import Cluster, can_unshare, clean_env, hiding, vc, venv_without_the_package  # noqa: E402

needs_unshare = pytest.mark.skipif(not can_unshare(), reason="needs root and unshare -m")


def _csvs(data: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((data / "temp" / "vector_compare").rglob("result_*.csv"))]


def _one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture
def cluster(tmp_path):
    running = Cluster(tmp_path / "cluster")
    yield running
    running.stop()


def _run_files(root: Path) -> list:
    from precision_tool import read_golden, read_graph
    from precision_tool.compare.golden_pairing import pair_with_graph
    from precision_tool.compare.jobs import JobStream
    from precision_tool.formats.tree import DumpTree

    graph = read_graph(root / "npu/debug_0/graph/ge_proto_00000001_Build.txt").graphs[0]
    tree = DumpTree(root / "npu/debug_0/dump")
    (step,) = tree.select()
    stream = JobStream(pair_with_graph(graph, tree.listing(step), read_golden(root / "tf/dump")))
    stream.take_all()
    return list(stream.sizes)


# --- pure parts ---------------------------------------------------------------------------------


def test_samples_take_one_file_per_directory_as_this_machine_sees_it(tmp_path):
    for name in ("a/1", "a/2", "b/1"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(name.encode() * 40)
    found = pre.samples([tmp_path / "a/1", tmp_path / "a/2", tmp_path / "b/1", tmp_path / "gone/x"])
    assert [(Path(s.path).relative_to(tmp_path).as_posix(), s.size, s.head) for s in found] == [
        ("a/1", 120, (b"a/1" * 40)[:64]),
        ("b/1", 120, (b"b/1" * 40)[:64]),
    ]


def test_the_probe_names_a_missing_file_and_another_copy(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 100)
    (same,) = pre.samples([tmp_path / "f"])
    other = pre.Sample(same.path, 100, b"y" * 64)
    longer = pre.Sample(same.path, 101, same.head)
    gone = pre.Sample(str(tmp_path / "nope"), 1, b"x")
    report = pre.probe([same, other, longer, gone], need_numba=False)
    assert report.version == __version__ and report.numba is None
    assert [(Path(p).name, why) for p, why in report.unreadable] == [
        ("f", "its first bytes differ from this machine's: another copy of the data"),
        ("f", "it is 100 bytes there, 101 here: another copy of the data"),
        ("nope", "No such file or directory"),
    ]


def test_numba_switched_off_on_a_worker_on_purpose_is_no_lack(monkeypatch):
    monkeypatch.setenv("PRECISION_TOOL_KERNELS", "numpy")
    assert pre.probe([], need_numba=True).numba is None
    assert pre.lacks(pre.probe([], need_numba=True), __version__) is None


def test_what_a_worker_lacks_in_a_few_words():
    assert pre.lacks(pre.Report(__version__), __version__) is None
    assert pre.lacks(pre.Report("0.0.1"), __version__) == f"precision-tool {__version__} (it has 0.0.1)"
    assert pre.lacks(Exception("ModuleNotFoundError(\"No module named 'precision_tool'\")"), __version__).startswith(
        "precision-tool (pip install"
    )
    assert "numba kernels" in pre.lacks(pre.Report(__version__, numba=False), __version__)
    blind = pre.Report(__version__, unreadable=[("/d/a", "gone"), ("/d/b", "gone")])
    assert pre.lacks(blind, __version__) == (
        "the data at /d/a and 1 more director(ies) (gone); every worker must see the same paths"
    )


def test_passing_workers_or_one_line_naming_the_first_that_fails():
    reports = {"tcp://a:1": pre.Report(__version__), "tcp://b:2": pre.Report("0.0.1"), "tcp://c:3": pre.Report("0.0.2")}
    with pytest.raises(PrecisionToolError) as failed:
        pre.passing_workers(reports, __version__, False, "tcp://s:8786")
    assert str(failed.value) == (
        f"Dask worker tcp://b:2 of tcp://s:8786 lacks precision-tool {__version__} "
        "(it has 0.0.1) (and 1 more of the 3 workers); vc --allow-partial goes "
        "on with the 1 that pass"
    )
    assert pre.passing_workers(reports, __version__, True, "tcp://s:8786") == ["tcp://a:1"]
    with pytest.raises(PrecisionToolError, match="no worker passes$"):
        pre.passing_workers({"tcp://b:2": pre.Report("0.0.1")}, __version__, True, "tcp://s:8786")


def test_malloc_thresholds_are_restored_only_where_the_variable_fixed_them():
    code = "from precision_tool.compare.cluster_preflight import restore_malloc; print(restore_malloc())"
    for extra, expected in (({"MALLOC_TRIM_THRESHOLD_": "65536"}, "True"), ({}, "False")):
        env = {k: v for k, v in clean_env(**extra).items() if extra or k != "MALLOC_TRIM_THRESHOLD_"}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert done.stdout.strip() == expected, done.stderr


# --- real workers -------------------------------------------------------------------------------


@needs_unshare
def test_a_worker_that_cannot_see_the_data_root_is_one_line_and_allow_partial_goes_on(sample_data, cluster):
    cluster.add_worker()
    cluster.add_worker(prefix=hiding(sample_data))  # the shared storage is not mounted there
    cluster.wait_for_workers()
    refused = vc(sample_data, "--scheduler", cluster.address)
    assert refused.returncode == 2, refused.stderr
    line = _one_line(refused)
    assert (
        line.startswith("error: Dask worker tcp://127.0.0.1:") and f" of {cluster.address} lacks the data at " in line
    )
    assert "No such file or directory" in line and "vc --allow-partial goes on with the 1 that pass" in line
    assert "Dask's log: " in line and not _csvs(sample_data)  # nothing was compared
    log = Path(line.rsplit("Dask's log: ", 1)[1].rstrip(")"))
    assert log.is_file() and log.is_relative_to(sample_data / "temp" / "cluster_logs")

    partial = vc(sample_data, "--scheduler", cluster.address, "--allow-partial", "--fresh")
    local = vc(sample_data, "--fresh")
    assert partial.returncode == local.returncode == 1, partial.stderr  # the sample's defect flagged
    assert partial.stdout.splitlines()[-1].split(" -> ")[0] == local.stdout.splitlines()[-1].split(" -> ")[0]
    first, second = _csvs(sample_data)
    assert first == second  # every row computed by the worker that sees the data, as here


def test_a_worker_without_the_package_is_one_line_not_a_hang(sample_data, cluster, tmp_path):
    python = venv_without_the_package(tmp_path / "venv")
    env = {k: v for k, v in clean_env().items() if k != "PYTHONPATH"}
    check = subprocess.run(
        [python, "-c", "import distributed, importlib.util as u; print(u.find_spec('precision_tool') is None)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert check.stdout.strip() == "True", check.stderr  # dask there, this package not
    cluster.add_worker(python=python, env=env)
    cluster.wait_for_workers()
    done = vc(sample_data, "--scheduler", cluster.address, timeout=120)
    assert done.returncode == 2, done.stderr
    line = _one_line(done)
    assert line.startswith("error: Dask worker tcp://127.0.0.1:") and (
        "lacks precision-tool (pip install 'precision-tool[cluster]' there); no worker passes" in line
    )


@needs_unshare
def test_a_row_a_worker_cannot_read_is_never_counted_as_compared(sample_data, cluster):
    files = [Path(s) for s in _run_files(sample_data)]
    goldens = [f for f in files if f.parent == sample_data / "tf" / "dump"]
    victim = goldens[-1]  # not the file the check samples (the directory's first the run reads)
    assert victim != goldens[0]
    cluster.add_worker(prefix=hiding(victim))
    cluster.wait_for_workers()
    done = vc(sample_data, "--scheduler", cluster.address)
    assert done.returncode == 2, done.stderr
    unread = [line for line in done.stdout.splitlines() if "a Dask worker could not read" in line]
    assert len(unread) == 1 and unread[0].split(" row(s) ")[0].strip().isdigit(), done.stdout
    count = int(unread[0].split(" row(s) ")[0])
    (csv,) = _csvs(sample_data)
    text = csv.decode()
    assert text.count("Not compared: Dask worker tcp://127.0.0.1:") == count >= 1
    assert f"cannot read {victim}" in text
    assert os.access(victim, os.R_OK)  # this machine can: the worker could not


# --- TLS, as docs/cluster.md sets it up ------------------------------------------------------------


def _certificates(where: Path) -> dict:
    """A throw-away CA and one certificate for 127.0.0.1 signed by it (openssl)."""

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=where, check=True, capture_output=True)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=test-ca",
    )
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=node")
    (where / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    run(
        "x509",
        "-req",
        "-in",
        "node.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "node.pem",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
    )
    return {"ca": str(where / "ca.pem"), "cert": str(where / "node.pem"), "key": str(where / "node.key")}


def test_a_tls_scheduler_without_tls_settings_is_one_line(sample_data):
    done = vc(sample_data, "--scheduler", "tls://127.0.0.1:9", timeout=120)
    assert done.returncode == 2
    assert _one_line(done).startswith(
        "error: Dask scheduler tls://127.0.0.1:9: a tls:// scheduler needs "
        "Dask's TLS settings here (distributed.comm.tls.ca-file"
    )


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs openssl to make certificates")
def test_vc_on_a_tls_cluster_with_certificates(sample_data, tmp_path):
    certs = _certificates(tmp_path)
    flags = ["--tls-ca-file", certs["ca"], "--tls-cert", certs["cert"], "--tls-key", certs["key"]]
    secure = Cluster(tmp_path / "tls", scheduler_flags=["--protocol", "tls", *flags])
    try:
        assert secure.address.startswith("tls://127.0.0.1:")
        secure.add_worker(flags=flags)
        settings = {
            "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": certs["ca"],
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": certs["cert"],
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": certs["key"],
            "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
        }
        secure.wait_for_workers(env=settings)
        done = vc(sample_data, "--scheduler", secure.address, **settings)
        local = vc(sample_data, "--fresh")
    finally:
        secure.stop()
    assert done.returncode == local.returncode == 1, done.stderr
    first, second = _csvs(sample_data)
    assert first == second
