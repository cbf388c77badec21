"""``why`` through the real CLI: each planted defect is diagnosed with the right cause and op,
the sample's healthy ops are float16 rounding only, and bad input is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from precision_tool.compare import op_tensors as explain_tensors
from precision_tool.explain.causes import CAUSES
from precision_tool.explain.diagnosis import explain_newest
from precision_tool.render.why import why_panel
from precision_tool.sample import write_sample
from precision_tool.sample.defects import DEFECTS
from precision_tool.sample.network import DEFECTIVE_OP
from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT, make_context, run_command


def cli(*words: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", *words], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def why_json(root, *words):
    done = cli("--data", str(root), "why", *words, "--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    """Per defect kind: a data root compared with ``vc``, then ``why --json`` and
    ``why OP --json`` (OP the planted op) in one run of the real CLI. Returns (root, exit
    status, the first JSON list, the second)."""
    made = {}

    def diagnose(kind: str):
        if kind not in made:
            root = write_sample(tmp_path_factory.mktemp(kind) / "precision_data", defect=kind)
            context, _ = make_context(root)
            assert run_command(context, "vc") in (ExitStatus.OK, ExitStatus.FLAGGED)
            done = cli("--data", str(root), "-e", f"why --json; why {DEFECTS[kind].op} --json")
            assert done.returncode in (0, 1), done.stderr
            decoder, text = json.JSONDecoder(), done.stdout.lstrip()
            first, end = decoder.raw_decode(text)
            second, _ = decoder.raw_decode(text[end:].lstrip())
            made[kind] = root, done.returncode, first, second
        return made[kind]

    return diagnose


@pytest.mark.parametrize("kind", list(DEFECTS))
def test_why_names_the_planted_op_and_its_cause(diagnosed, kind):
    """Every kind, scale (cosine 1.0) and NaN/overflow (cosine NaN) included: the combined flag
    rule makes the op an introducer, and why names it with its cause."""
    _, status, found, _ = diagnosed(kind)
    assert status == ExitStatus.FLAGGED
    assert [(e["op"], e["cause"]) for e in found] == [(DEFECTS[kind].op, kind)]


@pytest.mark.parametrize("kind", sorted(DEFECTS))
def test_why_op_diagnoses_every_kind(diagnosed, kind):
    _, status, _, (found,) = diagnosed(kind)
    assert status == ExitStatus.FLAGGED
    _schema_ok(found)
    assert found["op"] == DEFECTS[kind].op and found["cause"] == kind
    assert found["replay"]["supported"] is True  # defect roots carry every attribute the replays need


def test_why_numbers_for_each_kind(diagnosed):
    def first(kind):
        return diagnosed(kind)[3][0]["causes"][0]["numbers"]

    assert first("permutation")["axes"] == [0, 2, 1, 3]
    assert first("scale")["factor"] == pytest.approx(0.5, abs=1e-3)
    assert first("offset")["offset"] == pytest.approx(0.75, abs=1e-2)
    assert first("sign")["factor"] == pytest.approx(-1.0, abs=1e-3)
    overflow = first("overflow")
    assert overflow["count"] == overflow["inf"] > 0 and abs(overflow["golden_value"]) > 65504
    assert first("nan")["count"] == 24  # the first image's 24 channel means
    assert first("underflow")["count"] > 0
    assert first("input")["inputs"][0]["network_input"] is True


def _schema_ok(entry):
    assert set(entry) >= {"op", "type", "cause", "causes", "replay"}
    assert entry["cause"] in CAUSES and entry["cause"] == entry["causes"][0]["cause"]
    for cause in entry["causes"]:
        assert set(cause) >= {"cause", "evidence", "numbers"} and cause["cause"] in CAUSES
    assert set(entry["replay"]) >= {"supported", "npu_vs_replay_cosine", "golden_vs_replay_cosine"}


def test_the_shipped_sample_end_to_end(sample_data):
    assert cli("--data", str(sample_data), "vc").returncode == ExitStatus.FLAGGED
    status, found = why_json(sample_data)
    assert status == ExitStatus.FLAGGED
    (entry,) = found
    _schema_ok(entry)
    assert (entry["op"], entry["type"], entry["cause"]) == (DEFECTIVE_OP, "Conv2D", "computation")
    assert [c["cause"] for c in entry["causes"]] == ["computation"]
    replay = entry["replay"]
    assert replay["npu_vs_replay_cosine"] == pytest.approx(entry["cosine"], abs=1e-3)
    assert replay["golden_vs_replay_cosine"] > 0.9999
    text = cli("--data", str(sample_data), "why", DEFECTIVE_OP)
    assert text.returncode == ExitStatus.FLAGGED
    assert "cause: computation" in text.stdout and "replay: replayed Conv2D+BiasAdd" in text.stdout


def _readme_example():
    text = (REPO_ROOT / "docs" / "why.md").read_text(encoding="utf-8")
    section = text[text.index("# why: the cause of the error") :]
    block = section[section.index("```json\n") + len("```json\n") :]
    return json.loads(block[: block.index("```")])


def test_the_readme_schema_is_what_why_prints(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "vc") == ExitStatus.FLAGGED
    out.seek(0)
    out.truncate()
    assert run_command(context, "why --json") == ExitStatus.FLAGGED
    (printed,), (documented,) = json.loads(out.getvalue()), _readme_example()
    assert set(printed) == set(documented)
    assert set(printed["replay"]) == set(documented["replay"])
    assert set(printed["causes"][0]) == set(documented["causes"][0])
    assert set(printed["causes"][0]["numbers"]) == set(documented["causes"][0]["numbers"])
    for key in ("op", "cause", "dump"):
        assert printed[key] == documented[key]


def _upstream(context, op_name):
    names = [r.op.name for r in context.ops("debug_0") if r.op.type not in ("Data", "Const", "NetOutput")]
    return names[: names.index(op_name)]


def _healthy_are_precision(root, planted, extra=()):
    context, out = make_context(root)
    healthy = _upstream(context, planted) + list(extra)
    assert len(healthy) >= 4
    for name in healthy:
        out.seek(0)
        out.truncate()
        assert run_command(context, f"why {name} --json") == ExitStatus.OK, name
        (entry,) = json.loads(out.getvalue())
        assert [c["cause"] for c in entry["causes"]] == ["precision"], (name, entry["causes"])


def test_the_shipped_samples_healthy_ops_are_precision_only(sample_data):
    _healthy_are_precision(sample_data, DEFECTIVE_OP, ["trans_Cast_5"])  # the labels: off the path


@pytest.mark.parametrize("kind", ["permutation", "overflow"])  # the longest healthy chains
def test_healthy_ops_of_defect_roots_are_precision_only(diagnosed, kind):
    _healthy_are_precision(diagnosed(kind)[0], DEFECTS[kind].op)


def test_ops_downstream_of_the_defect_inherit_it(diagnosed):
    context, out = make_context(diagnosed("permutation")[0])
    assert run_command(context, "why resnet/pool/MaxPool --json") == ExitStatus.FLAGGED
    (entry,) = json.loads(out.getvalue())
    assert entry["cause"] == "input"  # the permuted output is carried in, not made here
    assert "permutation" not in [c["cause"] for c in entry["causes"]]  # it explains none of it here


def test_why_on_the_real_format_fixture(fixture_data):
    assert cli("--data", str(fixture_data), "vc").returncode == ExitStatus.FLAGGED
    _, found = why_json(fixture_data)
    assert [(e["op"], e["cause"]) for e in found] == [("model/add/add", "computation")]
    assert found[0]["replay"]["golden_vs_replay_cosine"] > 0.9999


def test_why_op_reads_only_that_ops_tensors(sample_data, monkeypatch):
    opened_dumps, opened_goldens = [], []
    read_dump, load_npy = explain_tensors.read_dump, explain_tensors.load_npy
    monkeypatch.setattr(explain_tensors, "read_dump", lambda p, n=None: opened_dumps.append(p.name) or read_dump(p, n))
    monkeypatch.setattr(explain_tensors, "load_npy", lambda p: opened_goldens.append(p.name) or load_npy(p))
    context, _ = make_context(sample_data)
    assert run_command(context, "why resnet/add/add --json") == ExitStatus.FLAGGED
    assert opened_dumps == ["Add.resnet_add_add.15.0.1764417600000185"]
    assert sorted(opened_goldens) == [
        "resnet_add_add.0.1764410000001700.npy",
        "resnet_bn1_FusedBatchNormV3.0.1764410000001400.npy",
        "resnet_conv2_BiasAdd.0.1764410000001600.npy",
    ]


def test_why_without_a_result_is_one_line(sample_data):
    done = cli("--data", str(sample_data), "why")
    assert done.returncode == ExitStatus.ERROR and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "run 'vc' (or 'ac -c') first" in done.stderr


def test_why_with_an_unknown_op_is_one_line(sample_data):
    done = cli("--data", str(sample_data), "why", "no/such/op")
    assert done.returncode == ExitStatus.ERROR
    assert done.stderr.strip() == "error: no operator matches 'no/such/op'"


def test_the_ac_panel(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "vc") == ExitStatus.FLAGGED
    explanations = explain_newest(context)
    assert [(e.op, e.cause) for e in explanations] == [(DEFECTIVE_OP, "computation")]
    context.console.print(why_panel(explanations))
    text = out.getvalue()
    assert "why: the causes of the error" in text and "[Conv2D] resnet/conv2/Conv2D" in text
    assert "1. computation" in text


def test_a_truncated_dump_is_one_line_naming_it(sample_data):
    dump = next(sample_data.rglob("Add.resnet_add_add.*"))
    dump.write_bytes(dump.read_bytes()[:100])
    done = cli("--data", str(sample_data), "why", "resnet/add/add")
    assert done.returncode == ExitStatus.ERROR and done.stderr.count("\n") == 1
    assert dump.name in done.stderr and "error: " in done.stderr


def test_missing_goldens_are_notes_and_the_rest_still_explained(sample_data):
    (sample_data / "tf/dump/resnet_add_add.0.1764410000001700.npy").unlink()
    context, out = make_context(sample_data)
    run_command(context, "why resnet/add/add --json")
    (entry,) = json.loads(out.getvalue())
    assert entry["cause"] == "unknown" and entry["output"] is None
    assert entry["notes"] == ["output:0: no golden resnet/add/add:0"]
    assert entry["replay"]["supported"] is True  # replayed all the same, just not compared
    (sample_data / "tf/dump/resnet_bn1_FusedBatchNormV3.0.1764410000001400.npy").unlink()
    out.seek(0)
    out.truncate()
    run_command(context, "why resnet/relu2/Relu --json")
    (entry,) = json.loads(out.getvalue())
    assert entry["cause"] == "input"  # its own input and output still have goldens


def test_nan_made_from_an_inf_input_is_inherited(diagnosed):
    context, out = make_context(diagnosed("overflow")[0])
    assert run_command(context, "why resnet/softmax/Softmax --json") == ExitStatus.FLAGGED
    (entry,) = json.loads(out.getvalue())
    assert entry["cause"] == "input" and "nan" not in [c["cause"] for c in entry["causes"]]
    assert "non-finite mismatch" in entry["causes"][0]["evidence"]


@pytest.mark.parametrize("kind", ["permutation", "overflow"])
def test_why_on_rank_64_goldens(tmp_path, kind):
    """Issue 27.8: every golden reshaped to rank 64 (numpy's most, padded with axes of 1): why
    was an internal IndexError (a gather with 64 index arrays, one more than numpy takes); now
    it diagnoses as before, and says nothing on standard error (a NaN from inf - inf in a check
    of the overflow kind printed numpy's RuntimeWarning)."""
    root = write_sample(tmp_path / "precision_data", defect=kind)
    for path in (root / "tf" / "dump").glob("*.npy"):
        values = np.load(path)
        np.save(path, values.reshape((1,) * (64 - values.ndim) + values.shape))
    assert cli("--data", str(root), "vc").returncode == ExitStatus.FLAGGED
    done = cli("--data", str(root), "-e", f"why --json; why {DEFECTS[kind].op} --json")
    assert done.returncode == ExitStatus.FLAGGED and done.stderr == ""
    decoder, text = json.JSONDecoder(), done.stdout.lstrip()
    first, end = decoder.raw_decode(text)
    (second,) = decoder.raw_decode(text[end:].lstrip())[0]
    assert [(e["op"], e["cause"]) for e in first] == [(DEFECTS[kind].op, kind)]
    assert second["cause"] == kind
