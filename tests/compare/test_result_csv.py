"""The result CSV: msaccucmp's exact text, every header variant, atomic streaming writes."""

from __future__ import annotations

import csv
import io
import math
from datetime import datetime

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool import PrecisionToolError
from precision_tool.compare.metric_data import Metric
from precision_tool.compare.metrics import METRICS, compare_arrays, select_metrics
from precision_tool.compare.result import CompareRow
from precision_tool.compare.result_csv import (
    ResultWriter,
    columns,
    format_shape,
    format_value,
    latest_result_dir,
    result_path,
    row_layout,
    write_result_csv,
)
from precision_tool.compare.result_read import parse_shape, read_result_csv

REFERENCE_HEADER = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,CosineSimilarity,"
    "MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,"
    "StandardDeviation,MeanAbsoluteError,RootMeanSquareError,MaxRelativeError,MeanRelativeError,"
    "CompareFailReason"
)
TAIL = ",".join(["0.9"] + ["0.1"] * 4 + ['"(0.1;0.2),(0.1;0.2)"'] + ["0.1"] * 4)


def _row(**changes) -> CompareRow:
    base = dict(
        index=5,
        op_type="Conv2D",
        npu_name="model/conv1/Conv2D",
        npu_dtype="float16",
        npu_address=None,
        ground_truth="model/conv1/Conv2D,model/conv1/Relu",
        golden_dtype="float32",
        tensor_index="model/conv1/Conv2D:output:0",
        shape=(2, 8, 8, 3),
        metrics={
            "CosineSimilarity": 0.999,
            "MaxAbsoluteError": math.inf,
            "KullbackLeiblerDivergence": math.nan,
            "MeanAbsoluteError": -0.0,
        },
        std_text="(0.481;0.721),(0.481;0.721)",
        fail_reason='say "why", twice',
    )
    base.update(changes)
    return CompareRow(**base)


def _same(a: CompareRow, b: CompareRow) -> bool:
    """Row equality where NaN equals NaN."""

    def key(row):
        return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.metrics.items()}

    return a.with_metrics({}, a.std_text, a.fail_reason) == b.with_metrics({}, b.std_text, b.fail_reason) and key(
        a
    ) == key(b)


