"""C0 from the dtype (precision_tool.formats.blocked_formats.c0_for) through every blocked format.

The expected C0 of each type is written out by hand from the rule the sources state (GE's cube
size: 32 for 1-byte types, else 16; CANN's platform ini ``[DtypeMKN]``: int4 K = 64), and the
expected device shapes are plain arithmetic on the host dims. Element placement is checked
against the independent index loops of test_layouts.py and test_fractal_z_c04.py.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.formats.blocked_formats import c0_for
from precision_tool.formats.dtypes import dump_dtype
from precision_tool.formats.dump import read_dump
from precision_tool.formats.dump_write import TensorSpec, write_dump
from precision_tool.formats.layouts import device_shape, host_layout, to_device, to_host
from precision_tool.formats.proto.dump_enums import DATA_TYPE_VALUES
from tests.formats.test_fractal_z_c04 import oracle as fz_c04_oracle
from tests.formats.test_layouts import letters, oracle

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

C0 = {
    "FLOAT16": 16,
    "BF16": 16,
    "FLOAT": 16,
    "DOUBLE": 16,
    "INT32": 16,
    "INT8": 32,
    "UINT8": 32,
    "BOOL": 32,
    "FLOAT8_E4M3FN": 32,
    "INT4": 64,
    "FLOAT4_E2M1": 64,
    "INT2": 128,
    "UINT1": 256,
}
# the dtypes the round trips run through; INT4 values live unpacked in int8, as the reader gives them
HOST = {
    "FLOAT16": np.float16,
    "BF16": ml_dtypes.bfloat16,
    "FLOAT": np.float32,
    "INT8": np.int8,
    "UINT8": np.uint8,
    "INT4": np.int8,
}
LAYOUTS = {"NCHW": ["NCHW", "NHWC", "HWCN", "CHWN", "ND"], "NCDHW": ["NCDHW", "NDHWC", "DHWCN", "ND"]}


def cdiv(a, b):
    return -(-a // b)


@pytest.mark.parametrize("name, c0", sorted(C0.items()))
def test_c0_of_every_dump_type(name, c0):
    assert c0_for(name) == c0_for("DT_" + name) == c0
    assert c0_for(dump_dtype(DATA_TYPE_VALUES[name])) == c0


@pytest.mark.parametrize(
    "dtype, c0",
    [
        (np.float16, 16),
        (ml_dtypes.bfloat16, 16),
        (np.float32, 16),
        (np.float64, 16),
        (np.int8, 32),
        (np.uint8, 32),
        (ml_dtypes.int4, 64),
        ("int4", 64),
        ("float16", 16),
    ],
)
def test_c0_of_numpy_dtypes(dtype, c0):
    assert c0_for(dtype) == c0


def values(shape, name, seed=0):
    """Non-zero values the dtype holds exactly (int4: 1..7 with either sign)."""
    rng = np.random.default_rng(seed)
    top = {"INT4": 7, "INT8": 127, "UINT8": 255}.get(name, 100)
    magnitude = rng.integers(1, top + 1, size=shape)
    sign = np.where(rng.random(shape) < 0.5, -1, 1) if name not in ("UINT8",) else 1
    return (magnitude * sign).astype(HOST[name])


def expected_shape(fmt, host_shape, host_format, c0):
    """The device shape by arithmetic on the host dims (ungrouped)."""
    canon = "NCDHW" if fmt in ("NDC1HWC0", "FRACTAL_Z_3D") else "NCHW"
    d, _ = letters(host_shape, host_format, canon)
    n, c, h, w, depth = d["N"], d["C"], d["H"], d["W"], d.get("D", 1)
    return {
        "NC1HWC0": (n, cdiv(c, c0), h, w, c0),
        "NC1HWC0_C04": (n, cdiv(c, 4), h, w, 4),
        "NDC1HWC0": (n, depth, cdiv(c, c0), h, w, c0),
        "FRACTAL_Z": (cdiv(c, c0) * h * w, cdiv(n, 16), 16, c0),
        "FRACTAL_Z_3D": (depth * cdiv(c, c0) * h * w, cdiv(n, 16), 16, c0),
        "C1HWNCoC0": (cdiv(c, c0), h, w, n, c0, c0),
        "FRACTAL_Z_C04": (cdiv(h * w * 4, c0), cdiv(n, c0), c0, c0),
    }[fmt]


def placed(host, fmt, host_format, c0, groups=1):
    """The device tensor by the index loops of the other test modules."""
    if fmt == "FRACTAL_Z_C04":
        s, layout = letters(host.shape, host_format, "NCHW")
        nchw = host.reshape([s[ch] for ch in layout]).transpose([layout.index(ch) for ch in "NCHW"])
        return fz_c04_oracle(nchw, c0)
    return oracle(host, fmt, host_format, c0, groups)


def check(host, fmt, host_format, name, groups=1):
    c0 = C0[name]
    device = to_device(host, fmt, host_format, groups=groups, dtype=name)
    expected = placed(host, fmt, host_format, c0, groups)
    assert device.shape == expected.shape
    assert device_shape(host.shape, fmt, host_format, groups=groups, dtype=name) == device.shape
    if groups == 1:
        assert device.shape == expected_shape(fmt, host.shape, host_format, 4 if fmt == "NC1HWC0_C04" else c0)
    np.testing.assert_array_equal(device, expected)
    assert np.count_nonzero(device) == host.size  # the padding is zero, nothing is lost
    back = to_host(device, fmt, host.shape, host_format, groups=groups)
    np.testing.assert_array_equal(back, host)
    return device


@st.composite
def host_case(draw, fmt):
    """A host shape in some layout; C crosses 64 (int4's C0), N crosses 16 and 64."""
    canon = "NCDHW" if fmt in ("NDC1HWC0", "FRACTAL_Z_3D") else "NCHW"
    layout = draw(st.sampled_from(LAYOUTS[canon]))
    sizes = {
        "N": draw(st.integers(1, 70 if fmt == "FRACTAL_Z_C04" else 17)),
        "C": draw(st.integers(1, 4 if fmt.endswith("C04") else 70)),
        "H": draw(st.integers(1, 2)),
        "W": draw(st.integers(1, 2)),
        "D": draw(st.integers(1, 2)),
    }
    shape = tuple(sizes[ch] for ch in (canon if layout == "ND" else layout))
    name = draw(st.sampled_from(sorted(HOST)))
    return values(shape, name, draw(st.integers(0, 9))), layout, name


@pytest.mark.parametrize(
    "fmt", ["NC1HWC0", "NC1HWC0_C04", "NDC1HWC0", "FRACTAL_Z", "FRACTAL_Z_3D", "C1HWNCoC0", "FRACTAL_Z_C04"]
)
@SETTINGS
@given(data=st.data())
def test_round_trip_with_c0_from_the_dtype(fmt, data):
    host, layout, name = data.draw(host_case(fmt))
    check(host, fmt, layout, name)


@SETTINGS
@given(
    groups=st.integers(2, 4),
    cout=st.integers(1, 6),
    cin=st.integers(1, 40),
    name=st.sampled_from(sorted(HOST)),
    layout=st.sampled_from(["NCHW", "HWCN"]),
)
def test_grouped_fractal_z_with_c0_from_the_dtype(groups, cout, cin, name, layout):
    sizes = {"N": groups * cout, "C": cin, "H": 1, "W": 2}
    check(values(tuple(sizes[ch] for ch in layout), name), "FRACTAL_Z", layout, name, groups)


@SETTINGS
@given(
    lead=st.lists(st.integers(1, 2), max_size=2),
    h=st.integers(1, 33),
    w=st.integers(1, 140),
    name=st.sampled_from(sorted(HOST)),
)
def test_fractal_nz_is_16_by_c0(lead, h, w, name):
    host = values((*lead, h, w), name)
    c0 = C0[name]
    device = to_device(host, "FRACTAL_NZ", "ND", dtype=name)
    assert device.shape == (*lead, cdiv(w, c0), cdiv(h, 16), 16, c0)
    assert device_shape(host.shape, "FRACTAL_NZ", "ND", dtype=name) == device.shape
    np.testing.assert_array_equal(device, oracle(host, "FRACTAL_NZ", "ND", c0))
    np.testing.assert_array_equal(to_host(device, "FRACTAL_NZ", host.shape), host)


@pytest.mark.parametrize(
    "host_dtype, c0",
    [(np.float16, 16), (ml_dtypes.bfloat16, 16), (np.float32, 16), (np.int8, 32), (np.uint8, 32), (np.int32, 16)],
)
def test_to_device_reads_c0_from_the_host_array(host_dtype, c0):
    host = np.ones((2, 40, 1, 1), host_dtype)
    assert to_device(host, "NC1HWC0", "NCHW").shape == (2, cdiv(40, c0), 1, 1, c0)
    assert to_device(host.reshape(2, 40), "FRACTAL_NZ", "ND").shape == (cdiv(40, c0), 1, 16, c0)


def test_the_dtype_wins_over_the_unpacked_array_and_c0_over_both():
    host = np.ones((1, 70, 1, 1), np.int8)  # int4 values, unpacked
    assert to_device(host, "NC1HWC0", "NCHW").shape == (1, 3, 1, 1, 32)
    assert to_device(host, "NC1HWC0", "NCHW", dtype="INT4").shape == (1, 2, 1, 1, 64)
    assert to_device(host, "NC1HWC0", "NCHW", c0=16, dtype="INT4").shape == (1, 5, 1, 1, 16)
    assert device_shape(host.shape, "NC1HWC0", "NCHW") == (1, 5, 1, 1, 16)  # float16 by default
    assert device_shape(host.shape, "NC1HWC0_C04", "NCHW", dtype="INT8") == (1, 18, 1, 1, 4)


@pytest.mark.parametrize(
    "fmt, shape, layout",
    [
        ("NC1HWC0", (2, 3, 3, 70), "NHWC"),
        ("FRACTAL_Z", (3, 3, 70, 20), "HWCN"),
        ("FRACTAL_Z_C04", (20, 3, 2, 2), "NCHW"),
        ("C1HWNCoC0", (2, 40, 1, 2), "NCHW"),
        ("NDC1HWC0", (1, 2, 2, 2, 40), "NDHWC"),
        ("FRACTAL_NZ", (3, 5, 70), "ND"),
    ],
)
@pytest.mark.parametrize("name", ["INT4", "INT8", "UINT8", "BF16", "FLOAT16", "FLOAT"])
def test_a_dump_written_with_the_dtype_c0_reads_back(tmp_path, fmt, shape, layout, name):
    """Through the dump file: INT4 is packed two per byte there and C0 is still 64."""
    host = values(shape, name, seed=3)
    device = to_device(host, fmt, layout, dtype=name)
    assert device.shape[-1] == C0[name]
    path = write_dump(
        tmp_path / "Conv2D.q.1.2.1700000000000000",
        "q",
        [TensorSpec(device, name, fmt, shape, original_op=("t", 0, layout))],
        [],
    )
    (tensor,) = read_dump(path).inputs
    np.testing.assert_array_equal(tensor.host(), host)


@pytest.mark.parametrize(
    "name, c0, shape", [("INT8", 16, (2, 3, 3, 20)), ("FLOAT", 8, (2, 3, 3, 20)), ("FLOAT16", 32, (2, 3, 3, 40))]
)
def test_a_dump_whose_c0_disagrees_with_its_dtype_reads_by_its_shape(tmp_path, name, c0, shape):
    """Real devices can use another C0 (FE gives some float32 ops 8): the device shape wins."""
    host = values(shape, name, seed=5)
    device = to_device(host, "NC1HWC0", "NHWC", c0=c0)
    assert device.shape == (2, cdiv(shape[-1], c0), 3, 3, c0)
    path = write_dump(
        tmp_path / "Conv2D.odd.1.2.1700000000000000", "odd", [TensorSpec(device, name, "NC1HWC0", shape)], []
    )
    (tensor,) = read_dump(path).inputs
    np.testing.assert_array_equal(tensor.host("NHWC"), host)
    np.testing.assert_array_equal(tensor.host(), host)  # NHWC inferred with this C0 too
    assert host_layout(device.shape, "NC1HWC0", shape) == "NHWC"


def test_host_layout_of_an_empty_device_shape_needs_no_c0():
    assert host_layout((), "NC1HWC0", (2, 3, 4, 5), "NHWC") == "NHWC"
    assert host_layout((2, 1, 4, 5, 0), "NC1HWC0", (2, 3, 4, 5)) == "NCHW"
