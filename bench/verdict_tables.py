"""Print the one verdict as every view tells it, for the clean sample and each defect kind of
``precision_tool.sample``: a views x verdict table, and how ``cp`` judges every compared output
against the state ``vcs --json`` gives it. With ``--write`` both go to ``docs/verdict.md``.

    python bench/verdict_tables.py [--write]

Each network is written fresh, compared by ``vc`` through the real command line, then read by
each view in a session of its own (the helpers of ``tests/test_verdict_consistency.py`` and
``tests/report/test_verdict_views.py``, which assert what this prints). A cell is "flagged ops /
first introducer"; "all equal" compares the full ordered lists, not only the counts.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DOC = REPO / "docs" / "verdict.md"


def _cell(flagged: list[str], introducers: list[str]) -> str:
    return f"{len(flagged)} / {introducers[0] if introducers else '-'}"


def views_row(kind: str, root: Path) -> str:
    import precision_tool
    from tests.report.test_verdict_views import report
    from tests.test_verdict_consistency import _from_digraph, _from_json, _from_text, _view

    told = _from_json(json.loads(_view(root, "vcs --json -l 0")))
    table = report(root, root.parent / "report").table
    api = precision_tool.compare(root, workers=1)
    first = api.first_divergence()
    views = [
        _from_text(_view(root, "vcs -l 0")),
        _from_json(json.loads(_view(root, "ac --json -l 0"))["summary"]),
        _from_digraph(root, told[0]),
        ([n for n, _ in table], [n for n, s in table if s == "introduces"]),
        ([op.name for op in api.flagged()], [first.name] if first else []),
    ]
    why = [e["op"] for e in json.loads(_view(root, "why --json -l 0"))]
    equal = (
        all(v[0] == told[0] for v in views) and all(v[1] == told[1] for v in views[:4]) and views[4][1] == told[1][:1]
    )
    cells = " | ".join(_cell(*v) for v in (told, *views))
    return f"| {kind} | {cells} | {why[0] if why else '-'} | {'yes' if equal else 'NO'} |"


def cp_row(kind: str, root: Path) -> tuple[str, collections.Counter, int]:
    from tests.test_verdict_consistency import CP_WORDS, _golden_path, _states, _view

    states = _states(root)
    agree = 0
    for (op, slot), state in states.items():
        text = _view(root, f"cp {op}:output:{slot} {_golden_path(root, op, slot)}")
        agree += CP_WORDS[state] in next(line for line in text.splitlines() if "verdict" in line)
    count = collections.Counter(states.values())
    return (
        (
            f"| {kind} | {len(states)} | {count['rounding']} / {count['near']} / {count['diverges']} / "
            f"{count['non-finite']} | {agree} of {len(states)} |"
        ),
        count,
        agree,
    )


def document() -> str:
    from precision_tool.sample import write_sample
    from precision_tool.sample.defects import KINDS
    from tests.test_verdict_consistency import _tool

    views = [
        "| defect | vcs --json | vcs text | ac --json | ni -s fills | report table | API | why explains first | all equal |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    cps = [
        "| defect | outputs | vcs: rounding / near / diverges / non-finite | cp says the same |",
        "| --- | ---: | --- | --- |",
    ]
    total, agreed = collections.Counter(), 0
    with tempfile.TemporaryDirectory() as base:
        for kind in KINDS:
            root = write_sample(Path(base) / kind / "precision_data", defect=kind)
            _tool(root, "vc")
            views.append(views_row(kind, root))
            line, count, agree = cp_row(kind, root)
            cps.append(line)
            total.update(count)
            agreed += agree
    n = sum(total.values())
    cps.append(
        f"| all | {n} | {total['rounding']} / {total['near']} / {total['diverges']} / "
        f"{total['non-finite']} | {agreed} of {n} |"
    )
    return "\n".join(
        [
            "# One verdict, as every view tells it",
            "",
            "Regenerate: `python bench/verdict_tables.py --write`.",
            "",
            "Flagged ops / first introducer, per view:",
            "",
            *views,
            "",
            "`cp OP:output:N GOLDEN` on every compared output, against its state in `vcs --json`:",
            "",
            *cps,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the tables to {DOC}")
    args = parser.parse_args()
    text = document()
    print(text)
    if args.write:
        DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
