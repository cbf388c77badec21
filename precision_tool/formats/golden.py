"""TF golden dumps: ``{tensor name, "/" -> "_"}.{output_index}[.{extra}].{timestamp}.npy``.

The index is built from file names alone; an array is memory-mapped only when it is looked up,
so opening a directory of many gigabytes costs one directory listing.

Decisions (FORMATS.md section 5):

* The optional third field of the name regex (``name.0.7.1657000000000000.npy``) is not
  documented by the dumpers we know of; it is taken to be a per-launch counter that some dumpers
  put before the timestamp. It is kept as ``GoldenEntry.extra`` and only breaks ties between
  equal timestamps; it never changes which tensor a file is.
* The 255-character limit applies to names found on disk. A name resolved through
  ``mapping.csv`` may be longer: that is the very reason such aliases exist.
* A bfloat16 tensor may be stored labelled ``<f2`` (its bits saved as float16). Nothing here
  can tell; whoever compares it decides how to reinterpret it.
"""

from __future__ import annotations

import io
import math
import os
import re
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from precision_tool.errors import PrecisionToolError

from .dump_names import MAPPING_FILE, read_mapping
from .file_identity import FileIdentities
from .files import child_prefix, held_fetch, open_regular, open_regular_descriptor, read_whole
from .shapes import element_problem, shape_problem
from .text import shape_text

GOLDEN_NAME = re.compile(r"^([A-Za-z0-9_-]+)\.([0-9]+)(\.[0-9]+)?\.([0-9]{1,255})\.npy$")
MAX_NAME_LENGTH = 255
_NPY_MAGIC = b"\x93NUMPY"
_PICKLED = "it holds pickled Python objects, which are never loaded"


@dataclass(frozen=True)
class GoldenEntry:
    """One golden ``.npy`` file; ``file_name`` is the resolved name when ``path`` is an alias.

    ``location`` is the file's path as text, what a comparison opens and pairs with; ``path``
    makes it a :class:`~pathlib.Path` when asked. An index of the 4 GB bench network's 11,657
    files built a ``Path`` for each, a third of the index's time, and the pairing made each
    text again (docs/performance.md, "Golden paths as text").
    """

    name: str
    output_index: int
    timestamp: int
    extra: int | None
    location: str
    file_name: str

    @property
    def path(self) -> Path:
        """The file's path."""
        return Path(self.location)


def normalise_tensor_name(name: str) -> str:
    """The file-name spelling of a TF tensor's op name: ``/`` becomes ``_``."""
    return name.replace("/", "_")


def parse_golden_name(file_name: str, path: str | os.PathLike | None = None) -> GoldenEntry | None:
    """Parse a golden file name (of the file at ``path``, else of a file of that name); None if
    it does not match the naming rule."""
    match = GOLDEN_NAME.match(file_name)
    if match is None:
        return None
    name, index, extra, stamp = match.groups()
    return GoldenEntry(
        name=name,
        output_index=int(index),
        timestamp=int(stamp),
        extra=int(extra[1:]) if extra else None,
        location=file_name if path is None else os.fspath(path),
        file_name=file_name,
    )


