"""Replay: recompute an op in float64 numpy from its own NPU inputs and the graph attributes.

One small function per op type, registered in :data:`.registry.REGISTRY`; importing this
package registers them all. :func:`run_replay` replays an op (fused ops by composing their TF
ops) or raises :class:`ReplayError` saying why it cannot ("no replay for TYPE").
"""

from . import conv, elementwise, linalg, norm, shape  # noqa: F401  (they register their replays)
from .registry import REGISTRY, ReplayArgs, ReplayError, run_replay, tf_type

__all__ = ["REGISTRY", "ReplayArgs", "ReplayError", "run_replay", "tf_type"]
