"""Overflow-debug dumps (FORMATS.md section 7): decode the 2048-byte payload, and write it.

An ``Opdebug.Node_OpDebug.{task}.{stream}.{timestamp}`` file has the ordinary dump envelope
(section 1) with one output of 2048 bytes, read as little-endian uint64 words:

==========  ============================================================================
offset      what
==========  ============================================================================
0           DHA atomic-add info (128 B): model_id, stream_id, task_id, task_type,
            pc_start, para_base
128         L2 atomic-add info (128 B): the same six words
256         AI Core info (256 B): the same six words
512         DHA atomic-add status (256 B): the status word first
768         L2 atomic-add status (256 B): the status word first
1024        AI Core status (1024 B): kernel_code, block_idx, status
==========  ============================================================================

Pure: nothing here prints. Decisions: a payload longer than 2048 bytes is decoded from its first
2048 (trailing bytes are ignored); a shorter one is an error. An L2 status whose code (bits
16-18) is 0, "no error", reports no overflow whatever its other bits. The unit that names the op
that overflowed is the first of AI Core, DHA, L2 that reports one (AI Core when none does).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import PrecisionToolError
from .dump import read_dump
from .dump_write import TensorSpec, write_dump
from .files import open_regular

PAYLOAD_SIZE = 2048
NANO_MAGIC = 0x5A5A5A5A
OPDEBUG_OP_NAME = "Node_OpDebug"

AI_CORE = "AI Core"
DHA = "DHA atomic add"
L2 = "L2 atomic add"

_INFO_WORDS = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")
_INFO_OFFSETS = {DHA: 0, L2: 128, AI_CORE: 256}
_STATUS_OFFSETS = {DHA: 512, L2: 768, AI_CORE: 1024}

AI_CORE_BITS = {
    0x8: "sign-bit inversion overflow (NEG of the most negative integer)",
    0x10: "integer add/sub/mul/multiply-accumulate overflow",
    0x20: "floating-point overflow",
    0x80: "negative input to a float-to-unsigned conversion",
    0x100: "FP32-to-FP16 or INT32-to-FP16 conversion overflow",
    0x400: "cube accumulation overflow",
}
DHA_CODES = {0x9: "overflow", 0xA: "underflow", 0xB: "src NaN", 0xC: "dst NaN", 0xD: "both NaN"}
L2_CODES = {1: "overflow", 2: "underflow", 3: "src NaN", 4: "dst NaN", 5: "both NaN"}


@dataclass(frozen=True)
class UnitInfo:
    """The six info words of one unit: which task it was running."""

    model_id: int = 0
    stream_id: int = 0
    task_id: int = 0
    task_type: int = 0
    pc_start: int = 0
    para_base: int = 0

    def words(self) -> tuple[int, ...]:
        """The words in payload order."""
        return tuple(getattr(self, name) for name in _INFO_WORDS)


@dataclass(frozen=True)
class UnitStatus:
    """One unit's info and status; ``kinds`` says in words what the status bits mean."""

    unit: str  # AI_CORE, DHA or L2
    info: UnitInfo
    status: int
    kinds: tuple[str, ...]
    kernel_code: int | None = None  # AI Core only
    block_idx: int | None = None  # AI Core only

    @property
    def overflowed(self) -> bool:
        """Whether the status reports anything (0, or L2 code 0 "no error", reports nothing)."""
        return bool(self.kinds)

    def words(self) -> str:
        """``AI Core status 0x120: floating-point overflow; ...`` (or ``... 0x0: no overflow``)."""
        what = "; ".join(self.kinds) if self.kinds else "no overflow"
        return f"{self.unit} status {self.status:#x}: {what}"


@dataclass(frozen=True)
class OverflowPayload:
    """A decoded 2048-byte overflow-debug payload."""

    dha: UnitStatus
    l2: UnitStatus
    ai_core: UnitStatus

    @property
    def units(self) -> tuple[UnitStatus, UnitStatus, UnitStatus]:
        """AI Core first, then DHA, then L2: the order in which a culprit is looked for."""
        return (self.ai_core, self.dha, self.l2)

    @property
    def overflowed(self) -> bool:
        """Whether any unit reports an overflow."""
        return any(unit.overflowed for unit in self.units)

    @property
    def culprit(self) -> UnitStatus:
        """The unit whose info words name the op that overflowed (AI Core when none did)."""
        return next((unit for unit in self.units if unit.overflowed), self.ai_core)

    @property
    def task_id(self) -> int:
        """The overflowed op's task id (from the culprit unit's info words)."""
        return self.culprit.info.task_id

    @property
    def stream_id(self) -> int:
        """The overflowed op's stream id (from the culprit unit's info words)."""
        return self.culprit.info.stream_id

    def types(self) -> list[str]:
        """Every overflow type reported, ``"{unit}: {kind}"``; empty when there is none."""
        return [f"{unit.unit}: {kind}" for unit in self.units if unit.overflowed for kind in unit.kinds]


def ai_core_kinds(status: int) -> tuple[str, ...]:
    """The AI Core status bits in words; unknown bits are named by value."""
    kinds = [text for bit, text in AI_CORE_BITS.items() if status & bit]
    unknown = status & ~sum(AI_CORE_BITS)
    if unknown:
        kinds.append(f"unknown bits {unknown:#x}")
    return tuple(kinds)