class GoldenIndex:
    """Golden tensors of one directory, keyed by ``(normalised name, output_index)``.

    ``invalid`` lists ``(path, reason)`` for every file that cannot be used, and for problems in
    ``mapping.csv``; ``unread_mapping`` says why ``mapping.csv`` was not read at all (None when
    it was, or there is none). ``len()`` is the number of distinct tensors.
    """

    def __init__(
        self,
        directory: Path,
        groups: dict[tuple[str, int], list[GoldenEntry]],
        invalid: list[tuple[Path, str]],
        unread_mapping: str | None = None,
    ):
        self.directory = directory
        self._groups = groups
        self.invalid = invalid
        self.unread_mapping = unread_mapping

    def __len__(self) -> int:
        return len(self._groups)

    def __contains__(self, key: object) -> bool:
        """``(name, output_index) in index``; a bare name asks for any output index."""
        if isinstance(key, str):
            wanted = normalise_tensor_name(key)
            return any(name == wanted for name, _ in self._groups)
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str):
            return (normalise_tensor_name(key[0]), key[1]) in self._groups
        return False

    def keys(self) -> list[tuple[str, int]]:
        """The ``(normalised name, output_index)`` pairs, sorted."""
        return sorted(self._groups)

    def entries(self) -> list[GoldenEntry]:
        """Every golden file, sorted by name, output index and timestamp."""
        return [entry for key in self.keys() for entry in self._groups[key]]

    def timestamps(self, name: str, output_index: int) -> list[int]:
        """The timestamps present for one tensor, oldest first; empty if none."""
        group = self._groups.get((normalise_tensor_name(name), output_index), [])
        return [entry.timestamp for entry in group]

    def entry(self, name: str, output_index: int, timestamp: int | None = None) -> GoldenEntry:
        """The file of one tensor: the latest one, or the one with ``timestamp``.

        ``name`` is spelled as the graph spells it (``model/conv1/Relu``) or as the file does.
        Raises PrecisionToolError when there is no such tensor or timestamp.
        """
        key = (normalise_tensor_name(name), output_index)
        group = self._groups.get(key)
        if not group:
            raise PrecisionToolError(f"no golden tensor {key[0]}.{output_index}.*.npy", self.directory)
        if timestamp is None:
            return group[-1]
        for entry in group:
            if entry.timestamp == int(timestamp):
                return entry
        present = ", ".join(str(e.timestamp) for e in group)
        raise PrecisionToolError(
            f"golden tensor {key[0]}.{output_index} has no timestamp {timestamp} (present: {present})", self.directory
        )

    def path_for(self, name: str, output_index: int, timestamp: int | None = None) -> Path:
        """The path of one tensor's file (see :meth:`entry`)."""
        return self.entry(name, output_index, timestamp).path

    def latest_path(self, name: str, output_index: int) -> Path | None:
        """The latest file of one tensor (spelled as :meth:`entry` takes it), None when the
        directory has none: what a tensor is paired with, when it can be."""
        location = self.latest_location(name, output_index)
        return None if location is None else Path(location)

    def latest_location(self, name: str, output_index: int) -> str | None:
        """:meth:`latest_path` as text (:attr:`GoldenEntry.location`), as the pairing keeps it."""
        group = self._groups.get((normalise_tensor_name(name), output_index))
        return group[-1].location if group else None

    def lookup(self, name: str, output_index: int, timestamp: int | None = None) -> np.ndarray:
        """Load one tensor, memory-mapped read-only: the latest, or the given timestamp's."""
        return load_npy(self.entry(name, output_index, timestamp).path)


def load_npy(path: str | os.PathLike) -> np.ndarray:
    """Memory-map a ``.npy`` file without ever unpickling; bad files raise PrecisionToolError.

    The file is opened once (a regular file only: :func:`~.files.open_regular`); its header is
    read and checked first (:func:`check_npy_header`), so a shape or element type no array can
    have, or more data than the file holds, is refused in words before anything is mapped.
    """
    path = Path(path)
    with open_regular(path, "golden file") as handle:
        header = _read_npy_header(handle, path, os.fstat(handle.fileno()).st_size)
        check_npy_header(header, path)
        try:
            return np.memmap(
                handle, header.dtype, "r", header.offset, header.shape, order="F" if header.fortran_order else "C"
            )
        except (ValueError, OSError, OverflowError) as exc:  # shorter since its header was read
            raise PrecisionToolError(f"cannot load golden file: {_describe(exc)}", path) from exc


