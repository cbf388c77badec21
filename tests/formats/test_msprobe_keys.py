"""msprobe call keys: APIs, modules, parameter gradients, the real keys, and round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precision_tool.formats.msprobe_keys import CallKey, parse_key

DATA = Path(__file__).resolve().parents[1] / "data" / "msprobe"
REAL_DUMPS = sorted(
    p
    for p in DATA.rglob("*.json")
    if "stack" not in p.name and "construct" not in p.name and p.parent.name != "odd" and p.name != "ms_md5_entry.json"
)


@pytest.mark.parametrize(
    "text, prefix, name, index, direction, path",
    [
        ("Functional.linear.0.forward", "Functional", "linear", 0, "forward", None),
        ("Tensor.__add__.3.backward", "Tensor", "__add__", 3, "backward", None),
        ("Primitive.norm.RmsNorm.0.forward", "Primitive", "norm.RmsNorm", 0, "forward", None),
        ("Jit.AlexNet.12.forward", "Jit", "AlexNet", 12, "forward", None),
        ("Functional.relu.forward", "Functional", "relu", None, "forward", None),
        ("Module.layers.0.attn.Attention.forward.0", "Module", "Attention", 0, "forward", "layers.0.attn"),
        ("Module.0.conv1.Conv2d.backward.7", "Module", "Conv2d", 7, "backward", "0.conv1"),
        ("Cell.conv1.Conv2d.forward.0", "Cell", "Conv2d", 0, "forward", "conv1"),
        ("Module..Net.forward.0", "Module", "Net", 0, "forward", ""),
        ("Module.conv2.Conv2d.parameters_grad.0", "Module", "Conv2d", 0, "parameters_grad", "conv2"),
        ("Module.conv2.Conv2d.parameters_grad", "Module", "Conv2d", None, "parameters_grad", "conv2"),
    ],
)
def test_the_grammar(text, prefix, name, index, direction, path):
    key = parse_key(text)
    assert (key.text, key.prefix, key.name, key.index, key.direction, key.module_path) == (
        text,
        prefix,
        name,
        index,
        direction,
        path,
    )
    assert key.is_module == (path is not None)


def test_module_and_api_names():
    assert parse_key("Module.layers.0.Linear.forward.3").module_name == "Module.layers.0.Linear"
    grads = parse_key("Module.layers.0.Linear.parameters_grad.1")
    assert grads.api_name == grads.module_name == "Module.layers.0.Linear"
    assert parse_key("Tensor.__add__.3.forward").api_name == "Tensor.__add__"
    assert parse_key("Tensor.__add__.3.forward").module_name is None


@pytest.mark.parametrize(
    "text", ["api", "Functional", "Functional.linear", "Module.x.Linear.0", "", "Tensor.add.x.forward.y"]
)
def test_keys_outside_the_grammar_have_no_direction(text):
    key = parse_key(text)
    assert key.direction is None and key.text == text


@pytest.mark.parametrize("path", REAL_DUMPS, ids=lambda p: str(p.relative_to(DATA)))
def test_every_real_key_rebuilds_from_its_parts(path):
    keys = list(json.loads(path.read_text())["data"])
    assert keys
    for text in keys:
        assert _rebuilt(parse_key(text)) == text


def _rebuilt(key: CallKey) -> str:
    count = "" if key.index is None else f".{key.index}"
    if key.direction == "parameters_grad":
        return f"{key.prefix}.{key.module_path}.{key.name}.parameters_grad{count}"
    if key.is_module:
        return f"{key.prefix}.{key.module_path}.{key.name}.{key.direction}{count}"
    return f"{key.prefix}.{key.name}{count}.{key.direction}"


WORD = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=8)
PART = WORD | st.integers(0, 99).map(str)


@given(
    st.sampled_from(["Functional", "Tensor", "Torch", "NPU", "Mint", "Primitive"]),
    st.lists(PART, min_size=1, max_size=3).map(".".join),
    st.integers(0, 10**6),
    st.sampled_from(["forward", "backward"]),
)
def test_api_keys_round_trip(prefix, name, index, direction):
    key = parse_key(f"{prefix}.{name}.{index}.{direction}")
    assert (key.prefix, key.name, key.index, key.direction, key.module_path) == (prefix, name, index, direction, None)


@given(
    st.sampled_from(["Module", "Cell"]),
    st.lists(PART, max_size=4).map(".".join),
    WORD,
    st.integers(0, 10**6),
    st.sampled_from(["forward", "backward", "parameters_grad"]),
)
def test_module_keys_round_trip(prefix, path, cls, index, direction):
    key = parse_key(f"{prefix}.{path}.{cls}.{direction}.{index}")
    assert (key.prefix, key.module_path, key.name, key.index, key.direction) == (prefix, path, cls, index, direction)
