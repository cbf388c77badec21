"""The data-root layout and its survey (the banner's facts)."""

from __future__ import annotations

import shutil

import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.data_survey import survey
from precision_tool.formats.datadir import DataRoot
from precision_tool.render.survey import render_survey
from precision_tool.render.theme import make_console


def test_survey_of_the_sample(sample_data):
    found = survey(sample_data)
    assert [d.name for d in found.debug] == ["debug_0", "debug_1"]
    debug, second = found.debug
    assert [p.name for p in debug.graph_files] == ["ge_proto_00000001_Build.txt"]
    assert (debug.runs, debug.newest_run, debug.step_dirs, debug.dump_files) == (
        ["20261129120000"],
        "20261129120000",
        1,
        15,
    )
    assert (second.runs, second.dump_files, len(second.graph_files)) == ([], 0, 1)  # a graph only
    assert (found.golden_tensors, found.golden_invalid, found.problems) == (25, 0, [])


def test_survey_counts_invalid_golden_names_and_second_debug_dir(sample_data):
    (sample_data / "tf/dump/bad name!.0.1.npy").write_bytes(b"")
    shutil.copytree(sample_data / "npu/debug_0", sample_data / "npu/debug_2")
    found = survey(sample_data)
    assert [d.name for d in found.debug] == ["debug_0", "debug_1", "debug_2"]
    assert found.golden_invalid == 1


def test_missing_root_is_an_error(tmp_path):
    with pytest.raises(PrecisionToolError, match="no such data root"):
        survey(tmp_path / "nowhere")


def test_empty_root_surveys_to_nothing(tmp_path):
    found = survey(tmp_path)
    assert found.debug == [] and found.golden_tensors == 0


def test_banner_names_version_root_and_sources(sample_data):
    console = make_console(file=__import__("io").StringIO(), width=150)
    console.print(render_survey(survey(sample_data), "9.9"))
    text = console.file.getvalue()
    assert "PrecisionTool 9.9" in text and str(sample_data) in text
    assert "15 dump files" in text and "25 golden tensors" in text


def test_layout_paths():
    root = DataRoot(__import__("pathlib").Path("/d"))
    assert str(root.dump_root("debug_1")) == "/d/npu/debug_1/dump"
    assert str(root.golden_dir) == "/d/tf/dump" and str(root.temp) == "/d/temp"


def test_survey_lists_every_build_name_form_and_reports_a_bad_one(sample_data):
    graph_dir = sample_data / "npu" / "debug_1" / "graph"
    (graph_dir / "ge_proto_00000001_Build.txt").rename(graph_dir / "ge_proto_00000001_graph_7_Build.txt")
    (graph_dir / "ge_onnx_00000000_graph_8_Build.pbtxt").write_text("")
    (graph_dir / "ge_proto_00000002_graph_0_PreRunBegin.txt").write_text("")
    found = survey(sample_data)
    assert [p.name for p in found.debug[1].graph_files] == [
        "ge_onnx_00000000_graph_8_Build.pbtxt",
        "ge_proto_00000001_graph_7_Build.txt",
    ]
    assert not found.problems
    (graph_dir / "ge_proto_00000003_graph_z_Build.txt").write_text("")
    found = survey(sample_data)
    assert found.debug[1].graph_files == []
    assert len(found.problems) == 1 and "graph id 'z' in the file name is not a number" in found.problems[0]
    assert [p.name for p in found.debug[0].graph_files] == ["ge_proto_00000001_Build.txt"]


def test_survey_and_banner_name_a_user_named_graph(sample_data):
    graph_dir = sample_data / "npu" / "debug_1" / "graph"
    (graph_dir / "ge_proto_00000001_Build.txt").rename(graph_dir / "resnet50.txt")
    (graph_dir / "readme.txt").write_text("the graph of the second run\n")
    found = survey(sample_data)
    assert [p.name for p in found.debug[1].graph_files] == ["resnet50.txt"]
    assert [p.name for p in found.debug[0].graph_files] == ["ge_proto_00000001_Build.txt"]
    console = make_console(file=__import__("io").StringIO(), width=150)
    console.print(render_survey(found, "9.9"))
    assert "resnet50.txt" in console.file.getvalue()
