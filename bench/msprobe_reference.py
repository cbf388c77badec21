"""Expected values for tests/compare/test_msprobe_*.py, computed by msprobe itself.

Run with a Python that has numpy, pandas, pyyaml, tqdm and packaging, and msprobe's wheel
unzipped (``pip download --no-deps mindstudio-probe``, then unzip the .whl), e.g.::

    python -m venv /tmp/msp-venv && /tmp/msp-venv/bin/pip install numpy pandas pyyaml tqdm packaging
    /tmp/msp-venv/bin/python bench/msprobe_reference.py --wheel /tmp/msp-metrics

It writes, under ``--out`` (tests/data/msprobe_metrics):

* ``tensor/*.npy`` and ``tensor_expected.json``: tensor pairs and msprobe's six columns and
  message for each, from msprobe's own reader (``read_npy_data``, which squeezes), tensor
  checks (``ValidateTensor``) and column functions (``compare_ops_apply``);
* ``statistics/``, ``md5/`` and ``tensor_mode/``: a MindSpore-style dump pair (``dump.json``
  each, and ``dump_tensor_data/`` in tensor mode) and ``expected.json``: the rows of the CSV
  that msprobe's ``ms_compare`` wrote for them (every cell as text).

Nothing of precision_tool is imported: the values are msprobe's alone. This is not a benchmark;
it lives here because it runs outside the test suite (it needs msprobe).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "msprobe_metrics"


def _bf16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest even), still float32: what msprobe's .pt
    reader hands on for a bfloat16 tensor."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def _tensor_cases(rng: np.random.Generator):
    """(name, npu array, bench array, bench and npu are bfloat16) for every tensor case."""
    g = rng.standard_normal
    base = g(1000).astype(np.float32)
    yield "fp32_noise", (base * (1 + 1e-3 * g(1000))).astype(np.float32), base, False
    b16 = g(4096).astype(np.float16)
    yield "fp16_noise", (b16 * (1 + 2e-3 * g(4096))).astype(np.float16), b16, False
    bbf = _bf16(3 * g(4096))
    yield "bf16_noise", _bf16(bbf * (1 + 4e-3 * g(4096))), bbf, True
    yield "fp16_vs_fp32", b16, (b16 * (1 + 1e-3 * g(4096))).astype(np.float32), False
    zb = g(500).astype(np.float32)
    zb[::10] = 0
    za = (zb + 1e-3 * g(500)).astype(np.float32)
    za[::20] = 0
    za[5::50] = 0
    yield "fp32_zeros", za, zb, False
    ints = rng.integers(150, 250, 2000).astype(np.float16)
    yield "fp16_integers", (ints + rng.integers(-1, 2, 2000)).astype(np.float16), ints, False
    for name, dtype in (("fp64_thresholds", np.float64), ("fp32_thresholds", np.float32)):
        b = g(3000).astype(dtype)
        t = rng.choice([0.001, 0.005, -0.001, -0.005], 3000) * (1 + 1e-7 * g(3000))
        yield name, (b * (1 + t)).astype(dtype), b, False
    nb = g(64).astype(np.float32)
    na = (nb + 1e-2).astype(np.float32)
    for arr in (na, nb):
        arr[[3, 9]], arr[[5]], arr[[7]] = np.nan, np.inf, -np.inf
    yield "nan_inf_same", na, nb, False
    sa, sb = na.copy(), nb.copy()
    sa[5], sb[5] = np.inf, -np.inf
    yield "inf_sign_differs", sa, sb, False
    pa = na.copy()
    pa[3], pa[4] = 1.0, np.nan
    yield "nan_positions_differ", pa, nb, False
    ia = nb.copy()
    ia[3] = np.inf
    yield "inf_vs_nan", ia, nb, False
    yield "zero_d_fp32", np.array(1.5, np.float32), np.array(1.25, np.float32), False
    yield "zero_d_fp16_rounding", np.array(1000.0, np.float16), np.array(0.0999, np.float16), False
    yield "zero_d_int8_wrap", np.array(100, np.int8), np.array(-100, np.int8), False
    yield "zero_d_nan", np.array(np.nan, np.float32), np.array(1.0, np.float32), False
    yield "zero_d_bench_zero", np.array(2.0, np.float16), np.array(0.0, np.float16), False
    yield "one_element", np.array([1.5], np.float32), np.array([1.0], np.float32), False
    yield "one_by_one_fp16", np.array([[3.0]], np.float16), np.array([[2.0]], np.float16), False
    yield "empty", np.zeros(0, np.float32), np.zeros(0, np.float32), False
    yield "empty_2d", np.zeros((2, 0), np.float16), np.zeros((2, 0), np.float16), False
    yield "constant_equal", np.full(100, 3.0, np.float32), np.full(100, 3.0, np.float32), False
    yield "constant_off", np.full(100, 3.001, np.float32), np.full(100, 3.0, np.float32), False
    yield "all_zero", np.zeros(50, np.float16), np.zeros(50, np.float16), False
    yield "zero_npu", np.zeros(50, np.float32), g(50).astype(np.float32), False
    yield "zero_bench", g(50).astype(np.float32), np.zeros(50, np.float32), False
    yield "int32", rng.integers(-50, 50, 300).astype(np.int32), rng.integers(-50, 50, 300).astype(np.int32), False
    yield "int64_vs_fp32", rng.integers(-5, 5, 300), rng.integers(-5, 5, 300).astype(np.float32), False
    yield "bool", rng.random(200) < 0.5, rng.random(200) < 0.5, False
    yield "fp64_overflow", 1e200 * (1 + g(100)), 1e200 * (1 + g(100)), False
    yield "squeeze_1x3", np.array([[1.0, 2.0, 3.0]], np.float32), np.array([1.0, 2.5, 3.0], np.float32), False
    yield "shape_differs", g((2, 3)).astype(np.float32), g((3, 2)).astype(np.float32), False
    big = g(65536).astype(np.float16)
    big[::97] = 0
    yield "big_fp16", (big * (1 + 3e-3 * g(65536))).astype(np.float16), big, False


def _cell(value):
    if isinstance(value, str):
        return {"t": value}
    value = float(value)
    return {"n": value if np.isfinite(value) else repr(value)}


def _import_msprobe(wheel: Path):
    sys.path.insert(0, str(wheel))
    import msprobe

    # msprobe/mindspore/__init__.py imports mindspore; the compare code under it does not
    stub = types.ModuleType("msprobe.mindspore")
    stub.__path__ = [os.path.join(os.path.dirname(msprobe.__file__), "mindspore")]
    sys.modules["msprobe.mindspore"] = stub


def write_tensor_cases(out: Path, version: str) -> int:
    from msprobe.core.common.const import CompareConst
    from msprobe.core.compare.npy_compare import CompareResult, ValidateTensor, compare_ops_apply
    from msprobe.mindspore.compare.utils import read_npy_data

    folder = out / "tensor"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    columns = list(CompareConst.ALL_COMPARE_INDEX)
    cases = {}
    for name, npu, bench, bf16 in _tensor_cases(np.random.default_rng(20260523)):
        files = {"npu": f"{name}.npu.npy", "bench": f"{name}.bench.npy"}
        np.save(folder / files["npu"], npu)
        np.save(folder / files["bench"], bench)
        n, b = read_npy_data(str(folder), files["npu"]), read_npy_data(str(folder), files["bench"])
        checked = ValidateTensor().check_tensor(CompareResult(n, b))
        values, message = compare_ops_apply(
            checked.n_value, checked.b_value, checked.error_flag, checked.err_msg, column_names=columns
        )
        cases[name] = {
            **files,
            "bfloat16": bf16,
            "message": message,
            "cells": {c: _cell(v) for c, v in zip(columns, values)},
        }
    expected = {
        "msprobe": version,
        "columns": columns,
        "err_scalar_input": CompareConst.ERR_SCALAR_INPUT,
        "cases": cases,
    }
    (out / "tensor_expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    return len(cases)


_VALUES = [
    1.5,
    1.0,
    0.0,
    -0.0,
    3,
    3.0,
    None,
    True,
    "inf",
    float("-inf"),
    "nan",
    float("inf"),
    float("nan"),
    -2.5,
    1e-8,
    "cpu",
]


def _tensor(stats, dtype="Float32", shape=(2, 3), requires_grad=None, md5=None):
    entry = {"type": "mindspore.Tensor", "dtype": dtype, "shape": list(shape)}
    entry.update(zip(("Max", "Min", "Mean", "Norm"), stats))
    if requires_grad is not None:
        entry["requires_grad"] = requires_grad
    if md5 is not None:
        entry["md5"] = md5
    return entry


def _api(inputs, outputs, kwargs=None):
    return {"input_args": inputs, "input_kwargs": kwargs or {}, "output": outputs}


def _statistics_dumps() -> tuple[dict, dict]:
    """Two statistics dumps' ``data``: every pair of :data:`_VALUES` in some stat, and APIs
    that trip each of msprobe's Result rules."""
    pairs = [(a, b) for a in _VALUES for b in _VALUES]
    fine = _tensor([4.0, -4.0, 0.5, 10.0])
    npu, bench = {}, {}
    for k in range(0, len(pairs), 32):
        chunk = pairs[k : k + 32]
        npu[f"Functional.cells.{k // 32}.forward"] = _api(
            [_tensor([p[0] for p in chunk[i : i + 4]]) for i in range(0, len(chunk), 4)], [fine]
        )
        bench[f"Functional.cells.{k // 32}.forward"] = _api(
            [_tensor([p[1] for p in chunk[i : i + 4]]) for i in range(0, len(chunk), 4)], [fine]
        )

    def both(key, npu_api, bench_api):
        npu[key], bench[key] = npu_api, bench_api

    both("Functional.relerr.0.forward", _api([fine], [_tensor([4.0, -4.0, 0.5, 16.0])]), _api([fine], [fine]))
    both(
        "Functional.relwarn.0.forward",
        _api([_tensor([4.0, -4.0, 0.5, 10.1])], [_tensor([4.0, -4.0, 0.5, 13.0])]),
        _api([fine], [fine]),
    )
    both("Functional.relwarn_zero_in.0.forward", _api([fine], [_tensor([4.0, -4.0, 0.5, 12.0])]), _api([fine], [fine]))
    both("Functional.infnan.0.forward", _api([fine], [_tensor(["inf", -4.0, 0.5, 10.0])]), _api([fine], [fine]))
    both(
        "Functional.infnan_both.0.forward",
        _api([fine], [_tensor(["inf", -4.0, 0.5, 10.0])]),
        _api([fine], [_tensor([4.0, float("-inf"), 0.5, 10.0])]),
    )
    both("Functional.nan_min.0.forward", _api([_tensor([4.0, "nan", 0.5, 10.0])], [fine]), _api([fine], [fine]))
    both("Functional.dtype.0.forward", _api([_tensor([4.0, -4.0, 0.5, 10.0], "Float16")], [fine]), _api([fine], [fine]))
    both(
        "Functional.shape.0.forward",
        _api([_tensor([4.0, -4.0, 0.5, 10.0], shape=(3, 2))], [fine]),
        _api([fine], [fine]),
    )
    both(
        "Functional.reqgrad.0.forward",
        _api([_tensor([4.0, -4.0, 0.5, 10.0], requires_grad=True)], [fine]),
        _api([_tensor([4.0, -4.0, 0.5, 10.0], requires_grad=False)], [fine]),
    )
    both(
        "Functional.param.0.forward",
        _api([fine, {"type": "int", "value": 3}], [fine]),
        _api([fine, {"type": "int", "value": 4}], [fine]),
    )
    both("Functional.empty.0.forward", _api([fine], [_tensor(["inf", -4.0, 0.5, 16.0])]), _api([fine], [fine]))
    both(
        "Distributed._all_gather_base.0.forward",
        _api([_tensor(["inf", -4.0, 0.5, 10.0])], [_tensor([4.0, -4.0, 0.5, 16.0])]),
        _api([fine], [fine]),
    )
    both("Functional.relerr.0.backward", _api([fine], [_tensor([4.0, -4.0, 0.5, 30.0])]), _api([fine], [fine]))
    npu["Functional.unmatched.0.forward"] = _api([fine], [fine])
    return npu, bench


