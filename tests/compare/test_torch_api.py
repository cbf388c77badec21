"""The replays of PyTorch and MindSpore API calls against independent references: torch's own
values (``tests/data/torch_replay/cases.json``, computed once by real torch in float64),
formulas written out here with plain Python loops, and the argument structures of msprobe's
public dump.json files."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare.replay import ReplayError, torch_api
from precision_tool.compare.replay.torch_api import bind, find_api, replay_call
from precision_tool.formats.msprobe_keys import parse_key

DATA = Path(__file__).resolve().parents[1] / "data"
CASES = json.loads((DATA / "torch_replay" / "cases.json").read_text())["cases"]


def run(key, *args, framework="pytorch", dtype="float64", **kwargs):
    api = find_api(parse_key(key), framework)
    assert api is not None, key
    return replay_call(api, list(args), kwargs, framework, None if dtype is None else np.dtype(dtype))


def decoded(value):
    if isinstance(value, dict) and "tensor" in value:
        return np.array(value["tensor"], dtype=np.float64).reshape(value["shape"])
    if isinstance(value, list):
        return [decoded(item) for item in value]
    return value


def rng(seed=0):
    return np.random.default_rng(seed)


# --- torch's own values ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c["key"] for c in CASES])
def test_torch_computes_the_same(case):
    outputs, _ = run(case["key"], *decoded(case["args"]), **{k: decoded(v) for k, v in case["kwargs"].items()})
    expected = [decoded(o) for o in case["outputs"]]
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_torch_cases_cover_every_kind():
    names = {parse_key(c["key"]).name for c in CASES}
    assert {
        "linear",
        "matmul",
        "bmm",
        "mm",
        "addmm",
        "conv1d",
        "conv2d",
        "layer_norm",
        "rms_norm",
        "softmax",
        "log_softmax",
        "gelu",
        "silu",
        "relu",
        "add",
        "__add__",
        "sub",
        "__rsub__",
        "mul",
        "__mul__",
        "div",
        "__truediv__",
    } <= names


# --- loop references ---------------------------------------------------------------------------


def ref_conv_nchw(x, w, bias, strides, pads, dilations=(1, 1), groups=1):
    """NCHW x [out, in/groups, kh, kw], every output element a sum over its window."""
    n_, c, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    (sh, sw), (top, bottom, left, right), (dh, dw) = strides, pads, dilations
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
    og = cout // groups
    out = np.zeros((n_, cout, oh, ow))
    for n, co, i, j in itertools.product(range(n_), range(cout), range(oh), range(ow)):
        g, total = co // og, 0.0 if bias is None else float(bias[co])
        for ci, a, b in itertools.product(range(cg), range(kh), range(kw)):
            y, xx = i * sh + a * dh - top, j * sw + b * dw - left
            if 0 <= y < h and 0 <= xx < wd:
                total += float(x[n, g * cg + ci, y, xx]) * float(w[co, ci, a, b])
        out[n, co, i, j] = total
    return out


def ref_rms(x, gamma, eps):
    """(y, rstd) over the last gamma.ndim axes, element by element."""
    k = gamma.ndim
    rows = x.reshape(-1, int(np.prod(x.shape[x.ndim - k :])))
    g = gamma.reshape(-1)
    ys, rstds = [], []
    for row in rows:
        mean_sq = sum(float(v) * float(v) for v in row) / len(row)
        rstd = 1.0 / math.sqrt(mean_sq + eps)
        rstds.append(rstd)
        ys.append([float(v) * rstd * float(gi) for v, gi in zip(row, g)])
    return np.array(ys).reshape(x.shape), np.array(rstds).reshape(x.shape[: x.ndim - k] + (1,) * k)


def test_npu_rms_norm_gives_y_and_rstd():
    x, gamma = rng().standard_normal((2, 3, 8)), rng(1).standard_normal(8)
    (y, rstd), _ = run("NPU.npu_rms_norm.0.forward", x, gamma, epsilon=1e-5)
    want_y, want_rstd = ref_rms(x, gamma, 1e-5)
    np.testing.assert_allclose(y, want_y, rtol=1e-12)
    np.testing.assert_allclose(rstd, want_rstd, rtol=1e-12)
    assert rstd.shape == (2, 3, 1)
    (y, _), _ = run("NPU.npu_rms_norm.1.forward", x * 1e-4, gamma)  # epsilon defaults to 1e-6
    np.testing.assert_allclose(y, ref_rms(x * 1e-4, gamma, 1e-6)[0], rtol=1e-12)


def test_mindspore_rms_norms():
    x, gamma = rng().standard_normal((4, 6)), rng(1).standard_normal(6)
    (y, rstd), _ = run("Functional.rms_norm.0.forward", x, gamma, 1e-3, framework="mindspore")
    np.testing.assert_allclose(y, ref_rms(x, gamma, 1e-3)[0], rtol=1e-12)
    (y, rstd), notes = run("Primitive.norm.RmsNorm.0.forward", x, gamma, framework="mindspore")
    np.testing.assert_allclose(rstd, ref_rms(x, gamma, 1e-6)[1], rtol=1e-12)
    assert any("epsilon is not dumped" in n for n in notes)


def test_mindspore_rms_norm_example_of_its_docs():
    """mindspore.ops.rms_norm's documented example: x [[1, 2, 3], [1, 2, 3]], gamma ones."""
    x = np.array([[1, 2, 3], [1, 2, 3]], dtype=np.float32)
    (y, rstd), _ = run(
        "Functional.rms_norm.0.forward", x, np.ones(3, np.float32), framework="mindspore", dtype="float32"
    )
    np.testing.assert_allclose(y, [[0.46290997, 0.92581993, 1.3887299]] * 2, rtol=1e-6)
    np.testing.assert_allclose(rstd, [[0.46290997], [0.46290997]], rtol=1e-6)


