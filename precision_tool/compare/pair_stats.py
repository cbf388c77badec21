"""The numbers every hypothesis needs, computed in one streamed pass over a tensor pair.

An NPU tensor and its golden (numpy arrays in host layout, memory-mapped where the readers allow)
are walked in C order, a piece of at most :data:`CHUNK` elements at a time, upcast to float64 per
piece, so memory stays a few pieces whatever the tensor size. :class:`PairStats` holds what the
pass found: the sums behind cosine, relative Euclidean distance and the least-squares fits, and
the counts and first positions of NaN, overflow and underflow.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

CHUNK = 1 << 20  # elements per piece: two float64 pieces and their masks stay under ~40 MiB


@dataclass(frozen=True)
class DtypeFacts:
    """What a storage dtype can represent: machine epsilon, largest finite, smallest normal and
    subnormal magnitudes. All zero for integer and boolean dtypes (they do not round)."""

    name: str
    eps: float = 0.0
    max: float = 0.0
    tiny: float = 0.0
    smallest_subnormal: float = 0.0

    @property
    def is_float(self) -> bool:
        """True for a floating-point dtype."""
        return self.eps > 0


def dtype_facts(dtype) -> DtypeFacts:
    """The :class:`DtypeFacts` of a numpy or ml_dtypes dtype (float16, bfloat16, float32...)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" and dtype.name not in _ML_FLOATS:
        return DtypeFacts(dtype.name)
    info = ml_dtypes.finfo(dtype)
    return DtypeFacts(dtype.name, float(info.eps), float(info.max), float(info.tiny), float(info.smallest_subnormal))


_ML_FLOATS = frozenset(
    {
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3b11fnuz",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn",
    }
)


def coarsest(dtypes) -> DtypeFacts:
    """The float dtype with the largest epsilon among ``dtypes`` (dtypes or :class:`DtypeFacts`;
    integers ignored); the facts of the first when none is a float."""
    facts = [d if isinstance(d, DtypeFacts) else dtype_facts(d) for d in dtypes]
    floats = [f for f in facts if f.is_float]
    if floats:
        return max(floats, key=lambda f: f.eps)
    return facts[0] if facts else DtypeFacts("none")


