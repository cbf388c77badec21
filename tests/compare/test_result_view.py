"""The report's view of a result CSV: the same ops as ``analyse``, every metric from the CSV."""

from __future__ import annotations

import math

from precision_tool.compare.divergence import analyse
from precision_tool.compare.divergence import op_key as row_key
from precision_tool.compare.result_csv import NUMERIC_METRICS
from precision_tool.compare.result_read import read_result_csv
from precision_tool.compare.result_view import read_view
from tests.report.synthetic import csv_ops, write_chain


def test_every_row_belongs_to_exactly_one_op_of_analyse(data_root, reference):
    for path in (write_chain(data_root, 30, 12, nan_at=(20,)), reference):
        rows = read_result_csv(path)
        ops = {(op.index, op.name): op for op in analyse(rows, 0.98).ops}
        assert {row_key(row) for row in rows} == set(ops)
        for key, op in ops.items():
            tensors = [r for r in rows if row_key(r) == key and r.kind is not None]
            assert len(tensors) == len(op.inputs) + len(op.outputs)


def test_worst_output_of_every_metric_equals_the_csv_text(data_root, reference):
    for path in (write_chain(data_root, 30, 12, nan_at=(20,)), reference):
        expected = csv_ops(path)
        view = read_view(path, 0.98)
        assert len(view.records) == len(expected)
        for record in view.records:
            want = expected[(record.op.index, record.op.name)]
            for metric in NUMERIC_METRICS:
                got, text_value = record.output(metric), want["output"].get(metric, math.nan)
                assert (math.isnan(got) and math.isnan(text_value)) or got == text_value, (record.op.name, metric)


def test_verdicts_focus_and_positions(data_root):
    view = read_view(write_chain(data_root, 30, 12, nan_at=(20,)), 0.98)
    assert [r.position for r in view.records] == list(range(30))
    assert view.first_introducer.op.name == "net/block1/op12" == view.focus.op.name
    verdicts = {r.op.name: r.verdict for r in view.records}
    assert verdicts["net/block0/op3"] == "clean"  # the op's verdict (OpCosines.state), no other
    assert verdicts["net/block1/op13"] == "inherits"
    assert verdicts["net/block2/op20"] == "not compared"
    assert verdicts["net/block2/op21"] == "introduces"  # its only input has no cosine
    assert len(view.flagged) == sum(1 for r in view.records if r.op.flagged)


def test_a_view_built_from_a_given_verdict_shows_that_verdict(data_root):
    """The report passes the judged divergence (replays, causes): the view must not judge again."""
    from precision_tool.compare.result_view import build_view

    path = write_chain(data_root, 30, 12)
    rows = read_result_csv(path)
    judged = analyse(rows, 0.98).with_causes({"net/block1/op12": "scale: x0.5"})
    view = build_view(path, rows, 0.98, divergence=judged)
    assert view.divergence is judged
    assert view.first_introducer.op.cause == "scale: x0.5"
    assert [r.op for r in view.records] == list(judged.ops)
