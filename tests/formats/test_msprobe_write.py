"""msprobe dump trees as msprobe writes them: dump.json read back as plain JSON and compared with
hand-computed statistics and with the raw text of real msprobe dumps; tensors read back with
zipfile, pickletools and numpy (``.pt``) or ``np.load`` (``.npy``), never with a reader of ours."""

from __future__ import annotations

import json
import pickletools
import zipfile
import zlib

import ml_dtypes
import numpy as np
import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.msprobe_write import (
    Call,
    DumpSpec,
    Tensor,
    Value,
    construct_json,
    frame,
    stack_json,
    tensor_statistics,
    write_dump,
    write_rank,
)

# The opening of a real dump: examples/quick_start/gpu_dump/step0/proc2016/dump.json in
# Ascend/msprobe (a torchvision ResNet on a GPU, task statistics, level mix).
REAL_PYTORCH_OPENING = """{
 "task": "statistics",
 "level": "mix",
 "framework": "pytorch",
 "dump_data_dir": null,
 "data": {
  "Functional.conv2d.0.forward": {
   "input_args": [
    {
     "type": "torch.Tensor",
     "dtype": "torch.float32",
     "shape": [
      32,
      3,
      224,
      224
     ],
     "Max": 1.0,
     "Min": 0.0,
     "Mean": 0.4993983507156372,
     "Norm": 1267.74462890625,
     "requires_grad": false
"""
# A tensor of test/msprobe_test/mindspore_ut/compare/dump_file/mindspore_data/dump.json there.
REAL_MINDSPORE_TENSOR = {
    "type": "mindspore.Tensor",
    "dtype": "Int32",
    "shape": [5, 2],
    "Max": 3430.0,
    "Min": 0.0,
    "Mean": 926.5,
    "Norm": 4977.4384765625,
}


def _pt_values(path):
    with zipfile.ZipFile(path) as z:
        archive = z.namelist()[0].split("/")[0]
        ops = [(op.name, arg) for op, arg, _ in pickletools.genops(z.read(f"{archive}/data.pkl"))]
        raw = z.read(f"{archive}/data/0")
    storage = [arg for name, arg in ops if name == "GLOBAL"][1]
    dtype = {
        "torch HalfStorage": np.float16,
        "torch BFloat16Storage": ml_dtypes.bfloat16,
        "torch FloatStorage": np.float32,
        "torch LongStorage": np.int64,
    }[storage]
    location = [arg for name, arg in ops if name == "BINUNICODE"][2]
    return np.frombuffer(raw, dtype), location


def _lines(text, start, stop):
    return text.splitlines()[start:stop]


def test_a_statistics_dump_opens_as_a_real_one_does(tmp_path):
    x = np.broadcast_to(np.float32(0.5), (32, 3, 224, 224))
    write_rank(
        tmp_path, [Call("Functional.conv2d.0.forward", (x,), outputs=x)], DumpSpec(task="statistics", level="mix")
    )
    ours = (tmp_path / "dump.json").read_text()
    real = REAL_PYTORCH_OPENING
    assert _lines(ours, 0, 17) == _lines(real, 0, 17)  # through the shape: the same characters
    assert [line.split(":")[0] for line in _lines(ours, 17, 22)] == [
        line.split(":")[0] for line in _lines(real, 17, 22)
    ]
    assert json.loads(ours)["data"]["Functional.conv2d.0.forward"]["input_args"][0]["Max"] == 0.5
    assert not (tmp_path / "dump_tensor_data").exists()


def test_a_mindspore_tensor_has_the_fields_of_a_real_one(tmp_path):
    ids = np.array([[0, 3430], [12, 900]] * 2 + [[3, 4]], np.int32)
    write_rank(tmp_path, [Call("Tensor.__add__.0.forward", (ids,), outputs=ids)], DumpSpec("mindspore", "statistics"))
    tensor = json.loads((tmp_path / "dump.json").read_text())["data"]["Tensor.__add__.0.forward"]["input_args"][0]
    assert list(tensor) == list(REAL_MINDSPORE_TENSOR)
    assert tensor["dtype"] == "Int32" and isinstance(tensor["Max"], float) and tensor["Max"] == 3430.0


