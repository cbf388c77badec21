"""One row of a comparison result: an NPU tensor, its golden counterpart and the metrics.

The CSV (:mod:`.result_csv`) is one serialisation of :class:`CompareRow`; ``vcs`` reads a CSV,
ours or msaccucmp's, back into the same rows.

Not compared vs computed: ``metrics`` holds only the metrics that were computed, including
computed ``nan``/``inf`` (NaN or Inf in the data); a metric absent from it was not compared
(msaccucmp's ``NaN``). :meth:`CompareRow.metric` gives NaN for both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

from .metric_data import MetricResult

_KINDS = ("input", "output")
# How a row's CompareFailReason says which side holds NaN/Inf (the engine writes these notes).
NPU_NONFINITE_NOTE = "The NPU tensor holds"
GOLDEN_NONFINITE_NOTE = "The golden tensor holds"


@dataclass(frozen=True)
class CompareRow:
    """One CSV row: an NPU tensor (or an op with no dump) compared against its ground truth.

    Attributes:
        index: the op's position in the graph (msaccucmp's ``Index``).
        op_type: the NPU op type (``Conv2D``); empty when the CSV does not say.
        npu_name: the NPU op name (``NPUDump``; ``LeftOp`` in the older header).
        npu_dtype: NPU-side data type text (``float16``), None when unknown (``NaN``).
        npu_address: NPU-side address text, None when unknown (``NaN``).
        ground_truth: the golden op names joined by ``,``, or ``*`` (``GroundTruth``/``RightOp``).
        golden_dtype: golden-side data type text, None when unknown.
        tensor_index: ``{op}:{input|output}:{i}``; None for an op with no dump file.
        shape: the compared host shape; None when unknown.
        metrics: metric name -> value, for the metrics computed (see the module docstring).
        std_text: the StandardDeviation text ``(mean;std),(mean;std)``, ``NaN`` when not computed.
        fail_reason: why something was not compared, or a note (``This tensor is scalar.``).
        golden_address: golden-side address (NPU vs NPU results only), None otherwise.
        overflow: the ``OverFlow`` column text when overflow detection was on, else None.
        op_sequence: the ``OpSequence`` column (range mode), else None.
        cache_key: the row cache's key of what the row was computed from (:mod:`.row_keys`),
            when the engine was asked to find it where the files were read; None otherwise.
            Never shown or written, and not part of a row's equality.
    """

    index: int
    op_type: str
    npu_name: str
    npu_dtype: str | None
    npu_address: str | None
    ground_truth: str
    golden_dtype: str | None
    tensor_index: str | None
    shape: tuple[int, ...] | None
    metrics: dict[str, float] = field(default_factory=dict)
    std_text: str = "NaN"
    fail_reason: str = ""
    golden_address: str | None = None
    overflow: str | None = None
    op_sequence: int | None = None
    cache_key: str | None = field(default=None, compare=False, repr=False)

    @cached_property
    def _parts(self) -> tuple[str, str, int] | None:
        # parsed once per row: analysing a million-row result asks for kind and slot often
        if not self.tensor_index:
            return None
        op, kind, slot = (self.tensor_index.rsplit(":", 2) + ["", ""])[:3]
        if kind not in _KINDS or not slot.isdigit():
            return None
        return op, kind, int(slot)

    @property
    def kind(self) -> str | None:
        """``"input"`` or ``"output"`` from the TensorIndex; None for a row without one."""
        parts = self._parts
        return parts[1] if parts else None

    @property
    def is_output(self) -> bool:
        """True for an output tensor row."""
        return self.kind == "output"

    @property
    def is_input(self) -> bool:
        """True for an input tensor row."""
        return self.kind == "input"

    @property
    def slot(self) -> int | None:
        """The input/output number ``i`` of the TensorIndex; None without one."""
        parts = self._parts
        return parts[2] if parts else None

    @property
    def op_name(self) -> str:
        """The NPU op the row belongs to: from the TensorIndex, else ``npu_name``."""
        parts = self._parts
        return parts[0] if parts else self.npu_name

    @property
    def compared(self) -> bool:
        """True when at least one metric was computed."""
        return bool(self.metrics)

    def metric(self, name: str) -> float:
        """The value of metric ``name``; NaN when it was not compared."""
        return self.metrics.get(name, math.nan)

    @property
    def npu_nonfinite(self) -> bool:
        """The NPU tensor holds NaN or Inf: the row's note says so, or, in a CSV without such
        notes (msaccucmp's), the cosine was computed and came out ``nan``."""
        if NPU_NONFINITE_NOTE in self.fail_reason:
            return True
        computed_nan = "CosineSimilarity" in self.metrics and math.isnan(self.cosine)
        return computed_nan and GOLDEN_NONFINITE_NOTE not in self.fail_reason

    @property
    def cosine(self) -> float:
        """CosineSimilarity, NaN when not compared."""
        return self.metric("CosineSimilarity")

    def with_metrics(self, metrics: dict[str, float], std_text: str = "NaN", fail_reason: str = "") -> CompareRow:
        """A copy of this row with the comparison's outcome filled in."""
        return replace(self, metrics=dict(metrics), std_text=std_text, fail_reason=fail_reason)

    def with_result(self, result: MetricResult) -> CompareRow:
        """A copy of this row with a :class:`~.metrics.MetricResult` filled in."""
        return self.with_metrics(result.numbers, result.std_text, result.fail_reason)
