"""Shared test helpers: where the shared fixtures live, and a skip when they do not."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"


def require_shared(path: Path) -> Path:
    """``path`` inside ../shared, or skip the test with the reason when it is absent."""
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared (fixtures from the project's steering repo) "
                    "is not beside this clone")
    return path


@pytest.fixture
def small_case() -> Path:
    """The ``small`` fixture case directory."""
    return require_shared(FIXTURES / "small")
