"""Write ``cases.json``: PyTorch API calls on float64 tensors and what torch computed, the
reference of ``tests/compare/test_torch_api.py``.

Run with torch installed (numpy is not needed): ``python make_torch_replay.py``. Each case is
the msprobe key of the call, its positional and keyword arguments (a tensor as
``{"tensor": nested list, "shape": [...]}``, anything else as JSON) and torch's outputs.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

torch.manual_seed(20240601)


def t(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def enc(value):
    if isinstance(value, torch.Tensor):
        return {"tensor": value.tolist(), "shape": list(value.shape)}
    if isinstance(value, (list, tuple)):
        return [enc(v) for v in value]
    return value


CASES = []


def case(key, fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # softmax's implicit dim warns
        out = fn(*args, **kwargs)
    outs = list(out) if isinstance(out, tuple) else [out]
    CASES.append(
        {
            "key": key,
            "args": enc(list(args)),
            "kwargs": {k: enc(v) for k, v in kwargs.items()},
            "outputs": [enc(o) for o in outs],
        }
    )


case("Functional.linear.0.forward", F.linear, t(3, 5), t(4, 5), t(4))
case("Functional.linear.1.forward", F.linear, t(2, 3, 5), t(4, 5))
case("Functional.linear.2.forward", F.linear, t(5), t(4, 5), bias=t(4))
case("Torch.matmul.0.forward", torch.matmul, t(2, 3, 4), t(4, 5))
case("Torch.matmul.1.forward", torch.matmul, t(4), t(4, 3))
case("Tensor.matmul.0.forward", torch.Tensor.matmul, t(2, 1, 3, 4), t(3, 4, 2))
case("Tensor.__matmul__.0.forward", torch.Tensor.__matmul__, t(3, 4), t(4))
case("Torch.bmm.0.forward", torch.bmm, t(2, 3, 4), t(2, 4, 2))
case("Torch.mm.0.forward", torch.mm, t(3, 4), t(4, 2))
case("Torch.addmm.0.forward", torch.addmm, t(3, 2), t(3, 4), t(4, 2), beta=0.5, alpha=2.0)
case("Torch.baddbmm.0.forward", torch.baddbmm, t(2, 3, 2), t(2, 3, 4), t(2, 4, 2), alpha=-1.5)
case("Functional.conv2d.0.forward", F.conv2d, t(2, 3, 7, 6), t(4, 3, 3, 3), t(4), 2, 1)
case("Functional.conv2d.1.forward", F.conv2d, t(1, 2, 8, 7), t(3, 2, 4, 2), None, 1, "same", 2)
case("Functional.conv2d.5.forward", F.conv2d, t(1, 2, 6, 7), t(2, 2, 2, 3), padding="same")  # odd total pad
case("Functional.conv2d.2.forward", F.conv2d, t(1, 4, 6, 6), t(6, 2, 3, 3), t(6), padding="valid", groups=2)
case("Functional.conv2d.3.forward", F.conv2d, t(2, 2, 6, 5), t(3, 2, 2, 3), None, (2, 1), (1, 2), (1, 2))
case("Functional.conv2d.4.forward", F.conv2d, t(3, 5, 5), t(2, 3, 3, 3), padding=1)
case("Torch.conv2d.0.forward", torch.conv2d, t(1, 3, 5, 5), t(3, 1, 3, 3), None, 1, 1, 1, 3)
case("Functional.conv1d.0.forward", F.conv1d, t(2, 3, 9), t(4, 3, 3), t(4), 2, 1)
case("Functional.conv1d.1.forward", F.conv1d, t(1, 2, 8), t(3, 2, 4), padding="same", dilation=2)
case("Functional.conv1d.2.forward", F.conv1d, t(1, 2, 8), t(3, 2, 4), t(3), padding="same")  # odd total pad
case("Functional.layer_norm.0.forward", F.layer_norm, t(2, 3, 4), (4,), t(4), t(4), 1e-5)
case("Functional.layer_norm.1.forward", F.layer_norm, t(2, 3, 4), [3, 4], eps=1e-3)
case("Functional.rms_norm.0.forward", F.rms_norm, t(2, 3, 4), [4])
case("Functional.rms_norm.1.forward", F.rms_norm, t(2, 3, 4) * 1e-3, [3, 4], t(3, 4), 1e-4)
case("Functional.softmax.0.forward", F.softmax, t(2, 3, 4), dim=1)
case("Functional.softmax.1.forward", F.softmax, t(2, 3, 4))  # implicit dim 0 (3-D)
case("Functional.softmax.2.forward", F.softmax, t(3, 4))  # implicit dim 1 (2-D)
case("Torch.softmax.0.forward", torch.softmax, t(3, 5), -1)
case("Tensor.softmax.0.forward", torch.Tensor.softmax, t(3, 5), 0)
case("Functional.log_softmax.0.forward", F.log_softmax, t(2, 5) * 10, dim=-1)
case("Functional.gelu.0.forward", F.gelu, t(3, 4) * 3)
case("Functional.gelu.1.forward", F.gelu, t(3, 4) * 3, approximate="tanh")
case("Functional.silu.0.forward", F.silu, t(3, 4) * 3)
case("Functional.relu.0.forward", F.relu, t(3, 4))
case("Torch.add.0.forward", torch.add, t(2, 3), t(3), alpha=2.5)
case("Tensor.__add__.0.forward", torch.Tensor.__add__, t(2, 3), 1.5)
case("Tensor.__radd__.0.forward", torch.Tensor.__radd__, t(2, 3), 4)
case("Torch.sub.0.forward", torch.sub, t(2, 3), t(2, 3), alpha=0.5)
case("Tensor.__sub__.0.forward", torch.Tensor.__sub__, t(2, 3), t(1, 3))
case("Tensor.__rsub__.0.forward", torch.Tensor.__rsub__, t(2, 3), 3.0)
case("Torch.rsub.0.forward", torch.rsub, t(2, 3), t(2, 3), alpha=2)
case("Tensor.__mul__.0.forward", torch.Tensor.__mul__, t(2, 3), -2.0)
case("Torch.mul.0.forward", torch.mul, t(2, 3), t(2, 1))
case("Torch.div.0.forward", torch.div, t(2, 3) * 5, t(2, 3), rounding_mode="floor")
case("Torch.div.1.forward", torch.div, t(2, 3) * 5, t(2, 3), rounding_mode="trunc")
case("Tensor.__truediv__.0.forward", torch.Tensor.__truediv__, t(2, 3), t(3))
case("Tensor.__rtruediv__.0.forward", torch.Tensor.__rtruediv__, t(2, 3), 2.0)

out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("cases.json"))
out.write_text(json.dumps({"torch": torch.__version__, "cases": CASES}))
print(f"{len(CASES)} cases -> {out} (torch {torch.__version__})")
