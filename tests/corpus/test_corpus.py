"""Every corpus case through the commands it concerns: never a traceback, never a hang, the
reason in a row or one error line, and nothing outside ``temp/`` created, changed or deleted."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest

from precision_tool.formats.dump import read_dump
from precision_tool.status import ExitStatus
from tests.conftest import make_context

from .base import ADD_FILE, ERROR, FINE, RELU_FILE, Check, root_of
from .harness import (
    as_if_not_root,
    assert_outcome,
    error_lines,
    is_root,
    new_context,
    run_check,
    snapshot,
)
from .make_corpus import CASES, make_corpus

REPO = Path(__file__).resolve().parents[2]
BY_NAME = {case.name: case for case in CASES}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The whole corpus, under a directory whose name has a space and a non-ASCII letter."""
    directory = tmp_path_factory.mktemp("corpus") / "bad data ü"
    make_corpus(directory)
    return directory


def test_the_corpus_is_big_enough_and_every_case_is_checked():
    assert len(CASES) >= 40
    assert len(BY_NAME) == len(CASES)
    assert all(case.checks for case in CASES)


def test_the_generator_writes_a_manifest(tmp_path):
    from .make_corpus import main

    assert main([str(tmp_path), "dump_zero_bytes", "csv_bom"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.json", "csv_bom", "dump_zero_bytes"]
    assert (tmp_path / "dump_zero_bytes" / "precision_data").is_dir()


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_case(name, corpus, monkeypatch):
    case = BY_NAME[name]
    case_dir = corpus / name
    root = root_of(case_dir)
    before = snapshot(case_dir, root)
    guard = as_if_not_root(monkeypatch) if case.unreadable and is_root() else nullcontext()
    with guard:
        context, buffer = new_context(root)
        for check in case.checks:
            filled = check.fill(case_dir)
            status, output = run_check(context, buffer, filled)
            assert_outcome(filled, status, output, root, case.base)
            if filled.line == "vc" and check.outcome != ERROR and case.summarise:  # read it back
                summary = Check("vcs -l 0", FINE, "result:")
                assert_outcome(summary, *run_check(context, buffer, summary), root, case.base)
    assert snapshot(case_dir, root) == before  # nothing outside temp/ created, changed or deleted


def test_the_session_goes_on_after_an_error(corpus):
    """After a case's one-line error the same session runs the next command normally."""
    case_dir = corpus / "dump_garbage_protobuf"
    context, buffer = new_context(root_of(case_dir))
    bad = Check("pt {step}/" + RELU_FILE, ERROR, "not a valid DumpData protobuf", RELU_FILE).fill(case_dir)
    assert_outcome(bad, *run_check(context, buffer, bad), root_of(case_dir), True)
    good = Check("pt {step}/" + ADD_FILE, FINE, "elements").fill(case_dir)
    assert_outcome(good, *run_check(context, buffer, good), root_of(case_dir), True)


# --- the real command line, one-shot, for a representative subset ----------------------------

ONE_SHOT = [
    ("dump_header_length_2_63", ["pt", "{step}/" + RELU_FILE], ExitStatus.ERROR, "header length"),
    ("dump_nano_magic", ["vc"], ExitStatus.OK, "tensors compared"),
    ("graph_syntax_error", ["ls"], ExitStatus.ERROR, "TextFormat syntax error at line"),
    ("csv_missing_columns", ["vcs", "-f", "{case}/result.csv"], ExitStatus.ERROR, "no CosineSimilarity column"),
    ("golden_pickled_object_array", ["vc"], ExitStatus.OK, "tensors compared"),
    ("names_with_spaces", ["pt", "{golden}/net relu.0.1767225600000000.npy"], ExitStatus.OK, "elements"),
]


@pytest.mark.parametrize("name, words, expected, text", ONE_SHOT, ids=[c[0] for c in ONE_SHOT])
def test_one_shot_command_line(name, words, expected, text, corpus, tmp_path):
    from .base import paths

    case_dir = corpus / name
    root = root_of(case_dir)
    before = snapshot(case_dir, root)
    filled = [w.format(**paths(case_dir)) for w in words]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PRECISION_TOOL_WORKERS": "1"}
    env.pop("PRECISION_TOOL_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *filled],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "internal error" not in output, output
    assert done.returncode in ((expected,) if expected == ExitStatus.ERROR else (0, 1)), output
    if expected == ExitStatus.ERROR:
        lines = error_lines(done.stderr)
        assert len(lines) == 1 and text in lines[0], done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, not wrapped
    else:
        assert text in " ".join(output.split()), output
    assert snapshot(case_dir, root) == before


# --- a dump that shrinks while vc runs --------------------------------------------------------


def test_a_dump_truncated_while_vc_runs_is_that_tensors_row(tmp_path, monkeypatch):
    """net/relu's dump is cut right after the plan has read its header (as when the dumping job
    rewrites it meanwhile): the comparison reads the file again, header and data in one read,
    so its tensors get a row each with the reason, and net/add is compared."""
    from precision_tool.compare import golden_pairing

    from .base import Case, make_case, step_dir

    case_dir = make_case(tmp_path, Case("shrinking", "the base network", lambda c: None, ()))
    victim = step_dir(case_dir) / RELU_FILE
    counts = golden_pairing.tensor_counts  # what the graph's pairing reads of each header

    def header_then_cut(path):
        found = counts(path)
        if Path(path) == victim:  # the pairing names the file by its text
            cut = read_dump(victim).inputs[0].offset + 10
            with open(victim, "r+b") as handle:
                handle.truncate(cut)
        return found

    monkeypatch.setattr(golden_pairing, "tensor_counts", header_then_cut)
    context, buffer = make_context(root_of(case_dir), width=400, WORKERS=1)  # the patch is here
    check = Check("vc", "row", "(truncated)")
    assert_outcome(check, *run_check(context, buffer, check), root_of(case_dir), True)