def _write(tmp_path, text: str, name="r.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_text(text, encoding=encoding, newline="")
    return path


# --- msaccucmp's own file -------------------------------------------------------------------


def test_the_default_header_is_msaccucmps(small_case):
    assert ",".join(columns()) == REFERENCE_HEADER
    text = (small_case / "reference_result.csv").read_text(encoding="utf-8")
    assert text.splitlines()[0] == REFERENCE_HEADER


def test_reading_the_reference_gives_25_ops_and_37_tensors(small_case):
    rows = read_result_csv(small_case / "reference_result.csv")
    assert len(rows) == 49
    assert sorted({r.index for r in rows}) == list(range(25))
    tensors = [r for r in rows if r.tensor_index is not None]
    assert len(tensors) == 37 and all(r.compared for r in tensors)
    no_dump = [r for r in rows if r.tensor_index is None]
    assert len(no_dump) == 12 and all(not r.compared and "no dump file" in r.fail_reason for r in no_dump)
    add = next(r for r in rows if r.tensor_index == "model/add/add:output:0")
    assert add.cosine == 0.505089 and add.is_output and add.slot == 0 and add.op_name == "model/add/add"
    assert add.std_text == "(0.530;0.889),(0.416;1.676)" and add.npu_address is None
    cast = next(r for r in rows if r.tensor_index == "trans_Cast_0:output:0")
    assert cast.ground_truth == "*" and cast.shape == (2, 8, 8, 3)
    assert cast.metrics["KullbackLeiblerDivergence"] == 0.0  # "-0.000000": a computed value
    assert math.copysign(1, cast.metrics["KullbackLeiblerDivergence"]) == -1
    assert rows[0].op_type == "Data" and rows[0].npu_dtype is None and rows[0].shape is None


def test_rewriting_the_reference_reproduces_it_byte_for_byte(small_case, tmp_path):
    reference = small_case / "reference_result.csv"
    out = write_result_csv(tmp_path / "out.csv", read_result_csv(reference))
    assert out.read_bytes() == reference.read_bytes()


def test_rows_built_from_our_metrics_print_like_the_reference(small_case, tmp_path):
    rows = read_result_csv(small_case / "reference_result.csv")
    bn = next(r for r in rows if r.tensor_index == "model/bn1/FusedBatchNormV3:input:1")
    x = np.linspace(0.8, 1.2, 8)  # a float32 constant compared with itself: all exact zeros
    ours = bn.with_result(compare_arrays(x, x.copy()))
    line = ",".join(row_layout().cells(ours)).split(",")
    assert line[9:14] == ["1.000000", "0.000000", "0.000000", "0.000000", "0.000000"]


# --- writer -----------------------------------------------------------------------------


def test_round_trip_keeps_every_field(tmp_path):
    rows = [
        _row(),
        _row(
            index=6,
            tensor_index="model/conv1/Conv2D:input:2",
            shape=(8,),
            metrics={},
            std_text="NaN",
            fail_reason="This tensor is scalar.",
            npu_dtype=None,
        ),
        _row(
            index=7,
            op_type="Const",
            tensor_index=None,
            shape=None,
            metrics={},
            std_text="NaN",
            fail_reason='[w] There is no dump file for my output operator "w". The type is Const.',
        ),
        _row(index=8, shape=(), metrics={"CosineSimilarity": -math.inf}),
    ]
    path = write_result_csv(tmp_path / "r.csv", rows)
    back = read_result_csv(path)
    assert len(back) == len(rows) and all(_same(a, b) for a, b in zip(rows, back))
    flagged = [_row(overflow="YES", op_sequence=3, golden_address="0x1000")]
    flags = dict(op_sequence=True, overflow=True, golden_address=True)
    back = read_result_csv(write_result_csv(tmp_path / "f.csv", flagged, **flags))
    assert _same(back[0], flagged[0])


def test_a_cell_over_the_csv_field_limit_is_read_back_and_the_lines_after_it_too(tmp_path):
    """Issue 27.6: a fused op of 3,000 TF ops has a GroundTruth cell over 128 KiB."""
    fused = ",".join(f"model/block_{i}/fused/op_name_{i}" for i in range(5000))
    rows = [_row(), _row(index=6, ground_truth=fused, fail_reason="x" * 140_000), _row(index=7)]
    back = read_result_csv(write_result_csv(tmp_path / "r.csv", rows))
    assert len(fused) > 131072 and [r.ground_truth for r in back] == [r.ground_truth for r in rows]
    assert all(_same(a, b) for a, b in zip(rows, back))
    path = _write(
        tmp_path,
        "Index,NPUDump,TensorIndex,CosineSimilarity\n" + "0,a,a:output:0,1\n" + f'1,"{fused}",b:output:0,high\n',
    )
    with pytest.raises(PrecisionToolError, match="line 3: CosineSimilarity is 'high'"):
        read_result_csv(path)


def test_values_print_six_decimals_and_nan_texts(tmp_path):
    line = write_result_csv(tmp_path / "r.csv", [_row()]).read_text().splitlines()[1]
    assert line == (
        '5,Conv2D,model/conv1/Conv2D,float16,NaN,"model/conv1/Conv2D,model/conv1/Relu",'
        'float32,model/conv1/Conv2D:output:0,"[2,8,8,3]",0.999000,inf,NaN,NaN,nan,'
        '"(0.481;0.721),(0.481;0.721)",-0.000000,NaN,NaN,NaN,"say ""why"", twice"'
    )
    assert format_value(None) == "NaN" and format_value(-math.inf) == "-inf"
    assert format_shape((8,)) == "[8]" and format_shape(None) == "NaN" and format_shape(()) == "[]"


def test_header_with_every_optional_column_is_in_msaccucmps_places():
    head = columns(op_sequence=True, overflow=True, golden_address=True)
    assert head[:2] == ["Index", "OpSequence"]
    assert head[head.index("DataType", 4) + 1] == "Address"
    assert head[head.index("CosineSimilarity") - 1] == "OverFlow"


def test_an_interrupted_writer_leaves_nothing_under_the_final_name(tmp_path):
    target = tmp_path / "vector_compare" / "r.csv"
    with pytest.raises(RuntimeError):
        with ResultWriter(target) as writer:
            writer.write(_row())
            assert not target.exists()  # streamed to a temporary name meanwhile
            raise RuntimeError("worker died")
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_the_writer_streams_and_renames_on_close(tmp_path):
    target = tmp_path / "a" / "b" / "r.csv"
    with ResultWriter(target, overflow=True) as writer:
        writer.write_rows(_row(index=i) for i in range(3))
    assert writer.rows_written == 3 and [p.name for p in target.parent.iterdir()] == ["r.csv"]
    assert target.read_text().splitlines()[0].split(",")[9] == "OverFlow"


_NAMES = st.text(alphabet=st.sampled_from(["a", " ", ",", '"', "\r", "\n", "'", "=", "é"]), max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_NAMES, reason=_NAMES, overflow=st.booleans())
def test_the_file_is_what_the_csv_writer_writes(tmp_path, name, reason, overflow):
    """Lines are joined without the csv module's writer (``line_text``), byte for byte as it writes
    them: names with commas, quotes, CR and LF included."""
    rows = [_row(npu_name=name, fail_reason=reason), _row(index=6, ground_truth=name, std_text=reason)]
    target = tmp_path / f"w{abs(hash((name, reason, overflow)))}.csv"
    write_result_csv(target, rows, overflow=overflow)
    expected = io.StringIO(newline="")
    writer = csv.writer(expected)
    writer.writerow(columns(overflow=overflow))
    layout = row_layout(overflow=overflow)
    writer.writerows(layout.cells(row) for row in rows)
    assert target.read_bytes() == expected.getvalue().encode("utf-8")


def test_result_path_and_latest_result_dir(tmp_path):
    when = datetime(2024, 6, 12, 10, 30, 5)
    out = tmp_path / "temp"  # the output root
    path = result_path(out, when)
    assert path == out / "vector_compare/20240612103005/result_20240612103005.csv"
    assert result_path(out, when, tag="ge_default_1").name == "result_20240612103005_ge_default_1.csv"
    assert latest_result_dir(out) is None
    write_result_csv(path, [_row()])
    write_result_csv(result_path(out, datetime(2023, 1, 1)), [_row()])
    (out / "vector_compare/20250101000000").mkdir()  # empty: not a result
    assert latest_result_dir(out) == path.parent


# --- reader variants --------------------------------------------------------------------


def test_op_sequence_overflow_and_golden_address_variants(tmp_path):
    header = (
        "Index,OpSequence,OpType,NPUDump,DataType,Address,GroundTruth,DataType,Address,"
        "TensorIndex,Shape,OverFlow," + REFERENCE_HEADER.split(",Shape,")[1]
    )
    body = f'3,17,Add,add,float16,0x10,add_1,float16,0x20,add:output:0,"[2,2]",YES,{TAIL},\r\n'
    row = read_result_csv(_write(tmp_path, header + "\r\n" + body))[0]
    assert (row.op_sequence, row.overflow, row.npu_address, row.golden_address) == (17, "YES", "0x10", "0x20")
    assert (row.npu_dtype, row.golden_dtype, row.shape, row.cosine) == ("float16", "float16", (2, 2), 0.9)


def test_the_older_left_right_header(tmp_path):
    text = (
        "Index,LeftOp,RightOp,TensorIndex,CosineSimilarity,MaxAbsoluteError,"
        "AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,"
        "StandardDeviation,CompareFailReason\n"
        "0,conv1,conv1_tf,conv1:output:0,0.97,0.5,1.0,0.1,0.01,(0.1;0.2),(0.1;0.2),\n"
        "1,relu,*,NaN,NaN,NaN,NaN,NaN,NaN,NaN,no dump\n"
    )
    text = text.replace("(0.1;0.2),(0.1;0.2)", '"(0.1;0.2),(0.1;0.2)"')
    first, second = read_result_csv(_write(tmp_path, text))
    assert (first.npu_name, first.ground_truth, first.op_type) == ("conv1", "conv1_tf", "")
    assert first.cosine == 0.97
    assert first.shape is None and "MeanAbsoluteError" not in first.metrics  # missing optional columns
    assert first.std_text == "(0.1;0.2),(0.1;0.2)" and first.is_output
    assert second.tensor_index is None and not second.compared and second.fail_reason == "no dump"


def test_columns_are_found_by_name_not_position(tmp_path):
    text = "CosineSimilarity,TensorIndex,NPUDump,Index\r\n0.5,a:input:1,a,9\r\n"
    row = read_result_csv(_write(tmp_path, text))[0]
    assert (row.index, row.npu_name, row.tensor_index, row.cosine, row.is_input, row.slot) == (
        9,
        "a",
        "a:input:1",
        0.5,
        True,
        1,
    )


def test_a_utf8_bom_is_skipped(tmp_path):
    text = "\ufeff" + REFERENCE_HEADER + "\r\n" + f"0,Relu,r,float16,NaN,r,float32,r:output:0,[4],{TAIL},\r\n"
    row = read_result_csv(_write(tmp_path, text))[0]
    assert row.index == 0 and row.cosine == 0.9 and row.shape == (4,)


@pytest.mark.parametrize(
    "text, computed", [("nan", True), ("NaN", False), ("Nan", False), ("*", False), ("", False), ("inf", True)]
)
def test_not_a_number_variants(tmp_path, text, computed):
    csv_text = f"Index,NPUDump,TensorIndex,CosineSimilarity,MaxAbsoluteError\n0,a,a:output:0,{text},1.5\n"
    row = read_result_csv(_write(tmp_path, csv_text))[0]
    assert ("CosineSimilarity" in row.metrics) is computed
    assert (math.isinf if text == "inf" else math.isnan)(row.cosine)
    assert row.metric("MaxAbsoluteError") == 1.5 and math.isnan(row.metric("MeanRelativeError"))


@pytest.mark.parametrize("missing", ["CosineSimilarity", "TensorIndex", "Index", "NPUDump"])
def test_a_missing_required_column_names_the_file_and_the_column(tmp_path, missing):
    names = [n for n in ["Index", "NPUDump", "TensorIndex", "CosineSimilarity"] if n != missing]
    path = _write(tmp_path, ",".join(names) + "\n" + ",".join("1" for _ in names) + "\n", name="odd.csv")
    with pytest.raises(PrecisionToolError, match=f"no {missing} column") as info:
        read_result_csv(path)
    assert "odd.csv" in str(info.value)


def test_malformed_cells_and_unreadable_files_are_user_errors(tmp_path):
    path = _write(tmp_path, "Index,NPUDump,TensorIndex,CosineSimilarity\n0,a,a:output:0,high\n")
    with pytest.raises(PrecisionToolError, match="line 2: CosineSimilarity is 'high'"):
        read_result_csv(path)
    with pytest.raises(PrecisionToolError, match="line 2: Index is 'x'"):
        read_result_csv(_write(tmp_path, "Index,NPUDump,TensorIndex,CosineSimilarity\nx,a,a:output:0,1\n"))
    with pytest.raises(PrecisionToolError, match="absent.csv: result CSV not found"):
        read_result_csv(tmp_path / "absent.csv")
    damaged = tmp_path / "damaged.csv"  # a quote never closed: the rest of the file is one field
    with damaged.open("w", encoding="utf-8") as handle:
        handle.write('Index,NPUDump,TensorIndex,CosineSimilarity\n0,"a quote never closed\n')
        handle.writelines(("0,a,b,1 " * 2**17 + "\n") for _ in range(70))  # 70 lines of 1 MiB
    with pytest.raises(PrecisionToolError, match="damaged.csv: cannot read the result CSV: a record over 64 MiB"):
        read_result_csv(damaged)
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"Index,NPUDump,TensorIndex,CosineSimilarity\n0,caf\xe9,a:output:0,1\n")
    with pytest.raises(PrecisionToolError, match="cannot read"):
        read_result_csv(latin)


