"""``vcs``: the summary of a result CSV (ours or msaccucmp's), and the first op that introduces."""

from __future__ import annotations

import io
import json
import re
import shutil

from rich.text import Text

from precision_tool.commands import vcs
from precision_tool.compare.divergence import analyse
from precision_tool.compare.result import CompareRow
from precision_tool.compare.result_csv import write_result_csv
from precision_tool.compare.result_read import read_result_csv
from precision_tool.render.palette import swatch
from precision_tool.render.summary import render_summary
from precision_tool.render.theme import make_console
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command

FIRST_ADD = "first operator that introduces the error: model/add/add (Add), cosine 1.000000 -> 0.505089"
OLD_HEADER = (
    "Index,LeftOp,RightOp,TensorIndex,CosineSimilarity,MaxAbsoluteError,"
    "AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,"
    "StandardDeviation,MeanAbsoluteError,RootMeanSquareError,MaxRelativeError,"
    "MeanRelativeError,CompareFailReason"
)


def rows(*ops: tuple[int, str, str, list[float], list[float]]) -> list[CompareRow]:
    """CompareRows of ops given as (index, name, type, input cosines, output cosines)."""
    out = []
    for index, name, op_type, inputs, outputs in ops:
        for kind, cosines in (("input", inputs), ("output", outputs)):
            for slot, cos in enumerate(cosines):
                out.append(
                    CompareRow(
                        index,
                        op_type,
                        name,
                        "float16",
                        None,
                        f"tf/{name}",
                        "float32",
                        f"{name}:{kind}:{slot}",
                        (4,),
                        {} if cos is None else {"CosineSimilarity": cos},
                    )
                )
    return out


def result_dir(root, stamp: str):
    return root / "temp" / "vector_compare" / stamp


def vcs_text(context_root, line: str):
    context, out = make_context(context_root)
    status = run_command(context, line)
    return status, out.getvalue()


def test_reference_csv_names_add_and_marks_the_rest_as_inheriting(data_root, reference):
    status, text = vcs_text(data_root, f"vcs -f {reference} -l 0")
    assert status == ExitStatus.FLAGGED
    assert FIRST_ADD in text
    assert "flagged: 8 of 13 ops (output cosine <= 0.98," in text
    assert re.search(r"1\. \[Add\] model/add/add\s+index 14\s+▲ introduces the error", text)
    for name in ("model/relu2/Relu", "model/pool/Mean", "model/dense/MatMul", "model/softmax/Softmax"):
        assert re.search(rf"\] {re.escape(name)}\s+index \d+\s+● inherits an upstream error", text), name
    assert text.count("introduces the error\n") + text.count("introduces the error ") >= 1
    assert text.count("inherits an upstream error") == 7
    assert "right (GroundTruth): model/dense/MatMul,model/dense/BiasAdd" in text
    assert "inputs:  0: 0.823154  1: 1.000000  2: 1.000000" in text
    assert "outputs: 0: 0.871903" in text
    # execution order
    assert text.index("model/add/add") < text.index("model/relu2/Relu") < text.index("model/softmax/Softmax")
    expected = json.loads((reference.parent / "case.json").read_text())["expected_first_anomalous_op"]
    assert f"introduces the error: {expected} (" in text


def test_default_limit_is_three_and_l_changes_it(data_root, reference):
    _, text = vcs_text(data_root, f"vcs -f {reference}")
    assert text.count("inherits an upstream error") == 2
    assert "... 5 more flagged op(s); -l 0 lists them all" in text
    assert "model/pool/Mean  index" not in text
    assert FIRST_ADD in text and "flagged: 8 of 13" in text
    _, text = vcs_text(data_root, f"vcs -f {reference} -l 1")
    assert "1. [Add]" in text and "2. [" not in text and "7 more flagged" in text
    context, out = make_context(data_root, VCS_LIMIT=5)
    run_command(context, f"vcs -f {reference}")
    assert "5. [" in out.getvalue() and "6. [" not in out.getvalue()


def test_c_sets_the_threshold(data_root, reference):
    status, text = vcs_text(data_root, f"vcs -f {reference} -c 0.6 -l 0")
    assert status == ExitStatus.FLAGGED
    assert "flagged: 1 of 13 ops (output cosine <= 0.6," in text and FIRST_ADD in text
    assert not re.search(r"\] model/relu2/Relu\s+index", text)  # not flagged at 0.6 ...
    assert "op(s) beyond rounding but not flagged: model/relu2/Relu" in text  # ... but far from rounding
    status, text = vcs_text(data_root, f"vcs -f {reference} -c 0.5")
    assert status == ExitStatus.OK
    assert "no op is flagged (output cosine <= 0.5" in text and "flagged: 0 of 13" in text
    assert "first operator" not in text
    status, text = vcs_text(data_root, f"vcs -f {reference} -c 0.8 -l 0")
    assert "flagged: 5 of 13" in text  # Mean, trans_TransData_3 (0.823) and Softmax (0.872) pass


