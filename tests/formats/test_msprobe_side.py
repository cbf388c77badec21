"""msprobe ``stack.json`` (both layouts) and ``construct.json`` (plain and Megatron), against
their raw JSON; cut and bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.msprobe_side import read_construct, read_stack

DATA = Path(__file__).resolve().parents[1] / "data" / "msprobe"
QUICK = DATA / "quick_start" / "step0" / "proc2016"


@pytest.mark.parametrize("rank", ["ms_mix", "pt_mix"])
def test_the_older_layout_is_one_member_per_call(rank):
    raw = json.loads((DATA / rank / "stack.json").read_text())
    assert all(isinstance(v, list) and all(isinstance(f, str) for f in v) for v in raw.values())
    stacks = read_stack(DATA / rank / "stack.json")
    assert stacks.frames == {key: tuple(frames) for key, frames in raw.items()}
    assert stacks.problems == ()


def test_the_current_layout_shares_one_stack_among_calls():
    raw = json.loads((QUICK / "stack.json").read_text())
    assert list(raw) == [str(i) for i in range(len(raw))]
    stacks = read_stack(QUICK / "stack.json")
    expected = {key: tuple(frames) for keys, frames in raw.values() for key in keys}
    assert stacks.frames == expected and stacks.problems == ()
    assert len(stacks.frames) == sum(len(keys) for keys, _ in raw.values())
    frame = stacks.frames["Functional.conv2d.0.forward"][1]
    assert frame.startswith("File ") and ", line 543, in _conv_forward, \n" in frame


def test_stacks_of_both_layouts_in_one_file_and_odd_members(tmp_path):
    path = tmp_path / "stack.json"
    path.write_text(
        json.dumps(
            {
                "0": [["A.x.0.forward", "B.y.0.forward"], ["File a, line 1"]],
                "C.z.0.forward": ["File c, line 3"],
                "Cell.d.D.forward.0": [],
                "bad": {"x": 1},
                "worse": [1, 2],
            }
        )
    )
    stacks = read_stack(path)
    assert stacks.frames == {
        "A.x.0.forward": ("File a, line 1",),
        "B.y.0.forward": ("File a, line 1",),
        "C.z.0.forward": ("File c, line 3",),
        "Cell.d.D.forward.0": (),
    }
    assert stacks.problems == (f"{path}: no stack, skipped: 2 entries (the first: 'bad')",)


def test_a_cut_stack_keeps_the_whole_members(tmp_path):
    text = (QUICK / "stack.json").read_text()
    path = tmp_path / "stack.json"
    second = text.index('\n "2": [')  # the members are at one space's indent
    path.write_text(text[: second + 20])
    stacks = read_stack(path)
    raw = json.loads(text)
    assert stacks.frames == {key: tuple(f) for keys, f in list(raw.values())[:2] for key in keys}
    assert stacks.problems == (f"{path}: cut short after 2 entries (the run probably crashed)",)


@pytest.mark.parametrize("rank", ["ms_mix", "pt_mix", "quick_start/step0/proc2016"])
def test_construct_parents_from_the_raw_json(rank):
    raw = json.loads((DATA / rank / "construct.json").read_text())
    construct = read_construct(DATA / rank / "construct.json")
    assert construct.parents == {node: parent or None for node, parent in raw.items()}
    assert construct.micro_steps == {} and construct.micro_step_count is None
    assert construct.problems == ()
    roots = [node for node, parent in raw.items() if parent in ("", None)]
    assert [n for n, p in construct.parents.items() if p is None] == roots


def test_megatron_construct_has_micro_steps(tmp_path):
    path = tmp_path / "construct.json"
    module = "Module.a.A.forward.0"
    path.write_text(
        json.dumps(
            {
                module: [None, 0],
                "Torch.x.0.forward": [module, 1],
                "optimizer": None,
                "Torch.y.0.forward": "optimizer",
                "megatron_micro_step_number": 2,
                "odd": 5,
            }
        )
    )
    construct = read_construct(path)
    assert construct.parents == {
        module: None,
        "Torch.x.0.forward": module,
        "optimizer": None,
        "Torch.y.0.forward": "optimizer",
    }
    assert construct.micro_steps == {module: 0, "Torch.x.0.forward": 1}
    assert construct.micro_step_count == 2
    assert construct.problems == (f"{path}: a parent that is no name, skipped: 1 node (the first: 'odd')",)


def test_an_empty_construct_of_level_l1(tmp_path):
    (tmp_path / "construct.json").write_text("{}")
    assert read_construct(tmp_path / "construct.json").parents == {}


@pytest.mark.parametrize("reader, name", [(read_stack, "stack.json"), (read_construct, "construct.json")])
@pytest.mark.parametrize(
    "content, message",
    [
        ("[1]", "not an msprobe {name}: the top level is an array, not an object"),
        ("nonsense", "not an msprobe {name}: not a JSON object (character 0 is 'n')"),
    ],
)
def test_bad_side_files_give_one_line(tmp_path, reader, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(PrecisionToolError) as caught:
        reader(path)
    assert str(caught.value) == f"{path}: " + message.format(name=name)


def test_missing_side_files(tmp_path):
    with pytest.raises(PrecisionToolError, match="stack.json not found"):
        read_stack(tmp_path / "stack.json")
    with pytest.raises(PrecisionToolError, match="construct.json not found"):
        read_construct(tmp_path / "construct.json")
