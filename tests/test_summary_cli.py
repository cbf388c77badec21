"""``vcs`` and ``ac`` through the real command line: the verdict when nothing is flagged, and
``--json``: parseable, complete, stable."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

PLANTED = "resnet/conv2/Conv2D"


def _tool(data_root, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env["COLUMNS"] = "40"  # a narrow terminal must not break the JSON
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(data_root), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=data_root.parent,
    )


@pytest.fixture
def compared(sample_data):
    assert _tool(sample_data, "vc").returncode == 1
    return sample_data


def test_vcs_json_names_the_flagged_ops_and_the_first_introducer(compared):
    done = _tool(compared, "vcs", "--json", "-l", "1")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["schema"] == 1 and doc["errors"] == []
    (result,) = doc["results"]
    assert result["rule"]["cosine"] == 0.98 and result["rule"]["red"] == pytest.approx(0.2)
    first = result["first_introducer"]
    assert first["op"] == PLANTED and first["introduces"] and first["type"] == "Conv2D"
    assert all(t["cosine"] > 0.98 for t in first["inputs"])
    assert first["outputs"][0]["cosine"] < 0.5 and first["outputs"][0]["diverges"]
    flagged = [op["op"] for op in result["flagged"]]
    assert flagged[0] == PLANTED and len(flagged) > 1  # -l limits the text only
    assert result["lowest_output"]["op"] == PLANTED
    assert result["csv"].endswith(".csv")


def test_vcs_json_with_nothing_flagged_is_status_0(compared):
    done = _tool(compared, "vcs", "--json", "-c", "0.1", "--red", "5")
    assert done.returncode == 0
    (result,) = json.loads(done.stdout)["results"]
    assert result["flagged"] == [] and result["first_introducer"] is None
    assert result["lowest_output"]["cosine"] == pytest.approx(0.363075, abs=1e-6)


def test_ac_json_holds_the_comparison_summary_and_every_check(sample_data):
    done = _tool(sample_data, "ac", "-c", "--json")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == 1 and len(doc["comparison"]["csvs"]) == 1
    assert doc["summary"]["results"][0]["first_introducer"]["op"] == PLANTED
    checks = doc["checks"]
    assert set(checks) == {"overflow", "fusion", "casts", "graph_similarity"}
    assert checks["overflow"]["flagged"] is True
    assert checks["overflow"]["findings"][0]["op"]["op_name"] == "resnet/pool/Mean"
    assert checks["casts"]["found"] is True
    assert checks["casts"]["groups"][0]["src"] == "DT_INT64"
    assert checks["fusion"]["present"] is True and checks["graph_similarity"]["found"] is True
    report = sample_data.parent / doc["report"]["path"]  # ac -c writes the HTML report too
    assert report.name == "index.html" and PLANTED in report.read_text(encoding="utf-8")


def test_ac_json_without_a_result_reports_the_error_in_the_document(sample_data):
    done = _tool(sample_data, "ac", "--json")
    assert done.returncode == 2
    doc = json.loads(done.stdout)
    assert doc["comparison"] is None and "no comparison result" in doc["summary"]["error"]
    assert doc["checks"]["casts"]["found"] is True


def test_vcs_with_nothing_flagged_still_shows_how_close_it_came(compared):
    done = _tool(compared, "vcs", "-c", "0.35")
    assert done.returncode == 0, done.stdout
    text = " ".join(re.sub("[│╭╮╰╯─]", " ", done.stdout).split())  # COLUMNS=40: a narrow panel
    assert "no op is flagged (output cosine <= 0.35" in text
    assert "lowest output cosine: 0.363075 at resnet/conv2/Conv2D" in text
    # conv2 and the ops after it are far beyond rounding, though not flagged at -c 0.35
    assert re.search(r"\d+ op\(s\) beyond rounding but not flagged: resnet/conv2/Conv2D,", text), text


@pytest.mark.parametrize("kind", ["scale", "overflow", "nan"])
def test_errors_cosine_cannot_see_are_flagged_and_introduced(tmp_path, kind):
    """A pure scale keeps cosine at 1; overflow and NaN make it NaN: vc still exits 1 and vcs
    names the planted op as the first introducer (the combined flag rule)."""
    from precision_tool.sample.defects import DEFECTS

    root = tmp_path / "precision_data"
    written = subprocess.run(
        [sys.executable, "-m", "precision_tool.sample", str(root), "--defect", kind],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert written.returncode == 0, written.stderr
    assert _tool(root, "vc").returncode == 1
    (result,) = json.loads(_tool(root, "vcs", "--json").stdout)["results"]
    assert result["first_introducer"]["op"] == DEFECTS[kind].op
    if kind == "scale":
        out = result["first_introducer"]["outputs"][0]
        assert out["cosine"] > 0.999 and out["red"] >= 0.2 and out["diverges"]
    else:
        assert any(t["nonfinite"] for t in result["first_introducer"]["outputs"])


def test_the_sample_writer_help_writes_nothing(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool.sample", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "--defect" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_ac_reads_a_fusion_result_of_null_as_no_rule_and_a_repeated_key_once(sample_data):
    fusion = sample_data / "fusion" / "fusion_result.json"
    fusion.write_bytes(b"null")  # a torch_npu run where nothing fused
    done = _tool(sample_data, "ac", "--json")
    checks = json.loads(done.stdout)["checks"]
    assert checks["fusion"]["present"] is True and checks["fusion"]["problem"] is None
    assert checks["fusion"]["graphs"] == []
    entry = '"session_and_graph_id_0_1": {"graph_fusion": {"APass": {"effect_times": "2"}}}'
    fusion.write_text("{" + ", ".join([entry] * 4) + "}")  # four processes wrote one key
    text = _tool(sample_data, "ac").stdout
    assert "read as one graph" in text and text.count("APass") == 1 and "damaged" not in text
