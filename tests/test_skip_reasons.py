"""Issue 12.14: a test that needs ../shared skips with exactly one of two reasons."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, FIXTURES_SKIP_REASON, REAL, REAL_SKIP_REASON, require_shared

TESTS = Path(__file__).resolve().parent
REASONS = {"../shared/fixtures not present beside this clone", "../shared/real not present beside this clone"}


def test_the_reasons_are_the_documented_sentences():
    assert {FIXTURES_SKIP_REASON, REAL_SKIP_REASON} == REASONS


@pytest.mark.parametrize("path, reason", [(FIXTURES / "no_such_case", FIXTURES_SKIP_REASON),
                                          (REAL / "no_such_file", REAL_SKIP_REASON)])
def test_require_shared_skips_with_the_one_reason(path, reason):
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_shared(path)
    assert str(skipped.value) == reason


def _skip_reasons(tree: ast.AST):
    """The reason argument of every ``pytest.skip(...)``, ``mark.skip(reason=...)`` and
    ``skipif(..., reason=...)`` call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).rsplit(".", 1)[-1] in ("skip", "skipif"):
            args = [k.value for k in node.keywords if k.arg == "reason"]
            if ast.unparse(node.func).endswith("pytest.skip") and node.args:
                args.append(node.args[0])
            yield from args


def test_no_test_spells_a_shared_skip_reason_of_its_own():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for reason in _skip_reasons(ast.parse(path.read_text(encoding="utf-8"))):
            text = reason.value if isinstance(reason, ast.Constant) else ast.unparse(reason)
            if "shared" in str(text) and text not in REASONS:
                found.append(f"{path.relative_to(TESTS)}:{reason.lineno}: {text}")
    assert found == []


def test_the_checker_finds_a_reason_of_its_own():
    tree = ast.parse('import pytest\npytest.skip("../shared/fixtures is absent")\n'
                     'x = pytest.mark.skip(reason=f"{p}: ../shared is not beside this clone")\n'
                     'pytest.skip(FIXTURES_SKIP_REASON)\n')
    reasons = [ast.unparse(r) for r in _skip_reasons(tree)]
    assert len(reasons) == 3 and "'../shared/fixtures is absent'" in reasons
