"""The data the page's script reads: names front-coded losslessly, the flagged ops grouped
under the introducer they follow, every value the CSV's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from precision_tool.compare.result_view import read_view
from precision_tool.report.data import front_code, lead_groups, page_data
from tests.report.synthetic import csv_ops, write_many
from tests.report.test_page import positions


@given(st.lists(st.text(max_size=20)))
def test_front_coding_gives_back_every_name(names):
    shared, rest = front_code(names)
    out, previous = [], ""
    for n, tail in zip(shared, rest):
        previous = previous[:n] + tail
        out.append(previous)
    assert out == names
    assert all(n <= len(name) for n, name in zip(shared, names))


def test_inheritors_fold_under_the_introducer_before_them(data_root):
    csv_path = write_many(data_root, 300, (40, 200), tail=30, nan_at=(100, 150))
    view = read_view(csv_path, 0.98)
    groups = lead_groups(view)
    cosines = {index: t["output"].get("CosineSimilarity") for (index, _), t in csv_ops(csv_path).items()}
    flagged = sorted(i for i, c in cosines.items() if c is not None and c <= 0.98)
    # by the input rule: op 40 and op 200 introduce (their inputs are clean), each run's later
    # ops inherit; ops 100 and 150 have no cosine and are not flagged
    assert [g.introducer.op.index for g in groups] == [40, 200]
    assert [[r.op.index for r in g.inheritors] for g in groups] == [list(range(41, 71)), list(range(201, 231))]
    assert (
        sorted([g.introducer.op.index for g in groups] + [r.op.index for g in groups for r in g.inheritors]) == flagged
    )
    data = page_data(view)
    assert data["groups"] == [[g.introducer.position, [r.position for r in g.inheritors]] for g in groups]
    # gaps: the NaN ops keep their place in the columns with no cosine
    at = {p: k for k, p in enumerate(positions(data))}
    assert positions(data, "index") == [r.op.index for r in view.records if r.outputs]
    assert data["cos"][at[100]] is None and data["cos"][at[99]] == cosines[99]


def test_inheritors_before_any_introducer_come_last(data_root):
    from precision_tool.compare.result_read import read_result_csv
    from precision_tool.compare.result_view import build_view
    from precision_tool.compare.verdict import FlagRule

    csv_path = write_many(data_root, 60, (20,), tail=10)
    rows = [r for r in read_result_csv(csv_path) if r.index != 20]  # op 20 gone: 21 reads nothing compared
    view = build_view(csv_path, rows, FlagRule(0.98))
    (group,) = lead_groups(view)  # op 21 reads op 20's diverging output: it inherits
    assert group.introducer is None and [r.op.index for r in group.inheritors] == list(range(21, 31))
    assert page_data(view)["groups"] == [[None, [r.position for r in group.inheritors]]]
