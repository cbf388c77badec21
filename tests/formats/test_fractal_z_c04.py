"""FRACTAL_Z_C04 both ways, against a loop written from GE's definition (the codec's docstring).

The oracle places every host element by the index arithmetic of GE's NCHW -> FRACTAL_Z_C04
transfer: with the channel padded to 4, element (n, c, h, w) is column k = (h*W + w)*4 + c of
row n of an [N, H*W*4] matrix, which is cut into C0 x C0 fractals stored [k // C0][n // C0]
[n % C0][k % C0].
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.layouts import device_shape, host_layout, to_device, to_host

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LAYOUTS = {"NCHW": "NCHW", "NHWC": "NHWC", "HWCN": "HWCN"}


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def oracle(host_nchw: np.ndarray, c0: int) -> np.ndarray:
    n_, c_, h_, w_ = host_nchw.shape
    device = np.zeros((cdiv(h_ * w_ * 4, c0), cdiv(n_, c0), c0, c0), host_nchw.dtype)
    for n in range(n_):
        for c in range(c_):
            for h in range(h_):
                for w in range(w_):
                    k = (h * w_ + w) * 4 + c
                    device[k // c0, n // c0, n % c0, k % c0] = host_nchw[n, c, h, w]
    return device


def numbered(shape) -> np.ndarray:
    return np.arange(1, math.prod(shape) + 1, dtype=np.int32).reshape(shape)


def _in_layout(nchw: np.ndarray, layout: str) -> np.ndarray:
    return nchw.transpose(["NCHW".index(ch) for ch in layout])


def test_first_convolution_weight_of_a_real_build_graph():
    """Origin (64, 3, 7, 7) NCHW is (13, 4, 16, 16) on the device (issue 9)."""
    host = numbered((64, 3, 7, 7)).astype(np.float16)
    assert device_shape(host.shape, "FRACTAL_Z_C04", "NCHW") == (13, 4, 16, 16)
    device = to_device(host, "FRACTAL_Z_C04", "NCHW")
    np.testing.assert_array_equal(device, oracle(host, 16))
    np.testing.assert_array_equal(to_host(device, "FRACTAL_Z_C04", (64, 3, 7, 7), "NCHW"), host)
    np.testing.assert_array_equal(to_host(device, "FRACTAL_Z_C04", (64, 3, 7, 7)), host)  # inferred
    assert host_layout(device.shape, "FRACTAL_Z_C04", (64, 3, 7, 7)) == "NCHW"


def test_a_tiny_literal():
    host = np.array([1, 2], np.float32).reshape(1, 2, 1, 1)  # N=1, C=2, H=W=1
    device = to_device(host, "FRACTAL_Z_C04", "NCHW")
    assert device.shape == (1, 1, 16, 16)
    assert device[0, 0, 0, :4].tolist() == [1, 2, 0, 0] and np.count_nonzero(device) == 2


@SETTINGS
@given(
    n=st.integers(1, 40),
    c=st.integers(1, 4),
    h=st.integers(1, 5),
    w=st.integers(1, 5),
    c0=st.sampled_from([16, 32]),
    layout=st.sampled_from(sorted(LAYOUTS)),
)
def test_round_trip_against_the_oracle(n, c, h, w, c0, layout):
    nchw = numbered((n, c, h, w))
    host = _in_layout(nchw, layout)
    device = to_device(host, "FRACTAL_Z_C04", layout, c0=c0)
    expected = oracle(nchw, c0)
    assert device.shape == expected.shape == device_shape(host.shape, "FRACTAL_Z_C04", layout, c0=c0)
    np.testing.assert_array_equal(device, expected)
    np.testing.assert_array_equal(to_host(device, "FRACTAL_Z_C04", host.shape, layout), host)
    assert np.count_nonzero(device) == host.size  # the padding is zero


@SETTINGS
@given(n=st.integers(1, 40), c=st.integers(1, 4), h=st.integers(1, 5), w=st.integers(1, 5))
def test_origin_left_out_reads_tensorflow_hwcn_first(n, c, h, w):
    hwcn = _in_layout(numbered((n, c, h, w)), "HWCN")
    device = to_device(hwcn, "FRACTAL_Z_C04", "HWCN")
    np.testing.assert_array_equal(to_host(device, "FRACTAL_Z_C04", hwcn.shape), hwcn)


def test_more_than_four_channels_is_an_error_not_a_wrong_tensor():
    with pytest.raises(PrecisionToolError, match="at most 4 channels"):
        to_device(numbered((2, 5, 1, 1)), "FRACTAL_Z_C04", "NCHW")
    device = to_device(numbered((2, 3, 2, 2)), "FRACTAL_Z_C04", "NCHW")
    with pytest.raises(PrecisionToolError, match="at most 4 channels, not 5"):
        to_host(device, "FRACTAL_Z_C04", (2, 5, 2, 2), "NCHW")
    with pytest.raises(PrecisionToolError, match="does not fit"):
        to_host(device, "FRACTAL_Z_C04", (2, 3, 3, 2), "NCHW")


def test_a_dumped_fractal_z_c04_weight_reads_back_in_host_layout(tmp_path):
    from precision_tool.formats.dump import read_dump
    from precision_tool.formats.dump_write import TensorSpec, write_dump

    host = (numbered((64, 3, 7, 7)) % 1000).astype(np.float16)
    device = oracle(host, 16)
    path = tmp_path / "Conv2D.conv1.1.0.1700000000000000"
    write_dump(path, "conv1", [TensorSpec(device, "FLOAT16", "FRACTAL_Z_C04", (64, 3, 7, 7))], [])
    (tensor,) = read_dump(path).inputs
    assert tensor.format == "FRACTAL_Z_C04" and tensor.shape == (13, 4, 16, 16)
    np.testing.assert_array_equal(tensor.host("NCHW"), host)
