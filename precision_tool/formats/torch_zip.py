"""The zip directory of a ``torch.save`` archive, read straight from its bytes.

``zipfile.ZipFile`` builds an object per record and parses every header field it knows; for
msprobe's dumps (thousands of ``.pt`` files of a few kilobytes to a few megabytes) that cost
more than reading the tensors. torch's writer (PyTorch's ``caffe2/serialize/
inline_container.cc``, on miniz) writes the simplest zip there is: every record stored
(uncompressed), no comment, one disk, sizes in the central directory (flag bit 3 set, the local
header's left zero) and, in recent torch, a zip64 end record and locator before the end record.
:func:`read_directory` reads exactly that layout: the end-of-central-directory record in the
last 22 bytes and the central directory; :func:`stored_record` a record's local header
(signature and name checked against the directory's, as zipfile checks them), so its data's
first byte is known.

Anything else (a comment, sizes past 4 GiB, a compressed or encrypted record, a directory that
does not add up) gives None: the caller falls back to zipfile, whose errors name the problem.
Nothing
here raises on a bad file.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from .files import Fetch

# signature, this disk, directory's disk, records here, records, directory size, its offset,
# comment length
_END = struct.Struct("<4sHHHHIIH")
# signature, made by, needed, flags, method, time, date, crc, compressed, size, name length,
# extra length, comment length, disk, internal attributes, external attributes, local offset
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
# the same record, only the fields read: signature, flags, method, crc, compressed, size, name
# length, extra length, comment length, local offset (fewer objects made per record)
_CENTRAL_FIELDS = struct.Struct("<4s4xHH4xIIIHHH8xI")
_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # ..., name length, extra length
# signature, record size, made by, needed, this disk, directory's disk, records here, records,
# directory size, its offset; then the locator: signature, disk, the record's offset, disks
_ZIP64_END = struct.Struct("<4sQHHIIQQQQ")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_END_SIGNATURE, _ZIP64_LOCATOR_SIGNATURE = b"PK\x06\x06", b"PK\x06\x07"
_END_SIGNATURE, _CENTRAL_SIGNATURE, _LOCAL_SIGNATURE = b"PK\x05\x06", b"PK\x01\x02", b"PK\x03\x04"
_ZIP64 = 0xFFFFFFFF
_DIRECTORY_LIMIT = 1 << 20  # a tensor's archive has seven records, a few hundred bytes
_ENCRYPTED = 0x1


class StoredRecord(NamedTuple):
    """A stored record of the archive: ``size`` bytes from ``start``; the attributes
    :func:`~.torch_file` reads of a zipfile.ZipInfo, under the same names (a named tuple: three
    are made per file read, cheaper than a frozen dataclass)."""

    filename: str
    start: int
    file_size: int
    crc: int
    header_offset: int
    flag_bits: int = 0
    compress_type: int = 0  # zipfile.ZIP_STORED

    @property
    def compress_size(self) -> int:
        return self.file_size


def _directory(fetch: Fetch, file_size: int) -> bytes | None:
    if file_size < _END.size:
        return None
    end = fetch(file_size - _END.size, _END.size)
    if len(end) != _END.size:
        return None
    signature, disk, start_disk, here, total, size, offset, comment = _END.unpack(end)
    if (
        signature != _END_SIGNATURE
        or disk
        or start_disk
        or here != total
        or comment
        or _ZIP64 in (size, offset)
        or size > _DIRECTORY_LIMIT
    ):
        return None
    directory_end = file_size - _END.size
    if offset + size != directory_end and not _zip64_agrees(fetch, directory_end, size, offset):
        return None
    directory = fetch(offset, size)
    return directory if len(directory) == size else None


def _zip64_agrees(fetch: Fetch, end_at: int, size: int, offset: int) -> bool:
    """Whether a zip64 end record and its locator (torch writes them always) sit between the
    directory and the end record, saying what the end record says of the directory."""
    at = end_at - _ZIP64_LOCATOR.size - _ZIP64_END.size
    if at != offset + size or at < 0:
        return False
    raw = fetch(at, _ZIP64_END.size + _ZIP64_LOCATOR.size)
    if len(raw) != _ZIP64_END.size + _ZIP64_LOCATOR.size:
        return False
    fields = _ZIP64_END.unpack_from(raw)
    locator = _ZIP64_LOCATOR.unpack_from(raw, _ZIP64_END.size)
    return (
        fields[0] == _ZIP64_END_SIGNATURE
        and locator[0] == _ZIP64_LOCATOR_SIGNATURE
        and locator[2] == at
        and fields[4] == fields[5] == 0
        and fields[6] == fields[7]
        and fields[8] == size
        and fields[9] == offset
    )


def _entries(directory: bytes) -> dict[str, tuple] | None:
    """name -> (flags, method, crc, compressed, size, local offset) of every record."""
    entries: dict[str, tuple] = {}
    at, end, unpack = 0, len(directory), _CENTRAL_FIELDS.unpack_from
    while at < end:
        if at + _CENTRAL.size > end:
            return None
        signature, flags, method, crc, compressed, size, name_length, extra, comment, offset = unpack(directory, at)
        name_at = at + _CENTRAL.size
        at = name_at + name_length
        if signature != _CENTRAL_SIGNATURE or at > end:
            return None
        name = directory[name_at:at].decode("utf-8" if flags & 0x800 else "cp437", "replace")
        entries.setdefault(name, (flags, method, crc, compressed, size, offset))
        at += extra + comment
    return entries if at == end else None


def _record(fetch: Fetch, name: str, entry: tuple, file_size: int) -> StoredRecord | None:
    flags, method, crc, compressed, size, offset = entry
    if method != 0 or flags & _ENCRYPTED or compressed != size or _ZIP64 in (compressed, size, offset):
        return None
    encoded = name.encode("utf-8")
    header = fetch(offset, _LOCAL.size + len(encoded))  # the local header and the name after it
    if len(header) < _LOCAL.size:
        return None
    fields = _LOCAL.unpack_from(header)
    start = offset + _LOCAL.size + fields[9] + fields[10]
    if fields[0] != _LOCAL_SIGNATURE or header[_LOCAL.size :] != encoded or fields[9] != len(encoded):
        return None
    if start + size > file_size:
        return None
    return StoredRecord(name, start, size, crc, offset, flags)


def read_directory(fetch: Fetch, file_size: int) -> dict[str, tuple] | None:
    """The central directory (name -> its fields) of an archive laid out as torch writes it,
    or None (see the module docstring). ``fetch(offset, count)`` reads the file."""
    directory = _directory(fetch, file_size)
    return _entries(directory) if directory is not None else None


def stored_record(fetch: Fetch, entries: dict[str, tuple], name: str, file_size: int) -> StoredRecord | None:
    """The record ``name`` of ``entries`` (:func:`read_directory`) with its data's place, or
    None when it is missing or not stored as torch stores it."""
    entry = entries.get(name)
    return None if entry is None else _record(fetch, name, entry, file_size)


def record_bytes(fetch: Fetch, record: StoredRecord, limit: int) -> bytes | None:
    """A small record's bytes, CRC-checked as zipfile checks them; None when it differs."""
    data = fetch(record.start, min(record.file_size, limit))
    if record.file_size <= limit and zlib.crc32(data) != record.crc:
        return None
    return data
