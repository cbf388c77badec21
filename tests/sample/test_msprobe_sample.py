"""The msprobe sample: two runs laid out as msprobe lays them out, reproducible byte for byte,
small, with one planted defect that the files themselves show: the cosine between the NPU and
bench outputs (computed here with numpy from the written files) first falls at the planted API,
whose inputs still match, and the entries after it inherit the fall."""

from __future__ import annotations

import filecmp
import json
import pickletools
import re
import subprocess
import sys
import zipfile

import ml_dtypes
import numpy as np
import pytest

from precision_tool.sample.msprobe import DEFECT_KEYS, DEFECT_MODULES, write_msprobe_sample

FRAMEWORKS = ("pytorch", "mindspore")
STORAGES = {
    "torch HalfStorage": np.float16,
    "torch BFloat16Storage": ml_dtypes.bfloat16,
    "torch FloatStorage": np.float32,
    "torch LongStorage": np.int64,
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    root = tmp_path_factory.mktemp("msprobe")
    return {fw: write_msprobe_sample(root / fw, fw) for fw in FRAMEWORKS}


def _rank(root, run):
    return root / run / "step0" / "rank0"


def _dump(root, run):
    return json.loads((_rank(root, run) / "dump.json").read_text())


def _load(root, run, data_name):
    """A dumped tensor, flat: .pt read with zipfile + pickletools + frombuffer, .npy with np.load."""
    path = _rank(root, run) / "dump_tensor_data" / data_name
    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False).ravel()
    with zipfile.ZipFile(path) as z:
        archive = z.namelist()[0].split("/")[0]
        ops = list(pickletools.genops(z.read(f"{archive}/data.pkl")))
        storage = [arg for op, arg, _ in ops if op.name == "GLOBAL"][1]
        return np.frombuffer(z.read(f"{archive}/data/0"), STORAGES[storage])


def _names(value):
    if isinstance(value, dict):
        return ([value["data_name"]] if "data_name" in value else []) + [n for v in value.values() for n in _names(v)]
    if isinstance(value, list):
        return [n for v in value for n in _names(v)]
    return []


def _cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _cosines(root, field, key):
    npu, bench = _dump(root, "npu")["data"][key], _dump(root, "bench")["data"][key]
    names = _names(npu[field])
    assert names == _names(bench[field])
    pairs = [(_load(root, "npu", n), _load(root, "bench", n)) for n in names]
    return [_cosine(a, b) for a, b in pairs if a.dtype.kind not in "iub"]  # not the token ids


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_run_is_an_msprobe_dump_path(samples, framework):
    root = samples[framework]
    assert sorted(p.name for p in root.iterdir()) == ["bench", "npu"]
    for run in ("npu", "bench"):
        assert [str(p.relative_to(root / run)) for p in (root / run).iterdir()] == ["step0"]
        rank = _rank(root, run)
        assert sorted(p.name for p in rank.iterdir()) == [
            "construct.json",
            "dump.json",
            "dump_tensor_data",
            "stack.json",
        ]
        dump = _dump(root, run)
        assert (dump["task"], dump["level"], dump["framework"]) == ("tensor", "mix", framework)
        assert dump["dump_data_dir"] == f"./{run}/step0/rank0/dump_tensor_data"
        names = _names(dump["data"])
        assert len(names) == len(set(names))
        assert sorted(names) == sorted(p.name for p in (rank / "dump_tensor_data").iterdir())
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert size < 2 * 1024 * 1024


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_keys_are_counted_and_parented_as_msprobe_does(samples, framework):
    root = samples[framework]
    data = _dump(root, "npu")["data"]
    keys = list(data)
    prefix = "Module" if framework == "pytorch" else "Cell"
    api = re.compile(r"^(Functional|Tensor|Torch|Mint|MintFunctional)\.\w+\.\d+\.forward$")
    module = re.compile(rf"^{prefix}\.[\w.]+\.[A-Z]\w*\.forward\.\d+$")
    assert all(api.match(k) or module.match(k) for k in keys), keys
    linear = "Functional.linear" if framework == "pytorch" else "MintFunctional.linear"
    assert [k for k in keys if k.startswith(linear + ".")] == [f"{linear}.{i}.forward" for i in range(9)]
    assert f"{prefix}.layers.0.attn.Attention.forward.0" in keys and f"{prefix}.layers.1.Block.forward.0" in keys
    # a module follows what it calls
    assert (
        keys.index(f"{linear}.5.forward")
        < keys.index(DEFECT_MODULES[framework])
        < keys.index(f"{prefix}.layers.1.attn.Attention.forward.0")
        < keys.index(f"{prefix}.layers.1.Block.forward.0")
    )
    construct = json.loads((_rank(root, "npu") / "construct.json").read_text())
    assert set(construct) == set(keys)
    assert construct[f"{linear}.5.forward"] == DEFECT_MODULES[framework]
    assert construct[DEFECT_MODULES[framework]] == f"{prefix}.layers.1.attn.Attention.forward.0"
    assert construct[f"{prefix}.layers.0.Block.forward.0"] is None
    assert all(parent is None or parent in construct for parent in construct.values())
    stack = json.loads((_rank(root, "npu") / "stack.json").read_text())
    stacked = [k for _i, (group, _frames) in stack.items() for k in group]
    assert sorted(stacked) == sorted(keys)
    assert all(f.startswith("File /") and ", line " in f for _g, frames in stack.values() for f in frames)


