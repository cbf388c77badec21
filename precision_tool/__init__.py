"""PrecisionTool: find the operator where a network's numbers go wrong on Ascend NPUs.

The public Python API reads the real files without CANN, and compares them::

    import precision_tool as pt
    result = pt.compare("precision_data")  # NPU debug_0 against tf/dump, all ten metrics
    result.first_divergence()              # the first op that introduces the error
    result.to_pandas()                     # the CSV's columns as a DataFrame
    dump = pt.read_dump("npu/debug_0/dump/.../Conv2D.model_conv1_Conv2D.12.0.1718170000000074")
    dump.outputs[0].host()                 # numpy array in host layout (NHWC, HWCN, ND...)
    graph = pt.read_graph("npu/debug_0/graph/ge_proto_00000001_Build.txt")  # or ge_onnx_*.pbtxt
    golden = pt.read_golden("tf/dump")
    golden.lookup("model/conv1/Relu", 0)   # memory-mapped numpy array
    for g in pt.read_fusion_result("fusion_result.json"):   # any of GE's four forms
        print(g.session_id, g.graph_id, [(r.name, r.effect_times, r.match_times)
                                         for r in g.effective("graph_fusion")])

Names are imported on first use, so ``precision-tool --version`` does not pay for numpy.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

from .errors import PrecisionToolError  # noqa: E402  (light: no numpy)

# public name -> module that defines it
_LAZY = {
    "DumpFile": ".formats.dump",
    "DumpTensor": ".formats.dump",
    "read_dump": ".formats.dump",
    "GoldenIndex": ".formats.golden",
    "read_golden": ".formats.golden",
    "read_graph": ".formats.graph",
    "FusionGraph": ".formats.fusion_result",
    "FusionRule": ".formats.fusion_result",
    "read_fusion_result": ".formats.fusion_result",
    "CompareResult": ".compare.api",
    "ComparisonResult": ".compare.api",
    "CompareRow": ".compare.result",
    "Metric": ".compare.metrics",
}

__all__ = ["__version__", "PrecisionToolError", "compare", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name == "compare":  # the callable package, see compare/__init__.py
        return importlib.import_module(".compare", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
