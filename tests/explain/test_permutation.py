"""The permutation hypothesis finds axis permutations, layouts read as others, and reversed
channels, and reports axes that numpy's own transpose / reshape / flip confirm."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.explain.causes import Subject, diagnose
from precision_tool.explain.permutation import candidates, permutation, verify

RNG = np.random.default_rng(3)


def half(x):
    return np.asarray(x).astype(np.float16)


def found(npu, golden, **kw):
    return permutation(Subject.build(npu, golden, **kw))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_axis_permutation_of_rank_up_to_five_is_found(data):
    rank = data.draw(st.integers(2, 5))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    perm = tuple(data.draw(st.permutations(range(rank))))
    golden = np.random.default_rng(data.draw(st.integers(0, 999))).standard_normal(shape).astype(np.float32)
    npu = half(np.transpose(golden, perm))
    cause = found(npu, golden)
    moved = np.transpose(golden, perm)
    if np.array_equal(moved.ravel(), golden.ravel()):
        assert cause is None  # nothing moved in C order (axes of length 1): nothing to explain
        return
    assert cause is not None
    # The reported move, redone with numpy, gives the NPU tensor.
    if cause.numbers["kind"] == "transpose":
        redone = np.transpose(golden, cause.numbers["axes"]).reshape(npu.shape)
    elif cause.numbers["kind"] == "read_as":
        axes = cause.numbers["axes"]
        redone = golden.reshape([npu.shape[a] for a in axes]).transpose(np.argsort(axes))
    else:
        redone = np.flip(golden, cause.numbers["axes"][0])
    np.testing.assert_array_equal(half(redone), npu)
    assert cause.numbers["cosine"] > 0.9999


def test_hw_swap_of_unequal_sides_changes_the_shape_and_is_found():
    golden = RNG.standard_normal((2, 6, 4, 3)).astype(np.float32)
    cause = found(half(golden.transpose(0, 2, 1, 3)), golden)
    assert cause.numbers["kind"] == "transpose" and cause.numbers["axes"] == [0, 2, 1, 3]
    assert "axes permuted [0, 2, 1, 3]" in cause.evidence


def test_nhwc_data_read_as_nchw():
    golden = RNG.standard_normal((2, 5, 4, 3)).astype(np.float32)  # NHWC
    npu = golden.reshape(2, 3, 5, 4).transpose(0, 2, 3, 1)  # its bytes read as NCHW, shown as NHWC
    cause = found(half(npu), golden, channel_axis=3)
    assert cause.numbers["kind"] == "read_as" and cause.numbers["axes"] == [0, 3, 1, 2]
    assert cause.evidence.startswith("the NPU tensor is NHWC data read as NCHW")


def test_nchw_data_read_as_nhwc():
    golden = RNG.standard_normal((2, 5, 4, 3)).astype(np.float32)
    npu = golden.transpose(0, 3, 1, 2).reshape(golden.shape)
    cause = found(half(npu), golden, channel_axis=3)
    assert cause.numbers["kind"] == "transpose" and cause.numbers["axes"] == [0, 3, 1, 2]
    assert "NCHW data read as NHWC" in cause.evidence


def test_reversed_channels():
    golden = RNG.standard_normal((2, 4, 4, 3)).astype(np.float32)
    cause = found(half(golden[..., ::-1]), golden, channel_axis=3)
    assert cause.numbers == {**cause.numbers, "kind": "reverse", "axes": [3]}
    assert "reversed channels along axis 3" in cause.evidence
    assert diagnose(Subject.build(half(golden[..., ::-1]), golden))[0].name == "permutation"


def test_no_permutation_for_healthy_or_noisy_tensors_or_big_ranks():
    golden = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    assert found(half(golden), golden) is None
    assert found(half(RNG.standard_normal((3, 4, 5))), golden) is None
    assert candidates((2,) * 6, (2,) * 6) == []


def test_candidate_counts():
    shape = (2, 3, 4)
    kinds = [c.kind for c in candidates(shape, shape)]
    permutations = len(list(itertools.permutations(range(3)))) - 1
    assert kinds.count("transpose") == kinds.count("read_as") == permutations
    assert kinds.count("reverse") == 3


def test_verify_streams_in_small_pieces():
    golden = RNG.standard_normal((4, 6, 6, 5)).astype(np.float32)
    npu = half(golden.transpose(0, 2, 1, 3))
    (candidate,) = [c for c in candidates(npu.shape, golden.shape) if c.kind == "transpose" and c.axes == (0, 2, 1, 3)]
    whole = verify(npu, golden, candidate)
    pieces = verify(npu, golden, candidate, chunk=7)
    assert pieces.red == pytest.approx(whole.red) and pieces.finite == whole.finite == npu.size


RANK_64 = (1,) * 30 + (2, 3) + (1,) * 30 + (4, 5)  # numpy's most dimensions


def test_a_rank_64_golden_is_screened_without_an_index_error():
    """Issue 27.8: gathering sampled positions from a rank-64 golden took 64 index arrays, one
    more than numpy takes (an IndexError inside why)."""
    golden = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    npu = golden.reshape(2, 4, 3, 5).transpose(0, 2, 1, 3)  # the golden's values read in another shape
    cause = found(half(npu), golden.reshape(RANK_64))
    assert cause.numbers["kind"] == "read_as" and cause.numbers["axes"] == [0, 2, 1, 3]
    assert found(half(golden.reshape(RANK_64)), golden.reshape(RANK_64)) is None  # healthy
    every_other = np.zeros((4, 3, 4, 5), np.float32)
    every_other[::2] = golden
    unit = (None,) * 30
    strided = every_other[::2][unit + (slice(None),) * 2 + unit]  # a strided view of rank 64, no copy
    assert strided.ndim == 64 and not strided.flags.c_contiguous and np.shares_memory(strided, every_other)
    assert found(half(golden), strided) is None
