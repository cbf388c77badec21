"""The verdict on a result file is remembered for the session: its CSV is read once."""

from __future__ import annotations

from precision_tool.compare import judged
from precision_tool.compare.result_csv import latest_result_dir
from precision_tool.compare.verdict import FlagRule
from tests.conftest import make_context, run_command


def test_a_judged_result_reads_its_csv_once_a_session_until_it_is_rewritten(sample_data, monkeypatch):
    context, _ = make_context(sample_data)
    run_command(context, "vc")
    (path,) = sorted(latest_result_dir(context.output_dir).glob("result_*.csv"))
    reads: list = []
    real_read = judged.read_result_csv

    def counted(*args, **kwargs):
        reads.append(args)
        return real_read(*args, **kwargs)

    monkeypatch.setattr(judged, "read_result_csv", counted)
    rule = FlagRule.from_config(context.config)
    first = judged.judged_result(context, path, rule)
    assert judged.judged_result(context, path, rule) is first and len(reads) == 1
    assert first.flagged  # the sample holds a planted defect: a real verdict, remembered
    path.write_text(path.read_text() + "\n")  # rewritten: what the file is has changed
    again = judged.judged_result(context, path, rule)
    assert (
        len(reads) == 2
        and again is not first
        and [op.name for op in again.flagged] == [op.name for op in first.flagged]
    )
