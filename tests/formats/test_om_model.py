"""The OM reader (:mod:`precision_tool.formats.om_model`): OMs built byte by byte
(:mod:`tests.formats.om_bytes`), real ones from GE's tests (tests/data/om), and every bad one
as one line naming the file."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.graph import read_graph, read_graph_proto
from precision_tool.formats.om_model import read_layout, read_om_model_def
from precision_tool.formats.proto import ge_ir
from tests.formats.om_bytes import (
    MODEL_DEF,
    TASK_INFO,
    TBE_KERNELS,
    V1,
    WEIGHTS,
    header,
    model_def_bytes,
    om_bytes,
    table,
)

OM_DATA = Path(__file__).resolve().parents[1] / "data" / "om"
NET = model_def_bytes("net", {"net": [("x", "Data"), ("conv", "Conv2D"), ("out", "NetOutput")]})


def _write(tmp_path: Path, data: bytes, name: str = "model.om") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _layout(path: Path):
    with open(path, "rb") as handle:
        return read_layout(handle, os.path.getsize(path), path)


def _ops(proto) -> dict[str, list[str]]:
    return {g.name: [op.type for op in g.op] for g in proto.graph}


# --- layouts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("wide", [False, True])
def test_the_model_def_partition_is_read_among_others(tmp_path, wide):
    parts = [(WEIGHTS, b"\x01" * 40), (MODEL_DEF, NET), (TASK_INFO, b"\x02" * 7)]
    path = _write(tmp_path, om_bytes([parts], wide=wide, name=b"net"))
    assert _ops(read_om_model_def(path)) == {"net": ["Data", "Conv2D", "NetOutput"]}
    layout = _layout(path)
    table_size = 8 + 24 * 3 if wide else 4 + 12 * 3
    assert [(p.name, p.offset, p.size) for p in layout.partitions] == [
        ("WEIGHTS_DATA", 256 + table_size, 40),
        ("MODEL_DEF", 256 + table_size + 40, len(NET)),
        ("TASK_INFO", 256 + table_size + 40 + len(NET), 7),
    ]
    assert layout.header.name == "net" and layout.header.platform_version == "Ascend31"


def test_a_flow_model_has_the_wide_table_without_model_length(tmp_path):
    parts = [(MODEL_DEF, NET), (6, b"flow"), (7, b"sub-model")]
    path = _write(tmp_path, om_bytes([parts], wide=True, model_type=3))
    assert struct.unpack_from("<Q", path.read_bytes(), 184) == (0,)
    assert _ops(read_om_model_def(path))["net"] == ["Data", "Conv2D", "NetOutput"]


def test_sub_models_add_the_graphs_the_root_lacks(tmp_path):
    root = model_def_bytes("root", {"root": [("a", "Data"), ("call", "PartitionedCall")], "sub_1": [("b", "Add")]})
    sub_1 = model_def_bytes("sub_1", {"sub_1": [("other", "Mul")]})  # already in the root: left out
    sub_2 = model_def_bytes("sub_2", {"sub_2": [("c", "Mul"), ("d", "Relu")]})
    models = [[(MODEL_DEF, root), (TBE_KERNELS, b"k")], [(MODEL_DEF, sub_1), (WEIGHTS, b"w")], [(MODEL_DEF, sub_2)]]
    proto = read_om_model_def(_write(tmp_path, om_bytes(models, wide=True)))
    assert _ops(proto) == {"root": ["Data", "PartitionedCall"], "sub_1": ["Add"], "sub_2": ["Mul", "Relu"]}
    assert proto.name == "root"


def test_a_version_1_header_has_one_table_whatever_model_num_holds(tmp_path):
    body = table([(MODEL_DEF, NET)], wide=False)
    raw = header(len(body), version=V1, model_num=7, unknown=1) + body
    assert _layout(_write(tmp_path, raw)).header.table_count == 1
    assert _ops(read_om_model_def(tmp_path / "model.om"))["net"][1] == "Conv2D"


def test_an_om_is_a_graph_by_its_magic_under_any_name(tmp_path):
    path = _write(tmp_path, om_bytes([[(MODEL_DEF, NET)]]), "resnet50.bin")
    model = read_graph(path)
    assert [op.name for op in model.graphs[0].ops] == ["x", "conv", "out"]
    assert model.source_path == path
    assert isinstance(read_graph_proto(path), type(ge_ir.ModelDef()))


# --- real OMs (GE's own test models, tests/data/README.md) ---------------------------------------


def _reference_model_defs(raw: bytes) -> list[bytes]:
    """Each model's MODEL_DEF bytes, by walking the layout here (the u64 at 184 is set in these
    files: wide tables; model_num at 156 tables when is_unknow_model at 193 says so)."""
    (model_num,) = struct.unpack_from("<I", raw, 156)
    count = model_num if raw[193] == 1 or model_num > 1 else 1
    offset, found = 256, []
    for _ in range(count):
        (num,) = struct.unpack_from("<I", raw, offset)
        entries = [struct.unpack_from("<I4xQQ", raw, offset + 8 + 24 * i) for i in range(num)]
        offset += 8 + 24 * num
        for kind, _, size in entries:
            if kind == MODEL_DEF:
                found.append(raw[offset : offset + size])
            offset += size
    assert offset == len(raw)
    return found


@pytest.mark.parametrize(
    "name, graphs, ops",
    [
        ("root_model.om", ["test_graph_cache"], 3),
        ("flow_model.om", ["root_graph"], 3),
        ("dynamic_and_static_graph_without_unfold.om", ["root", "sub_1", "sub_2"], 14),
    ],
)
def test_real_oms(name, graphs, ops):
    path = OM_DATA / name
    proto = read_om_model_def(path)
    reference = ge_ir.ModelDef()
    reference.ParseFromString(_reference_model_defs(path.read_bytes())[0])
    assert [g.name for g in proto.graph] == graphs == [g.name for g in reference.graph]
    assert _ops(proto) == _ops(reference)
    model = read_graph(path)
    assert sum(len(g.ops) for g in model.graphs) == ops


def test_the_real_dynamic_om_holds_three_models():
    layout = _layout(OM_DATA / "dynamic_and_static_graph_without_unfold.om")
    assert layout.header.model_num == 3 and layout.header.is_unknown_model == 1
    assert [p.model for p in layout.of_kind(MODEL_DEF)] == [0, 1, 2]


# --- bad OMs: one line naming the file ------------------------------------------------------------


def _patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    raw = bytearray(data)
    struct.pack_into(fmt, raw, offset, value)
    return bytes(raw)


GOOD = om_bytes([[(MODEL_DEF, NET), (WEIGHTS, b"w" * 16)]])
BAD = {
    "encrypted": (om_bytes([[(MODEL_DEF, NET)]], encrypt=1), "encrypted OM (is_encrypt=1)"),
    "magic": (_patched(GOOD, 0, "<I", 0x12345678), "not an OM model: it starts with 78563412"),
    "version": (_patched(GOOD, 8, "<I", 0x30000000), "unknown OM header version 0x30000000"),
    "header size": (_patched(GOOD, 4, "<I", 512), "OM header size 512 is not GE's 256"),
    "short": (GOOD[:100], "too short for an OM: 100 bytes"),
    "truncated": (GOOD[:-5], "truncated OM: the header says"),
    "no model def": (
        om_bytes([[(WEIGHTS, b"w"), (TASK_INFO, b"t")]]),
        "OM without a MODEL_DEF partition (its partitions: WEIGHTS_DATA, TASK_INFO)",
    ),
    "not a model def": (om_bytes([[(MODEL_DEF, b"\xff\xff\xff")]]), "is not a ge.proto ModelDef"),
    "partition past the end": (_patched(GOOD, 256 + 4 + 8, "<I", 10_000), "runs past the end"),
    "table too long": (_patched(GOOD, 256, "<I", 100_000), "claims 100,000 partitions"),
    "bundle": (om_bytes([[(24, b"m")]], model_type=5), "a bundle of 1 OM models"),
    "text": (b'graph {\n  name: "g"\n}\n' * 20, "not an OM model"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_om_is_one_line_naming_the_file(tmp_path, case):
    data, words = BAD[case]
    path = _write(tmp_path, data)
    with pytest.raises(PrecisionToolError) as caught:
        read_graph(path)
    message = str(caught.value)
    assert words in message and message.startswith(str(path)) and "\n" not in message


def test_a_directory_or_missing_om(tmp_path):
    (tmp_path / "dir.om").mkdir()
    with pytest.raises(PrecisionToolError, match="is a directory"):
        read_om_model_def(tmp_path / "dir.om")
    with pytest.raises(PrecisionToolError, match="not found"):
        read_graph(tmp_path / "missing.om")


# --- properties -----------------------------------------------------------------------------------

_partition = st.tuples(st.sampled_from([WEIGHTS, TASK_INFO, TBE_KERNELS, 4, 8, 12, 99]), st.binary(max_size=64))


@st.composite
def _models(draw):
    """1-3 models of random partitions, a MODEL_DEF somewhere in each."""
    models = []
    for index in range(draw(st.integers(1, 3))):
        parts = draw(st.lists(_partition, max_size=5))
        own = model_def_bytes(f"m{index}", {f"g{index}": [(f"op{index}", "Relu")]})
        parts.insert(draw(st.integers(0, len(parts))), (MODEL_DEF, own))
        models.append(parts)
    return models


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(models=_models(), wide=st.booleans())
def test_random_partition_tables(tmp_path, models, wide):
    path = _write(tmp_path, om_bytes(models, wide=wide))
    layout = _layout(path)
    offset, expected = 256, []
    for index, parts in enumerate(models):
        offset += (8 + 24 * len(parts)) if wide else (4 + 12 * len(parts))
        for kind, data in parts:
            expected.append((index, kind, offset, len(data)))
            offset += len(data)
    assert [(p.model, p.kind, p.offset, p.size) for p in layout.partitions] == expected
    assert [g.name for g in read_om_model_def(path).graph] == [f"g{i}" for i in range(len(models))]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(models=_models(), wide=st.booleans(), data=st.data())
def test_any_truncation_is_one_line(tmp_path, models, wide, data):
    raw = om_bytes(models, wide=wide)
    cut = data.draw(st.integers(0, len(raw) - 1))
    path = _write(tmp_path, raw[:cut])
    with pytest.raises(PrecisionToolError) as caught:
        read_om_model_def(path)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(models=_models(), wide=st.booleans(), data=st.data())
def test_any_corrupt_byte_reads_or_is_one_line(tmp_path, models, wide, data):
    raw = bytearray(om_bytes(models, wide=wide))
    where = data.draw(st.integers(0, len(raw) - 1))
    raw[where] = data.draw(st.integers(0, 255))
    path = _write(tmp_path, bytes(raw))
    try:
        read_om_model_def(path)
    except PrecisionToolError as err:
        assert str(err).startswith(str(path)) and "\n" not in str(err)


class _Counting:
    """A file handle that counts the bytes read through it."""

    def __init__(self, handle):
        self.handle, self.read_bytes = handle, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def fileno(self):
        return self.handle.fileno()

    def seek(self, offset):
        return self.handle.seek(offset)

    def read(self, size=-1):
        data = self.handle.read(size)
        self.read_bytes += len(data)
        return data


def test_the_weights_are_never_read(tmp_path, monkeypatch):
    from precision_tool.formats import om_model

    weights = 64 << 20
    body = table([(MODEL_DEF, NET), (WEIGHTS, b"")], wide=True)
    raw = bytearray(header(len(body) + weights, wide=True) + body)
    struct.pack_into("<Q", raw, 256 + 8 + 24 + 16, weights)  # the WEIGHTS entry's size
    path = _write(tmp_path, bytes(raw))
    with open(path, "r+b") as handle:
        handle.truncate(len(raw) + weights)  # sparse: the weights cost no disk
    opened = []
    real_open = om_model.open_regular
    monkeypatch.setattr(
        om_model, "open_regular", lambda *a, **k: opened.append(_Counting(real_open(*a, **k))) or opened[-1]
    )
    assert _ops(read_om_model_def(path))["net"] == ["Data", "Conv2D", "NetOutput"]
    assert opened[0].read_bytes == 256 + 4 + 2 * 24 + len(NET)  # header, num, entries, ModelDef
