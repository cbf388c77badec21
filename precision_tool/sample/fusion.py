"""The sample network's ``fusion_result.json``, as GE writes it: one object per compiled graph,
back to back with nothing between them.

The Build graph's ops carry the passes ConvBiasAddFusionPass (twice), TbeConvReluFusionPass,
BatchNormInferFusionPass and MatMulBiasAddFusionPass; the objects say the same, plus rules that
matched without taking effect (effect_times "0"), which the fusion check leaves out. The
content is fixed, so the file is the same byte for byte every time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .names import MODEL

SESSION_GRAPH_ID = "1_1"  # the sample Build graph's _session_graph_id


def _counts(effect: int, match: int) -> dict[str, str]:
    return {"effect_times": str(effect), "match_times": str(match)}


def fusion_objects() -> list[dict]:
    """The objects of the sample file, in the order GE would append them."""
    init_graph = {  # the variable-initialisation graph, compiled first; older key spelling
        "graphId": "1_0",
        "graph_fusion": {"ConstToAttrPass": _counts(0, 2), "TransOpWithoutReshapeFusionPass": _counts(0, 1)},
        "ub_fusion": {},
    }
    build_graph = {
        "graph_fusion": {
            "ConvBiasAddFusionPass": _counts(2, 2),
            "BatchNormInferFusionPass": _counts(1, 1),
            "MatMulBiasAddFusionPass": _counts(1, 1),
            "ConstToAttrPass": _counts(0, 3),
            "SoftmaxFusionPass": _counts(0, 1),
        },
        "model_name": MODEL,
        "session_and_graph_id": SESSION_GRAPH_ID,
        "ub_fusion": {
            "TbeConvReluFusionPass": _counts(1, 1),
            "TbeEltwiseFusionPass": _counts(0, 1),
            "TbeMultiOutputFusionPass": _counts(0, 2),
        },
    }
    return [init_graph, build_graph]


def write_fusion_sample(root: str | os.PathLike) -> Path:
    """Write ``root/fusion/fusion_result.json`` (objects concatenated); returns its path."""
    path = Path(root) / "fusion" / "fusion_result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(obj, indent=4) for obj in fusion_objects())
    path.write_text(text, encoding="utf-8")
    return path
