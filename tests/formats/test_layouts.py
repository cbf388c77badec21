"""Tests for precision_tool.formats.layouts.

The oracles below are written independently from the index formulas of FORMATS.md section 3,
with explicit Python loops over every host element, and the vectorised code is checked against
them on hand-picked and on random small shapes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.layouts import (
    SUPPORTED_DEVICE_FORMATS,
    convert_host_format,
    device_shape,
    to_device,
    to_host,
)

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def cdiv(a, b):
    return (a + b - 1) // b


def letters(host_shape, host_format, canon):
    """The host shape as a letter -> size dict, padding short shapes NCHW-style."""
    shape = tuple(host_shape)
    if len(shape) < len(canon):
        shape = (1,) + shape + (1,) * (len(canon) - 1 - len(shape))
        host_format = canon
    if host_format == "ND":
        host_format = canon
    return dict(zip(host_format, shape)), host_format


def host_items(host, host_format, canon):
    """Yield (letter -> index dict, value) for every host element."""
    sizes, layout = letters(host.shape, host_format, canon)
    padded = host.reshape([sizes[ch] for ch in layout])
    for index in np.ndindex(padded.shape):
        yield dict(zip(layout, index)), padded[index]


# --- oracles: one explicit loop per format, straight from FORMATS.md ------------------------


def oracle_nc1hwc0(host, host_format, c0):
    s, _ = letters(host.shape, host_format, "NCHW")
    dev = np.zeros((s["N"], cdiv(s["C"], c0), s["H"], s["W"], c0), host.dtype)
    for i, v in host_items(host, host_format, "NCHW"):
        dev[i["N"], i["C"] // c0, i["H"], i["W"], i["C"] % c0] = v
    return dev


def oracle_ndc1hwc0(host, host_format, c0):
    s, _ = letters(host.shape, host_format, "NCDHW")
    dev = np.zeros((s["N"], s["D"], cdiv(s["C"], c0), s["H"], s["W"], c0), host.dtype)
    for i, v in host_items(host, host_format, "NCDHW"):
        dev[i["N"], i["D"], i["C"] // c0, i["H"], i["W"], i["C"] % c0] = v
    return dev


def oracle_fractal_z(host, host_format, c0, groups=1):
    """The grouped formula of FORMATS.md; G = 1 gives plain FRACTAL_Z."""
    s, _ = letters(host.shape, host_format, "NCHW")
    cin, cout, h_, w_ = s["C"], s["N"] // groups, s["H"], s["W"]
    e = min(math.lcm(math.lcm(cin, c0) // cin, math.lcm(cout, 16) // cout), groups)
    cin_opt, cout_opt = cdiv(e * cin, c0) * c0, cdiv(e * cout, 16) * 16
    c1 = cin_opt // c0
    shape = (cdiv(groups, e) * c1 * h_ * w_, cout_opt // 16, 16, c0)
    flat = np.zeros(math.prod(shape), host.dtype)
    for i, v in host_items(host, host_format, "NCHW"):
        g, n = divmod(i["N"], cout)
        c, h, w = i["C"], i["H"], i["W"]
        ci, co = (g % e) * cin + c, (g % e) * cout + n
        index = (
            (g // e) * c1 * h_ * w_ * cout_opt * c0
            + (ci // c0) * h_ * w_ * cout_opt * c0
            + h * w_ * cout_opt * c0
            + w * cout_opt * c0
            + co * c0
            + ci % c0
        )
        flat[index] = v
    return flat.reshape(shape)


def oracle_fractal_z_3d(host, host_format, c0):
    s, _ = letters(host.shape, host_format, "NCDHW")
    c1, h_, w_, npad = cdiv(s["C"], c0), s["H"], s["W"], cdiv(s["N"], 16) * 16
    shape = (s["D"] * c1 * h_ * w_, npad // 16, 16, c0)
    flat = np.zeros(math.prod(shape), host.dtype)
    for i, v in host_items(host, host_format, "NCDHW"):
        d, c, h, w, n = i["D"], i["C"], i["H"], i["W"], i["N"]
        index = (
            d * c1 * h_ * w_ * npad * c0
            + (c // c0) * h_ * w_ * npad * c0
            + h * w_ * npad * c0
            + w * npad * c0
            + n * c0
            + c % c0
        )
        flat[index] = v
    return flat.reshape(shape)


def oracle_c1hwncoc0(host, host_format, c0):
    s, _ = letters(host.shape, host_format, "NCHW")
    h_, w_, n_ = s["H"], s["W"], s["N"]
    shape = (cdiv(s["C"], c0), h_, w_, n_, c0, c0)
    flat = np.zeros(math.prod(shape), host.dtype)
    for i, v in host_items(host, host_format, "NCHW"):
        c, h, w, n = i["C"], i["H"], i["W"], i["N"]
        index = (
            (c // c0) * h_ * w_ * n_ * c0 * c0
            + h * w_ * n_ * c0 * c0
            + w * n_ * c0 * c0
            + n * c0 * c0
            + (c % c0) * c0
            + c % c0
        )
        flat[index] = v
    return flat.reshape(shape)


def oracle_nz(host, c0):
    shape = host.shape if host.ndim >= 2 else (1,) + host.shape
    lead, (h_, w_) = shape[:-2], shape[-2:]
    dev = np.zeros(lead + (cdiv(w_, c0), cdiv(h_, 16), 16, c0), host.dtype)
    for index in np.ndindex(shape):
        *b, h, w = index
        dev[tuple(b) + (w // c0, h // 16, h % 16, w % c0)] = host.reshape(shape)[index]
    return dev


def oracle_plain(host, host_format, device_format):
    if "ND" in (host_format, device_format):
        return host.copy()
    s = dict(zip(host_format, host.shape))
    dev = np.zeros([s[ch] for ch in device_format], host.dtype)
    for index in np.ndindex(host.shape):
        i = dict(zip(host_format, index))
        dev[tuple(i[ch] for ch in device_format)] = host[index]
    return dev


def oracle(host, fmt, host_format, c0=16, groups=1):
    if fmt == "NC1HWC0":
        return oracle_nc1hwc0(host, host_format, c0)
    if fmt == "NC1HWC0_C04":
        return oracle_nc1hwc0(host, host_format, 4)
    if fmt == "NDC1HWC0":
        return oracle_ndc1hwc0(host, host_format, c0)
    if fmt == "FRACTAL_Z":
        return oracle_fractal_z(host, host_format, c0, groups)
    if fmt == "FRACTAL_Z_3D":
        return oracle_fractal_z_3d(host, host_format, c0)
    if fmt == "C1HWNCoC0":
        return oracle_c1hwncoc0(host, host_format, c0)
    if fmt == "FRACTAL_NZ":
        return oracle_nz(host, c0)
    return oracle_plain(host, host_format, fmt)


def numbered(shape, dtype=np.int32):
    """Distinct non-zero values, so a lost, duplicated or misplaced element shows."""
    return np.arange(1, math.prod(shape) + 1, dtype=dtype).reshape(shape)


def check_both_ways(host, fmt, host_format, c0=16, groups=1):
    expected = oracle(host, fmt, host_format, c0, groups)
    dev = to_device(host, fmt, host_format, groups=groups, c0=c0)
    assert dev.shape == expected.shape
    np.testing.assert_array_equal(dev, expected)
    assert device_shape(host.shape, fmt, host_format, groups=groups, c0=c0) == expected.shape
    back = to_host(expected, fmt, host.shape, host_format, groups=groups)
    assert back.shape == host.shape
    np.testing.assert_array_equal(back, host)
    # Padding is zero: exactly the host's elements are non-zero on the device.
    assert np.count_nonzero(dev) == host.size
    assert dev.sum(dtype=np.int64) == host.sum(dtype=np.int64)
    return dev


# --- hand-checked examples --------------------------------------------------------------


def test_nc1hwc0_literal():
    host = np.array([1, 2, 3], np.float32).reshape(1, 3, 1, 1)  # NCHW, C = 3
    dev = to_device(host, "NC1HWC0", "NCHW")
    assert dev.shape == (1, 1, 1, 1, 16)
    assert dev.ravel().tolist() == [1, 2, 3] + [0] * 13
    np.testing.assert_array_equal(to_host(dev, "NC1HWC0", [1, 3, 1, 1], "NCHW"), host)


def test_nc1hwc0_nhwc_literal():
    host = numbered((1, 1, 2, 17))  # NHWC: W = 2, C = 17 -> C1 = 2
    dev = to_device(host, "NC1HWC0", "NHWC")
    assert dev.shape == (1, 2, 1, 2, 16)
    assert dev[0, 0, 0, 1].tolist() == list(range(18, 34))
    assert dev[0, 1, 0, 1].tolist() == [34] + [0] * 15
    np.testing.assert_array_equal(to_host(dev, "NC1HWC0", (1, 1, 2, 17), "NHWC"), host)


def test_fractal_nz_literal():
    host = numbered((2, 3))
    dev = to_device(host, "FRACTAL_NZ", "ND")
    assert dev.shape == (1, 1, 16, 16)
    assert dev[0, 0, 0, :4].tolist() == [1, 2, 3, 0]
    assert dev[0, 0, 1, :4].tolist() == [4, 5, 6, 0]
    assert np.count_nonzero(dev) == 6
    np.testing.assert_array_equal(to_host(dev, "FRACTAL_NZ", [2, 3]), host)


def test_fractal_z_literal():
    host = numbered((17, 1, 1, 1))  # NCHW: N = 17 -> N1 = 2
    dev = to_device(host, "FRACTAL_Z", "NCHW")
    assert dev.shape == (1, 2, 16, 16)
    assert dev[0, 0, :, 0].tolist() == list(range(1, 17))
    assert dev[0, 1, 0, 0] == 17 and np.count_nonzero(dev) == 17


def test_c1hwncoc0_literal():
    host = numbered((1, 2, 1, 1))  # NCHW: C = 2
    dev = to_device(host, "C1HWNCoC0", "NCHW")
    assert dev.shape == (1, 1, 1, 1, 16, 16)
    assert dev[0, 0, 0, 0, 0, 0] == 1 and dev[0, 0, 0, 0, 1, 1] == 2
    assert np.count_nonzero(dev) == 2


@pytest.mark.parametrize(
    "fmt, host_format, shape",
    [
        ("NC1HWC0", "NCHW", (2, 20, 2, 3)),
        ("NC1HWC0", "NHWC", (2, 2, 3, 33)),
        ("NC1HWC0", "HWCN", (2, 3, 5, 2)),
        ("NC1HWC0_C04", "NCHW", (2, 3, 2, 2)),
        ("NC1HWC0_C04", "NHWC", (1, 2, 2, 4)),
        ("NDC1HWC0", "NCDHW", (2, 17, 2, 2, 3)),
        ("NDC1HWC0", "NDHWC", (1, 2, 2, 3, 18)),
        ("FRACTAL_Z", "NCHW", (17, 18, 2, 3)),
        ("FRACTAL_Z", "HWCN", (3, 2, 5, 33)),
        ("FRACTAL_Z", "NHWC", (3, 2, 2, 20)),
        ("FRACTAL_Z_3D", "NCDHW", (17, 3, 2, 2, 2)),
        ("FRACTAL_Z_3D", "DHWCN", (2, 2, 3, 19, 5)),
        ("FRACTAL_Z_3D", "NDHWC", (3, 2, 1, 2, 17)),
        ("C1HWNCoC0", "NCHW", (3, 17, 2, 2)),
        ("C1HWNCoC0", "HWCN", (2, 3, 5, 2)),
        ("C1HWNCoC0", "NHWC", (2, 2, 1, 3)),
        ("FRACTAL_NZ", "ND", (17, 33)),
        ("FRACTAL_NZ", "ND", (2, 3, 5, 20)),
        ("FRACTAL_NZ", "ND", (40,)),
        ("NCHW", "NHWC", (2, 3, 4, 5)),
        ("NHWC", "NCHW", (2, 3, 4, 5)),
        ("HWCN", "NCHW", (2, 3, 4, 5)),
        ("DHWCN", "NCDHW", (2, 3, 4, 5, 6)),
        ("ND", "NHWC", (2, 3, 4)),
    ],
)
def test_matches_oracle(fmt, host_format, shape):
    check_both_ways(numbered(shape), fmt, host_format)


@pytest.mark.parametrize("c0", [16, 32, 64])
def test_c0_from_caller(c0):
    host = numbered((2, 40, 2, 2))
    dev = check_both_ways(host, "NC1HWC0", "NCHW", c0=c0)
    assert dev.shape == (2, cdiv(40, c0), 2, 2, c0)


@pytest.mark.parametrize(
    "groups, shape",
    [
        (2, (4, 3, 2, 2)),
        (3, (6, 5, 1, 2)),
        (4, (8, 16, 1, 1)),
        (2, (34, 7, 1, 1)),
    ],
)
def test_fractal_z_groups_oracle(groups, shape):
    check_both_ways(numbered(shape), "FRACTAL_Z", "NCHW", groups=groups)


def test_fractal_z_groups_hwcn_origin():
    host = numbered((2, 1, 3, 6))  # HWCN: cin = 3, N = 6 = 3 groups x 2
    check_both_ways(host, "FRACTAL_Z", "HWCN", groups=3)


@pytest.mark.parametrize(
    "fmt, shape, expected",
    [
        ("NC1HWC0", (5,), (1, 1, 1, 1, 16)),
        ("NC1HWC0", (20, 3), (1, 2, 3, 1, 16)),
        ("NC1HWC0", (20, 3, 4), (1, 2, 3, 4, 16)),
        ("FRACTAL_Z", (20, 3), (2 * 3, 1, 16, 16)),
        ("NDC1HWC0", (20, 2, 3, 4), (1, 2, 2, 3, 4, 16)),
        ("NDC1HWC0", (20,), (1, 1, 2, 1, 1, 16)),
    ],
)
def test_short_shapes_are_padded_nchw_style(fmt, shape, expected):
    host = numbered(shape)
    assert device_shape(shape, fmt, "NHWC") == expected
    dev = check_both_ways(host, fmt, "ND")
    assert dev.shape == expected
    # Whatever the origin format says, a short shape is padded the same way.
    np.testing.assert_array_equal(to_host(dev, fmt, shape, "NHWC"), host)
    np.testing.assert_array_equal(to_host(dev, fmt, shape), host)


# --- property tests -----------------------------------------------------------------------

SIZES = {"N": 20, "C": 40, "H": 3, "W": 3, "D": 2}
FORMATS_4D = ["NC1HWC0", "NC1HWC0_C04", "FRACTAL_Z", "C1HWNCoC0"]
FORMATS_5D = ["NDC1HWC0", "FRACTAL_Z_3D"]
FIRST_CANDIDATE = {
    "NC1HWC0": "NHWC",
    "NC1HWC0_C04": "NHWC",
    "FRACTAL_Z": "HWCN",
    "C1HWNCoC0": "HWCN",
    "NDC1HWC0": "NDHWC",
    "FRACTAL_Z_3D": "DHWCN",
}


@st.composite
def blocked_case(draw, fmt):
    """A host tensor for a blocked format: full rank in some layout, or a short shape."""
    canon = "NCDHW" if fmt in FORMATS_5D else "NCHW"
    layouts = (["NCDHW", "NDHWC", "DHWCN", "DHWNC"] if fmt in FORMATS_5D else ["NCHW", "NHWC", "HWCN", "CHWN"]) + ["ND"]
    host_format = draw(st.sampled_from(layouts))
    rank = draw(st.integers(1, len(canon)))
    if rank < len(canon):
        short = draw(st.lists(st.integers(1, 3), min_size=rank - 1, max_size=rank - 1))
        shape = (draw(st.integers(1, 20)),) + tuple(short)
    else:
        layout = canon if host_format == "ND" else host_format
        sizes = {ch: draw(st.integers(1, SIZES[ch])) for ch in canon}
        shape = tuple(sizes[ch] for ch in layout)
    c0 = 4 if fmt == "NC1HWC0_C04" else draw(st.sampled_from([16, 32]))
    return numbered(shape), host_format, c0


@pytest.mark.parametrize("fmt", FORMATS_4D + FORMATS_5D)
@SETTINGS
@given(data=st.data())
def test_blocked_round_trip(fmt, data):
    host, host_format, c0 = data.draw(blocked_case(fmt))
    dev = check_both_ways(host, fmt, host_format, c0=c0)
    canon = "NCDHW" if fmt in FORMATS_5D else "NCHW"
    if host_format == FIRST_CANDIDATE[fmt] or host.ndim < len(canon):
        np.testing.assert_array_equal(to_host(dev, fmt, host.shape), host)
    elif host_format in ("ND", canon):  # the canonical layout is always a candidate
        assert to_host(dev, fmt, host.shape).shape == host.shape


@SETTINGS
@given(
    groups=st.integers(1, 5),
    cout=st.integers(1, 6),
    cin=st.integers(1, 20),
    h=st.integers(1, 2),
    w=st.integers(1, 2),
    c0=st.sampled_from([16, 32]),
    host_format=st.sampled_from(["NCHW", "HWCN"]),
)
def test_fractal_z_groups_round_trip(groups, cout, cin, h, w, c0, host_format):
    sizes = {"N": groups * cout, "C": cin, "H": h, "W": w}
    host = numbered(tuple(sizes[ch] for ch in host_format))
    check_both_ways(host, "FRACTAL_Z", host_format, c0=c0, groups=groups)


@SETTINGS
@given(
    lead=st.lists(st.integers(1, 3), max_size=2),
    tail=st.lists(st.integers(1, 40), min_size=1, max_size=2),
    c0=st.sampled_from([16, 32]),
)
def test_fractal_nz_round_trip(lead, tail, c0):
    shape = tuple(lead + tail) if len(tail) == 2 else tuple(tail)  # 1-D has no leading dims
    check_both_ways(numbered(shape), "FRACTAL_NZ", "ND", c0=c0)


@SETTINGS
@given(
    pair=st.sampled_from(
        [
            ("NCHW", "NHWC"),
            ("NHWC", "HWCN"),
            ("HWCN", "CHWN"),
            ("NCDHW", "NDHWC"),
            ("DHWCN", "NCDHW"),
            ("NC", "CN"),
            ("ND", "NCHW"),
            ("NCHW", "ND"),
        ]
    ),
    sizes=st.lists(st.integers(1, 4), min_size=5, max_size=5),
)
def test_plain_round_trip(pair, sizes):
    fmt, host_format = pair
    rank = len(host_format) if host_format != "ND" else len(fmt)
    host = numbered(tuple(sizes[:rank]))
    check_both_ways(host, fmt, host_format)
    if fmt != "ND":  # with no origin format the origin is the device format
        dev = to_device(host, fmt, host_format)
        np.testing.assert_array_equal(to_host(dev, fmt, dev.shape), dev)


# --- origin-format inference --------------------------------------------------------------


def test_infers_nchw_when_nhwc_does_not_fit():
    host = numbered((2, 20, 3, 4))  # NCHW
    dev = to_device(host, "NC1HWC0", "NCHW")
    np.testing.assert_array_equal(to_host(dev, "NC1HWC0", host.shape), host)


def test_infers_nhwc():
    host = numbered((2, 3, 4, 20))  # NHWC
    dev = to_device(host, "NC1HWC0", "NHWC")
    np.testing.assert_array_equal(to_host(dev, "NC1HWC0", host.shape), host)


def test_ambiguous_shape_prefers_nhwc():
    host = numbered((2, 3, 3, 3))
    dev = to_device(host, "NC1HWC0", "NHWC")
    np.testing.assert_array_equal(to_host(dev, "NC1HWC0", host.shape), host)
    as_nchw = to_device(host, "NC1HWC0", "NCHW")
    assert not np.array_equal(to_host(as_nchw, "NC1HWC0", host.shape), host)


@pytest.mark.parametrize(
    "fmt, host_format, shape",
    [
        ("FRACTAL_Z", "HWCN", (3, 3, 5, 7)),
        ("FRACTAL_Z", "NCHW", (7, 5, 3, 2)),
        ("NDC1HWC0", "NCDHW", (2, 20, 2, 3, 4)),
        ("FRACTAL_Z_3D", "NCDHW", (4, 5, 2, 3, 1)),
    ],
)
def test_infers_weight_layouts(fmt, host_format, shape):
    host = numbered(shape)
    dev = to_device(host, fmt, host_format)
    np.testing.assert_array_equal(to_host(dev, fmt, shape), host)


def test_origin_that_cannot_describe_the_shape_is_inferred():
    host = numbered((2, 3, 4, 20))  # NHWC
    dev = to_device(host, "NC1HWC0", "NHWC")
    np.testing.assert_array_equal(to_host(dev, "NC1HWC0", host.shape, "NCDHW"), host)
    np.testing.assert_array_equal(to_host(dev, "NC1HWC0", host.shape, ""), host)


def test_format_names_ignore_case():
    host = numbered((2, 3, 4, 20))
    dev = to_device(host, "nc1hwc0", "nhwc")
    np.testing.assert_array_equal(to_host(dev, "Nc1hwc0", host.shape, "NHWC"), host)


# --- shape mismatches and unsupported formats -------------------------------------------


def test_explicit_origin_that_does_not_fit_raises():
    dev = to_device(numbered((2, 3, 4, 20)), "NC1HWC0", "NHWC")
    with pytest.raises(PrecisionToolError, match="does not fit"):
        to_host(dev, "NC1HWC0", (2, 40, 3, 4), "NCHW")


def test_no_candidate_fits_raises():
    with pytest.raises(PrecisionToolError, match="does not fit"):
        to_host(np.zeros((2, 1, 3, 4, 16)), "NC1HWC0", (2, 40, 3, 4))


def test_too_many_dims_raise():
    with pytest.raises(PrecisionToolError):
        to_host(np.zeros((1, 1, 1, 1, 16)), "NC1HWC0", (1, 1, 1, 1, 1))


@pytest.mark.parametrize("fmt", ["NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ"])
def test_device_without_c0_raises(fmt):
    for dev in (np.zeros((2, 3, 0, 0)), np.float32(1.0)):
        with pytest.raises(PrecisionToolError, match="does not fit"):
            to_host(np.asarray(dev), fmt, (2, 3, 4, 5))


def test_groups_must_divide_n():
    with pytest.raises(PrecisionToolError, match="groups"):
        to_device(numbered((5, 2, 1, 1)), "FRACTAL_Z", "NCHW", groups=2)


def test_unsupported_format_with_matching_count_is_reshaped():
    dev = np.arange(6)
    out = to_host(dev, "FRACTAL_ZN_LSTM", [2, 3])
    assert out.shape == (2, 3) and out.ravel().tolist() == list(range(6))


def test_unsupported_format_with_other_count_raises():
    with pytest.raises(PrecisionToolError, match="unsupported format FRACTAL_ZN_LSTM"):
        to_host(np.arange(6), "FRACTAL_ZN_LSTM", [2, 4])
    with pytest.raises(PrecisionToolError, match="unsupported format FRACTAL_ZN_LSTM"):
        to_device(np.arange(6), "FRACTAL_ZN_LSTM", "ND")
    with pytest.raises(PrecisionToolError, match="unsupported format"):
        device_shape((6,), "FRACTAL_ZN_LSTM", "ND")


def test_supported_formats():
    assert {
        "NC1HWC0",
        "NC1HWC0_C04",
        "NDC1HWC0",
        "FRACTAL_Z",
        "FRACTAL_Z_3D",
        "C1HWNCoC0",
        "FRACTAL_NZ",
        "ND",
        "NCHW",
        "NHWC",
        "HWCN",
        "DHWCN",
        "NCDHW",
        "NDHWC",
    } <= SUPPORTED_DEVICE_FORMATS
    assert "FRACTAL_ZN_LSTM" not in SUPPORTED_DEVICE_FORMATS


# --- special cases of to_host -------------------------------------------------------------


def test_empty_original_shape_keeps_device():
    dev = np.zeros((2, 1, 3, 4, 16))
    assert to_host(dev, "NC1HWC0", []) is dev


@pytest.mark.parametrize("k", [1, 16, 32])
def test_fractal_nz_vector_stored_as_is(k):
    dev = numbered((k,))
    out = to_host(dev, "FRACTAL_NZ", (k,))
    np.testing.assert_array_equal(out, dev)


def test_fractal_nz_mismatch_raises():
    with pytest.raises(PrecisionToolError, match="does not fit"):
        to_host(np.zeros((1, 1, 16, 16)), "FRACTAL_NZ", (17, 3))


def test_plain_shape_already_in_origin_order():
    dev = numbered((2, 3, 4, 5))
    np.testing.assert_array_equal(to_host(dev, "NCHW", (2, 3, 4, 5), "NHWC"), dev)


def test_plain_reshape_when_no_layout_maps_dims():
    dev = numbered((1, 6, 1, 1))
    out = to_host(dev, "NCHW", (2, 3), "ND")
    assert out.shape == (2, 3) and np.shares_memory(out, dev)
    with pytest.raises(PrecisionToolError):
        to_host(dev, "NCHW", (2, 4), "ND")
    with pytest.raises(PrecisionToolError):
        to_host(dev, "NCHW", (2, 1, 1, 3), "NHWC")  # same layouts, dims do not map


def test_results_are_views_where_possible():
    dev = to_device(numbered((2, 3, 4, 5)), "NC1HWC0", "NHWC")  # C1 = 1
    assert np.shares_memory(to_host(dev, "NC1HWC0", (2, 3, 4, 5), "NHWC"), dev)
    plain = numbered((2, 3, 4, 5))
    assert np.shares_memory(to_host(plain, "NCHW", (2, 4, 5, 3), "NHWC"), plain)


def test_to_device_is_contiguous_and_keeps_dtype():
    host = numbered((2, 3, 4, 20), np.float16)
    dev = to_device(host, "NC1HWC0", "NHWC")
    assert dev.flags.c_contiguous and dev.dtype == np.float16


def test_to_device_rejects_a_layout_that_does_not_fit():
    with pytest.raises(PrecisionToolError):
        to_device(numbered((2, 3, 4, 5)), "NC1HWC0", "NCDHW")


# --- convert_host_format ------------------------------------------------------------------


def test_convert_host_format_values():
    nhwc = numbered((2, 3, 4, 5))
    nchw = convert_host_format(nhwc, "NHWC", "NCHW")
    assert nchw.shape == (2, 5, 3, 4)
    assert nchw[1, 4, 2, 3] == nhwc[1, 2, 3, 4]
    chwn = convert_host_format(numbered((2, 3, 4, 5)), "HWCN", "CHWN")
    assert chwn.shape == (4, 2, 3, 5) and chwn[3, 1, 2, 4] == numbered((2, 3, 4, 5))[1, 2, 3, 4]


def test_convert_host_format_nd_is_identity():
    array = numbered((2, 3))
    assert convert_host_format(array, "NCHW", "ND") is array
    assert convert_host_format(array, "ND", "NHWC") is array


@pytest.mark.parametrize(
    "shape, src, dst",
    [
        ((2, 3, 4, 5), "NCHW", "NCDHW"),
        ((2, 3, 4), "NCHW", "NHWC"),
        ((2, 3, 4, 5), "NCHW", "XYZW"),
    ],
)
def test_convert_host_format_impossible(shape, src, dst):
    with pytest.raises(PrecisionToolError):
        convert_host_format(numbered(shape), src, dst)


def test_host_layout_names_what_to_host_returns():
    from precision_tool.formats.layouts import host_layout

    assert host_layout((2, 1, 4, 5, 16), "NC1HWC0", (2, 4, 5, 3)) == "NHWC"
    assert host_layout((2, 1, 4, 5, 16), "NC1HWC0", (2, 3, 4, 5)) == "NCHW"
    assert host_layout((2, 1, 4, 5, 16), "NC1HWC0", (2, 3, 4, 5), "NCHW") == "NCHW"
    assert host_layout((9, 1, 16, 16), "FRACTAL_Z", (3, 3, 3, 8), "HWCN") == "HWCN"
    assert host_layout((1, 1, 16, 16), "FRACTAL_NZ", (2, 8)) == "ND"
    assert host_layout((1, 8, 1, 1, 16), "NC1HWC0", (8,)) == "ND"  # padded and reshaped back
    assert host_layout((2, 3, 4, 5), "NCHW", (2, 4, 5, 3), "NHWC") == "NHWC"


# --- to_host(..., out=): one copy into a caller's buffer ----------------------------------------


def _into(device, fmt, shape, host_format, groups=1):
    out = np.full(shape, -7, device.dtype)  # -7: nothing the host holds (numbered starts at 1)
    back = to_host(device, fmt, shape, host_format, groups=groups, out=out)
    assert back is out
    return out


@pytest.mark.parametrize("fmt", FORMATS_4D + FORMATS_5D)
@SETTINGS
@given(data=st.data())
def test_out_receives_the_host_of_every_blocked_format(fmt, data):
    host, host_format, c0 = data.draw(blocked_case(fmt))
    device = oracle(host, fmt, host_format, c0)  # the independent loops, not to_device
    np.testing.assert_array_equal(_into(device, fmt, host.shape, host_format), host)


@SETTINGS
@given(groups=st.integers(2, 4), cout=st.integers(1, 4), cin=st.integers(1, 20), c0=st.sampled_from([16, 32]))
def test_out_receives_grouped_fractal_z(groups, cout, cin, c0):
    host = numbered((groups * cout, cin, 2, 3))
    device = oracle(host, "FRACTAL_Z", "NCHW", c0, groups)
    np.testing.assert_array_equal(_into(device, "FRACTAL_Z", host.shape, "NCHW", groups), host)


# A FRACTAL_NZ host of rank 2 to 4: leading dims, the two tiled ones, and C0
NZ_CASE = dict(
    lead=st.lists(st.integers(1, 3), max_size=2),
    tail=st.tuples(st.integers(1, 40), st.integers(1, 40)),
    c0=st.sampled_from([16, 32]),
)


@SETTINGS
@given(**NZ_CASE)
def test_out_receives_fractal_nz_and_each_row_converts_alone(lead, tail, c0):
    host = numbered(tuple(lead) + tail)
    device = oracle(host, "FRACTAL_NZ", "ND", c0)
    np.testing.assert_array_equal(_into(device, "FRACTAL_NZ", host.shape, "ND"), host)
    if host.ndim >= 3:  # rows of the leading dim are independent (the engine streams them)
        rows = host.shape[0] // 2 or 1
        part = _into(device[:rows], "FRACTAL_NZ", (rows, *host.shape[1:]), "ND")
        np.testing.assert_array_equal(part, host[:rows])


@pytest.mark.parametrize(
    "shape, host_format", [((3, 5, 4, 40), "NHWC"), ((2, 20, 5, 4), "NCHW"), ((1, 3, 3, 32), "NHWC")]
)
def test_out_receives_nc1hwc0_rows(shape, host_format):
    host = numbered(shape)
    device = oracle(host, "NC1HWC0", host_format, 16)
    for start, stop in ((0, 1), (1, shape[0]), (0, shape[0])):
        part = _into(device[start:stop], "NC1HWC0", (stop - start, *shape[1:]), host_format)
        np.testing.assert_array_equal(part, host[start:stop])


def test_out_receives_plain_layouts_and_rejects_a_wrong_shape():
    dev = numbered((2, 3, 4, 5))
    np.testing.assert_array_equal(_into(dev, "NCHW", (2, 4, 5, 3), "NHWC"), dev.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(_into(dev, "ND", dev.shape, None), dev)
    with pytest.raises(ValueError, match="out has shape"):
        to_host(dev, "NCHW", (2, 4, 5, 3), "NHWC", out=np.empty((2, 3, 4, 5), dev.dtype))


def test_without_out_a_padded_blocked_format_comes_back_contiguous():
    host = numbered((2, 3, 3, 20))
    back = to_host(oracle(host, "NC1HWC0", "NHWC", 16), "NC1HWC0", host.shape, "NHWC")
    assert back.flags.c_contiguous
    np.testing.assert_array_equal(back, host)


def _merges_in_place(tiles: np.ndarray) -> bool:
    """numpy's own answer: whether the two pairs of leading axes merge without a copy."""
    view = tiles.view()
    try:
        view.shape = (tiles.shape[0] * tiles.shape[1], tiles.shape[2] * tiles.shape[3], *tiles.shape[4:])
    except AttributeError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(
    shape=st.tuples(*[st.integers(1, 3)] * 5),
    order=st.permutations(range(5)),
    step=st.sampled_from([1, 2]),
)
def test_tiles_merge_in_place_exactly_when_numpy_merges_them(shape, order, step):
    from precision_tool.formats.layouts import _merged

    base = np.arange(math.prod(shape) * step, dtype=np.int16)[::step].reshape(shape).transpose(order)
    merged = _merged(base)
    assert (merged is not None) == _merges_in_place(base)
    if merged is not None:
        assert np.shares_memory(merged, base)
        np.testing.assert_array_equal(merged, base.reshape(merged.shape))