def _ansi(style: str) -> str:
    """The escape codes the console writes before a text in ``style``."""
    buffer = io.StringIO()
    make_console(file=buffer, width=120, force_terminal=True).print(Text("X", style=style), end="")
    return buffer.getvalue().split("X")[0]


def test_cosines_are_coloured_by_their_state(reference):
    """A diverging tensor in the introducer's colour, one within rounding in the clean colour,
    one not compared in grey: the palette's, whatever the threshold."""
    buffer = io.StringIO()
    console = make_console(file=buffer, width=120, force_terminal=True)
    divergence = analyse(read_result_csv(reference) + rows((30, "z", "Relu", [None], [0.1, None])), 0.98)
    console.print(render_summary("r.csv", divergence, 0))
    text = buffer.getvalue()
    bad, clean, grey = (_ansi(swatch(s).style) for s in ("introduces", "clean", "not compared"))
    assert len({bad, clean, grey}) == 3
    outputs = next(line for line in text.splitlines() if "outputs:" in line and "0.505089" in line)
    assert f"{bad}0.505089" in outputs
    inputs = next(line for line in text.splitlines() if "inputs:" in line and "2: " in line)
    assert f"{bad}0.823154" in inputs and f"{clean}1.000000" in inputs
    z_inputs = [line for line in text.splitlines() if "inputs:" in line][-1]
    assert f"{grey}NaN" in z_inputs
    assert f"{bad}0.100000" in text and text.count(f"{grey}NaN") == 2


def test_header_variants(data_root):
    body = rows((1, "a", "Conv2D", [1.0], [0.99]), (2, "b", "Add", [0.99, 1.0], [0.2]), (3, "c", "Relu", [0.2], [0.3]))
    variants = {
        "plain": {},
        "overflow": {"overflow": True},
        "all": {"overflow": True, "op_sequence": True, "golden_address": True},
    }
    for name, flags in variants.items():
        path = write_result_csv(data_root / f"{name}.csv", body, **flags)
        if flags.get("overflow"):
            assert "OverFlow" in path.read_text().splitlines()[0]
        status, text = vcs_text(data_root, f"vcs -f {path}")
        assert status == ExitStatus.FLAGGED, name
        assert "first operator that introduces the error: b (Add), cosine 0.990000 -> 0.200000" in text
        assert re.search(r"\] c\s+index 3\s+● inherits", text)


def test_older_leftop_rightop_header(data_root):
    nums = ",0.1,0.1,0.1,0.1,(0.1;0.2),0.1,0.1,0.1,0.1,"
    lines = [
        OLD_HEADER,
        "1,m/conv,m/conv,m/conv:input:0,1.000000" + nums,
        "1,m/conv,m/conv,m/conv:output:0,0.400000" + nums,
        "2,m/relu,m/relu,m/relu:input:0,0.400000" + nums,
        "2,m/relu,m/relu,m/relu:output:0,0.500000" + nums,
    ]
    path = data_root / "old.csv"
    path.write_text("\n".join(lines) + "\n")
    status, text = vcs_text(data_root, f"vcs -f {path}")
    assert status == ExitStatus.FLAGGED
    assert "first operator that introduces the error: m/conv (?), cosine 1.000000 -> 0.400000" in text
    assert "right (GroundTruth): m/relu" in text and "flagged: 2 of 2" in text


def test_default_source_is_the_newest_result_dir(data_root):
    write_result_csv(
        result_dir(data_root, "20240101000000") / "result_20240101000000.csv", rows((1, "old/op", "Add", [1.0], [0.1]))
    )
    write_result_csv(
        result_dir(data_root, "20240301000000") / "result_20240301000000.csv", rows((1, "new/op", "Mul", [1.0], [0.2]))
    )
    result_dir(data_root, "20240401000000").mkdir()  # newer, but no CSV in it
    status, text = vcs_text(data_root, "vcs")
    assert status == ExitStatus.FLAGGED
    assert "new/op (Mul)" in text and "old/op" not in text
    assert "20240301000000" in text and "result_20240301000000.csv" in text