@pytest.mark.parametrize(
    ("framework", "npu", "bench", "ids"),
    [("pytorch", "torch.bfloat16", "torch.float32", "torch.int64"), ("mindspore", "Float16", "Float32", "Int32")],
)
def test_the_npu_runs_in_half_precision_and_the_bench_in_float32(samples, framework, npu, bench, ids):
    root = samples[framework]
    for run, dtype in (("npu", npu), ("bench", bench)):
        embedding = next(v for k, v in _dump(root, run)["data"].items() if ".embedding.0." in k)
        assert embedding["input_args"][0]["dtype"] == ids and embedding["output"][0]["dtype"] == dtype
        assert embedding["input_args"][1].get("requires_grad", True) is True


def test_pytorch_tensors_are_saved_from_their_devices(samples):
    root = samples["pytorch"]
    for run, location in (("npu", "npu:0"), ("bench", "cuda:0")):
        path = _rank(root, run) / "dump_tensor_data" / "Functional.linear.0.forward.output.0.pt"
        with zipfile.ZipFile(path) as z:
            texts = [
                arg for op, arg, _ in pickletools.genops(z.read(f"{path.stem}/data.pkl")) if op.name == "BINUNICODE"
            ]
        assert texts == ["storage", "0", location]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_planted_api_is_where_the_outputs_first_part_and_its_inputs_still_match(samples, framework):
    root = samples[framework]
    keys = list(_dump(root, "npu")["data"])
    outputs = {k: min(_cosines(root, "output", k)) for k in keys}
    first = next(k for k in keys if outputs[k] < 0.99)
    assert first == DEFECT_KEYS[framework]
    assert outputs[first] < 0.5
    assert min(_cosines(root, "input_args", first)) > 0.9999  # it introduces the error
    before = keys[: keys.index(first)]
    assert len(before) > 40 and all(outputs[k] > 0.9999 for k in before)
    after = keys[keys.index(first) + 1 :]
    assert outputs[DEFECT_MODULES[framework]] < 0.5 and all(outputs[k] < 0.99 for k in after[-6:])
    residual = "Tensor.__add__.3.forward"  # x + attn(x) of layer 1: it inherits through its input
    assert min(_cosines(root, "input_args", residual)) < 0.5 and outputs[residual] < 0.95


def test_the_docstring_names_the_planted_defect():
    import precision_tool.sample.msprobe as sample

    for framework in FRAMEWORKS:
        assert DEFECT_KEYS[framework] in sample.__doc__
    assert DEFECT_MODULES["pytorch"] in sample.__doc__ and "layers.1.attn.proj" in sample.__doc__


def test_the_sample_is_reproducible_byte_for_byte(samples, tmp_path):
    again = write_msprobe_sample(tmp_path / "again", "mindspore")
    files = sorted(str(p.relative_to(again)) for p in again.rglob("*") if p.is_file())
    assert files == sorted(
        str(p.relative_to(samples["mindspore"])) for p in samples["mindspore"].rglob("*") if p.is_file()
    )
    match, mismatch, errors = filecmp.cmpfiles(samples["mindspore"], again, files, shallow=False)
    assert mismatch == [] and errors == [] and len(match) == len(files)


def test_a_statistics_sample_writes_no_tensors(tmp_path):
    root = write_msprobe_sample(tmp_path / "stats", "pytorch", task="statistics")
    dump = _dump(root, "npu")
    assert dump["task"] == "statistics" and dump["dump_data_dir"] is None and _names(dump["data"]) == []
    assert not (_rank(root, "npu") / "dump_tensor_data").exists()
    proj = dump["data"][DEFECT_KEYS["pytorch"]]["output"][0]
    assert list(proj) == ["type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad"]


def _sample(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "precision_tool.sample", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_the_command_writes_the_pair_and_replaces_only_an_earlier_msprobe_sample(tmp_path):
    done = _sample(str(tmp_path / "s"), "--framework", "mindspore")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "s/npu/step0/rank0/dump.json").is_file() and (tmp_path / "s/bench/step0/rank0").is_dir()
    assert _sample(str(tmp_path / "s"), "--framework", "pytorch", "--task", "statistics").returncode == 0
    assert _dump(tmp_path / "s", "bench")["framework"] == "pytorch"
    (tmp_path / "other/npu/debug_0").mkdir(parents=True)
    refused = _sample(str(tmp_path / "other"), "--framework", "pytorch")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "holds more than msprobe step directories; not replaced" in refused.stderr
    assert (tmp_path / "other/npu/debug_0").is_dir() and not (tmp_path / "other/bench").exists()


def test_task_without_framework_is_a_usage_error(tmp_path):
    done = _sample(str(tmp_path / "x"), "--task", "tensor")
    assert done.returncode == 2 and "--task goes with --framework" in done.stderr
    assert not (tmp_path / "x").exists()
