"""Pairing an msprobe NPU dump with a bench dump: which bench call, and which of its tensors,
each NPU tensor is compared with.

The rules, in order:

1. a mapping file (``vc --mapping``, msprobe's ``-dm``) names the bench tensor of an NPU tensor
   by msprobe's full names; those pairs are taken as they are;
2. the calls of both sides are aligned in call order by key and the shapes of their tensors;
   between the runs this pairs, again by what the calls are (the key without its call count,
   ``Functional.linear.forward``) and what they hold (the shapes): equal runs pair call by call,
   so a key whose count drifted (another framework version makes one more ``linear`` call early
   on) still finds its counterpart;
3. inside a stretch the alignment could not match, calls of the same kind pair in order, the
   shapes deciding nothing (a mismatch is then the row's reason);
4. what is left in a stretch is told as it is: one NPU call standing where the bench made
   several (a fused call, N:1: its outputs are compared with the last of those calls' outputs
   when the shapes agree), NPU calls with nothing on the bench side (1:0), bench calls with
   nothing on the NPU side.

Tensors of a paired call pair by their place in the call (``input.0``, ``input.weight``,
``output.0``, ``parameters.weight``). Nothing here reads a tensor: only ``dump.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cached_property

from ..formats.msprobe_dump import Call, MsprobeDump
from ..formats.msprobe_leaves import Tensor


@dataclass(frozen=True)
class TensorPair:
    """One NPU tensor and the bench tensor it is compared with (None: none), and why.

    ``how`` is ``key`` (same call, same key), ``order`` (same kind of call, its count drifted),
    ``mapping`` (the mapping file), ``fused`` (the NPU call stands for several bench calls) or
    ``npu only``; ``reason`` says why the pair cannot be compared (empty when it can).
    """

    npu_call: Call
    npu: Tensor
    bench_call: Call | None
    bench: Tensor | None
    how: str
    reason: str = ""

    @cached_property  # asked by the plan, and again by each line of msprobe's table
    def npu_name(self) -> str:
        """msprobe's full name of the NPU tensor (``Functional.linear.0.forward.input.0``)."""
        return self.npu_call.msprobe_name(self.npu)

    @cached_property
    def bench_name(self) -> str | None:
        """msprobe's full name of the bench tensor, None without one."""
        if self.bench is None or self.bench_call is None:
            return None
        return self.bench_call.msprobe_name(self.bench)


@dataclass
class CallPairing:
    """The pairs of two dumps, in NPU call order, and what the pairing has to tell.

    ``bench_only`` lists bench calls nothing on the NPU side stands for; ``notes`` one line per
    fused (N:1) and per absorbed (1:0) stretch and per mapping entry that names no tensor.
    """

    pairs: list[TensorPair] = field(default_factory=list)
    bench_only: list[Call] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def mapping(self) -> list[tuple[str, str]]:
        """(NPU name, bench name) of every pair with a bench tensor: the mapping file to write."""
        return [(p.npu_name, p.bench_name) for p in self.pairs if p.bench_name is not None]


def call_kind(call: Call) -> str:
    """What a call is, its count left out: ``Functional.linear.forward``,
    ``Module.layers.0.attn.Attention.forward``."""
    key = call.key
    return f"{key.api_name}.{key.direction}" if key.direction else key.text


def _signature(call: Call) -> tuple:
    return (call_kind(call), tuple((t.name, t.shape) for t in call.tensors))


def _tensor_reason(npu: Tensor, bench: Tensor) -> str:
    if npu.shape is not None and bench.shape is not None and npu.shape != bench.shape:
        return f"shape mismatch: NPU {list(npu.shape)}, bench {list(bench.shape)}"
    return ""


def _pair_tensors(npu: Call, bench: Call, how: str) -> list[TensorPair]:
    by_name = {t.name.replace("input_kwargs", "input_args", 1): t for t in bench.tensors}
    pairs = []
    for tensor in npu.tensors:
        match = by_name.get(tensor.name.replace("input_kwargs", "input_args", 1))
        if match is None:
            pairs.append(
                TensorPair(npu, tensor, bench, None, how, f"the bench call {bench.key.text} has no {tensor.name}")
            )
        else:
            pairs.append(TensorPair(npu, tensor, bench, match, how, _tensor_reason(tensor, match)))
    return pairs


def _alone(npu: Call, reason: str, how: str = "npu only") -> list[TensorPair]:
    return [TensorPair(npu, tensor, None, None, how, reason) for tensor in npu.tensors]


@dataclass
class _Stretch:
    """An unmatched stretch of both sides between two aligned calls."""

    npu: list[Call]
    bench: list[Call]


def _in_order(stretch: _Stretch) -> tuple[list[tuple[Call, Call]], _Stretch]:
    """Rule 3: calls of one kind pair in order; what is left stays in the stretch."""
    waiting: dict[str, list[Call]] = {}
    for call in stretch.bench:
        waiting.setdefault(call_kind(call), []).append(call)
    pairs, npu_left = [], []
    for call in stretch.npu:
        queue = waiting.get(call_kind(call))
        if queue:
            pairs.append((call, queue.pop(0)))
        else:
            npu_left.append(call)
    taken = {id(b) for _, b in pairs}
    return pairs, _Stretch(npu_left, [c for c in stretch.bench if id(c) not in taken])


