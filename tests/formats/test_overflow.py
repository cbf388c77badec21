"""Overflow-debug payloads: byte offsets, status bits in words, the magic, and the writers."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump import read_dump
from precision_tool.formats.dump_names import parse_dump_name
from precision_tool.formats.dump_write import write_dump
from precision_tool.formats.overflow import (
    AI_CORE,
    DHA,
    L2,
    NANO_MAGIC,
    PAYLOAD_SIZE,
    UnitInfo,
    ai_core_kinds,
    build_overflow_payload,
    decode_overflow,
    dha_kinds,
    l2_kinds,
    opdebug_file_name,
    read_overflow_payload,
    write_overflow_dump,
)

CORE = UnitInfo(model_id=1, stream_id=3, task_id=7, task_type=2, pc_start=0x1000, para_base=0x2000)
DHA_INFO = UnitInfo(model_id=1, stream_id=4, task_id=8, task_type=5, pc_start=0x3000, para_base=0x4000)
L2_INFO = UnitInfo(model_id=2, stream_id=5, task_id=9, task_type=6, pc_start=0x5000, para_base=0x6000)


def test_payload_words_sit_at_the_documented_byte_offsets():
    raw = build_overflow_payload(
        CORE, 0x28, kernel_code=0xAB, block_idx=3, dha=DHA_INFO, dha_status=0x9 << 8, l2=L2_INFO, l2_status=2 << 16
    )
    assert len(raw) == PAYLOAD_SIZE

    def words(offset, count):
        return struct.unpack_from(f"<{count}Q", raw, offset)

    assert words(0, 6) == (1, 4, 8, 5, 0x3000, 0x4000)  # DHA info
    assert words(128, 6) == (2, 5, 9, 6, 0x5000, 0x6000)  # L2 info
    assert words(256, 6) == (1, 3, 7, 2, 0x1000, 0x2000)  # AI Core info
    assert words(512, 1) == (0x900,)
    assert words(768, 1) == (0x20000,)
    assert words(1024, 3) == (0xAB, 3, 0x28)
    assert raw[1048:] == bytes(PAYLOAD_SIZE - 1048)  # everything else zero


def test_decode_turns_every_status_into_words():
    payload = decode_overflow(
        build_overflow_payload(
            CORE,
            0x8 | 0x20,
            kernel_code=0xAB,
            block_idx=3,
            dha=DHA_INFO,
            dha_status=0x9 << 8,
            l2=L2_INFO,
            l2_status=2 << 16,
        )
    )
    assert payload.ai_core.info == CORE and payload.dha.info == DHA_INFO and payload.l2.info == L2_INFO
    assert payload.ai_core.kinds == (
        "sign-bit inversion overflow (NEG of the most negative integer)",
        "floating-point overflow",
    )
    assert (payload.ai_core.kernel_code, payload.ai_core.block_idx, payload.ai_core.status) == (0xAB, 3, 0x28)
    assert payload.dha.kinds == ("overflow",)
    assert payload.l2.kinds == ("underflow",)
    assert payload.types() == [
        f"{AI_CORE}: sign-bit inversion overflow (NEG of the most negative integer)",
        f"{AI_CORE}: floating-point overflow",
        f"{DHA}: overflow",
        f"{L2}: underflow",
    ]
    assert payload.overflowed
    # AI Core reported, so its info words name the op.
    assert (payload.culprit.unit, payload.task_id, payload.stream_id) == (AI_CORE, 7, 3)
    assert payload.ai_core.words() == (
        "AI Core status 0x28: sign-bit inversion overflow (NEG of the most negative integer); floating-point overflow"
    )


def test_l2_code_zero_reports_nothing():
    payload = decode_overflow(build_overflow_payload(CORE, 0, l2=L2_INFO, l2_status=0xFF))
    assert payload.l2.status == 0xFF and not payload.l2.overflowed and not payload.overflowed


def test_zero_status_means_no_overflow():
    payload = decode_overflow(build_overflow_payload(CORE, 0, dha=DHA_INFO, l2=L2_INFO))
    assert not payload.overflowed
    assert payload.types() == []
    assert all(unit.kinds == () for unit in payload.units)
    assert payload.culprit is payload.ai_core and payload.task_id == 7
    assert payload.ai_core.words() == "AI Core status 0x0: no overflow"


@pytest.mark.parametrize("status, unit, task", [(0, AI_CORE, 7), (0x9 << 8, DHA, 8)])
def test_the_culprit_is_the_first_unit_that_reports(status, unit, task):
    payload = decode_overflow(
        build_overflow_payload(CORE, 0, dha=DHA_INFO, dha_status=status, l2=L2_INFO, l2_status=1 << 16)
    )
    expected = unit if status else L2
    assert payload.culprit.unit == expected
    assert payload.task_id == (task if status else 9)


def test_every_documented_bit_and_code():
    assert ai_core_kinds(0x10) == ("integer add/sub/mul/multiply-accumulate overflow",)
    assert ai_core_kinds(0x80) == ("negative input to a float-to-unsigned conversion",)
    assert ai_core_kinds(0x100) == ("FP32-to-FP16 or INT32-to-FP16 conversion overflow",)
    assert ai_core_kinds(0x400) == ("cube accumulation overflow",)
    assert ai_core_kinds(0x1 | 0x20) == ("floating-point overflow", "unknown bits 0x1")
    assert [dha_kinds(code << 8)[0] for code in range(0x9, 0xE)] == [
        "overflow",
        "underflow",
        "src NaN",
        "dst NaN",
        "both NaN",
    ]
    assert dha_kinds(0x7 << 8) == ("unknown code 0x7",)
    assert [l2_kinds(code << 16)[0] for code in range(1, 6)] == [
        "overflow",
        "underflow",
        "src NaN",
        "dst NaN",
        "both NaN",
    ]
    assert l2_kinds(0x2 << 16 | 0xFF) == ("underflow",)  # only bits 16-18 carry the code
    assert l2_kinds(6 << 16) == ("unknown code 6",)
    assert dha_kinds(0) == () and l2_kinds(0) == ()
    assert l2_kinds(0xFF) == ()  # code 0 is "no error", whatever the other bits


def test_the_newer_layout_magic_is_not_supported():
    raw = struct.pack("<I", NANO_MAGIC) + bytes(PAYLOAD_SIZE - 4)
    with pytest.raises(PrecisionToolError, match="not supported"):
        decode_overflow(raw)


def test_a_short_payload_is_an_error():
    with pytest.raises(PrecisionToolError, match="1024 bytes, expected 2048"):
        decode_overflow(bytes(1024))


def test_decode_accepts_a_uint8_array():
    raw = build_overflow_payload(CORE, 0x20)
    assert decode_overflow(np.frombuffer(raw, np.uint8)).ai_core.status == 0x20


def test_written_opdebug_file_reads_back(tmp_path):
    name = opdebug_file_name(50, 9, 1764417600001000)
    assert name == "Opdebug.Node_OpDebug.50.9.1764417600001000"
    assert parse_dump_name(name).is_opdebug
    raw = build_overflow_payload(CORE, 0x120, kernel_code=5)
    path = write_overflow_dump(tmp_path / "d" / name, raw, dump_time=1764417600001000)
    dump = read_dump(path)
    assert (dump.op_type, dump.op_name, dump.task_id, dump.stream_id) == ("Opdebug", "Node_OpDebug", 50, 9)
    (out,) = dump.outputs
    assert (out.dtype_name, out.format, out.shape) == ("uint8", "ND", (PAYLOAD_SIZE,))
    assert np.asarray(out.device()).tobytes() == raw
    payload = read_overflow_payload(path)
    assert payload.ai_core.status == 0x120 and payload.task_id == 7  # not the file name's 50


def test_opdebug_file_with_the_magic_payload_names_the_file(tmp_path):
    path = write_overflow_dump(
        tmp_path / opdebug_file_name(1, 1, 1764417600001000), struct.pack("<I", NANO_MAGIC) + bytes(PAYLOAD_SIZE - 4)
    )
    with pytest.raises(PrecisionToolError, match="not supported") as info:
        read_overflow_payload(path)
    assert info.value.path == str(path)


def test_nano_dump_file_is_not_supported(tmp_path):
    path = tmp_path / opdebug_file_name(1, 1, 1764417600001000)
    path.write_bytes(struct.pack("<I", NANO_MAGIC) + bytes(4096))
    with pytest.raises(PrecisionToolError, match="not supported"):
        read_overflow_payload(path)


def test_opdebug_file_without_output_is_an_error(tmp_path):
    path = write_dump(tmp_path / opdebug_file_name(1, 1, 1764417600001000), "Node_OpDebug", [], [])
    with pytest.raises(PrecisionToolError, match="no output"):
        read_overflow_payload(path)
