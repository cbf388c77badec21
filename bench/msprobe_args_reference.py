"""A small PyTorch msprobe dump pair with non-tensor arguments, and the CSV msprobe wrote for it.

Run with the msprobe venv of bench/msprobe_bench.py (mindstudio-probe and torch CPU)::

    /tmp/msprobe-venv/bin/python bench/msprobe_args_reference.py [--msprobe /tmp/msprobe-venv/bin/msprobe]

It writes tests/data/msprobe_args/: ``npu/step0/rank0`` and ``bench/step0/rank0`` (dump.json,
stack.json, construct.json and the ``.pt`` files torch.save wrote) and ``expected.csv``, the
compare_result CSV of ``msprobe compare -tp npu/step0 -gp bench/step0``. The calls hold the
argument kinds msprobe lists besides tensors (None, int, float, bool, str, torch.Size, slice),
an empty list argument (msprobe lists no line for it), a list of tensors (``input.0.0``,
``input.0.1``), a call whose output is no tensor (``Tensor.size``), a P2POp (its tensor is one
line named by the P2POp's place), a module with a parameter
(msprobe puts parameters before outputs), a call with no tensor (a barrier on a process group),
one scalar argument that differs between the runs (msprobe's "scalar parameters" error) and one
output that drifts.

Nothing of precision_tool is imported: the dumps are written with torch and json, the expected
CSV is msprobe's alone. Not a benchmark; it lives here because it needs msprobe to run.
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "msprobe_args"


def _tensor(data_dir: Path, name: str, value) -> dict:
    import torch

    torch.save(value.clone(), data_dir / f"{name}.pt")
    as_float = value.float()
    return {
        "type": "torch.Tensor",
        "dtype": str(value.dtype),
        "shape": list(value.shape),
        "Max": as_float.max().item(),
        "Min": as_float.min().item(),
        "Mean": as_float.mean().item(),
        "Norm": torch.linalg.vector_norm(as_float).item(),
        "requires_grad": False,
        "data_name": f"{name}.pt",
    }


def _calls(run: str) -> list[tuple[str, list, dict, list, dict]]:
    """(key, input_args, input_kwargs, output, parameters) in call order; a tensor is a torch
    tensor, anything else the leaf as msprobe writes it."""
    import torch  # the msprobe venv's: not a dependency of the tool

    torch.manual_seed(7)
    dtype = torch.bfloat16 if run == "npu" else torch.float32
    x = torch.randn(4, 8).to(dtype)
    w = torch.randn(6, 8).to(dtype)
    y = torch.nn.functional.linear(x.float(), w.float()).to(dtype)
    drift = y.clone()
    if run == "npu":
        drift[:, 0] = drift[:, 0] * -3  # the planted output error
    gelu = torch.nn.functional.gelu(drift.float(), approximate="tanh").to(dtype)
    flat = gelu.reshape(2, 12)
    p = 0.2 if run == "npu" else 0.1  # the scalar that differs
    return [
        ("Functional.linear.0.forward", [x, w, None], {}, [y], {}),
        ("Module.fc.Linear.forward.0", [x], {}, [drift], {"weight": w}),
        ("Functional.gelu.0.forward", [drift], {"approximate": {"type": "str", "value": "tanh"}}, [gelu], {}),
        (
            "Tensor.reshape.0.forward",
            [gelu, {"type": "int", "value": 2}, {"type": "int", "value": 12}],
            {},
            [flat],
            {},
        ),
        ("Tensor.view.0.forward", [flat, {"type": "torch.Size", "value": [24]}], {}, [flat.reshape(24)], {}),
        (
            "Functional.dropout.0.forward",
            [flat, {"type": "float", "value": p}, {"type": "bool", "value": False}],
            {"inplace": {"type": "bool", "value": False}},
            [flat],
            {},
        ),
        ("Tensor.__getitem__.0.forward", [flat, {"type": "slice", "value": [0, 1, None]}], {}, [flat[0:1]], {}),
        ("Functional.pad.0.forward", [flat, []], {}, [flat], {}),  # an empty list argument
        ("Torch.cat.0.forward", [[flat, flat]], {"dim": {"type": "int", "value": 0}}, [torch.cat([flat, flat])], {}),
        ("Tensor.size.0.forward", [flat], {}, [{"type": "torch.Size", "value": [2, 12]}], {}),  # no tensor out
        ("Distributed.batch_isend_irecv.0.forward", [[{"p2p": flat}]], {}, [None], {}),
        (  # a call with no tensor at all
            "Distributed.barrier.0.forward",
            [],
            {"group": {"type": "torch.ProcessGroup", "group_ranks": [0, 1], "group_id": 7}},
            [None],
            {},
        ),
    ]


def _write_rank(root: Path, run: str) -> Path:
    import torch

    rank = root / run / "step0" / "rank0"
    data_dir = rank / "dump_tensor_data"
    data_dir.mkdir(parents=True)
    data = {}
    for key, args, kwargs, outputs, parameters in _calls(run):

        def leaf(part: str, value, key: str = key):
            if isinstance(value, dict) and "p2p" in value:  # a torch.distributed.P2POp, as msprobe writes one
                p2p = {"class_type": "torch.distributed.P2POp", "tensor": leaf(part, value["p2p"])}
                return p2p | {"op": "isend", "peer": 1, "tag": 0, "group_id": 7}
            if isinstance(value, list):
                return [leaf(f"{part}.{i}", v) for i, v in enumerate(value)]
            return _tensor(data_dir, f"{key}.{part}", value) if isinstance(value, torch.Tensor) else value

        entry = {
            "input_args": [leaf(f"input.{i}", v) for i, v in enumerate(args)],
            "input_kwargs": {k: leaf(f"input.{k}", v) for k, v in kwargs.items()},
            "output": [leaf(f"output.{i}", v) for i, v in enumerate(outputs)],
        }
        if parameters:
            entry["parameters"] = {k: leaf(f"parameters.{k}", v) for k, v in parameters.items()}
        data[key] = entry
    doc = {"task": "tensor", "level": "mix", "framework": "pytorch", "dump_data_dir": str(data_dir), "data": data}
    (rank / "dump.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    (rank / "stack.json").write_text(json.dumps({key: ["File x.py, line 1, in f"] for key in data}), encoding="utf-8")
    modules = {"Module.fc.Linear.forward.0": None}
    (rank / "construct.json").write_text(json.dumps(modules), encoding="utf-8")
    return rank


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--msprobe", default="/tmp/msprobe-venv/bin/msprobe")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    for run in ("npu", "bench"):
        _write_rank(args.out, run)
    with tempfile.TemporaryDirectory() as scratch:
        command = [args.msprobe, "compare", "-tp", str(args.out / "npu" / "step0"), "-gp"]
        command += [str(args.out / "bench" / "step0"), "-o", scratch]
        subprocess.run(command, check=True)
        (found,) = glob.glob(f"{scratch}/**/compare_result*.csv", recursive=True)
        shutil.copy(found, args.out / "expected.csv")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
