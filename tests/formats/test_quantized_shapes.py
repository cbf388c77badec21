"""8-bit tensors as Huawei's operator tests describe them (tests/data/int8_device_shapes.json).

Each tuple is an origin shape and format with the device shape Ascend gives it, copied from the
files tests/data/README.md names: the converter must reproduce the device shape from the dtype's
C0 alone and read a tensor of that shape back into the origin shape.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from precision_tool.formats.layouts import device_shape, host_layout, to_device, to_host

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "int8_device_shapes.json").read_text())
HOST_DTYPE = {"INT8": np.int8, "UINT8": np.uint8}


def _id(case):
    shape = "x".join(map(str, case["origin_shape"]))
    return f"{case['dtype']}-{case['format']}-{case['origin_format']}-{shape}"


@pytest.mark.parametrize("case", DATA["agree"], ids=_id)
def test_the_device_shape_follows_from_the_dtype(case):
    origin, device = tuple(case["origin_shape"]), tuple(case["device_shape"])
    assert device[-1] == 32  # every 8-bit tensor here has C0 = 32
    assert device_shape(origin, case["format"], case["origin_format"], dtype=case["dtype"]) == device


@pytest.mark.parametrize("case", DATA["agree"], ids=_id)
def test_a_tensor_of_the_device_shape_reads_back(case):
    origin, device = tuple(case["origin_shape"]), tuple(case["device_shape"])
    dtype = HOST_DTYPE[case["dtype"]]
    host = (np.arange(math.prod(origin)) % 100 + 1).astype(dtype).reshape(origin)
    on_device = to_device(host, case["format"], case["origin_format"], dtype=case["dtype"])
    assert on_device.shape == device
    back = to_host(on_device, case["format"], origin, case["origin_format"])
    np.testing.assert_array_equal(back, host)
    expected = "ND" if case["format"] == "FRACTAL_NZ" else case["origin_format"]
    assert host_layout(device, case["format"], origin, case["origin_format"]) == expected


@pytest.mark.parametrize("case", DATA["two_dim_fractal_z"], ids=_id)
def test_two_dim_fractal_z_matmul_weights_are_read_as_ge_lays_them_out(case):
    """GE lays a (K, N) matmul weight out as [ceil(K/C0), ceil(N/16), 16, C0]; the padded
    NCHW reading does not fit such a device shape, so the weight reading is used. The expected
    host comes from that layout's index formula, written out here."""
    (k, n), device = tuple(case["origin_shape"]), tuple(case["device_shape"])
    c0 = device[-1]
    raw = np.arange(int(np.prod(device)), dtype=np.int64).reshape(device).astype(np.int8 if c0 == 32 else np.float16)
    kk, nn = np.meshgrid(np.arange(k), np.arange(n), indexing="ij")
    expected = raw[kk // c0, nn // 16, nn % 16, kk % c0]
    np.testing.assert_array_equal(to_host(raw, case["format"], (k, n), case["origin_format"]), expected)