def pieces(shape: tuple[int, ...], chunk: int = CHUNK) -> Iterator[tuple]:
    """Index tuples that cut an array of ``shape`` into C-order pieces of at most ``chunk``
    elements (a piece is never smaller than one element of the last axis)."""
    if not shape:
        yield ()
        return
    inner = math.prod(shape[1:])
    if inner <= chunk or len(shape) == 1:
        step = max(1, chunk // max(inner, 1))
        for start in range(0, shape[0], step):
            yield (slice(start, min(start + step, shape[0])),)
        return
    for i in range(shape[0]):
        for rest in pieces(shape[1:], chunk):
            yield (i, *rest)


def as_float64(values) -> np.ndarray:
    """``values`` as a flat, contiguous float64 array (bfloat16, float16, ints and bools too)."""
    return np.ascontiguousarray(values, dtype=np.float64).reshape(-1)


def paired_pieces(a: np.ndarray, b: np.ndarray, chunk: int = CHUNK) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(flat start, a piece, b piece)`` of two arrays of one size, as float64, in C order.

    ``b`` is read in ``a``'s shape (a golden of another shape but the same size compares flat)."""
    if b.shape != a.shape:
        b = b.reshape(a.shape)
    start = 0
    for index in pieces(a.shape, chunk):
        x, y = as_float64(a[index]), as_float64(b[index])
        yield start, x, y
        start += x.size


@dataclass(frozen=True)
class FirstAt:
    """How many elements matched a condition, the first one's flat position and the golden there."""

    count: int = 0
    flat_index: int | None = None
    golden: float | None = None

    def add(self, mask: np.ndarray, start: int, golden: np.ndarray) -> FirstAt:
        """This tally plus the elements of ``mask`` in a piece starting at flat ``start``."""
        found = int(np.count_nonzero(mask))
        if not found:
            return self
        if self.flat_index is not None:
            return FirstAt(self.count + found, self.flat_index, self.golden)
        first = int(np.flatnonzero(mask)[0])
        return FirstAt(found, start + first, float(golden[first]))


@dataclass
class PairAccumulator:
    """Folds pieces of (NPU, golden) into sums and tallies; :meth:`result` freezes them.

    Sums run over the elements finite on both sides; ``d = npu - golden``."""

    facts: DtypeFacts
    size: int = 0
    finite: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_SUMS, 0.0))
    max_abs_diff: float = 0.0
    nan: FirstAt = FirstAt()
    inf: FirstAt = FirstAt()
    saturated: FirstAt = FirstAt()
    underflow: FirstAt = FirstAt()
    below_subnormal: int = 0
    golden_nonfinite: int = 0
    npu_nonfinite: int = 0
    mismatched: int = 0
    overflow_sq: float = 0.0
    underflow_sq: float = 0.0

    def update(self, start: int, npu: np.ndarray, golden: np.ndarray) -> None:
        """Fold one piece (flat float64 arrays of one length) starting at flat ``start``."""
        self.size += npu.size
        with np.errstate(invalid="ignore", over="ignore"):  # +inf + -inf: the masks below sort it out
            total = float(npu.sum()) + float(golden.sum())
        if math.isfinite(total):  # the usual case: all finite, no masks
            self._sums(npu, golden)
            self._extremes(start, npu, golden, None)
            return
        npu_finite, golden_finite = np.isfinite(npu), np.isfinite(golden)
        self.npu_nonfinite += int(npu.size - np.count_nonzero(npu_finite))
        self.golden_nonfinite += int(golden.size - np.count_nonzero(golden_finite))
        self.nan = self.nan.add(np.isnan(npu) & ~np.isnan(golden), start, golden)
        self.inf = self.inf.add(np.isinf(npu) & golden_finite, start, golden)
        both = npu_finite & golden_finite
        same = np.isnan(npu) & np.isnan(golden) | (npu == golden)  # equal infinities, both NaN
        self.mismatched += int(np.count_nonzero(~both & ~same))
        self._sums(npu[both], golden[both])
        self._extremes(start, npu, golden, both)

    def _sums(self, n: np.ndarray, g: np.ndarray) -> None:
        s = self.sums
        # finite values near float64's limit overflow their products (inf, and inf - inf is nan):
        # what the metrics are then is decided where they are computed, without numpy's warnings
        # printed among the command's output
        with np.errstate(over="ignore", invalid="ignore"):
            d = n - g
            s["d"] += float(d.sum())
            s["dd"] += float(d @ d)
            s["dg"] += float(d @ g)
            s["g"] += float(g.sum())
            s["gg"] += float(g @ g)
            s["nn"] += float(n @ n)
            s["ng"] += float(n @ g)
        self.finite += n.size
        if d.size:
            self.max_abs_diff = max(self.max_abs_diff, float(np.abs(d).max()))

    def _extremes(self, start: int, n: np.ndarray, g: np.ndarray, both: np.ndarray | None) -> None:
        """Saturated and flushed values; ``both`` masks the pairs finite on both sides (None:
        all are). Each test is skipped when a cheap reduction shows it cannot match."""
        facts = self.facts
        if not facts.is_float or not n.size:
            return
        largest = (
            max(n.max(initial=0.0, where=both), -n.min(initial=0.0, where=both))
            if both is not None
            else max(float(n.max()), -float(n.min()))
        )
        if largest >= facts.max:
            saturated = (np.abs(n) == facts.max) & (np.abs(g) != facts.max)
            saturated = saturated & both if both is not None else saturated
            self.saturated = self.saturated.add(saturated, start, g)
            self.overflow_sq += float(np.square(n[saturated] - g[saturated]).sum())
        zero = n == 0
        if zero.any():
            lost = zero & (g != 0) & (np.abs(g) < facts.tiny)
            lost = lost & both if both is not None else lost
            self.underflow = self.underflow.add(lost, start, g)
            self.below_subnormal += int(np.count_nonzero(lost & (np.abs(g) < facts.smallest_subnormal)))
            self.underflow_sq += float(np.square(g[lost]).sum())

    def result(self, shape: tuple[int, ...]) -> PairStats:
        """The frozen statistics, positions unravelled in ``shape``."""
        return PairStats(
            shape=tuple(shape),
            facts=self.facts,
            size=self.size,
            finite=self.finite,
            sums=dict(self.sums),
            max_abs_diff=self.max_abs_diff,
            nan=self.nan,
            inf=self.inf,
            saturated=self.saturated,
            underflow=self.underflow,
            below_subnormal=self.below_subnormal,
            golden_nonfinite=self.golden_nonfinite,
            npu_nonfinite=self.npu_nonfinite,
            mismatched=self.mismatched,
            overflow_sq=self.overflow_sq,
            underflow_sq=self.underflow_sq,
        )


