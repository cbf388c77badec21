"""The noise model against float64 simulations of correct ops (``noise_sim``), and its parts
against first principles."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

import ml_dtypes
import numpy as np
import pytest

from precision_tool.compare.noise import (
    FLOOR,
    MARGIN,
    STORE,
    Noise,
    accumulation_length,
    output_noise,
    replay_noise,
    unit_roundoff,
)
from tests.compare.noise_sim import OPS, cases, chain_red, simulate

SIZES = (8, 64, 512)  # the bench adds 2048: the suite stays quick


@pytest.fixture(scope="module")
def simulated():
    return cases(sizes=SIZES)


def test_every_correct_op_is_within_rounding(simulated):
    """Float16 and bfloat16 devices, float32 and float16 goldens, 14 op kinds, three sizes and
    three magnitudes: not one correct op is beyond the model's limit."""
    beyond = [c for c in simulated if c.measured > c.limit]
    assert len(simulated) > 250 and beyond == []


def test_the_model_is_not_loose(simulated):
    """The expected RED is the right size, not a blanket: per op kind the median of measured
    over expected lies in [0.4, 1.5] (float16 golden's Relu is exact and left out)."""
    ratios = defaultdict(list)
    for case in simulated:
        if case.measured > 0:
            ratios[(case.op_type, case.device, case.golden)].append(case.ratio)
    medians = {key: statistics.median(values) for key, values in ratios.items()}
    assert len(medians) >= 40
    assert {k: m for k, m in medians.items() if not 0.4 <= m <= 1.5} == {}


@pytest.mark.parametrize("op_type", sorted(OPS))
def test_a_one_percent_error_is_beyond_rounding(op_type):
    """A defect of 1% (the output scaled by 1.01) is far beyond float16 rounding for every kind."""
    case = simulate(op_type, 64, 1.0)
    assert case.limit < 0.01 / 2  # the defect alone is twice the limit


def test_chains_of_correct_ops_stay_within_the_unmeasured_limit():
    """Without measured inputs the model allows the rounding of UPSTREAM (16) correct ops: a
    simulated chain of 16 float16 ops (MatMul, Add, Gelu, LayerNorm) is within it."""
    limit = output_noise("float16", "float32", [None]).limit
    assert all(chain_red(depth, seed=seed) <= limit for depth in (1, 4, 8, 16) for seed in range(3))


def test_unit_roundoff_is_half_the_machine_epsilon():
    assert unit_roundoff("float16") == 2.0**-11
    assert unit_roundoff("DT_FLOAT16") == 2.0**-11
    assert unit_roundoff("bfloat16") == unit_roundoff(ml_dtypes.bfloat16) == 2.0**-8
    assert unit_roundoff(np.float32) == 2.0**-24
    assert unit_roundoff("int32") == 0.0 and unit_roundoff("bool") == 0.0
    with pytest.raises(ValueError):
        unit_roundoff("datetime64")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_one_rounding_has_the_derived_red(dtype):
    """STORE = sqrt(2 ln 2) / 3: rounding log-uniform magnitudes with random signs to nearest
    gives that RED in units of u, within 2% over a million values."""
    rng = np.random.default_rng(7)
    values = rng.choice([-1.0, 1.0], 1 << 20) * np.exp2(rng.uniform(-8, 8, 1 << 20))
    rounded = values.astype(getattr(ml_dtypes, dtype, None) or np.dtype(dtype)).astype(np.float64)
    measured = np.linalg.norm(rounded - values) / np.linalg.norm(values)
    assert measured / unit_roundoff(dtype) == pytest.approx(STORE, rel=0.02)


def test_accumulation_length_from_shapes():
    assert accumulation_length("MatMul", [(32, 300), (300, 48)], (32, 48)) == 300
    assert accumulation_length("BatchMatMulV2", [(4, 16, 64), (4, 64, 24)], (4, 16, 24)) == 64
    assert accumulation_length("Conv2D", [(2, 10, 10, 24), (3, 3, 24, 16)], (2, 8, 8, 16)) == 3 * 3 * 24
    assert accumulation_length("ReduceMeanD", [(4, 6, 6, 24)], (4, 24)) == 36
    assert accumulation_length("Softmax", [(8, 1000)], (8, 1000)) == 1000
    assert accumulation_length("Add", [(8,), (8,)], (8,)) == 1


def test_the_limit_is_margin_times_expected_with_a_floor():
    noise = output_noise("float16", "float32", [None])
    assert noise.limit == pytest.approx(MARGIN * noise.expected)
    assert output_noise("float64", "float64", [1e-20]).limit == FLOOR  # another summation order
    exact = output_noise("int32", "int32", [])
    assert exact.exact and exact.limit == 0 and exact.within(0.0) and not exact.within(1e-9)
    assert not Noise(1e-3).within(math.nan)


def test_measured_inputs_count_up_to_their_own_rounding():
    """An input that differs by 0.3 carries an error the output inherits: it is no rounding."""
    rounding = output_noise("float16", "float32", [1e-3])
    capped = output_noise("float16", "float32", [0.3])
    assert rounding.limit < capped.limit < 0.01


def test_replay_noise_allows_inner_roundings_of_multi_step_kernels():
    assert replay_noise("float16", "LayerNorm").limit > replay_noise("float16", "Add").limit
    assert replay_noise("float16", "Add").limit == pytest.approx(MARGIN * STORE * 2.0**-11)
