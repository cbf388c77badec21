"""The recorder counts, orders and parents calls as msprobe's hooks do (checked against the
rules read from msprobe's module_processor.py and hook_manager.py, spelled out here)."""

from __future__ import annotations

import numpy as np

from precision_tool.formats.msprobe_write import construct_json, stack_json
from precision_tool.sample.msprobe_record import Recorder


def _run():
    rec = Recorder("Module", machinery=("M",), root=("R",))
    x = np.ones(2, np.float32)
    for _ in range(2):  # a module called twice: forward.0 and forward.1
        with rec.module("layers.0.act", "ReLU", [x], site="S-act") as act:
            rec.api("Functional", "relu", [x], x, site="S-relu")
            act.outputs = x
    with rec.module("block", "Block", [x], site="S-block") as block:
        with rec.module("block.fc", "Linear", [x], parameters={"weight": x}, site="S-fc") as fc:
            rec.api("Functional", "linear", [x, x], x, site="S-linear")
            fc.outputs = x
        block.outputs = rec.api("Tensor", "__add__", [x, x], x, site="S-add")
    return rec.calls


def test_keys_count_per_api_and_per_module_and_modules_follow_what_they_call():
    assert [c.key for c in _run()] == [
        "Functional.relu.0.forward",
        "Module.layers.0.act.ReLU.forward.0",
        "Functional.relu.1.forward",
        "Module.layers.0.act.ReLU.forward.1",
        "Functional.linear.0.forward",
        "Module.block.fc.Linear.forward.0",
        "Tensor.__add__.0.forward",
        "Module.block.Block.forward.0",
    ]


def test_parents_are_the_innermost_running_module():
    parents = {c.key: c.parent for c in _run()}
    assert parents["Functional.linear.0.forward"] == "Module.block.fc.Linear.forward.0"
    assert parents["Module.block.fc.Linear.forward.0"] == "Module.block.Block.forward.0"
    assert parents["Tensor.__add__.0.forward"] == "Module.block.Block.forward.0"
    assert parents["Module.block.Block.forward.0"] is None


def test_stacks_are_the_call_site_then_each_enclosing_module_then_the_root():
    calls = {c.key: c for c in _run()}
    assert calls["Functional.linear.0.forward"].stack == ["S-linear", "M", "S-fc", "M", "S-block", "R"]
    assert calls["Module.block.fc.Linear.forward.0"].stack == ["M", "S-fc", "M", "S-block", "R"]
    # grouped by equal stacks, in the order the calls started: Block before fc before linear
    assert [keys for keys, _frames in stack_json(list(calls.values())).values()] == [
        ["Module.layers.0.act.ReLU.forward.0", "Module.layers.0.act.ReLU.forward.1"],
        ["Functional.relu.0.forward", "Functional.relu.1.forward"],
        ["Module.block.Block.forward.0"],
        ["Module.block.fc.Linear.forward.0"],
        ["Functional.linear.0.forward"],
        ["Tensor.__add__.0.forward"],
    ]


def test_construct_lists_a_module_after_the_first_api_inside_it_returns():
    assert list(construct_json(_run(), "mix"))[4:] == [
        "Functional.linear.0.forward",
        "Module.block.Block.forward.0",
        "Module.block.fc.Linear.forward.0",
        "Tensor.__add__.0.forward",
    ]