def test_torch_rms_norm_eps_none_is_the_input_dtypes_epsilon():
    x = np.full((1, 4), 1e-4, dtype=np.float32)  # mean square 1e-8: float32's eps (1.19e-7) dominates
    (y,), _ = run("Functional.rms_norm.0.forward", x, [4], dtype="float32")
    eps = float(ml_dtypes.finfo(np.float32).eps)
    np.testing.assert_allclose(y, 1e-4 / np.sqrt(1e-8 + eps), rtol=1e-6)


@pytest.mark.parametrize(
    "mode,padding,stride,pads",
    [
        ("valid", 0, (1, 1), (0, 0, 0, 0)),
        ("same", 0, (2, 2), (1, 1, 0, 1)),  # TensorFlow's SAME: height 7 -> 4, width 6 -> 3
        ("pad", 1, (1, 2), (1, 1, 1, 1)),
        ("pad", (0, 2, 1, 0), (1, 1), (0, 2, 1, 0)),
    ],
)
def test_mindspore_ops_conv2d_pad_modes(mode, padding, stride, pads):
    x, w, b = rng().standard_normal((1, 2, 7, 6)), rng(1).standard_normal((3, 2, 3, 2)), rng(2).standard_normal(3)
    (y,), _ = run("Functional.conv2d.0.forward", x, w, b, stride, mode, padding, framework="mindspore")
    np.testing.assert_allclose(y, ref_conv_nchw(x, w, b, stride, pads), rtol=1e-12, atol=1e-12)


def test_mindspore_ops_conv2d_defaults_to_valid_and_mint_conv2d_is_torchs():
    x, w = rng().standard_normal((1, 2, 5, 5)), rng(1).standard_normal((2, 2, 3, 3))
    (y,), _ = run("Functional.conv2d.0.forward", x, w, framework="mindspore")
    assert y.shape == (1, 2, 3, 3)
    (y,), _ = run("Mint.conv2d.0.forward", x, w, None, 1, 1, framework="mindspore")
    np.testing.assert_allclose(y, ref_conv_nchw(x, w, None, (1, 1), (1, 1, 1, 1)), rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(0, 2),
    st.integers(1, 2),
    st.sampled_from([1, 2]),
    st.integers(4, 7),
    st.integers(4, 7),
    st.booleans(),
)
def test_conv2d_matches_the_loops(kh, kw, pad, stride, groups, h, wd, with_bias):
    x = rng(h * 10 + wd).standard_normal((1, 2 * groups, h, wd))
    w = rng(kh * 10 + kw).standard_normal((2 * groups, 2, kh, kw))
    bias = rng(3).standard_normal(2 * groups) if with_bias else None
    (y,), _ = run("Functional.conv2d.0.forward", x, w, bias, stride, pad, 1, groups)
    np.testing.assert_allclose(
        y, ref_conv_nchw(x, w, bias, (stride, stride), (pad,) * 4, (1, 1), groups), rtol=1e-10, atol=1e-10
    )


def test_layer_norm_by_the_loops():
    x = rng().standard_normal((3, 5))
    (y,), _ = run("MintFunctional.layer_norm.0.forward", x, (5,), None, None, 1e-3, framework="mindspore")
    for row, out in zip(x, y):
        mean = sum(row) / 5
        var = sum((v - mean) ** 2 for v in row) / 5
        np.testing.assert_allclose(out, [(v - mean) / math.sqrt(var + 1e-3) for v in row], rtol=1e-12)


