"""msprobe's group folded by the numba kernels against the numpy fold of the same blocks, and
both against msprobe's own cells (tests/data/msprobe_metrics, computed by mindstudio-probe)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare import kernels, msprobe_fold, msprobe_metrics
from precision_tool.compare.metric_data import Stats
from precision_tool.compare.msprobe_metrics import GROUP, MSPROBE_COLUMNS

pytestmark = pytest.mark.skipif(kernels.numba_kernels() is None, reason="numba kernels unavailable")

_DTYPES = st.sampled_from([np.float16, ml_dtypes.bfloat16, np.float32, np.float64])


@st.composite
def _blocks(draw):
    """A pair of blocks: close values, exact zeros in the bench, NaN/Inf at the same or at other
    positions, huge values whose squares overflow."""
    npu, bench = draw(_DTYPES), draw(_DTYPES)
    size = draw(st.integers(1, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = rng.standard_normal(size) * draw(st.sampled_from([1e-6, 1.0, 1e4]))
    x = y * (1 + rng.standard_normal(size) * draw(st.sampled_from([0.0, 1e-4, 3e-3, 0.1])))
    y[rng.random(size) < draw(st.sampled_from([0.0, 0.1]))] = 0
    special = draw(st.sampled_from(["none", "same", "other", "huge"]))
    where = rng.integers(size)
    if special == "same":
        x[where], y[where] = (np.nan, np.nan) if draw(st.booleans()) else (np.inf, -np.inf)
    elif special == "other":
        x[where] = np.nan
    elif special == "huge" and npu == bench == np.float64:
        x[where] = y[where] = 1e300
    return x.astype(npu), y.astype(bench)


def _folded(x: np.ndarray, y: np.ndarray, numba: bool) -> msprobe_metrics.MsprobeSums:
    with pytest.MonkeyPatch.context() as patch:
        if not numba:
            patch.setattr(msprobe_fold, "kernel_operands", lambda *_: None)
        else:
            assert msprobe_fold.kernel_operands(x, y) is not None
        stats = Stats()
        with np.errstate(all="ignore"):
            msprobe_metrics._fold(stats, x, y)
    return stats.extra[GROUP]


@settings(max_examples=150, deadline=None)
@given(_blocks())
def test_the_kernels_fold_as_numpy_folds(blocks):
    x, y = blocks
    fast, slow = _folded(x, y, True), _folded(x, y, False)
    assert fast.mismatch == slow.mismatch
    if slow.mismatch:
        return
    assert fast.below == slow.below  # counts and maxima are exact
    for name in ("max_abs", "rel_max"):
        a, b = getattr(fast, name), getattr(slow, name)
        assert a == b or math.isnan(a) and math.isnan(b), name
    for name in ("sum_xy", "sum_xx", "sum_yy", "sum_sq"):  # summed in another order
        a, b = getattr(fast, name), getattr(slow, name)
        scale = math.sqrt(fast.sum_xx * fast.sum_yy) if name == "sum_xy" else abs(b)
        assert a == b or abs(a - b) <= 1e-12 * scale or not math.isfinite(b) and a == b, name


def test_a_bfloat16_pair_folds_in_its_stored_bits():
    y = np.linspace(-3, 3, 5000, dtype=np.float32)
    x = (y * 1.001).astype(ml_dtypes.bfloat16)
    fast = _folded(x, y, True)
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    assert fast.sum_xy == pytest.approx(float(xf @ yf), rel=1e-13)
    assert fast.max_abs == float(np.abs(xf - yf).max())
    n, b = x.astype(np.float32), y.astype(np.float32)
    zero = b == 0
    n[zero] += np.finfo(np.float32).eps
    b[zero] += np.finfo(np.float32).eps
    rel = np.abs((n - b) / b)
    assert fast.rel_max == float(rel.max())
    assert fast.below == (int((rel < np.float32(0.001)).sum()), int((rel < np.float32(0.005)).sum()))


def test_through_the_engine_the_kernels_give_msprobes_cells():
    """The cases of test_msprobe_metrics (msprobe's own cells), folded with the kernels."""
    from tests.compare import test_msprobe_metrics as reference

    assert msprobe_fold._compiled() is not None
    for name, case in reference.CASES.items():
        result = reference._compared(case)
        reference._assert_cells(result.values, case)
        assert set(result.values) == set(MSPROBE_COLUMNS), name
