"""Explanations as plain JSON-ready data (``why --json``, ``ac --json``; the schema is in
docs/why.md); converted to strict JSON values by :func:`.json_out.plain`."""

from __future__ import annotations

from typing import Any

from ..explain.causes import Cause
from ..explain.diagnosis import Explanation
from .json_out import plain


def _cause(cause: Cause) -> dict[str, Any]:
    return {"cause": cause.name, "evidence": cause.evidence, "numbers": cause.numbers, "score": round(cause.score, 4)}


def explanation_data(e: Explanation) -> dict[str, Any]:
    """One explanation as a dict of the schema docs/why.md shows."""
    replay = e.replay
    return plain(
        {
            "op": e.op,
            "type": e.op_type,
            "output": e.output,
            "dump": e.dump,
            "cause": e.cause,
            "causes": [_cause(c) for c in e.causes],
            "cosine": e.stats.cosine if e.stats else None,
            "relative_euclidean_distance": e.stats.red if e.stats else None,
            "replay": {
                "supported": replay.supported,
                "detail": replay.reason,
                "notes": list(replay.notes),
                "npu_vs_replay_cosine": replay.npu.cosine if replay.npu else None,
                "npu_vs_replay_red": replay.npu.red if replay.npu else None,
                "golden_vs_replay_cosine": replay.golden.cosine if replay.golden else None,
            },
            "notes": list(e.notes),
        }
    )


def to_json_data(explanations: list[Explanation]) -> list[dict[str, Any]]:
    """Every explanation as a dict."""
    return [explanation_data(e) for e in explanations]
