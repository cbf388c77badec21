"""The zip directory of torch archives read from their bytes, against zipfile's reading of the
same files (torch's own files in tests/data/torch), and the layouts it leaves to zipfile."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.formats.torch_zip import read_directory, record_bytes, stored_record

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"
STORED = sorted(p.name for p in DATA.glob("*.pt") if p.name not in ("legacy.pt", "deflated.pt"))


def _fetch(data: bytes):
    return lambda offset, count: data[offset : offset + count]


@pytest.mark.parametrize("name", STORED)
def test_a_torch_written_directory_is_zipfiles(name):
    data = (DATA / name).read_bytes()
    entries = read_directory(_fetch(data), len(data))
    with zipfile.ZipFile(DATA / name) as archive:
        infos = archive.infolist()
        assert list(entries) == [i.filename for i in infos]
        for info in infos:
            record = stored_record(_fetch(data), entries, info.filename, len(data))
            assert record.file_size == info.file_size and record.header_offset == info.header_offset
            assert data[record.start : record.start + record.file_size] == archive.read(info)
            assert record_bytes(_fetch(data), record, 1 << 20) == archive.read(info)


def test_torchs_files_carry_the_zip64_end_record_the_reader_accepts():
    data = (DATA / "float32.pt").read_bytes()
    assert b"PK\x06\x06" in data[-120:] and b"PK\x06\x07" in data[-60:]  # written by torch itself
    assert read_directory(_fetch(data), len(data))


def _archive(tmp_path: Path, **options) -> bytes:
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", options.pop("compression", zipfile.ZIP_STORED)) as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02N.")
        archive.writestr("archive/data/0", b"\0" * 64)
        if "comment" in options:
            archive.comment = options["comment"]
    return path.read_bytes()


def test_layouts_torch_does_not_write_are_left_to_zipfile(tmp_path):
    plain = _archive(tmp_path)
    assert read_directory(_fetch(plain), len(plain))
    commented = _archive(tmp_path, comment=b"hi")
    assert read_directory(_fetch(commented), len(commented)) is None
    deflated = _archive(tmp_path, compression=zipfile.ZIP_DEFLATED)
    entries = read_directory(_fetch(deflated), len(deflated))
    assert stored_record(_fetch(deflated), entries, "archive/data/0", len(deflated)) is None
    assert (
        stored_record(_fetch(plain), read_directory(_fetch(plain), len(plain)), "archive/nothing", len(plain)) is None
    )


def test_a_zip64_record_that_disagrees_is_left_to_zipfile():
    data = bytearray((DATA / "float32.pt").read_bytes())
    at = data.rindex(b"PK\x06\x06")
    data[at + 48 : at + 56] = (1).to_bytes(8, "little")  # the directory's offset, in the zip64 record
    assert read_directory(_fetch(bytes(data)), len(data)) is None


def test_a_record_whose_crc_differs_gives_no_bytes(tmp_path):
    data = bytearray(_archive(tmp_path))
    entries = read_directory(_fetch(bytes(data)), len(data))
    record = stored_record(_fetch(bytes(data)), entries, "archive/data.pkl", len(data))
    assert record.crc == zlib.crc32(b"\x80\x02N.")
    data[record.start] ^= 0xFF
    assert record_bytes(_fetch(bytes(data)), record, 1 << 20) is None


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(STORED), st.data())
def test_any_cut_or_flipped_archive_reads_as_zipfile_or_is_left_to_it(name, data):
    whole = bytearray((DATA / name).read_bytes())
    if data.draw(st.booleans()):
        whole = whole[: data.draw(st.integers(0, len(whole) - 1))]
    else:
        at = data.draw(st.integers(0, len(whole) - 1))
        whole[at] ^= data.draw(st.integers(1, 255))
    raw = bytes(whole)
    entries = read_directory(_fetch(raw), len(raw))
    if entries is None:
        return
    for entry in entries:  # what it finds is where it is: each record's bytes or nothing
        record = stored_record(_fetch(raw), entries, entry, len(raw))
        if record is not None:
            assert record.start + record.file_size <= len(raw)
            assert raw[record.header_offset : record.header_offset + 4] == b"PK\x03\x04"


@pytest.mark.parametrize("local_name", [b"archive/data.pkX", b"archive/data.pk"])
def test_a_local_header_naming_another_record_gives_none(tmp_path, local_name):
    """The name after the local header must be the directory's, byte for byte and in length
    (zipfile's check), else the record is left to zipfile. A shorter name is given the byte it
    lost as extra field, so nothing after it moves."""
    data = _archive(tmp_path)
    at = data.index(b"PK\x03\x04")  # the first local header: archive/data.pkl's
    name_length, extra_length = struct.unpack_from("<HH", data, at + 26)
    assert data[at + 30 : at + 30 + name_length] == b"archive/data.pkl" and extra_length == 0
    lost = name_length - len(local_name)
    changed = data[: at + 26] + struct.pack("<HH", len(local_name), lost) + local_name + b"\0" * lost
    changed += data[at + 30 + name_length :]
    assert len(changed) == len(data)
    entries = read_directory(_fetch(changed), len(changed))
    assert stored_record(_fetch(changed), entries, "archive/data.pkl", len(changed)) is None
    entries = read_directory(_fetch(data), len(data))
    assert stored_record(_fetch(data), entries, "archive/data.pkl", len(data)).start == at + 30 + name_length
