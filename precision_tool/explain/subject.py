"""What the hypotheses look at and what they give: a :class:`Subject` (one NPU output, its
golden and the op's context) and a :class:`Cause` (a hypothesis that held)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..compare.noise import Noise, output_noise, replay_noise
from ..compare.pair_stats import DtypeFacts, PairStats, coarsest, compare
from .criterion import Criterion


@dataclass(frozen=True)
class Cause:
    """A hypothesis that held: its name, one sentence of evidence, the numbers it quotes, and
    the share of the difference it explains (0..1, for ranking)."""

    name: str
    evidence: str
    numbers: dict[str, Any] = field(default_factory=dict)
    score: float = 1.0


@dataclass(frozen=True)
class InputCheck:
    """One input of the op: its NPU dump tensor against its golden.

    Attributes:
        slot: the input number.
        source: the golden tensor it was compared with (``name:index``), empty when none.
        network_input: True when it is the network's input data (a Data op's output).
        stats: the comparison; None when there is no golden (``note`` says why).
        nonfinite: NaN and inf values in the NPU input.
        facts: the NPU input's dtype facts.
    """

    slot: int
    source: str
    network_input: bool
    stats: PairStats | None
    nonfinite: int
    facts: DtypeFacts
    note: str = ""


@dataclass(frozen=True)
class ReplayCheck:
    """The op recomputed in float64 from its NPU inputs, compared with what the NPU and the
    golden hold.

    Attributes:
        supported: False when no replay exists for the op (``reason`` says why).
        notes: assumptions the replay made (an attribute absent from the graph, say).
        npu: the NPU output against the replay (the replay in the golden's role).
        golden: the golden against the replay.
    """

    supported: bool
    reason: str = ""
    notes: tuple[str, ...] = ()
    npu: PairStats | None = None
    golden: PairStats | None = None


@dataclass(frozen=True)
class Subject:
    """What the hypotheses look at: one NPU output, its golden and the op's context.

    Attributes:
        npu, golden: the tensors in host layout (memory-mapped where possible).
        stats: one streamed pass of ``npu`` against ``golden``.
        facts: the coarsest float dtype among the op's NPU output and inputs (rounding's unit).
        criterion: the thresholds.
        inputs: the op's inputs against their goldens.
        replay: the replay, None when it was not attempted.
        channel_axis: the channel axis of the host layout, when known (names reversed channels).
        noise: what rounding explains of the output against its golden (:mod:`.rounding`).
        replay_noise: what it explains of the output against its replay.
    """

    npu: np.ndarray
    golden: np.ndarray
    stats: PairStats
    facts: DtypeFacts
    criterion: Criterion
    inputs: tuple[InputCheck, ...] = ()
    replay: ReplayCheck | None = None
    channel_axis: int | None = None
    noise: Noise | None = None
    replay_noise: Noise | None = None

    @classmethod
    def build(
        cls,
        npu,
        golden,
        criterion: Criterion | None = None,
        *,
        inputs=(),
        replay=None,
        channel_axis=None,
        npu_dtype=None,
    ) -> Subject:
        """A subject of two arrays; one streamed pass computes its statistics; the noise from
        the dtypes and the inputs' differences."""
        npu, golden = np.asarray(npu), np.asarray(golden)
        dtype = npu.dtype if npu_dtype is None else npu_dtype
        stats = compare(npu, golden, dtype)
        facts = coarsest([dtype, *(check.facts for check in inputs)])
        reds = [c.stats.red if c.stats is not None else None for c in inputs] or [None]
        noise = output_noise(facts.name, golden.dtype, reds, [c.facts.name for c in inputs])
        return cls(
            npu,
            golden,
            stats,
            facts,
            criterion or Criterion(),
            tuple(inputs),
            replay,
            channel_axis,
            noise,
            replay_noise(facts.name),
        )

    @property
    def output_noise(self) -> Noise:
        """The noise of the output against its golden (from the dtypes when none was given)."""
        return self.noise if self.noise is not None else output_noise(self.facts.name, self.golden.dtype)

    @property
    def differs(self) -> bool:
        """True when the difference is more than rounding: something to explain."""
        return not self.criterion.within_rounding(self.stats, self.output_noise)

    @property
    def rounding_limit(self) -> float:
        """The largest relative Euclidean distance rounding explains here."""
        return self.output_noise.limit

    @property
    def replay_limit(self) -> float:
        """The largest distance between the NPU output and its replay a correct kernel shows."""
        noise = self.replay_noise if self.replay_noise is not None else replay_noise(self.facts.name)
        return noise.limit