def test_every_csv_of_a_dir_is_summarised_under_its_name(data_root):
    directory = result_dir(data_root, "20240101000000")
    write_result_csv(directory / "result_a.csv", rows((1, "g1/op", "Add", [1.0], [0.99])))
    write_result_csv(directory / "result_b.csv", rows((1, "g2/op", "Mul", [1.0], [0.5])))
    status, text = vcs_text(data_root, "vcs")
    assert status == ExitStatus.FLAGGED
    assert text.index("result_a.csv") < text.index("no op is flagged") < text.index("result_b.csv")
    assert "g2/op (Mul)" in text
    for arg in (str(directory), "temp/vector_compare/20240101000000", "temp/vector_compare"):
        _, again = vcs_text(data_root, f"vcs -f {arg}")
        assert "result_a.csv" in again and "g2/op (Mul)" in again, arg


def test_nothing_flagged_is_status_ok(data_root):
    write_result_csv(result_dir(data_root, "20240101000000") / "r.csv", rows((1, "a", "Add", [1.0], [0.999, None])))
    status, text = vcs_text(data_root, "vcs")
    assert status == ExitStatus.OK
    assert "no op is flagged (output cosine <= 0.98" in text
    assert "flagged: 0 of 1 ops" in text


def test_nan_outputs_are_shown_not_flagged(data_root):
    path = write_result_csv(
        data_root / "r.csv", rows((1, "a", "Add", [1.0], [None]), (2, "b", "Add", [None], [0.3, None]))
    )
    status, text = vcs_text(data_root, f"vcs -f {path}")
    assert status == ExitStatus.FLAGGED
    assert "outputs: 0: 0.300000  1: NaN" in text and "inputs:  0: NaN" in text
    assert "1 op(s) with a NaN output cosine, not judged: a" in text
    assert "first operator that introduces the error: b (Add), cosine 1.000000 -> 0.300000" in text


def test_no_result_is_one_line_and_status_2(data_root):
    context, out = make_context(data_root, width=400)
    status, text = run_command(context, "vcs"), out.getvalue()
    assert status == ExitStatus.ERROR
    assert "no comparison result under" in text and "run 'vc'" in text
    assert len(text.strip().splitlines()) == 1
    status, text = vcs_text(data_root, "vcs -f nowhere.csv")
    assert status == ExitStatus.ERROR and "no such result file" in text
    (data_root / "empty_dir").mkdir()
    status, text = vcs_text(data_root, f"vcs -f {data_root / 'empty_dir'}")
    assert status == ExitStatus.ERROR and "no result CSV" in text


def test_a_csv_that_is_not_a_result_is_one_line(data_root):
    directory = result_dir(data_root, "20240101000000")
    directory.mkdir(parents=True)
    (directory / "a_bad.csv").write_text("x,y\n1,2\n")
    write_result_csv(directory / "b_good.csv", rows((1, "g/op", "Add", [1.0], [0.5])))
    status, text = vcs_text(data_root, "vcs")
    assert status == ExitStatus.ERROR  # the worst part wins, the good CSV is still summarised
    assert "not a comparison result" in text and "g/op (Add)" in text


def test_bad_flags_are_usage_errors(data_root, reference):
    for line in (
        f"vcs -f {reference} -c abc",
        f"vcs -f {reference} -c 1.5",
        f"vcs -f {reference} -c nan",
        f"vcs -f {reference} -l -1",
    ):
        status, text = vcs_text(data_root, line)
        assert status == ExitStatus.ERROR and "usage: vcs" in text, line


def test_reads_the_fixture_reference_through_a_copied_result_dir(fixture_data, reference):
    target = result_dir(fixture_data, "20240612103000")
    target.mkdir(parents=True)
    shutil.copy(reference, target / "result_20240612103000.csv")
    status, text = vcs_text(fixture_data, "vcs -l 0")
    assert status == ExitStatus.FLAGGED and FIRST_ADD in text


def test_the_command_is_registered_with_help():
    assert vcs.COMMAND.name == "vcs"
    usage = vcs.COMMAND.parser().format_help()
    assert "-f FILE|DIR" in usage and "-c COS" in usage and "-l LIMIT" in usage


def test_one_unreadable_csv_is_the_one_error_line_on_the_error_console(data_root):
    bad = data_root / "bad.csv"
    bad.write_text("Index,NPUDump,TensorIndex\n1,a,a:output:0\n")  # no CosineSimilarity
    context, out = make_context(data_root, width=30)
    errors = io.StringIO()
    context.error_console = make_console(file=errors, width=30)
    assert run_command(context, f"vcs -f {bad}") == ExitStatus.ERROR
    assert out.getvalue() == ""
    (line,) = errors.getvalue().splitlines()  # one line, however narrow the console
    assert line.startswith("error: ") and str(bad) in line and "no CosineSimilarity column" in line