_SUMS = ("d", "dd", "dg", "g", "gg", "nn", "ng")


@dataclass(frozen=True)
class PairStats:
    """One streamed comparison of an NPU tensor (``n``) with its golden (``g``).

    Attributes:
        shape: the NPU tensor's host shape (first positions are unravelled in it).
        facts: the NPU dtype's facts (overflow and underflow are judged against them).
        size: elements compared; ``finite``: those finite on both sides.
        sums: over the finite pairs, with ``d = n - g``: ``d, dd, dg, g, gg, nn, ng``.
        nan: NPU NaN where the golden is not NaN; ``inf``: NPU +-inf where the golden is finite.
        saturated: NPU +-max of its dtype where the golden is finite and not that value.
        underflow: golden non-zero and below the dtype's smallest normal, NPU exactly zero
            (``below_subnormal`` of them are below even the smallest subnormal).
        golden_nonfinite, npu_nonfinite: NaN/inf on each side; ``mismatched``: elements
            non-finite on one side only, or non-finite differently (NaN against inf).
        overflow_sq, underflow_sq: the squared error the saturated / underflowed elements carry.
    """

    shape: tuple[int, ...]
    facts: DtypeFacts
    size: int
    finite: int
    sums: dict[str, float]
    max_abs_diff: float
    nan: FirstAt
    inf: FirstAt
    saturated: FirstAt
    underflow: FirstAt
    below_subnormal: int
    golden_nonfinite: int
    npu_nonfinite: int
    mismatched: int
    overflow_sq: float
    underflow_sq: float

    @property
    def cosine(self) -> float:
        """Cosine over the finite pairs: 1 when both are all zero, NaN when only one is."""
        nn, gg = self.sums["nn"], self.sums["gg"]
        if nn == 0 and gg == 0:
            return 1.0 if self.finite else math.nan
        if nn == 0 or gg == 0:
            return math.nan
        return self.sums["ng"] / math.sqrt(nn * gg)

    @property
    def red(self) -> float:
        """Relative Euclidean distance ``||n - g|| / ||g||`` over the finite pairs."""
        dd, gg = self.sums["dd"], self.sums["gg"]
        if gg == 0:
            return 0.0 if dd == 0 else math.inf
        return math.sqrt(dd / gg)

    @property
    def nonfinite_mismatch(self) -> int:
        """Elements non-finite on one side only, or non-finite differently (NaN vs inf)."""
        return self.mismatched

    @property
    def rms_golden(self) -> float:
        """Root mean square of the golden's finite values."""
        return math.sqrt(self.sums["gg"] / self.finite) if self.finite else 0.0

    def position(self, flat_index: int | None) -> list[int] | None:
        """A flat position as a multi-index in :attr:`shape` (None stays None)."""
        if flat_index is None:
            return None
        if not self.shape:
            return []
        return [int(i) for i in np.unravel_index(flat_index, self.shape)]


def compare(npu: np.ndarray, golden: np.ndarray, dtype=None, chunk: int = CHUNK) -> PairStats:
    """Stream ``npu`` against ``golden`` (same size) into :class:`PairStats`.

    ``dtype`` is the NPU storage dtype whose overflow and underflow count (default: ``npu``'s).
    """
    npu, golden = np.asarray(npu), np.asarray(golden)
    if npu.size != golden.size:
        raise ValueError(f"sizes differ: {npu.shape} vs {golden.shape}")
    acc = PairAccumulator(dtype_facts(npu.dtype if dtype is None else dtype))
    for start, x, y in paired_pieces(npu, golden, chunk):
        acc.update(start, x, y)
    return acc.result(npu.shape)


def count_nonfinite(array: np.ndarray, chunk: int = CHUNK) -> int:
    """How many NaN and inf ``array`` holds, counted piece by piece."""
    array = np.asarray(array)
    if array.dtype.kind in "iub":
        return 0
    return sum(int(np.count_nonzero(~np.isfinite(as_float64(array[index])))) for index in pieces(array.shape, chunk))
