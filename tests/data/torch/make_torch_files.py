"""Writes the reference ``.pt`` files of tests/formats/test_torch_file.py and ``expected.json``:
what torch itself says each file holds, so the tests compare the reader with torch without
torch. Run once, with torch installed (not a dependency of the project):

    python tests/data/torch/make_torch_files.py

Each tensor is written by ``torch.save`` as msprobe writes its dumps (one tensor a file), read
back with ``torch.load(weights_only=True)`` to check, and described by torch: dtype, shape,
stride, storage offset and ``tolist()`` values (floats widened to float64 first, which is exact).
The refused files are real archives whose ``data.pkl`` is replaced by hand-written pickle bytes;
torch's own weights-only loader refuses them too (they are never loaded otherwise).
"""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def tensors():
    """(file stem, tensor) for every dtype msprobe dumps and every layout torch.save keeps."""
    yield "float32", torch.tensor([[1.5, -2.25, 3.0], [math.nan, math.inf, -0.0]])
    yield "float16", torch.tensor([0.1, 65504.0, -1e-4, 6e-8], dtype=torch.float16)
    yield "bfloat16", torch.tensor([1 / 3, 3e38, -7.5, 1e-30], dtype=torch.bfloat16)
    yield "float64", torch.tensor([[1 / 3, -1e300]], dtype=torch.float64)
    yield "int8", torch.tensor([-128, 0, 127], dtype=torch.int8)
    yield "uint8", torch.tensor([0, 200, 255], dtype=torch.uint8)
    yield "int16", torch.tensor([-32768, 7, 32767], dtype=torch.int16)
    yield "int32", torch.tensor([-(2**31), 0, 2**31 - 1], dtype=torch.int32)
    yield "int64", torch.tensor([-(2**63), 5, 2**63 - 1], dtype=torch.int64)
    yield "bool", torch.tensor([[True, False], [False, True]])
    yield "complex64", torch.tensor([1 + 2j, -0.5j], dtype=torch.complex64)
    yield "uint16", torch.tensor([0, 1, 65535], dtype=torch.uint16)
    yield "float8_e4m3fn", torch.tensor([0.5, -448.0, 1.125]).to(torch.float8_e4m3fn)
    yield "float8_e5m2", torch.tensor([0.5, -57344.0, 1.25]).to(torch.float8_e5m2)
    yield "scalar", torch.tensor(2.5)
    yield "empty", torch.zeros(0, 3)
    yield "transposed", torch.arange(12.0).reshape(3, 4).t()
    yield "sliced", torch.arange(20, dtype=torch.int32).reshape(4, 5)[1:3, 2:]
    yield "expanded", torch.tensor([1.0, 2.0, 3.0]).expand(2, 3)
    yield "requires_grad", torch.tensor([1.0, 2.0], requires_grad=True)
    yield "parameter", torch.nn.Parameter(torch.tensor([[0.5, 0.25]]))


def describe(tensor: torch.Tensor) -> dict:
    wide = tensor.detach()
    if wide.is_floating_point():
        wide = wide.to(torch.float64)
    elif wide.is_complex():
        wide = wide.to(torch.complex128)
    values = wide.tolist()
    if wide.is_complex():
        values = [[v.real, v.imag] for v in values]
    return {
        "dtype": str(tensor.dtype),
        "shape": list(tensor.shape),
        "stride": list(tensor.stride()),
        "storage_offset": tensor.storage_offset(),
        "values": values,
    }


def rewrite(source: Path, target: Path, compression=zipfile.ZIP_STORED, rename=None, pickle=None):
    """``source`` written again as ``target``: deflated, its folder renamed, or ``data.pkl``
    replaced."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", compression) as new:
        for info in old.infolist():
            data = old.read(info.filename)
            name = info.filename
            if pickle is not None and name.endswith("/data.pkl"):
                data = pickle
            if rename:
                name = rename + name[name.index("/") :]
            new.writestr(name, data)


# hand-written data.pkl streams, never run by anything: protocol 2, one call each
EVIL = {
    # os.system("echo hi")
    "evil_os_system": (b"\x80\x02cos\nsystem\nq\x00X\x07\x00\x00\x00echo hiq\x01\x85q\x02Rq\x03.", "os.system"),
    # builtins.eval("1+1")
    "evil_builtins_eval": (b"\x80\x02cbuiltins\neval\nq\x00X\x03\x00\x00\x001+1q\x01\x85q\x02R.", "builtins.eval"),
    # torch.FloatStorage(3): a name torch.save uses, called instead of used as a storage type
    "evil_reduce_storage": (b"\x80\x02ctorch\nFloatStorage\nq\x00K\x03\x85q\x01R.", "torch.FloatStorage"),
    # numpy's array reconstructor, which torch emits for tensors of no storage
    "evil_numpy_reconstruct": (
        b"\x80\x02cnumpy.core.multiarray\n_reconstruct\nq\x00)R.",
        "numpy.core.multiarray._reconstruct",
    ),
}


def main() -> None:
    expected = {"torch": torch.__version__, "tensors": {}, "refused": {}}
    for stem, tensor in tensors():
        path = HERE / f"{stem}.pt"
        torch.save(tensor, path)
        loaded = torch.load(path, weights_only=True)
        assert loaded.dtype == tensor.dtype and loaded.shape == tensor.shape
        assert (
            loaded.detach()
            .to(torch.float64 if not tensor.is_complex() else torch.complex128)
            .equal(tensor.detach().to(torch.float64 if not tensor.is_complex() else torch.complex128))
            or stem == "float32"
        )  # NaN is never equal
        expected["tensors"][path.name] = describe(tensor)
    float32 = HERE / "float32.pt"
    for stem, options in (
        ("deflated", {"compression": zipfile.ZIP_DEFLATED}),
        ("renamed_folder", {"rename": "dump_0"}),
    ):
        rewrite(float32, HERE / f"{stem}.pt", **options)
        assert torch.load(HERE / f"{stem}.pt", weights_only=True).shape == (2, 3)
        expected["tensors"][f"{stem}.pt"] = expected["tensors"]["float32.pt"]
    # pickle protocol 4 (STACK_GLOBAL, MEMOIZE, FRAME), which torch.save writes when asked
    protocol4 = torch.arange(6, dtype=torch.int64).reshape(3, 2)[1:]
    torch.save(protocol4, HERE / "protocol4.pt", pickle_protocol=4)
    expected["tensors"]["protocol4.pt"] = describe(protocol4)
    torch.save(torch.tensor([1.0, 2.0]), HERE / "legacy.pt", _use_new_zipfile_serialization=False)
    for stem, (pickle, name) in EVIL.items():
        rewrite(float32, HERE / f"{stem}.pt", pickle=pickle)
        try:
            torch.load(HERE / f"{stem}.pt", weights_only=True)
        except Exception:  # torch's weights-only unpickler refuses it, as it should
            pass
        else:
            raise AssertionError(f"torch loaded {stem}")
        expected["refused"][f"{stem}.pt"] = name
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