@dataclass(frozen=True)
class NpyHeader:
    """What a ``.npy`` header says, where its data starts, and the size of the file."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    offset: int
    file_size: int


def npy_header(path: str | os.PathLike) -> NpyHeader:
    """The checked header of a ``.npy`` file (as :func:`load_npy` checks it), a sub-array
    element type folded into the shape as numpy maps it; nothing is mapped, so a caller that
    reads the data itself pays only for the header. Bad files raise PrecisionToolError."""
    return npy_header_and_bytes(path, 0)[0]


def npy_header_and_bytes(
    path: str | os.PathLike, limit: int, identities: FileIdentities | None = None
) -> tuple[NpyHeader, memoryview | None]:
    """:func:`npy_header`, and the bytes of the data when the file is at most ``limit`` bytes
    (None for a larger one): a small file is read whole with one read, its header parsed from
    those bytes. ``identities`` (a :class:`~.file_identity.FileIdentities`) records a small
    file's identity from what was read; a larger one's is left to the caller. PrecisionToolError
    when the file is shorter than its header says (truncated since it was checked)."""
    descriptor, info = open_regular_descriptor(path, "golden file")
    try:
        if info.st_size > limit:  # the header alone, through a buffered reader
            with open(descriptor, "rb", closefd=False) as handle:
                header, data = _read_npy_header(handle, path, info.st_size), None
        else:
            whole = _read_small(descriptor, info.st_size, path)
            if identities is not None:  # the fstat from before the read, the sample from its bytes
                identities.record(path, info, held_fetch(whole, descriptor, copy=False))
            header = _read_npy_header(io.BytesIO(whole), path, info.st_size)
            data = memoryview(whole)[header.offset :]
    finally:
        os.close(descriptor)
    check_npy_header(header, path)
    if data is not None and len(data) < _data_bytes(header):
        raise PrecisionToolError("the file ended before the tensor did: truncated since its header was read?", path)
    dtype = header.dtype
    if dtype.subdtype is not None and dtype.names is None:
        header = NpyHeader(
            header.shape + dtype.subdtype[1], dtype.subdtype[0], header.fortran_order, header.offset, header.file_size
        )
    return header, data


def _read_small(descriptor: int, size: int, path: str | os.PathLike) -> bytes:
    try:
        return read_whole(descriptor, size)
    except OSError as exc:
        raise PrecisionToolError(f"cannot read golden file: {exc.strerror or exc}", path) from None


def _data_bytes(header: NpyHeader) -> int:
    return math.prod(header.shape) * header.dtype.itemsize


# The header numpy's writer makes for a plain array (np.save, every TF dumper): parsed here
# without ast.literal_eval, which compiles the text each time (a quarter of a millisecond a
# file); any other header goes through numpy's reader.
_PLAIN_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-Z][0-9]*)', 'fortran_order': (True|False), "
    rb"'shape': \(((?:[0-9]+, )*[0-9]*,?)\), \} *\n"
)


def _plain_header(handle) -> tuple[tuple[int, ...], bool, np.dtype] | None:
    """(shape, fortran order, dtype) of a version 1.0 or 2.0 header in numpy's own spelling,
    the handle left at the data; None (the handle anywhere) for any other header."""
    start = handle.read(len(_NPY_MAGIC) + 2)
    if start[-2:] not in (b"\x01\x00", b"\x02\x00"):
        return None
    width = 2 if start[-2] == 1 else 4
    length = int.from_bytes(handle.read(width), "little")
    text = handle.read(length)
    return _plain_fields(text) if len(text) <= _KEPT_HEADER else _plain_fields.__wrapped__(text)


_KEPT_HEADER = 4096  # a plain header of 64 dimensions fits; a longer text is parsed, not kept


@lru_cache(maxsize=1024)
def _plain_fields(text: bytes) -> tuple[tuple[int, ...], bool, np.dtype] | None:
    """(shape, fortran order, dtype) of a header's dict text in numpy's own spelling, else None;
    worked out once per text (goldens of one shape and dtype have the same header)."""
    match = _PLAIN_HEADER.fullmatch(text)
    if match is None:
        return None
    descr, order, dims = match.groups()
    shape = tuple(int(d) for d in dims.split(b",") if d.strip())
    return shape, order == b"True", np.dtype(descr.decode("ascii"))


def _read_npy_header(handle, path: str | os.PathLike, size: int) -> NpyHeader:
    """The header of the ``.npy`` file open in ``handle`` (a file object, or its bytes in a
    BytesIO), ``size`` bytes long; PrecisionToolError naming ``path`` when it cannot be read or
    is not a ``.npy`` file."""
    try:
        if handle.read(len(_NPY_MAGIC)) != _NPY_MAGIC:
            raise PrecisionToolError("not a .npy file (bad magic)", path)
        handle.seek(0)
        plain = _plain_header(handle)
        if plain is not None:
            return NpyHeader(plain[0], plain[2], plain[1], handle.tell(), size)
        handle.seek(0)
        version = np.lib.format.read_magic(handle)
        # 3.0 is 2.0 with a UTF-8 header; reading it as 2.0 only garbles non-Latin-1 field
        # names, which do not matter here (structured arrays are not compared)
        npy = np.lib.format
        read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, fortran_order, dtype = read(handle)
        return NpyHeader(tuple(shape), dtype, bool(fortran_order), handle.tell(), size)
    except OSError as exc:
        raise PrecisionToolError(f"cannot read golden file: {exc.strerror or exc}", path) from exc
    except (RecursionError, MemoryError):  # a header of at most 10,000 bytes nested that deep
        raise PrecisionToolError("cannot load golden file: its header is nested too deeply", path) from None
    except (ValueError, EOFError, SyntaxError, TypeError, tokenize.TokenError) as exc:
        # TokenError: numpy re-tokenises a header it cannot parse, and an unclosed one ends there
        raise PrecisionToolError(f"cannot load golden file: {_describe(exc)}", path) from exc


def check_npy_header(header: NpyHeader, path: str | os.PathLike) -> None:
    """Raise PrecisionToolError naming ``path`` unless ``header`` describes an array that
    holds numbers (not objects, structured records or raw bytes), can exist, and whose data
    the file holds."""
    shape, dtype = header.shape, header.dtype
    if dtype.subdtype is not None and dtype.names is None:  # numpy makes (2,) of (3,)<f4 a (2, 3)
        dtype, shape = dtype.subdtype[0], shape + dtype.subdtype[1]
    problem = element_problem(dtype)
    if problem:
        raise PrecisionToolError(f"cannot load golden file: {problem}, not a tensor of numbers", path)
    problem = shape_problem(shape, dtype.itemsize)
    if problem:
        raise PrecisionToolError(f"cannot load golden file: {problem}", path)
    if dtype.hasobject:  # numpy could only unpickle it
        raise PrecisionToolError(f"cannot load golden file: {_PICKLED}", path)
    needed = math.prod(shape) * dtype.itemsize
    if needed > header.file_size - header.offset:
        raise PrecisionToolError(
            f"cannot load golden file: truncated (shape {shape_text(shape)} of {dtype.str} needs "
            f"{needed} bytes of data, the file holds {max(header.file_size - header.offset, 0)})",
            path,
        )


def _describe(exc: Exception) -> str:
    text = str(exc)
    if "Python objects" in text or "pickle" in text:
        return _PICKLED
    if "mmap length" in text or isinstance(exc, EOFError) or "EOF" in text:
        return f"truncated ({text})"
    return text


def read_golden(directory: str | os.PathLike) -> GoldenIndex:
    """Index the golden ``.npy`` files directly inside ``directory`` (names only, no loading).

    Files whose name is a key of ``mapping.csv`` are resolved through it in memory. Names that
    break the naming rule, non-``.npy`` files and unresolvable aliases go to ``invalid``.
    """
    directory = Path(directory)
    if not directory.is_dir():
        why = "not a directory" if directory.exists() else "golden directory does not exist"
        raise PrecisionToolError(why, directory)
    try:
        with os.scandir(directory) as it:
            names = sorted(e.name for e in it if e.name != MAPPING_FILE and _is_file(e))
    except OSError as exc:
        raise PrecisionToolError(f"cannot list directory: {exc.strerror or exc}", directory) from exc
    mapping = read_mapping(directory)
    invalid = mapping.skipped(directory)
    groups: dict[tuple[str, int], list[GoldenEntry]] = {}
    prefix = child_prefix(directory)  # each file's text: no Path a file
    for file_name in names:
        entry, reason = _classify(file_name, prefix + file_name, mapping.aliases.get(file_name))
        if entry is None:
            invalid.append((directory / file_name, reason))
        else:
            groups.setdefault((entry.name, entry.output_index), []).append(entry)
    for short in sorted(set(mapping.aliases) - set(names)):
        invalid.append((directory / short, f"{MAPPING_FILE} names it but there is no such file"))
    for group in groups.values():
        group.sort(key=lambda e: (e.timestamp, -1 if e.extra is None else e.extra, e.file_name))
    return GoldenIndex(directory, groups, invalid, mapping.unread)


def golden_name_problem(file_name: str) -> str | None:
    """Why a file name found on disk is not a comparable golden tensor, or None if it is."""
    if file_name.isascii() and file_name.isdigit():
        return f"alias with no entry in {MAPPING_FILE}"
    if not file_name.endswith(".npy"):
        return "not a .npy file"
    if len(file_name) > MAX_NAME_LENGTH:
        return f"name longer than {MAX_NAME_LENGTH} characters: not comparable"
    if not GOLDEN_NAME.match(file_name):
        return (
            "name does not match {name}.{output_index}.{timestamp}.npy with only "
            "A-Za-z0-9_- in the name: not comparable"
        )
    return None


def _classify(file_name: str, location: str, target: str | None) -> tuple[GoldenEntry | None, str]:
    """The entry of the file ``file_name`` at ``location`` (``target``: what mapping.csv maps it
    to), or None and why it is not one."""
    if target is not None:
        entry = parse_golden_name(target, location)
        if entry is None:
            return None, f"{MAPPING_FILE} maps it to {target!r}, which breaks the naming rule"
        return entry, ""
    entry = parse_golden_name(file_name, location)  # a name the rule matches is a .npy, not digits
    if entry is None or len(file_name) > MAX_NAME_LENGTH:
        return None, golden_name_problem(file_name)  # says why, the rule or the length
    return entry, ""


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def write_golden(
    directory: str | os.PathLike,
    name: str,
    output_index: int,
    timestamp: int,
    array: np.ndarray,
    *,
    extra: int | None = None,
) -> Path:
    """Write one golden tensor as TF's dumper names it; for tests and the sample generator.

    ``name`` may be the graph spelling (``model/conv1/Relu``). Creates ``directory`` if needed.
    Raises PrecisionToolError for a name the naming rule rejects or an object array.
    """
    middle = f".{int(extra)}" if extra is not None else ""
    file_name = f"{normalise_tensor_name(name)}.{int(output_index)}{middle}.{int(timestamp)}.npy"
    if len(file_name) > MAX_NAME_LENGTH or not GOLDEN_NAME.match(file_name):
        raise PrecisionToolError(f"{file_name!r} breaks the golden naming rule")
    array = np.asarray(array)
    if array.dtype.hasobject:
        raise PrecisionToolError(f"refusing to write an object array as {file_name}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name
    with open(path, "wb") as handle:  # a handle, so np.save cannot append another suffix
        np.save(handle, array, allow_pickle=False)
    return path