def test_softmax_axes_of_mindspore():
    x = rng().standard_normal((3, 4))
    (y,), _ = run("Functional.softmax.0.forward", x, framework="mindspore")  # axis=-1
    for row, out in zip(x, y):
        e = [math.exp(v - max(row)) for v in row]
        np.testing.assert_allclose(out, [v / sum(e) for v in e], rtol=1e-12)
    (y,), _ = run("Functional.softmax.0.forward", x, axis=0, framework="mindspore")
    np.testing.assert_allclose(y.sum(axis=0), np.ones(4), rtol=1e-12)


def test_gelu_both_ways_by_the_formulas():
    x = np.linspace(-4, 4, 17)
    (exact,), _ = run("MintFunctional.gelu.0.forward", x, framework="mindspore")
    (tanh,), _ = run("Functional.gelu.0.forward", x, approximate="tanh")
    np.testing.assert_allclose(exact, [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x], rtol=1e-12)
    c = math.sqrt(2 / math.pi)
    np.testing.assert_allclose(
        tanh, [0.5 * v * (1 + math.tanh(c * (v + 0.044715 * v**3))) for v in x], rtol=1e-12, atol=1e-15
    )  # 1 + tanh cancels near -4


def test_mindspore_spellings_of_linear_and_matmul():
    x, w, b = rng().standard_normal((2, 3)), rng(1).standard_normal((4, 3)), rng(2).standard_normal(4)
    want = [[sum(x[i, k] * w[j, k] for k in range(3)) + b[j] for j in range(4)] for i in range(2)]
    for key in ("MintFunctional.linear.0.forward", "Mint.linear.0.forward", "Functional.dense.0.forward"):
        (y,), _ = run(key, x, w, b, framework="mindspore")
        np.testing.assert_allclose(y, want, rtol=1e-12)
    (y,), _ = run("Mint.matmul.0.forward", x, w.T, framework="mindspore")
    np.testing.assert_allclose(y, np.array(want) - b, rtol=1e-12)


def test_scalars_and_alpha():
    x = np.array([1.0, -2.0, 4.0])
    assert run("Tensor.__mul__.0.forward", x, 3)[0][0].tolist() == [3.0, -6.0, 12.0]
    assert run("Torch.add.0.forward", x, 1.0, alpha=2)[0][0].tolist() == [3.0, 0.0, 6.0]
    assert run("Tensor.__rsub__.0.forward", x, 1)[0][0].tolist() == [0.0, 3.0, -3.0]
    assert run("Tensor.__rtruediv__.0.forward", x, 8)[0][0].tolist() == [8.0, -4.0, 2.0]
    assert run("Torch.div.0.forward", x, 3.0, rounding_mode="trunc")[0][0].tolist() == [0.0, -0.0, 1.0]
    assert run("Primitive.add.Add.0.forward", x, x, framework="mindspore")[0][0].tolist() == [2.0, -4.0, 8.0]


# --- the dtype the call ran in ----------------------------------------------------------------


def test_inputs_are_rounded_to_the_dtype_the_call_ran_in():
    x = np.array([[1 + 2**-13, 3.0]], dtype=np.float32)  # not a float16 value
    w = np.array([[1.0, 0.0]], dtype=np.float32)
    (y,), notes = run("Functional.linear.0.forward", x, w, dtype="float16")
    assert y.tolist() == [[1.0]] and notes == ["inputs rounded to float16, the dtype the call ran in"]
    (y,), notes = run("Functional.linear.0.forward", x, w, dtype="float32")
    assert y.tolist() == [[1 + 2**-13]] and notes == []
    bf = x.astype(ml_dtypes.bfloat16)
    (_, notes) = run("Functional.linear.0.forward", bf, w.astype(ml_dtypes.bfloat16), dtype="float32")
    assert notes == []  # coarser inputs are not widened into anything


# --- finding and binding ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "key,framework",
    [
        ("Functional.linear.0.backward", "pytorch"),
        ("Module.fc.Linear.forward.0", "pytorch"),
        ("Functional.batch_norm.0.forward", "pytorch"),
        ("Aten.mm.default.0.forward", "pytorch"),
        ("Mint.linear.0.forward", "pytorch"),
        ("NPU.npu_rms_norm.0.forward", "mindspore"),
        ("Primitive.matmul.MatMul.0.forward", "mindspore"),  # its transpose flags are not dumped
    ],
)
def test_calls_without_a_replay(key, framework):
    assert find_api(parse_key(key), framework) is None


def test_functional_conv2d_of_each_framework():
    torch_conv = find_api(parse_key("Functional.conv2d.0.forward"), "pytorch")
    ms_conv = find_api(parse_key("Functional.conv2d.0.forward"), "mindspore")
    assert torch_conv.params[4] == "padding" and ms_conv.params[4] == "pad_mode"