@pytest.mark.parametrize(
    ("values", "dtype", "framework", "expected"),
    [
        ([1, 2, 3, 4], np.float16, "pytorch", (4.0, 1.0, 2.5, 5.4765625)),  # sqrt(30) = 5.4772 in float16
        ([1, 2, 3], np.int64, "pytorch", (3.0, 1.0, 2.0, 3.7416574954986572)),  # float32(sqrt(14))
        (
            [0.1, 0.2],
            np.float64,
            "pytorch",
            (0.20000000298023224, 0.10000000149011612, 0.15000000596046448, 0.22360679507255554),
        ),  # cast to float32, then reduced
        ([1.0, 2.0, 4.0], ml_dtypes.bfloat16, "mindspore", (4.0, 1.0, 2.328125, 4.59375)),  # 7/3, sqrt(21) in bf16
        ([True, False], np.bool_, "pytorch", (True, False, None, None)),
        ([True, True], np.bool_, "mindspore", (True, True, None, None)),
        ([3 + 4j, 0j], np.complex64, "pytorch", (5.0, 0.0, 2.5, None)),
        ([3 + 4j, 0j], np.complex64, "mindspore", (5.0, 0.0, 2.5, 5.0)),
        ([], np.float32, "pytorch", (None, None, None, None)),
        ([1.0, 2.0], ml_dtypes.float8_e4m3fn, "pytorch", (None, None, None, None)),  # skipped, as msprobe does
    ],
)
def test_statistics_are_computed_as_msprobe_computes_them(values, dtype, framework, expected):
    got = tensor_statistics(np.array(values, dtype), framework)
    assert got == expected
    assert [type(v) for v in got] == [type(v) for v in expected]


def test_nan_spreads_to_every_statistic_as_torch_max_and_mean_spread_it():
    assert all(np.isnan(v) for v in tensor_statistics(np.array([np.nan, 1.0], np.float32), "pytorch"))


def test_a_0d_tensor_has_its_value_four_times_and_float16_overflows_to_inf():
    assert tensor_statistics(np.array(3, np.int64), "pytorch") == (3, 3, 3, 3)
    assert tensor_statistics(np.array(-1.5, np.float16), "mindspore") == (-1.5,) * 4
    peak, _low, _mean, norm = tensor_statistics(np.full(4, 60000, np.float16), "pytorch")
    assert peak == 60000.0 and norm == float("inf")  # torch.norm in float16 overflows too


def _calls():
    x = Tensor(np.array([[1.0, -2.0], [0.5, 4.0]], np.float16), requires_grad=True)
    w = Tensor(np.eye(2, dtype=np.float16), requires_grad=True)
    y = Tensor(np.array([[1.0, -2.0], [0.5, 4.0]], np.float16), requires_grad=True)
    parts = (Tensor(y.array[:1], True), Tensor(y.array[1:], True))
    here = [frame("/m.py", 3, "forward", "return F.linear(x, self.weight)"), frame("/t.py", 9, "<module>", "model(x)")]
    return [
        Call(
            "Functional.linear.0.forward",
            (x, w, None),
            {},
            y,
            parent="Module.fc.Linear.forward.0",
            stack=here,
            begin=2,
            end=3,
        ),
        Call("Module.fc.Linear.forward.0", (x,), {}, y, parameters={"weight": w}, stack=here[1:], begin=1, end=4),
        Call(
            "Tensor.split.0.forward",
            (y, 1),
            {"dim": 0, "dtype": Value("torch.dtype", "torch.float16")},
            parts,
            stack=here,
            begin=5,
            end=6,
        ),
        Call("Functional.linear.0.backward", (y,), outputs=(x, w, None)),
        Call("Module.fc.Linear.parameters_grad.0", parameters={"weight": w}),
    ]


