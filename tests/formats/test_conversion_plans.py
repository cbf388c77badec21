"""Tests for precision_tool.formats.conversion_plans: a conversion replayed from a kept plan.

The expected host arrays come from the element-by-element oracles of test_layouts (FORMATS.md
section 3), not from the conversion itself: a device tensor is made by the oracle from a
numbered host tensor, and the host tensor must come back, the first time (the plan recorded) and
again for other values of the same shapes (the plan replayed), into a new array or a reused
buffer holding garbage.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from precision_tool.formats.conversion_plans import ConversionPlans
from precision_tool.formats.layouts import to_host

from .test_layouts import FORMATS_4D, FORMATS_5D, NZ_CASE, SETTINGS, blocked_case, numbered, oracle


def _garbage(shape, dtype) -> np.ndarray:
    return np.full(shape, 7777, dtype)


def _other_values(host: np.ndarray) -> np.ndarray:
    """Distinct values unlike ``host``'s, in the same shape and dtype."""
    return (host[::-1] * 3 + 5).reshape(host.shape) if host.ndim else host * 3 + 5


def _round_trips(fmt, host, host_format, c0, plans, groups=1):
    for values in (host, _other_values(host), host):
        device = oracle(values, fmt, host_format, c0, groups)
        for out in (None, _garbage(values.shape, values.dtype)):
            back = to_host(device, fmt, values.shape, host_format, groups=groups, out=out, plans=plans)
            assert back.shape == values.shape
            np.testing.assert_array_equal(back, values)
            if out is not None:
                assert back is out


@pytest.mark.parametrize("fmt", FORMATS_4D + FORMATS_5D)
@SETTINGS
@given(data=st.data())
def test_blocked_conversions_replayed_give_the_oracles_host(fmt, data):
    host, host_format, c0 = data.draw(blocked_case(fmt))
    plans = ConversionPlans()
    _round_trips(fmt, host, host_format, c0, plans)
    assert len(plans) <= 2  # one key with a new array, one with a buffer
    assert plans.replays >= 2  # into a buffer a blocked tensor is always copied: planned


@SETTINGS
@given(**NZ_CASE)
def test_fractal_nz_conversions_replayed_give_the_oracles_host(lead, tail, c0):
    host = numbered((*lead, *tail))
    plans = ConversionPlans()
    _round_trips("FRACTAL_NZ", host, "ND", c0, plans)
    assert plans.replays >= 2  # the oracle always tiles (two more dims): copied, planned


def test_a_conversion_with_padding_is_replayed_not_worked_out_again():
    host = numbered((2, 5, 3, 3))  # NCHW, C = 5 of C0 16: C1 = 1, the tail padded
    plans = ConversionPlans()
    buffer = _garbage(host.shape, host.dtype)
    for values in (host, _other_values(host), host + 1):
        back = to_host(oracle(values, "NC1HWC0", "NCHW"), "NC1HWC0", values.shape, "NCHW", out=buffer, plans=plans)
        np.testing.assert_array_equal(back, values)
    assert plans.replays == 2 and len(plans) == 1


def test_grouped_fractal_z_is_a_gather_and_is_worked_out_each_time():
    host = numbered((4, 3, 2, 2))  # NCHW: 4 outputs in 2 groups of a 6-channel input
    plans = ConversionPlans()
    for values in (host, _other_values(host)):
        device = oracle(values, "FRACTAL_Z", "NCHW", 16, 2)
        np.testing.assert_array_equal(to_host(device, "FRACTAL_Z", values.shape, "NCHW", groups=2, plans=plans), values)
    assert plans.replays == 0


def test_a_view_of_the_device_stays_a_view():
    host = numbered((1, 16, 2, 3))  # NCHW with C == C0: the host is a transposed view
    plans = ConversionPlans()
    for _ in range(2):
        device = oracle(host, "NC1HWC0", "NCHW")
        back = to_host(device, "NC1HWC0", host.shape, "NCHW", plans=plans)
        np.testing.assert_array_equal(back, host)
        assert np.shares_memory(back, device)
    assert plans.replays == 0


def test_dtypes_and_layouts_of_the_same_shape_are_planned_apart():
    plans = ConversionPlans()
    for dtype in (np.float16, np.float32, np.int8, np.float16):
        for host_format in ("NCHW", "NHWC"):
            host = numbered((2, 20, 4, 20), np.int32).astype(dtype)  # C1 = 2 either way: copied
            device = oracle(host, "NC1HWC0", host_format)
            np.testing.assert_array_equal(to_host(device, "NC1HWC0", host.shape, host_format, plans=plans), host)
    assert plans.replays == 2 and len(plans) == 6


def test_a_strided_source_is_converted_without_a_plan():
    host = numbered((2, 20, 3, 3))
    device = oracle(host, "NC1HWC0", "NCHW")
    wide = np.zeros((*device.shape[:-1], 2 * device.shape[-1]), device.dtype)
    wide[..., ::2] = device
    plans = ConversionPlans()
    for _ in range(2):
        np.testing.assert_array_equal(to_host(wide[..., ::2], "NC1HWC0", host.shape, "NCHW", plans=plans), host)
    assert len(plans) == 0


def test_a_buffer_of_the_wrong_shape_is_refused_every_time():
    host = numbered((2, 20, 3, 3))
    device = oracle(host, "NC1HWC0", "NCHW")
    plans = ConversionPlans()
    for _ in range(2):
        with pytest.raises(ValueError, match="out has shape"):
            to_host(device, "NC1HWC0", host.shape, "NCHW", out=np.empty((2, 20, 9)), plans=plans)
    assert len(plans) == 0


def test_at_most_limit_keys_are_kept_the_first_dropped_first():
    plans = ConversionPlans(limit=2)
    shapes = [(1, 17, 2, 2), (1, 18, 2, 2), (1, 19, 2, 2), (1, 17, 2, 2)]
    for shape in shapes:
        host = numbered(shape)
        np.testing.assert_array_equal(
            to_host(oracle(host, "NC1HWC0", "NCHW"), "NC1HWC0", shape, "NCHW", plans=plans), host
        )
    assert len(plans) == 2 and plans.replays == 0  # the first shape was dropped before it came again
