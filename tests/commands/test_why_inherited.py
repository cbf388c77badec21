"""``why`` through the real CLI on reversed channels (RGB vs BGR): where an op reverses them the
permutation search names it and it explains all of the difference; where the reversed values
are only carried in (downstream ops, or an op fed reversed input data), no permutation that
explains nothing is named, in the JSON or in the text."""

from __future__ import annotations

import json

import pytest

from precision_tool.sample import write_sample
from precision_tool.sample.defects import DEFECTS
from precision_tool.sample.network import Defect
from precision_tool.status import ExitStatus
from tests.commands.test_why import cli
from tests.conftest import make_context, run_command

REVERSING_OP = "resnet/relu2/Relu"
PLANTED = {
    # relu2 writes its NHWC output with the channels in reverse order
    "reversed": Defect("permutation", REVERSING_OP, REVERSING_OP, damage=lambda x: x[..., ::-1]),
    # the NPU is fed the input batch with its channels reversed (BGR for RGB)
    "reversed_input": Defect("input", "trans_Cast_0", npu_input=lambda x: x[..., ::-1].copy()),
}
MIN_NAMED = 0.1  # the smallest share of the difference a named cause explains (causes.MIN_SHARE)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """Per planted defect: a sample data root with it, compared by ``vc``."""
    made = {}

    def root_of(kind):
        if kind not in made:
            with pytest.MonkeyPatch.context() as patch:
                patch.setitem(DEFECTS, kind, PLANTED[kind])
                root = write_sample(tmp_path_factory.mktemp(kind) / "precision_data", defect=kind)
            context, _ = make_context(root)
            assert run_command(context, "vc") == ExitStatus.FLAGGED
            made[kind] = root
        return made[kind]

    return root_of


def _why(root, *words):
    done = cli("--data", str(root), "why", *words, "--json")
    assert done.returncode == ExitStatus.FLAGGED, done.stderr
    return json.loads(done.stdout)


def test_reversed_channels_are_found_where_they_are_made_and_explain_it_all(compared):
    (entry,) = _why(compared("reversed"))
    assert (entry["op"], entry["cause"]) == (REVERSING_OP, "permutation")
    first = entry["causes"][0]
    assert first["numbers"]["kind"] == "reverse" and first["numbers"]["axes"] == [3]
    assert first["score"] > 0.99 and "reversed channels along axis 3" in first["evidence"]


@pytest.mark.parametrize(
    "kind, op",
    [
        ("reversed", "resnet/pool/MaxPool"),
        ("reversed", "resnet/pool/Mean"),
        ("reversed_input", "trans_Cast_0"),
        ("reversed_input", "resnet/conv1/Conv2D"),
    ],
)
def test_a_carried_in_permutation_that_explains_nothing_is_not_named(compared, kind, op):
    root = compared(kind)
    (entry,) = _why(root, op)
    assert entry["cause"] == "input" and entry["causes"][0]["score"] > 0.99
    assert all(cause["score"] >= MIN_NAMED for cause in entry["causes"]), entry["causes"]
    assert "permutation" not in [cause["cause"] for cause in entry["causes"]]
    text = cli("--data", str(root), "why", op)
    assert text.returncode == ExitStatus.FLAGGED and "cause: input" in text.stdout
    assert "explains 0%" not in text.stdout and "permutation" not in text.stdout