def test_binding_takes_both_frameworks_keywords_and_drops_the_rest():
    api = find_api(parse_key("Functional.softmax.0.forward"), "pytorch")
    assert bind(api, [1], {"axis": 0, "inplace": True, "_stacklevel": 5}) == {"input": 1, "dim": 0}
    with pytest.raises(ReplayError, match="positional"):
        bind(api, [1, 2, 3], {})


@pytest.mark.parametrize(
    "key,args,kwargs,match",
    [
        ("Torch.matmul.0.forward", (np.ones((2, 3)), np.ones((2, 3))), {}, "do not multiply"),
        ("Functional.conv2d.0.forward", (np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2))), {"padding": "full"}, "padding"),
        ("Functional.gelu.0.forward", (np.ones(3),), {"approximate": "sigmoid"}, "approximate"),
        ("Torch.div.0.forward", (np.ones(3), 2.0), {"rounding_mode": "round"}, "rounding_mode"),
        ("Functional.linear.0.forward", (np.ones((2, 3)),), {}, "weight is absent"),
        ("Functional.layer_norm.0.forward", (np.ones((2, 3)),), {}, "normalized_shape is absent"),
        ("Torch.add.0.forward", (np.ones((2, 3)), np.ones((4,))), {}, "cannot use these arguments"),
    ],
)
def test_arguments_the_api_does_not_accept_are_a_reason(key, args, kwargs, match):
    with pytest.raises(ReplayError, match=match):
        run(key, *args, **kwargs)


def test_inputs_too_large_are_not_replayed(monkeypatch):
    monkeypatch.setattr(torch_api, "MAX_REPLAY_ELEMENTS", 10)
    with pytest.raises(ReplayError, match="too large"):
        run("Functional.relu.0.forward", np.ones(11))


# --- msprobe's public dump.json files -----------------------------------------------------------


def _raw_argument(value, seed):
    """An argument from a raw dump.json leaf, read here with json alone: a tensor as random
    values of its recorded shape, a value as itself (the batch of a conv's input cut to 1)."""
    if isinstance(value, dict) and "shape" in value:
        return rng(seed).standard_normal(value["shape"])
    if isinstance(value, dict) and "value" in value:
        return value["value"]
    if isinstance(value, list):
        return [_raw_argument(item, seed + i) for i, item in enumerate(value)]
    return value


REAL = [
    ("quick_start/step0/proc2016/dump.json", "Functional.conv2d.0.forward"),
    ("quick_start/step0/proc2016/dump.json", "Functional.relu.0.forward"),
    ("pt_mix/dump.json", "NPU.npu_rms_norm.0.forward"),
    ("pt_mix/dump.json", "Tensor.__add__.0.forward"),
    ("ms_mix/dump.json", "Primitive.norm.RmsNorm.0.forward"),
    ("ms_mix/dump.json", "Tensor.__add__.0.forward"),
    ("docs/pt_L1_tensor.json", "Functional.relu.0.forward"),
    ("docs/ms_L1_tensor.json", "Functional.relu.0.forward"),
]


@pytest.mark.parametrize("file,key", REAL)
def test_real_calls_replay_to_their_recorded_output_shapes(file, key):
    doc = json.loads((DATA / "msprobe" / file).read_text())
    entry = doc["data"][key]
    args = _raw_argument(entry.get("input_args", []), 0)
    kwargs = {k: _raw_argument(v, 7) for k, v in entry.get("input_kwargs", {}).items()}
    shapes = [o["shape"] for o in entry["output"] if isinstance(o, dict) and "shape" in o]
    if key.startswith("Functional.conv2d"):  # 32 images of 224 x 224 would take long: one is enough
        args[0], shapes = args[0][:1], [[1, *shapes[0][1:]]]
    outputs, _ = run(key, *args, framework=doc["framework"], **kwargs)
    assert [list(o.shape) for o in outputs] == shapes


def test_the_real_files_hold_the_replayable_calls_counted_from_their_text():
    """Every forward API call of the public files whose name has a replay here, counted with
    json alone: conv2d and relu (quick_start), npu_rms_norm and two __add__ (pt_mix),
    RmsNorm and two __add__ (ms_mix), relu in each L1 example."""
    counts = {}
    for file in (
        "quick_start/step0/proc2016/dump.json",
        "pt_mix/dump.json",
        "ms_mix/dump.json",
        "docs/pt_L1_tensor.json",
        "docs/ms_L1_tensor.json",
    ):
        doc = json.loads((DATA / "msprobe" / file).read_text())
        counts[file] = sum(find_api(parse_key(k), doc["framework"]) is not None for k in doc["data"])
    assert counts == {
        "quick_start/step0/proc2016/dump.json": 2,
        "pt_mix/dump.json": 3,
        "ms_mix/dump.json": 3,
        "docs/pt_L1_tensor.json": 1,
        "docs/ms_L1_tensor.json": 1,
    }
