"""The numbers every hypothesis needs, computed in one streamed pass over a tensor pair.

An NPU tensor and its golden (numpy arrays in host layout, memory-mapped where the readers allow)
are walked in C order, a piece of at most :data:`CHUNK` elements at a time, upcast to float64 per
piece, so memory stays a few pieces whatever the tensor size. :class:`PairStats` holds what the
pass found: the sums behind cosine, relative Euclidean distance and the least-squares fits, and
the counts and first positions of NaN, overflow and underflow.

Finite float64 values beyond about 1e154 overflow those sums (``1e300 * 1e300`` is inf, and the
relative error of 1e300 against -1e300 came out inf/inf = NaN: "not compared"), and values below
about 1e-154 square into subnormals (the sums of 1e-160 lost their digits, and the cosine of
1e-100 divided by zero). So when the running totals would not be finite, or the squares are that
small, the pass goes on in a scale: every value times ``2**-scale`` (exact, but for values that
become subnormal, nothing beside the largest), the totals so far brought to it. Ratios (cosine,
RED, the fits' shares) are the same in any scale; :attr:`PairStats.scale` and :func:`unscaled`
give absolute values.
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

    Sums run over the elements finite on both sides, of values times ``2**-scale``; ``d = npu -
    golden``."""

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
    scale: int = 0

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
        part, totals = self._folded(n, g)
        if _out_of_range(totals, part["max_abs_d"]):
            self._rescale(n, g)
            part, totals = self._folded(n, g)
        self.sums = totals
        self.finite += n.size
        if n.size:
            self.max_abs_diff = max(self.max_abs_diff, unscaled(part["max_abs_d"], self.scale))

    def _folded(self, n: np.ndarray, g: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
        """A piece's sums in the current scale, and the totals with them (not yet kept)."""
        part = _piece_sums(self._scaled(n), self._scaled(g))
        return part, {name: total + part[name] for name, total in self.sums.items()}

    def _scaled(self, values: np.ndarray) -> np.ndarray:
        return np.ldexp(values, -self.scale) if self.scale else values

    def _rescale(self, n: np.ndarray, g: np.ndarray) -> None:
        """The scale in which the largest value seen, this piece's included, is in [1/2, 1) (no
        value before it is larger than the root of its side's sum of squares), the totals
        brought to it."""
        seen = math.sqrt(max(self.sums["nn"], self.sums["gg"]))
        top = max(float(np.abs(n).max()), float(np.abs(g).max())) if n.size else 0.0
        powers = [self.scale + math.frexp(seen)[1]] if seen else []
        powers += [math.frexp(top)[1]] if top else []
        if not powers:
            return
        step = max(powers) - self.scale
        for name in self.sums:
            self.sums[name] = math.ldexp(self.sums[name], -step * _POWER[name])
        self.overflow_sq = math.ldexp(self.overflow_sq, -2 * step)
        self.underflow_sq = math.ldexp(self.underflow_sq, -2 * step)
        self.scale += step

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
            with np.errstate(over="ignore"):  # beyond float64 in any scale: inf, a share of 1
                self.overflow_sq += float(np.square(self._scaled(n[saturated]) - self._scaled(g[saturated])).sum())
        zero = n == 0
        if zero.any():
            lost = zero & (g != 0) & (np.abs(g) < facts.tiny)
            lost = lost & both if both is not None else lost
            self.underflow = self.underflow.add(lost, start, g)
            self.below_subnormal += int(np.count_nonzero(lost & (np.abs(g) < facts.smallest_subnormal)))
            self.underflow_sq += float(np.square(self._scaled(g[lost])).sum())

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
            scale=self.scale,
        )


_POWER = {"d": 1, "g": 1, "dd": 2, "dg": 2, "gg": 2, "nn": 2, "ng": 2}  # how many values a term multiplies
_SUMS = tuple(_POWER)


def _piece_sums(n: np.ndarray, g: np.ndarray) -> dict[str, float]:
    """A piece's sums and its largest ``|n - g|`` (non-finite when its values overflow them)."""
    # without numpy's overflow warnings printed among the command's output: the caller rescales
    with np.errstate(over="ignore", invalid="ignore"):
        d = n - g
        return {
            "d": float(d.sum()),
            "dd": float(d @ d),
            "dg": float(d @ g),
            "g": float(g.sum()),
            "gg": float(g @ g),
            "nn": float(n @ n),
            "ng": float(n @ g),
            "max_abs_d": float(np.abs(d).max()) if d.size else 0.0,
        }


def _out_of_range(totals: dict[str, float], max_abs_d: float) -> bool:
    """Whether sums of finite values overflowed, or are so small that the squares of the
    differences fall among float64's subnormals and lose their digits (or all of them: values
    that differ, every square 0)."""
    if not all(math.isfinite(v) for v in totals.values()):
        return True
    squares = max(totals["nn"], totals["gg"])
    return squares < _TINY_SQUARES and (squares > 0 or max_abs_d > 0 or totals["g"] != 0)


_TINY_SQUARES = 2.0**-600  # values below 2**-300: a relative difference of 2**-200 still squares to a normal


def unscaled(value: float, scale: int) -> float:
    """``value * 2**scale`` (a length or sum taken in a scale), +-inf beyond float64."""
    try:
        return math.ldexp(value, scale)
    except OverflowError:
        return math.copysign(math.inf, value)


@dataclass(frozen=True)
class PairStats:
    """One streamed comparison of an NPU tensor (``n``) with its golden (``g``).

    Attributes:
        shape: the NPU tensor's host shape (first positions are unravelled in it).
        facts: the NPU dtype's facts (overflow and underflow are judged against them).
        size: elements compared; ``finite``: those finite on both sides.
        sums: over the finite pairs, with ``d = n - g``: ``d, dd, dg, g, gg, nn, ng``, of the
            values times ``2**-scale`` (a sum of squares is ``2**(2 * scale)`` times its own).
        nan: NPU NaN where the golden is not NaN; ``inf``: NPU +-inf where the golden is finite.
        saturated: NPU +-max of its dtype where the golden is finite and not that value.
        underflow: golden non-zero and below the dtype's smallest normal, NPU exactly zero
            (``below_subnormal`` of them are below even the smallest subnormal).
        golden_nonfinite, npu_nonfinite: NaN/inf on each side; ``mismatched``: elements
            non-finite on one side only, or non-finite differently (NaN against inf).
        overflow_sq, underflow_sq: the squared error the saturated / underflowed elements carry
            (in the scale, as ``dd``).
        scale: 0 unless finite values overflowed float64's sums or squared into its subnormals
            (the module's docstring).
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
    scale: int = 0

    @property
    def cosine(self) -> float:
        """Cosine over the finite pairs: 1 when both are all zero, NaN when only one is."""
        nn, gg = self.sums["nn"], self.sums["gg"]
        if nn == 0 and gg == 0:
            return 1.0 if self.finite else math.nan
        if nn == 0 or gg == 0:
            return math.nan
        both = nn * gg  # one root keeps a tensor's cosine with itself exactly 1
        return self.sums["ng"] / (math.sqrt(both) if 0 < both < math.inf else math.sqrt(nn) * math.sqrt(gg))

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
        return unscaled(math.sqrt(self.sums["gg"] / self.finite), self.scale) if self.finite else 0.0

    @property
    def diff_norm(self) -> float:
        """``||n - g||`` over the finite pairs (inf only beyond float64's range)."""
        return unscaled(math.sqrt(self.sums["dd"]), self.scale)

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
