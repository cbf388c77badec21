"""The msprobe dump tree: a root, a step or a rank directory; rank, proc and bare rank names;
MindSpore's graph/pynative trees; the header of each rank's dump.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.msprobe_json import HEADER_BYTES, read_header
from precision_tool.formats.msprobe_tree import find_tree

DATA = Path(__file__).resolve().parents[1] / "data" / "msprobe"
QUICK = DATA / "quick_start" / "step0" / "proc2016"


def rank_copy(where: Path, source: Path = QUICK) -> Path:
    shutil.copytree(source, where)
    return where


@pytest.fixture
def dump_root(tmp_path) -> Path:
    """Two steps of four ranks, one proc and a rank without dump.json; a stray file and dir."""
    root = tmp_path / "dump"
    for step in ("step0", "step10", "step2"):
        for rank in ("rank1", "rank0", "proc2016", "rank12"):
            rank_copy(root / step / rank)
    (root / "step2" / "rank3").mkdir()
    (root / "notes.txt").write_text("x")
    (root / "step2" / "other").mkdir()
    return root


def test_a_dump_root(dump_root):
    tree = find_tree(dump_root)
    assert tree.kind == "root" and tree.given == dump_root
    assert tree.steps == (0, 2, 10)
    assert [(r.step, r.name) for r in tree.at_step(2)] == [(2, "rank0"), (2, "rank1"), (2, "rank12"), (2, "proc2016")]
    assert [(r.rank, r.pid) for r in tree.at_step(0)] == [(0, None), (1, None), (12, None), (None, 2016)]
    assert len(tree.ranks) == 12
    assert tree.problems == (f"{dump_root / 'step2' / 'rank3'}: no dump.json (level L2 writes none): left out",)
    rank = tree.ranks[0]
    assert rank.dump_json == dump_root / "step0" / "rank0" / "dump.json"
    assert rank.stack_json.name == "stack.json" and rank.construct_json.name == "construct.json"
    assert rank.tensor_dir == rank.path / "dump_tensor_data"


def test_a_step_directory(dump_root):
    tree = find_tree(dump_root / "step10")
    assert tree.kind == "step" and tree.steps == (10,)
    assert [r.name for r in tree.ranks] == ["rank0", "rank1", "rank12", "proc2016"]


def test_a_rank_directory(dump_root):
    tree = find_tree(dump_root / "step2" / "proc2016")
    assert tree.kind == "rank"
    (rank,) = tree.ranks
    assert (rank.step, rank.rank, rank.pid, rank.mode) == (2, None, 2016, None)


def test_a_dump_json_stands_for_its_rank_directory(dump_root):
    tree = find_tree(dump_root / "step0" / "rank1" / "dump.json")
    assert tree.kind == "rank" and tree.given == dump_root / "step0" / "rank1"
    assert [(r.step, r.rank) for r in tree.ranks] == [(0, 1)]


def test_a_lone_rank_directory_of_any_name(tmp_path):
    tree = find_tree(rank_copy(tmp_path / "copied"))
    (rank,) = tree.ranks
    assert tree.kind == "rank" and (rank.step, rank.rank, rank.pid) == (None, None, None)
    assert tree.steps == () and tree.at_step(None) == tree.ranks


def test_a_bare_rank_of_a_single_device_run(tmp_path):
    rank_copy(tmp_path / "step0" / "rank")
    (rank,) = find_tree(tmp_path).ranks
    assert (rank.name, rank.rank, rank.pid, rank.step) == ("rank", None, None, 0)


def test_mindspore_graph_and_pynative_trees(tmp_path):
    for mode in ("graph", "pynative"):
        rank_copy(tmp_path / mode / "step0" / "rank0", DATA / "ms_mix")
    tree = find_tree(tmp_path)
    assert tree.kind == "root"
    assert [(r.mode, r.step, r.rank) for r in tree.ranks] == [("graph", 0, 0), ("pynative", 0, 0)]
    assert find_tree(tmp_path / "pynative" / "step0").ranks[0].mode == "pynative"
    assert find_tree(tmp_path / "graph" / "step0" / "rank0").ranks[0].mode == "graph"
    assert find_tree(tmp_path / "graph").ranks[0].mode == "graph"


def test_headers_of_each_rank(dump_root):
    tree = find_tree(dump_root)
    header = tree.ranks[0].header()
    assert (header.task, header.level, header.framework, header.dump_data_dir) == ("statistics", "mix", "pytorch", None)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("ms_mix/dump.json", ("statistics", "mix", "mindspore")),
        ("docs/pt_L0_tensor.json", ("tensor", "L0", "pytorch")),
        ("docs/ms_L1_tensor.json", ("tensor", "L1", "mindspore")),
        ("odd/framework_after_data.json", ("statistics", "mix", "pytorch")),
        ("odd/no_framework.json", ("statistics", "mix", None)),
    ],
)
def test_read_header_of_real_files(name, expected):
    raw = json.loads((DATA / name).read_text())
    header = read_header(DATA / name)
    assert (header.task, header.level, header.framework) == expected
    assert (raw["task"], raw["level"], raw.get("framework")) == expected


def test_the_header_of_a_large_file_comes_from_its_ends(tmp_path):
    data = {f"Torch.op.{i}.forward": {"output": [{"type": "int", "value": i}]} for i in range(20000)}
    text = json.dumps(
        {"task": "tensor", "level": "L1", "dump_data_dir": "/x", "data": data, "framework": "mindspore"}, indent=1
    )
    assert len(text) > 4 * HEADER_BYTES
    (tmp_path / "dump.json").write_text(text)
    header = read_header(tmp_path / "dump.json")
    assert (header.task, header.level, header.framework, header.dump_data_dir) == ("tensor", "L1", "mindspore", "/x")


def test_the_header_of_a_cut_file(tmp_path):
    text = (QUICK / "dump.json").read_text()
    (tmp_path / "dump.json").write_text(text[:300])
    assert read_header(tmp_path / "dump.json").framework == "pytorch"


@pytest.mark.parametrize(
    "content, message",
    [
        (b"[]", "not an msprobe dump.json: the top level is an array, not an object"),
        (b"\xff", "dump.json is not UTF-8 text (byte 0)"),
    ],
)
def test_a_bad_header_is_one_line(tmp_path, content, message):
    (tmp_path / "dump.json").write_bytes(content)
    with pytest.raises(PrecisionToolError) as caught:
        read_header(tmp_path / "dump.json")
    assert str(caught.value) == f"{tmp_path / 'dump.json'}: {message}"


def test_not_a_dump_is_one_line(tmp_path):
    (tmp_path / "something").mkdir()
    with pytest.raises(PrecisionToolError) as caught:
        find_tree(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path}: no msprobe dump here: expected step*/ directories "
        "(a dump root), rank*/ or proc*/ directories (a step), or a "
        "dump.json (a rank)"
    )
    with pytest.raises(PrecisionToolError, match="dump directory does not exist"):
        find_tree(tmp_path / "missing")


def test_a_step_without_any_rank_says_so(tmp_path):
    (tmp_path / "step0" / "rank0").mkdir(parents=True)
    tree = find_tree(tmp_path)
    assert tree.ranks == ()
    assert tree.problems[-1] == f"{tmp_path / 'step0'}: no rank directory with a dump.json"
