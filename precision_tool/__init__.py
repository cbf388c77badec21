"""PrecisionTool: find the operator where a network's numbers go wrong on Ascend NPUs.

The public Python API reads the real files without CANN::

    import precision_tool as pt
    dump = pt.read_dump("npu/debug_0/dump/.../Conv2D.model_conv1_Conv2D.12.0.1718170000000074")
    dump.outputs[0].host()                 # numpy array in host layout (NHWC, HWCN, ND...)
    graph = pt.read_graph("npu/debug_0/graph/ge_proto_00000001_Build.txt")  # or ge_onnx_*.pbtxt
    golden = pt.read_golden("tf/dump")
    golden.lookup("model/conv1/Relu", 0)   # memory-mapped numpy array
    for g in pt.read_fusion_result("fusion_result.json"):   # any of GE's four forms
        print(g.session_id, g.graph_id, [(r.name, r.effect_times, r.match_times)
                                         for r in g.effective("graph_fusion")])
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import PrecisionToolError
from .formats.dump import DumpFile, DumpTensor, read_dump
from .formats.fusion_result import FusionGraph, FusionRule, read_fusion_result
from .formats.golden import GoldenIndex, read_golden
from .formats.graph import read_graph

__all__ = [
    "__version__", "PrecisionToolError", "DumpFile", "DumpTensor", "FusionGraph", "FusionRule",
    "GoldenIndex", "read_dump", "read_fusion_result", "read_golden", "read_graph",
]