def _leftover(stretch: _Stretch, result: CallPairing) -> dict[int, list[TensorPair]]:
    """Rule 4 for what a stretch still holds: per NPU call order, its rows."""
    rows: dict[int, list[TensorPair]] = {}
    if len(stretch.npu) == 1 and len(stretch.bench) > 1:
        (fused,) = stretch.npu
        names = ", ".join(c.key.text for c in stretch.bench)
        result.notes.append(
            f"{fused.key.text} stands for {len(stretch.bench)} bench calls "
            f"({names}): fused ({len(stretch.bench)}:1); its outputs are compared "
            f"with {stretch.bench[-1].key.text}'s"
        )
        rows[fused.order] = _fused_rows(fused, stretch.bench[-1])
        return rows
    for call in stretch.npu:
        rows[call.order] = _alone(call, "no bench call stands for this NPU call (1:0)")
    if stretch.npu:
        result.notes.append(
            f"{len(stretch.npu)} NPU call(s) have no bench counterpart (1:0), the first {stretch.npu[0].key.text}"
        )
    result.bench_only.extend(stretch.bench)
    return rows


def _fused_rows(fused: Call, last: Call) -> list[TensorPair]:
    outputs = {t.name: t for t in last.tensors if t.section == "output"}
    rows = []
    for tensor in fused.tensors:
        match = outputs.get(tensor.name) if tensor.section == "output" else None
        if match is None:
            rows.append(
                TensorPair(
                    fused, tensor, None, None, "fused", "a fused NPU call: only its outputs have a bench counterpart"
                )
            )
        else:
            rows.append(TensorPair(fused, tensor, last, match, "fused", _tensor_reason(tensor, match)))
    return rows


def _keyed_signature(call: Call) -> tuple:
    return (call.key.text, *_signature(call))


def _aligned(
    npu: Sequence[Call], bench: Sequence[Call], signature=_signature
) -> Iterable[tuple[str, list[Call], list[Call]]]:
    """Rule 2: ``("equal", npu calls, bench calls)`` runs and the stretches between them."""
    left, right = [signature(c) for c in npu], [signature(c) for c in bench]
    if left == right:  # the usual case: what SequenceMatcher would say, without its index of right
        if left:
            yield "equal", list(npu), list(bench)
        return
    matcher = SequenceMatcher(None, left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        yield ("equal" if tag == "equal" else "stretch"), list(npu[i1:i2]), list(bench[j1:j2])


def _how(npu: Call, bench: Call) -> str:
    return "key" if npu.key.text == bench.key.text else "order"


def _pair_stretch(npu: list[Call], bench: list[Call], rows: dict[int, list[TensorPair]], result: CallPairing) -> None:
    """Rules 2 (by what the calls are and hold, keys aside), 3 and 4 inside a stretch that the
    same keys left unmatched."""
    for tag, npu_part, bench_part in _aligned(npu, bench):
        if tag == "equal":
            for n, b in zip(npu_part, bench_part):
                rows[n.order] = _pair_tensors(n, b, _how(n, b))
            continue
        pairs, rest = _in_order(_Stretch(npu_part, bench_part))
        for n, b in pairs:
            rows[n.order] = _pair_tensors(n, b, _how(n, b))
        rows.update(_leftover(rest, result))


def _by_mapping(
    npu: MsprobeDump, bench: MsprobeDump, mapping: dict[str, str], result: CallPairing
) -> dict[int, list[TensorPair]]:
    """Rule 1: rows of the NPU calls whose tensors the mapping names, per call order."""
    if not mapping:
        return {}
    bench_tensors = {call.msprobe_name(t): (call, t) for call in bench.calls for t in call.tensors}
    rows: dict[int, list[TensorPair]] = {}
    used = set()
    for call in npu.calls:
        names = {call.msprobe_name(t): t for t in call.tensors}
        if not names.keys() & mapping.keys():
            continue
        for name, tensor in names.items():
            target = mapping.get(name)
            match = bench_tensors.get(target) if target is not None else None
            if target is not None:
                used.add(name)
            if match is None:
                reason = (
                    f"the mapping names {target}, which the bench dump does not hold"
                    if target is not None
                    else "the mapping pairs other tensors of this call only"
                )
                rows.setdefault(call.order, []).append(TensorPair(call, tensor, None, None, "mapping", reason))
            else:
                rows.setdefault(call.order, []).append(
                    TensorPair(call, tensor, match[0], match[1], "mapping", _tensor_reason(tensor, match[1]))
                )
    unknown = [name for name in mapping if name not in used]
    if unknown:
        result.notes.append(f"{len(unknown)} mapping line(s) name no NPU tensor of this dump, the first {unknown[0]}")
    return rows


def pair_calls(npu: MsprobeDump, bench: MsprobeDump, mapping: dict[str, str] | None = None) -> CallPairing:
    """Pair the calls and tensors of ``npu`` with ``bench`` (see the module doc)."""
    result = CallPairing()
    rows = _by_mapping(npu, bench, mapping or {}, result)
    npu_calls = [c for c in npu.calls if c.order not in rows]
    # same keys holding the same shapes first, so a key is not paired away by a look-alike
    for tag, npu_part, bench_part in _aligned(npu_calls, list(bench.calls), _keyed_signature):
        if tag == "equal":
            for n, b in zip(npu_part, bench_part):
                rows[n.order] = _pair_tensors(n, b, "key")
        else:
            _pair_stretch(npu_part, bench_part, rows, result)
    result.pairs = [pair for order in sorted(rows) for pair in rows[order]]
    return result
