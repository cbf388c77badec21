"""``cp``: element-wise comparison of two tensors: listings, summary, tolerances, NaN, errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command


def _run(data, line):
    context, out = make_context(data, width=200)
    return run_command(context, line), out.getvalue()


def _row(text: str, label: str) -> str:
    """The value of a key/value row: drawn in a table, or folded to ``label  value`` when a
    value (a long path) is too wide for one."""
    match = re.search(rf"│ {label}\s+│ (.+?)\s+│", text) or re.search(rf"^{label}  (.+?)\s*$", text, re.M)
    assert match, f"no {label} row in:\n{text}"
    return match.group(1)


def _table_rows(text: str, title: str) -> list[list[str]]:
    """The body rows of the table titled ``title`` (cells stripped)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(title))
    rows = []
    for line in lines[start + 4 :]:
        if not line.startswith("│"):
            break
        rows.append([cell.strip() for cell in line.strip("│").split("│")])
    return rows


@pytest.fixture
def npys(tmp_path):
    def save(name, values, dtype=np.float32):
        path = tmp_path / name
        np.save(path, np.asarray(values, dtype))
        return path

    return save


def test_two_golden_files(fixture_data):
    status, text = _run(fixture_data, "cp model_conv1_BiasAdd.0 model/conv1/Relu:0 -p 3")
    assert status == ExitStatus.FLAGGED
    golden = fixture_data / "tf/dump"
    a = np.load(next(golden.glob("model_conv1_BiasAdd.0.*"))).astype(np.float64)
    b = np.load(next(golden.glob("model_conv1_Relu.0.*"))).astype(np.float64)
    bad = ~np.isclose(a, b, rtol=1e-3, atol=1e-5)
    assert _row(text, "allclose") == "no"
    assert float(_row(text, "cosine")) == pytest.approx(
        np.dot(a.ravel(), b.ravel()) / np.linalg.norm(a) / np.linalg.norm(b), abs=1e-8
    )
    assert _row(text, "mismatches") == str(int(bad.sum()))
    assert _row(text, "error ratio").endswith(f"({int(bad.sum())} of {a.size})")
    rows = _table_rows(text, f"first 3 of {int(bad.sum())} mismatching elements")
    first = np.argwhere(bad)[:3]
    assert [r[0] for r in rows] == ["(" + ", ".join(map(str, idx)) + ")" for idx in first]
    assert float(rows[0][1]) == pytest.approx(a[tuple(first[0])], rel=1e-7)
    assert float(rows[0][2]) == pytest.approx(b[tuple(first[0])], rel=1e-7)


def _tensor_cases():
    from tests.conftest import FIXTURES

    path = FIXTURES / "small/case.json"
    return [pytest.param(t, id=t["tensor_id"]) for t in json.loads(path.read_text())["tensors"]]


@pytest.mark.parametrize("tensor", _tensor_cases())
def test_dump_tensor_against_its_golden_gives_the_known_cosine(fixture_data, tensor):
    golden_name = tensor["golden"].replace("/", "_")
    status, text = _run(fixture_data, f"cp {tensor['tensor_id']} tf:{golden_name}")
    assert status in (ExitStatus.OK, ExitStatus.FLAGGED), text
    assert float(_row(text, "cosine")) == pytest.approx(tensor["cosine"], abs=1e-8)
    max_error = _row(text, "max abs error").split(" at ")[0]
    assert float(max_error) == pytest.approx(tensor["max_abs_error"], rel=1e-7, abs=1e-12)
    assert tensor["golden_file"] in text


