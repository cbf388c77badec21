"""Across devices: the first introducer per device, the device that diverges first, and the
devices that disagree with the majority -- as a unit, and through vc/vcs on a 3-device tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from precision_tool.compare.devices import device_verdicts
from precision_tool.compare.divergence import analyse
from precision_tool.compare.result import CompareRow
from precision_tool.sample.defects import DEFECTS

PLANTED = "resnet/conv2/Conv2D"
RUN = "20261129120000"


def _rows(first_bad: int) -> list[CompareRow]:
    """A chain of 5 ops whose error enters at op ``first_bad`` (-1: none)."""
    rows = []
    for i in range(5):
        for kind, cosine in (
            ("input", 1.0 if i <= first_bad or first_bad < 0 else 0.5),
            ("output", 0.5 if 0 <= first_bad <= i else 1.0),
        ):
            rows.append(
                CompareRow(
                    i,
                    "Add",
                    f"op{i}",
                    "float16",
                    None,
                    f"op{i}",
                    "float32",
                    f"op{i}:{kind}:0",
                    (4,),
                    {"CosineSimilarity": cosine},
                )
            )
    return rows


def test_the_majority_the_odd_device_and_the_first_to_diverge():
    results = [
        (0, analyse(_rows(2), 0.98)),
        (1, analyse(_rows(2), 0.98)),
        (2, analyse(_rows(1), 0.98)),
        (3, analyse(_rows(-1), 0.98)),
        (1, analyse(_rows(-1), 0.98)),
    ]  # a second sub-graph of device 1, fine
    verdicts = device_verdicts(results)
    assert [v.device for v in verdicts] == [0, 1, 2, 3]
    assert [v.signature for v in verdicts] == ["op2", "op2", "op1", None]
    assert [v.differs_from_majority for v in verdicts] == [False, False, True, True]
    assert [v.diverges_first for v in verdicts] == [False, False, True, False]
    assert verdicts[1].results == 2 and verdicts[3].min_output_cosine == 1.0


def test_one_device_differs_from_nothing():
    (verdict,) = device_verdicts([(None, analyse(_rows(0), 0.98))])
    assert not verdict.differs_from_majority and verdict.signature == "op0"


def _tool(root, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=root.parent,
    )


@pytest.fixture(scope="module")
def three_devices(tmp_path_factory):
    """The sample on devices 0 and 1 (conv2's kernel defect), and on device 2 the sample whose
    defect is MaxPool's halved output instead."""
    base = tmp_path_factory.mktemp("devices")
    root, other = base / "precision_data", base / "scale"
    for target, extra in ((root, []), (other, ["--defect", "scale"])):
        subprocess.run(
            [sys.executable, "-m", "precision_tool.sample", str(target), *extra],
            check=True,
            capture_output=True,
            timeout=120,
        )
    runs = root / "npu" / "debug_0" / "dump" / RUN
    shutil.copytree(runs / "0", runs / "1")
    shutil.copytree(other / "npu" / "debug_0" / "dump" / RUN / "0", runs / "2")
    return root


def test_vc_compares_every_device_and_vcs_summarises_across_them(three_devices):
    done = _tool(three_devices, "vc")
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("device ") >= 3
    doc = json.loads(_tool(three_devices, "vcs", "--json").stdout)
    assert len(doc["results"]) == 3
    devices = {d["device"]: d for d in doc["devices"]}
    assert sorted(devices) == [0, 1, 2]
    assert devices[0]["first_introducer"] == devices[1]["first_introducer"] == PLANTED
    assert devices[2]["first_introducer"] == DEFECTS["scale"].op
    assert [devices[d]["differs_from_majority"] for d in (0, 1, 2)] == [False, False, True]
    assert [devices[d]["diverges_first"] for d in (0, 1, 2)] == [True, True, False]
    assert devices[0]["min_output_cosine"] == pytest.approx(0.363075, abs=1e-6)
    text = _tool(three_devices, "vcs").stdout
    assert "differ from the majority: device 2" in " ".join(text.split())


def test_device_selects_ranks(three_devices):
    done = _tool(three_devices, "vc", "--device", "0,2")
    assert done.returncode == 1
    doc = json.loads(_tool(three_devices, "vcs", "--json").stdout)
    assert [d["device"] for d in doc["devices"]] == [0, 2]
    bad = _tool(three_devices, "vc", "--device", "7")
    assert bad.returncode == 2 and "on device(s) '7'" in bad.stderr and "devices: 0, 1, 2" in bad.stderr
    worse = _tool(three_devices, "vc", "--device", "x")
    assert worse.returncode == 2 and "bad device selection" in worse.stderr


def test_npu_against_npu_pairs_device_i_with_device_i(three_devices, tmp_path):
    right = tmp_path / "right"
    shutil.copytree(three_devices / "npu" / "debug_0", right)
    done = _tool(three_devices, "vc", "-lt", str(three_devices / "npu" / "debug_0"), "-rt", str(right))
    assert done.returncode == 0, done.stdout + done.stderr  # each device against its own copy
    doc = json.loads(_tool(three_devices, "vcs", "--json").stdout)
    assert [d["device"] for d in doc["devices"]] == [0, 1, 2]
    assert all(r["flagged"] == [] for r in doc["results"])


def test_all_devices_run_through_one_engine_pool(three_devices, monkeypatch, tmp_path):
    from precision_tool.compare import api
    from tests.conftest import make_context, run_command

    root = tmp_path / "copy"
    shutil.copytree(three_devices, root, ignore=shutil.ignore_patterns("temp"))
    calls = []
    real = api.compare_tasks

    def counting(tasks, *args, **kwargs):
        tasks = list(tasks)
        calls.append(len(tasks))
        return real(tasks, *args, **kwargs)

    monkeypatch.setattr(api, "compare_tasks", counting)
    monkeypatch.setattr(api, "POOL_MIN_BYTES", 0)
    context, _ = make_context(root, WORKERS=2)
    assert run_command(context, "vc") == 1
    assert len(calls) == 1  # one run of the engine for the three CSVs
    assert len(list((root / "temp" / "vector_compare").rglob("*.csv"))) == 3