def dha_kinds(status: int) -> tuple[str, ...]:
    """The DHA status code (bits 8-15) in words; empty for a zero status."""
    if status == 0:
        return ()
    code = (status >> 8) & 0xFF
    return (DHA_CODES.get(code, f"unknown code {code:#x}"),)


def l2_kinds(status: int) -> tuple[str, ...]:
    """The L2 status code (bits 16-18) in words; empty for code 0 (no error)."""
    code = (status >> 16) & 0x7
    if code == 0:
        return ()
    return (L2_CODES.get(code, f"unknown code {code}"),)


def _words(payload: bytes, offset: int, count: int) -> tuple[int, ...]:
    return struct.unpack_from(f"<{count}Q", payload, offset)


def decode_overflow(payload: bytes) -> OverflowPayload:
    """Decode an overflow-debug payload (bytes or a uint8 array).

    Raises PrecisionToolError for the newer layout that starts with the magic 0x5A5A5A5A ("not
    supported") and for a payload shorter than 2048 bytes.
    """
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        payload = np.asarray(payload, dtype=np.uint8).tobytes()
    payload = bytes(payload)
    if len(payload) >= 4 and struct.unpack_from("<I", payload)[0] == NANO_MAGIC:
        raise PrecisionToolError("overflow payload in the newer layout (magic 0x5A5A5A5A) is not supported")
    if len(payload) < PAYLOAD_SIZE:
        raise PrecisionToolError(f"overflow payload is {len(payload)} bytes, expected {PAYLOAD_SIZE}")
    info = {unit: UnitInfo(*_words(payload, offset, 6)) for unit, offset in _INFO_OFFSETS.items()}
    dha_status = _words(payload, _STATUS_OFFSETS[DHA], 1)[0]
    l2_status = _words(payload, _STATUS_OFFSETS[L2], 1)[0]
    kernel_code, block_idx, core_status = _words(payload, _STATUS_OFFSETS[AI_CORE], 3)
    return OverflowPayload(
        dha=UnitStatus(DHA, info[DHA], dha_status, dha_kinds(dha_status)),
        l2=UnitStatus(L2, info[L2], l2_status, l2_kinds(l2_status)),
        ai_core=UnitStatus(
            AI_CORE,
            info[AI_CORE],
            core_status,
            ai_core_kinds(core_status),
            kernel_code=kernel_code,
            block_idx=block_idx,
        ),
    )


def read_overflow_payload(path: str | os.PathLike, name: str | None = None) -> OverflowPayload:
    """Read and decode the payload of one Opdebug dump file (its first output).

    ``name`` is the real file name when ``path`` is a ``mapping.csv`` alias. Raises
    PrecisionToolError naming the file for a bad envelope, a missing output or an unsupported
    payload.
    """
    dump = read_dump(path, name)
    if not dump.outputs:
        raise PrecisionToolError(f"no output: expected one {PAYLOAD_SIZE}-byte overflow payload", path)
    tensor = dump.outputs[0]
    try:
        with open_regular(tensor.path, "overflow dump file") as handle:
            handle.seek(tensor.offset)
            raw = handle.read(tensor.size)  # within the file: read_dump checked the sizes
    except OSError as exc:
        raise PrecisionToolError(f"cannot read overflow payload ({exc.strerror or exc})", path) from None
    try:
        return decode_overflow(raw)
    except PrecisionToolError as exc:
        raise PrecisionToolError(exc.problem, path) from None


# --- writing (tests and the sample) -----------------------------------------------------------


def build_overflow_payload(
    ai_core: UnitInfo | None = None,
    ai_core_status: int = 0,
    *,
    kernel_code: int = 0,
    block_idx: int = 0,
    dha: UnitInfo | None = None,
    dha_status: int = 0,
    l2: UnitInfo | None = None,
    l2_status: int = 0,
) -> bytes:
    """The 2048 bytes of a payload with the given info and status words (others zero)."""
    buffer = bytearray(PAYLOAD_SIZE)
    for unit, info in ((DHA, dha), (L2, l2), (AI_CORE, ai_core)):
        struct.pack_into("<6Q", buffer, _INFO_OFFSETS[unit], *(info or UnitInfo()).words())
    struct.pack_into("<Q", buffer, _STATUS_OFFSETS[DHA], dha_status)
    struct.pack_into("<Q", buffer, _STATUS_OFFSETS[L2], l2_status)
    struct.pack_into("<3Q", buffer, _STATUS_OFFSETS[AI_CORE], kernel_code, block_idx, ai_core_status)
    return bytes(buffer)


def opdebug_file_name(task_id: int, stream_id: int, timestamp: int) -> str:
    """``Opdebug.Node_OpDebug.{task_id}.{stream_id}.{timestamp}``."""
    return f"Opdebug.{OPDEBUG_OP_NAME}.{task_id}.{stream_id}.{timestamp}"


def write_overflow_dump(path: str | os.PathLike, payload: bytes, dump_time: int = 0) -> Path:
    """Write an Opdebug dump file at ``path``: the envelope with ``payload`` as its one output
    (DT_UINT8, ND, shape ``[len(payload)]``). Returns the path."""
    array = np.frombuffer(payload, dtype=np.uint8)
    return write_dump(path, OPDEBUG_OP_NAME, [], [TensorSpec(array, "UINT8", "ND")], dump_time=dump_time)