def test_a_tensor_dump_names_and_writes_every_tensor(tmp_path):
    write_dump(tmp_path / "dump", {0: {0: _calls()}}, DumpSpec(location="npu:0"), dump_path_text="./dump")
    rank = tmp_path / "dump" / "step0" / "rank0"
    text = (rank / "dump.json").read_text()
    dump = json.loads(text)
    assert list(dump) == ["task", "level", "framework", "dump_data_dir", "data"]
    assert dump["dump_data_dir"] == "./dump/step0/rank0/dump_tensor_data"
    data = dump["data"]
    assert list(data) == [c.key for c in _calls()]
    linear = data["Functional.linear.0.forward"]
    assert list(linear) == ["input_args", "input_kwargs", "output"]
    assert list(data["Module.fc.Linear.forward.0"]) == ["input_args", "input_kwargs", "output", "parameters"]
    assert list(data["Functional.linear.0.backward"]) == ["input", "output"]
    first = linear["input_args"][0]
    assert list(first) == ["type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "data_name"]
    assert first["dtype"] == "torch.float16" and first["requires_grad"] is True and first["shape"] == [2, 2]
    assert linear["input_args"][2] is None
    names = [v["data_name"] for v in linear["input_args"][:2]] + [linear["output"][0]["data_name"]]
    assert names == [
        "Functional.linear.0.forward.input.0.pt",
        "Functional.linear.0.forward.input.1.pt",
        "Functional.linear.0.forward.output.0.pt",
    ]
    split = data["Tensor.split.0.forward"]
    assert split["input_args"][1] == {"type": "int", "value": 1}
    assert split["input_kwargs"] == {
        "dim": {"type": "int", "value": 0},
        "dtype": {"type": "torch.dtype", "value": "torch.float16"},
    }
    assert [o["data_name"] for o in split["output"]] == [
        "Tensor.split.0.forward.output.0.pt",
        "Tensor.split.0.forward.output.1.pt",
    ]
    assert (
        data["Module.fc.Linear.forward.0"]["parameters"]["weight"]["data_name"]
        == "Module.fc.Linear.forward.0.parameters.weight.pt"
    )
    assert (
        data["Module.fc.Linear.parameters_grad.0"]["weight"][0]["data_name"]
        == "Module.fc.Linear.parameters_grad.0.weight.pt"
    )
    written = sorted(p.name for p in (rank / "dump_tensor_data").iterdir())
    assert written == sorted(set(_data_names(data)))
    values, location = _pt_values(rank / "dump_tensor_data" / "Functional.linear.0.forward.input.0.pt")
    assert values.tolist() == [1.0, -2.0, 0.5, 4.0] and location == "npu:0"
    assert text.startswith('{\n "task": "tensor",\n "level": "mix",\n "framework": "pytorch",\n')


def _data_names(value):
    if isinstance(value, dict):
        return ([value["data_name"]] if "data_name" in value else []) + [
            n for v in value.values() for n in _data_names(v)
        ]
    if isinstance(value, list):
        return [n for v in value for n in _data_names(v)]
    return []


def test_md5_is_the_crc32_of_the_bytes_mindspore_hashing_bfloat16_as_float32(tmp_path):
    values = np.array([1.5, -2.25, 3.0], ml_dtypes.bfloat16)
    for framework, hashed in (("pytorch", values.tobytes()), ("mindspore", values.astype(np.float32).tobytes())):
        write_rank(
            tmp_path / framework,
            [Call("Tensor.add.0.forward", (values,), outputs=values)],
            DumpSpec(framework, "statistics", summary_mode="md5"),
        )
        tensor = json.loads((tmp_path / framework / "dump.json").read_text())["data"]["Tensor.add.0.forward"]["output"][
            0
        ]
        assert tensor["md5"] == f"{zlib.crc32(hashed):08x}"
        assert list(tensor)[-1] == "md5" and "data_name" not in tensor


def test_mindspore_saves_npy_files_bfloat16_as_float32_and_has_no_requires_grad(tmp_path):
    values = np.array([[1.5, -2.25]], ml_dtypes.bfloat16)
    write_rank(
        tmp_path, [Call("Cell.fc.Dense.forward.0", (values,), outputs=values, parameters={})], DumpSpec("mindspore")
    )
    entry = json.loads((tmp_path / "dump.json").read_text())["data"]["Cell.fc.Dense.forward.0"]
    tensor = entry["input_args"][0]
    assert tensor["type"] == "mindspore.Tensor" and tensor["dtype"] == "BFloat16" and "requires_grad" not in tensor
    assert tensor["data_name"] == "Cell.fc.Dense.forward.0.input.0.npy"
    saved = np.load(tmp_path / "dump_tensor_data" / tensor["data_name"], allow_pickle=False)
    assert saved.dtype == np.float32 and saved.tolist() == [[1.5, -2.25]]
    assert entry["parameters"] == {}


def test_stack_json_groups_equal_stacks_in_the_order_the_calls_started():
    grouped = stack_json(_calls())
    assert list(grouped) == ["0", "1"]
    assert grouped["0"][0] == ["Module.fc.Linear.forward.0"]  # started first (begin=1)
    assert grouped["1"][0] == ["Functional.linear.0.forward", "Tensor.split.0.forward"]
    assert grouped["1"][1][0] == "File /m.py, line 3, in forward, \n return F.linear(x, self.weight)"
    keyed = stack_json(_calls(), "keyed")
    assert list(keyed) == ["Module.fc.Linear.forward.0", "Functional.linear.0.forward", "Tensor.split.0.forward"]


def test_construct_json_lists_apis_at_mix_only_and_modules_once_started():
    calls = _calls()
    assert construct_json(calls, "L1") == {}
    mix = construct_json(calls, "mix")
    assert list(mix.items()) == [
        ("Functional.linear.0.forward", "Module.fc.Linear.forward.0"),
        ("Module.fc.Linear.forward.0", None),
        ("Tensor.split.0.forward", None),
        ("Functional.linear.0.backward", None),
    ]
    assert list(construct_json(calls, "L0")) == ["Module.fc.Linear.forward.0"]


def test_ranks_and_steps_get_their_own_directories(tmp_path):
    one = [Call("Tensor.add.0.forward", (np.ones(2, np.float32),), outputs=np.ones(2, np.float32))]
    write_dump(tmp_path, {0: {0: one, 1: one}, 3: {"proc2016": one}}, DumpSpec(task="statistics", level="L1"))
    found = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("dump.json"))
    assert found == ["step0/rank0/dump.json", "step0/rank1/dump.json", "step3/proc2016/dump.json"]
    assert json.loads((tmp_path / "step3/proc2016/construct.json").read_text()) == {}


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: DumpSpec(task="nan"), "msprobe task 'nan' is not one of statistics, tensor"),
        (lambda: DumpSpec(level="L2"), "msprobe level 'L2' is not one of L0, L1, mix"),
    ],
)
def test_a_bad_spec_is_one_line(make, message):
    with pytest.raises(PrecisionToolError) as raised:
        make()
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("calls", "spec", "message"),
    [
        ([Call("Tensor.add.0.forward", (object(),))], DumpSpec(), "msprobe records no object value"),
        ([Call("Tensor.add.0.forward")] * 2, DumpSpec(), "Tensor.add.0.forward: written twice in one rank's dump.json"),
        (
            [Call("Tensor.add.0.forward", (np.zeros(2, ml_dtypes.float8_e5m2),))],
            DumpSpec("mindspore"),
            "no MindSpore dtype for numpy float8_e5m2",
        ),
    ],
)
def test_what_msprobe_cannot_write_is_one_line_and_the_next_rank_is_written(tmp_path, calls, spec, message):
    with pytest.raises(PrecisionToolError) as raised:
        write_rank(tmp_path / "bad", calls, spec)
    assert str(raised.value) == message
    write_rank(tmp_path / "good", [Call("Tensor.add.0.forward", (np.ones(1, np.float32),))], spec)
    assert (tmp_path / "good" / "dump.json").is_file()