def _md5_dumps() -> tuple[dict, dict]:
    def t(md5, **kw):
        return _tensor([1.0, 0.0, 0.5, 1.0], md5=md5, **kw)

    npu = {
        "Functional.same.0.forward": _api([t("0a1b2c3d")], [t("deadbeef")]),
        "Functional.differ.0.forward": _api([t("0a1b2c3d")], [t("deadbeef")]),
        "Functional.param.0.forward": _api([t("11111111"), {"type": "int", "value": 3}], [t("22222222")]),
        "Functional.unmatched.0.forward": _api([t("33333333")], [t("44444444")]),
    }
    bench = {
        "Functional.same.0.forward": _api([t("0a1b2c3d")], [t("deadbeef")]),
        "Functional.differ.0.forward": _api([t("0a1b2c3d")], [t("feedf00d")]),
        "Functional.param.0.forward": _api([t("11111111"), {"type": "int", "value": 4}], [t("22222222")]),
    }
    return npu, bench


def _tensor_dumps(rng: np.random.Generator) -> tuple[dict, dict, dict]:
    """Two tensor-mode dumps' ``data`` and their files ({side: {data_name: array}}): calls that
    trip each of msprobe's tensor-mode Result rules."""
    g = rng.standard_normal
    npu, bench, files = {}, {}, {"npu": {}, "bench": {}}

    def record(side, name, array, dtype="Float32"):
        files[side][name] = array
        finite = array[np.isfinite(array)] if array.size else array
        stats = [float(np.max(array)), float(np.min(array)), float(np.mean(finite)), float(np.linalg.norm(finite))]
        return {**_tensor(stats, dtype, array.shape), "data_name": name}

    def call(key, inputs, outputs, extra_inputs=((), ())):
        """One call: ``inputs`` and ``outputs`` are (npu array, bench array) pairs."""
        for side, data, which in (("npu", npu, 0), ("bench", bench, 1)):
            sections = {"input_args": [], "input_kwargs": {}, "output": []}
            for kind, section, pairs in (("input", "input_args", inputs), ("output", "output", outputs)):
                for i, arrays in enumerate(pairs):
                    dtype = "Float16" if arrays[which].dtype == np.float16 else "Float32"
                    sections[section].append(record(side, f"{key}.{kind}.{i}.npy", arrays[which], dtype))
            sections["input_args"] += list(extra_inputs[which])
            data[key] = sections

    def close(size, noise):
        b = g(size).astype(np.float32)
        return (b * (1 + noise * g(size))).astype(np.float32), b

    call("Functional.good.0.forward", [close(64, 1e-4)], [close(64, 1e-4)])
    far = g(64).astype(np.float32)
    call("Functional.cosdrop.0.forward", [close(64, 1e-4)], [(far + g(64).astype(np.float32), far)])
    call("Functional.thousandth.0.forward", [close(256, 1e-4)], [close(256, 2e-2)])
    bad = close(64, 1e-4)
    bad[0][7] = np.inf
    call("Functional.infnan.0.forward", [close(64, 1e-4)], [bad])
    call(
        "Functional.param.0.forward",
        [close(64, 1e-4)],
        [close(64, 1e-4)],
        ([{"type": "int", "value": 3}], [{"type": "int", "value": 4}]),
    )
    call("Functional.zero_d.0.forward", [(np.array(1.5, np.float32), np.array(1.25, np.float32))], [close(8, 1e-4)])
    half = close(64, 1e-3)
    call("Functional.dtype.0.forward", [(half[0].astype(np.float16), half[1])], [close(64, 1e-4)])
    return npu, bench, files


