"""``ac``: the summary of the newest result, ``-c`` comparing first, then the four checks."""

from __future__ import annotations

import shutil

import pytest

from precision_tool.commands import ac_autocheck
from precision_tool.commands.registry import CommandResult
from precision_tool.compare.result import CompareRow
from precision_tool.compare.result_csv import write_result_csv
from precision_tool.errors import PrecisionToolError
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command

FIRST = "first operator that introduces the error: "
CHECK_TITLES = ("overflow check", "fusion check", "cast check", "graph similarity")


def stamp_dir(root, stamp: str):
    return root / "temp" / "vector_compare" / stamp


def one_op(name: str, cosine: float) -> list[CompareRow]:
    return [
        CompareRow(
            1, "Mul", name, "float16", None, name, "float32", f"{name}:{kind}:0", (4,), {"CosineSimilarity": cos}
        )
        for kind, cos in (("input", 1.0), ("output", cosine))
    ]


def ac_text(root, line: str, **settings):
    context, out = make_context(root, width=200, **settings)
    status = run_command(context, line)
    return status, out.getvalue()


def install_fake_vc(monkeypatch, run) -> None:
    """Make ``ac -c`` run ``run(args, context)`` as its vc."""
    monkeypatch.setattr(ac_autocheck.vc, "vector_compare", lambda context, **_: run(None, context))


def assert_checks_reported(text: str) -> None:
    """Every check said something, after the summary."""
    for title in CHECK_TITLES:
        assert title in text, title


def test_without_c_summarises_the_newest_result(data_root, reference):
    target = stamp_dir(data_root, "20240612103000")
    target.mkdir(parents=True)
    shutil.copy(reference, target / "result_20240612103000.csv")
    status, text = ac_text(data_root, "ac")
    assert status == ExitStatus.FLAGGED
    assert FIRST + "model/add/add (Add), cosine 1.000000 -> 0.505089" in text
    assert "flagged: 8 of 13 ops" in text and "... 5 more flagged op(s)" in text
    assert_checks_reported(text)
    assert text.index(FIRST) < text.index("overflow check")
    _, text = ac_text(data_root, "ac -l 0")
    assert "8. [SoftmaxV2] model/softmax/Softmax" in text and "more flagged" not in text
    _, text = ac_text(data_root, "ac", VCS_LIMIT=1)
    assert "1. [Add]" in text and "2. [" not in text


def test_without_c_nothing_flagged_is_ok(data_root):
    write_result_csv(stamp_dir(data_root, "20240101000000") / "r.csv", one_op("fine", 0.999))
    status, text = ac_text(data_root, "ac")
    assert status == ExitStatus.OK
    assert "no op is flagged (output cosine <= 0.98" in text
    assert_checks_reported(text)
    assert "data absent" in text  # an empty data root has nothing for the checks


def test_without_a_result_says_so_and_still_runs_the_checks(data_root):
    status, text = ac_text(data_root, "ac")
    assert status == ExitStatus.ERROR
    assert "no comparison result under" in text and "run 'vc'" in text
    assert_checks_reported(text)
    assert "overflow check: data absent: looked for Opdebug.Node_OpDebug.* files in" in text


def test_c_runs_vc_then_summarises_what_it_wrote(data_root, monkeypatch):
    write_result_csv(stamp_dir(data_root, "20990101000000") / "r.csv", one_op("newer/op", 0.1))
    calls = []

    def fake_run(args, context):
        calls.append(args)
        path = write_result_csv(
            stamp_dir(context.config.data_root_dir, "20240101000000") / "r.csv", one_op("written/op", 0.3)
        )
        return CommandResult(["vc: 2 tensors compared"], ExitStatus.FLAGGED, [path])

    install_fake_vc(monkeypatch, fake_run)
    status, text = ac_text(data_root, "ac -c -l 0")
    assert len(calls) == 1
    assert status == ExitStatus.FLAGGED
    assert text.index("vc: 2 tensors compared") < text.index(FIRST)
    assert FIRST + "written/op (Mul), cosine 1.000000 -> 0.300000" in text
    assert "newer/op" not in text
    assert_checks_reported(text)


def test_c_falls_back_to_the_newest_result_when_vc_names_no_file(data_root, monkeypatch):
    def fake_run(args, context):
        write_result_csv(stamp_dir(context.config.data_root_dir, "20240101000000") / "r.csv", one_op("fresh/op", 0.99))
        return CommandResult(["compared"])

    install_fake_vc(monkeypatch, fake_run)
    status, text = ac_text(data_root, "ac -c")
    assert status == ExitStatus.OK and "no op is flagged" in text


def test_c_when_vc_fails_reports_it_and_summarises_nothing(data_root, monkeypatch):
    write_result_csv(stamp_dir(data_root, "20240101000000") / "r.csv", one_op("old/op", 0.1))

    def fake_run(args, context):
        raise PrecisionToolError("no NPU dumps here", context.config.data_root_dir / "npu")

    install_fake_vc(monkeypatch, fake_run)
    status, text = ac_text(data_root, "ac -c")
    assert status == ExitStatus.ERROR
    assert "error: vc:" in text and "no NPU dumps here" in text
    assert "old/op" not in text  # no stale result after a failed comparison
    assert_checks_reported(text)


def test_bad_limit_is_a_usage_error(data_root):
    status, text = ac_text(data_root, "ac -l x")
    assert status == ExitStatus.ERROR and "usage: ac" in text


@pytest.mark.parametrize("which, expected", [("sample", "resnet/conv2/Conv2D"), ("fixture", "model/add/add")])
def test_c_end_to_end_names_the_planted_defect(which, expected, request):
    root = request.getfixturevalue("sample_data" if which == "sample" else "fixture_data")
    status, text = ac_text(root, "ac -c")
    assert status == ExitStatus.FLAGGED
    assert f"{FIRST}{expected} (" in text
    assert list((root / "temp" / "vector_compare").glob("*/*.csv"))
    assert_checks_reported(text)


def test_c_on_the_sample_shows_a_real_finding_in_every_panel(sample_data):
    status, text = ac_text(sample_data, "ac -c")
    assert status == ExitStatus.FLAGGED
    assert "AI Core status 0x120: floating-point overflow" in text
    assert "op: ReduceMeanD resnet/pool/Mean" in text
    assert "ConvBiasAddFusionPass" in text and "TbeConvReluFusionPass" in text
    assert "DT_INT64 -> DT_INT32" in text and "trans_Cast_5" in text
    assert "only in debug_1: resnet/softmax/Identity" in text and "FRACTAL_NZ -> ND" in text
    assert "data absent" not in text


def test_an_unreadable_check_input_is_one_line_and_the_others_run(sample_data):
    (sample_data / "npu/debug_1/graph/ge_proto_00000001_Build.txt").write_text("op { name: ")
    status, text = ac_text(sample_data, "ac")
    assert "graph similarity: error:" in text and "Traceback" not in text
    assert "floating-point overflow" in text and "DT_INT64 -> DT_INT32" in text
