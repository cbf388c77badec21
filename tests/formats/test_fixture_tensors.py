"""Every tensor of the fixtures in tests/data, read from the real dump files and converted to host
layout, equals what the fixture's truth (case.json) says it compares to."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precision_tool import read_dump, read_golden
from tests.conftest import FIXTURES


def _cases():
    return sorted(p.parent for p in FIXTURES.glob("*/case.json"))


def _tensors():
    for case_dir in _cases():
        case = json.loads((case_dir / "case.json").read_text())
        files = {f["op"]: case_dir / f["file"] for f in case["dump_files"][str(case["golden_step"])]}
        for tensor in case["tensors"]:
            yield pytest.param(case_dir, files[tensor["op"]], tensor, id=f"{case_dir.name}:{tensor['tensor_id']}")


def _cosine(x, y):
    return float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y)))


@pytest.mark.parametrize("case_dir, dump_path, tensor", list(_tensors()))
def test_host_tensor_matches_the_fixture_truth(case_dir, dump_path, tensor):
    dump = read_dump(dump_path)
    side = dump.inputs if tensor["kind"] == "input" else dump.outputs
    t = side[tensor["index"]]
    assert t.format == tensor["format"]
    assert list(t.shape) == tensor["device_shape"]
    host = np.asarray(t.host(), dtype=np.float64)
    assert list(host.shape) == tensor["host_shape"]
    name, index = tensor["golden"].rsplit(":", 1)
    golden = np.asarray(read_golden(case_dir / "precision_data/tf/dump").lookup(name, int(index)), np.float64)
    assert golden.shape == host.shape
    assert _cosine(host.ravel(), golden.ravel()) == pytest.approx(tensor["cosine"], abs=1e-9)
    assert float(np.max(np.abs(host - golden))) == pytest.approx(tensor["max_abs_error"], rel=1e-9, abs=1e-12)


def test_fixture_dumps_all_load(small_case):
    paths = sorted((small_case / "precision_data/npu").rglob("*"))
    dumps = [read_dump(p) for p in paths if p.is_file() and "dump" in p.parts and "graph" not in p.parts]
    assert len(dumps) == 13
    assert all(t.problem is None for d in dumps for t in d.tensors)