def _run_ms_compare(folder: Path, dumps: tuple, task: str = "statistics", files=None) -> list[dict]:
    """Write the two dumps (and their tensor files) under ``folder`` and return the rows of
    ms_compare's CSV."""
    from msprobe.mindspore.compare.ms_compare import ms_compare

    for side, data in zip(("npu", "bench"), dumps):
        (folder / side).mkdir(parents=True)
        for name, array in (files or {}).get(side, {}).items():
            (folder / side / "dump_tensor_data").mkdir(exist_ok=True)
            np.save(folder / side / "dump_tensor_data" / name, array)
        dump = {"task": task, "level": "L1", "framework": "mindspore", "dump_data_dir": None, "data": data}
        (folder / side / "dump.json").write_text(json.dumps(dump, indent=1) + "\n")
    with tempfile.TemporaryDirectory() as scratch:
        ms_compare(
            {
                "npu_path": str(folder / "npu" / "dump.json"),
                "bench_path": str(folder / "bench" / "dump.json"),
                "is_print_compare_log": False,
            },
            scratch,
        )
        (result,) = glob.glob(os.path.join(scratch, "compare_result_*.csv"))
        with open(result, newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))


def write_dump_cases(out: Path, version: str) -> dict[str, int]:
    counts = {}
    npu, bench, files = _tensor_dumps(np.random.default_rng(7))
    for mode, dumps, task, data in (
        ("statistics", _statistics_dumps(), "statistics", None),
        ("md5", _md5_dumps(), "statistics", None),
        ("tensor_mode", (npu, bench), "tensor", files),
    ):
        folder = out / mode
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        rows = _run_ms_compare(folder, dumps, task, data)
        (folder / "expected.json").write_text(json.dumps({"msprobe": version, "rows": rows}, indent=1) + "\n")
        counts[mode] = len(rows)
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wheel",
        type=Path,
        default=Path(os.environ.get("MSPROBE_WHEEL_DIR", "/tmp/msp-metrics")),
        help="the unzipped mindstudio-probe wheel (holding msprobe/)",
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write (default {OUT})")
    args = parser.parse_args(argv)
    _import_msprobe(args.wheel)
    info = next(args.wheel.glob("mindstudio_probe-*.dist-info"), None)
    version = info.name.removesuffix(".dist-info").split("-")[1] if info else "unknown"
    args.out.mkdir(parents=True, exist_ok=True)
    tensors = write_tensor_cases(args.out, version)
    dumps = write_dump_cases(args.out, version)
    print(
        f"mindstudio-probe {version}: {tensors} tensor cases, "
        + ", ".join(f"{n} {mode} rows" for mode, n in dumps.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