def test_mismatch_listing_and_first_elements(sample_data, npys):
    left = npys("l.npy", [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    right = npys("r.npy", [[0.0, 1.5, 2.0], [3.0, 4.0, 9.0]])
    status, text = _run(sample_data, f"cp {left} {right}")
    assert status == ExitStatus.FLAGGED
    assert _table_rows(text, "first 2 of 2 mismatching elements") == [
        ["(0, 1)", "1", "1.5", "0.5"],
        ["(1, 2)", "5", "9", "4"],
    ]
    assert "first 6 elements" not in text
    assert _row(text, "max abs error") == "4 at (1, 2)"
    assert _row(text, "error ratio") == "0.333333 (2 of 6)"
    status, text = _run(sample_data, f"cp {left} {right} -s -p 4")
    assert [r[0] for r in _table_rows(text, "first 4 elements")] == ["(0, 0)", "(0, 1)", "(0, 2)", "(1, 0)"]
    assert _table_rows(text, "first 4 elements")[1] == ["(0, 1)", "1", "1.5", "0.5"]
    status, text = _run(sample_data, f"cp {left} {right} -p 1")
    assert len(_table_rows(text, "first 1 of 2 mismatching elements")) == 1


def test_tolerance_flags(sample_data, npys):
    left = npys("l.npy", [1.0, 2.0, 100.0])
    right = npys("r.npy", [1.01, 2.0, 100.5])
    status, text = _run(sample_data, f"cp {left} {right}")  # RED 0.005: beyond float32 rounding
    assert status == ExitStatus.OK and _row(text, "mismatches") == "2"  # ... but not flagged
    assert _row(text, "verdict") == "◆ beyond float32 rounding, not flagged"
    status, text = _run(sample_data, f"cp {left} {right} -al 0.02")
    assert status == ExitStatus.FLAGGED and _row(text, "mismatches") == "1"
    status, text = _run(sample_data, f"cp {left} {right} -rl 0.01")
    assert status == ExitStatus.OK and _row(text, "allclose") == "yes"
    assert "no mismatching elements" in text and _row(text, "tolerance").startswith("atol 1e-05, rtol 0.01 (given")
    status, text = _run(sample_data, f"cp {left} {right} --atol 0.6 --rtol 0")
    assert status == ExitStatus.OK


def test_nan_handling(sample_data, npys):
    left = npys("l.npy", [np.nan, 1.0, 2.0])
    same = npys("s.npy", [np.nan, 1.0, 2.0])
    other = npys("o.npy", [1.0, np.nan, 2.0])
    status, text = _run(sample_data, f"cp {left} {same}")
    assert status == ExitStatus.OK and _row(text, "allclose") == "yes"
    assert _row(text, "NaN") == "left 1, right 1"
    assert _row(text, "cosine").startswith("NaN")
    status, text = _run(sample_data, f"cp {left} {other}")
    assert status == ExitStatus.FLAGGED and _row(text, "mismatches") == "2"
    assert [r[0] for r in _table_rows(text, "first 2 of 2 mismatching elements")] == ["[0]", "[1]"]


def test_shapes_that_differ_with_equal_sizes_are_compared_flattened(sample_data, npys):
    left = npys("l.npy", np.arange(6).reshape(2, 3))
    right = npys("r.npy", np.arange(6).reshape(3, 2) * 1.0)
    status, text = _run(sample_data, f"cp {left} {right}")
    assert status == ExitStatus.OK
    assert "shapes differ ([2, 3] vs [3, 2]) but sizes match: compared flattened" in text


def test_npu_against_npu_on_the_sample(sample_data):
    status, text = _run(sample_data, "cp resnet/conv1/Conv2D resnet/bn1/FusedBatchNormV3:input:0")
    assert status == ExitStatus.OK and _row(text, "cosine") == "1.00000000"
    assert _row(text, "max abs error") == "0"


@pytest.mark.parametrize(
    "line, message",
    [
        (
            "cp input.0 resnet_conv1_Relu.0",
            "cannot compare: input.0.1764410000000000.npy has 1728 elements [4, 12, 12, 3], "
            "resnet_conv1_Relu.0.1764410000001300.npy has 13824 [4, 12, 12, 24]",
        ),
        ("cp input.0 nowhere", "no NPU dump file or golden tensor matches 'nowhere'"),
        ("cp input.0 input.0 -al -1", "-al/--atol must be a finite number >= 0"),
        ("cp input.0 input.0 -rl nan", "-rl/--rtol must be a finite number >= 0"),
        ("cp input.0 input.0 -p -2", "-p/--print must be 0 or more"),
        ("cp input.0", "the following arguments are required: RIGHT"),
    ],
)
def test_errors_are_one_line(sample_data, line, message):
    context, out = make_context(sample_data, width=400)
    assert run_command(context, line) == ExitStatus.ERROR
    assert message in out.getvalue() and "Traceback" not in out.getvalue()


def test_pickled_and_complex_files_are_refused(sample_data, tmp_path, npys):
    pickled = tmp_path / "p.npy"
    np.save(pickled, np.array([None, 1], dtype=object), allow_pickle=True)
    good = npys("g.npy", [1.0, 2.0])
    context, out = make_context(sample_data, width=400)
    assert run_command(context, f"cp {good} {pickled}") == ExitStatus.ERROR
    assert "p.npy" in out.getvalue() and "pickled" in out.getvalue()
    complex_file = npys("c.npy", [1 + 1j, 2], dtype=np.complex64)
    context, out = make_context(sample_data, width=400)
    assert run_command(context, f"cp {good} {complex_file}") == ExitStatus.ERROR
    assert "complex" in out.getvalue()


def test_writes_nothing(fixture_data, tmp_path):
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    _run(fixture_data, "cp model/add/add model_add_add.0 -s")
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before


@pytest.mark.parametrize(
    "values, what",
    [
        (np.arange(4).astype("datetime64[s]"), "datetime64[s] data (dates and times) is not compared"),
        (np.arange(4).astype("timedelta64[ms]"), "timedelta64[ms] data (durations) is not compared"),
        (np.array(["1", "2", "3", "4"]), "<U1 data (text) is not compared"),
        (np.arange(4) * (1 + 1j), "complex data (complex128) is not compared"),
    ],
)
def test_tensors_that_hold_no_numbers_are_refused_naming_the_file(sample_data, npys, tmp_path, values, what):
    """Issue 27.7: a datetime64 tensor was compared as its seconds since 1970 (cosine 1.0)."""
    odd = tmp_path / "odd.npy"
    np.save(odd, values)
    good = npys("g.npy", [1.0, 2.0, 3.0, 4.0])
    for line in (f"cp {good} {odd}", f"cp {odd} {good}"):
        status, text = _run(sample_data, line)
        assert status == ExitStatus.ERROR
        assert text.strip() == f"error: cannot compare odd.npy: {what}", line


def test_identical_huge_tensors_have_cosine_one(sample_data, npys, recwarn):
    """Issue 27.7: sum x*x of 1e300s overflows float64; cp's cosine was a bare NaN. The
    overflow is expected there, so numpy's RuntimeWarnings must not print among cp's output."""
    huge = npys("h.npy", np.full(1000, 1e300), dtype=np.float64)
    status, text = _run(sample_data, f"cp {huge} {huge}")
    assert status == ExitStatus.OK
    assert _row(text, "cosine") == "1.00000000"
    assert [str(w.message) for w in recwarn if issubclass(w.category, RuntimeWarning)] == []


@pytest.mark.parametrize(
    ("left", "right", "verdict", "red"),
    [
        (1e300, -1e300, "differs: diverges", "RED 2;"),  # was "not compared", RED nan
        (1e300, 1.0001e300, "beyond float64 rounding", "RED 0.0001;"),
        (1e-100, 1.01e-100, "beyond float64 rounding", "RED 0.0099;"),  # was an internal error
    ],
)
def test_values_whose_squares_leave_float64_get_a_verdict(sample_data, npys, left, right, verdict, red):
    """The verdict's sums (``pair_stats``) overflowed float64 from 1e154 and lost their digits,
    or divided by zero, below 1e-154."""
    a = npys("a.npy", np.full(8, left), dtype=np.float64)
    b = npys("b.npy", np.full(8, right), dtype=np.float64)
    _, text = _run(sample_data, f"cp {a} {b}")
    assert verdict in _row(text, "verdict")
    assert _row(text, "rounding").startswith(red)
    assert _row(text, "allclose") == "no"  # 1e-100s 1% apart were "allclose yes": atol unscaled
    _, same = _run(sample_data, f"cp {a} {a}")
    assert _row(same, "allclose") == "yes" and "within float64 rounding" in _row(same, "verdict")
