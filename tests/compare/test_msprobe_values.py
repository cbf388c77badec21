"""msprobe's description of a call's non-tensor arguments (compare/msprobe_values.py).

The common kinds (None, int, float, bool, str, torch.Size, slice) are checked end to end against
the CSV msprobe itself wrote (tests/commands/test_vc_msprobe.py, tests/data/msprobe_args). The
kinds here have no such file: their expected cells are spelt out from msprobe 26.2.0's reader
(``gen_op_item`` in msprobe/core/compare/utils.py), with the checksum computed here with zlib."""

from __future__ import annotations

import zlib

import pytest

from precision_tool.compare.msprobe_values import listed, msprobe_order, value_side
from precision_tool.formats.msprobe_leaves import Value, flatten


def _leaf(raw, path=("input_args", 1)):
    out: list = []
    flatten(raw, path, out)
    (leaf,) = out
    return leaf


def _crc(text: str) -> str:
    return f"{zlib.crc32(text.encode()):08x}"


@pytest.mark.parametrize(
    ("raw", "name", "expected"),
    [
        (None, "K.input.1", (None, "N/A", None, None)),
        ({"type": "int", "value": 7}, "K.input.1", ("<class 'int'>", "[]", 7, _crc("7"))),
        (
            {"type": "torch.dtype", "value": "torch.float16"},
            "K.input.1",
            ("<class 'str'>", "[]", "torch.float16", _crc("torch.float16")),
        ),
        ({"type": "torch.Size", "value": [2, 3]}, "K.input.1", ("torch.Size", "[2, 3]", None, _crc("[2, 3]"))),
        ({"type": "slice", "value": [None, 4, 2]}, "K.input.1", ("slice", "(3,)", None, _crc("[None, 4, 2]"))),
        ({"type": "ellipsis", "value": "..."}, "K.input.1", ("ellipsis", "[]", "...", _crc("..."))),
        ({"type": "int", "value": 3}, "K.input.dst", ("int", "[]", "3", "3")),
        (
            {"type": "torch.ProcessGroup", "group_ranks": [0, 1], "group_id": 5},
            "K.input.group",
            ("torch.ProcessGroup", "[]", "[0, 1]", "[0, 1]"),
        ),
        ({"type": "int", "value": [1, 2]}, "K.input.1", ("<class 'list'>", "[]", [1, 2], _crc("[1, 2]"))),
    ],
)
def test_a_value_is_described_as_msprobes_reader_does(raw, name, expected):
    side = value_side(_leaf(raw), name)
    assert (side.dtype, side.shape, side.max, side.md5) == expected
    assert side.min == side.mean == side.norm == side.max  # the value as each statistic
    assert side.requires_grad is None


def test_empty_lists_and_dicts_have_no_line_and_parameters_come_before_outputs():
    leaves: list = []
    for section, raw in [
        ("input_args", [{"type": "int", "value": 1}, []]),
        ("output", [{"type": "float", "value": 2.0}]),
        ("parameters", {"weight": {"type": "int", "value": 3}}),
        ("input_kwargs", {"flag": {"type": "bool", "value": True}, "extra": {}}),
    ]:
        flatten(raw, (section,), leaves)
    shown = [leaf.name for leaf in msprobe_order(leaves) if listed(leaf)]
    assert shown == ["input_args.0", "input_kwargs.flag", "parameters.weight", "output.0"]
    assert not listed(Value(("input_args", 1), "list", ()))