def test_parse_shape_and_row_helpers():
    assert parse_shape("[2,8]") == (2, 8) and parse_shape("[]") == () and parse_shape("NaN") is None
    assert parse_shape("16") == (16,) and parse_shape("[a]") is None
    row = _row(tensor_index=None, npu_name="w")
    assert row.kind is None and row.slot is None and row.op_name == "w" and not row.is_output
    scalar = _row().with_result(compare_arrays(np.array([2.0]), np.array([1.0]), select_metrics("0")))
    assert scalar.metrics == {"CosineSimilarity": 1.0} and scalar.fail_reason == "This tensor is scalar."


# --- the metric columns: the selected ones; custom ones trailing --------------------------------

MSACCUCMP_ALG_0 = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
    "CosineSimilarity,CompareFailReason"
)  # what msaccucmp -alg 0 writes
MSACCUCMP_ALG_5_1 = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
    "StandardDeviation,MaxAbsoluteError,CompareFailReason"
)  # -alg 5,1


def _negated_cosine(stats):
    return -stats.sum_xy


NEGATED = Metric("NegatedDot", frozenset({"xy"}), _negated_cosine)


def test_selected_metrics_write_only_their_columns_as_msaccucmp_does(tmp_path):
    assert ",".join(columns(metrics=select_metrics("0"))) == MSACCUCMP_ALG_0
    assert ",".join(columns(metrics=select_metrics("5,1"))) == MSACCUCMP_ALG_5_1
    path = write_result_csv(tmp_path / "r.csv", [_row()], metrics=select_metrics("0"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == MSACCUCMP_ALG_0 and lines[1].endswith(',0.999000,"say ""why"", twice"')
    (row,) = read_result_csv(path)
    assert row.metrics == {"CosineSimilarity": 0.999} and row.std_text == "NaN"


def test_custom_metrics_are_trailing_columns_and_read_back(tmp_path):
    metrics = METRICS + (NEGATED,)
    assert columns(metrics=metrics) == REFERENCE_HEADER.split(",") + ["NegatedDot"]
    row = _row(metrics={"CosineSimilarity": 0.5, "NegatedDot": -2.25})
    path = write_result_csv(tmp_path / "r.csv", [row], metrics=metrics)
    assert path.read_text(encoding="utf-8").splitlines()[1].endswith('"say ""why"", twice",-2.250000')
    (back,) = read_result_csv(path)
    assert back.metrics == {"CosineSimilarity": 0.5, "NegatedDot": -2.25}


def test_a_file_without_cosine_reads_unless_cosine_is_required(tmp_path):
    path = write_result_csv(tmp_path / "r.csv", [_row()], metrics=select_metrics("1"))
    assert read_result_csv(path)[0].metrics == {"MaxAbsoluteError": math.inf}
    with pytest.raises(PrecisionToolError, match="no CosineSimilarity column"):
        read_result_csv(path, require=("CosineSimilarity",))
