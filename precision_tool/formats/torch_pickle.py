"""The ``data.pkl`` of a ``torch.save`` archive, read by a small interpreter that can only rebuild
tensors: nothing in it is ever imported, called or unpickled by Python's ``pickle``.

``torch.save(tensor)`` writes, in pickle protocol 2, one call of
``torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
backward_hooks[, metadata])`` whose storage is a persistent id
``("storage", torch.FloatStorage, "0", "cpu", numel)``: the key of the archive's ``data/0`` record,
the device it was on (``npu:0`` for Ascend, ignored here) and its length in elements. Dtypes
without a typed storage class (float8, uint16, ...) come as ``_rebuild_tensor_v3`` with a
``torch.storage.UntypedStorage`` (length in bytes) and the dtype as an extra argument; a
``Parameter`` wraps the call in ``_rebuild_parameter``. The backward hooks are an empty
``collections.OrderedDict``. torch_npu puts its storage description in ``metadata``, a dict of
``"npu_format_/ND": True``-style keys (torch_npu ``NPUSerialization.cpp``).

The interpreter knows the opcodes those writers emit (and the protocol 4 forms of the same
things). Every global outside :data:`.torch_names.CALLS`, the storage classes and the dtypes, and every other
opcode, is refused with one line naming it, before anything past it is read.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ..errors import PrecisionToolError
from .torch_names import CALLS, NO_NUMPY_DTYPES, NO_NUMPY_STORAGES, STORAGES, TORCH_DTYPES, UNTYPED_STORAGES

ONLY_TENSORS = "a .pt file may only rebuild tensors"
_SHOWN = 80  # characters of a name from the file shown in a message
_STRUCTS = {fmt: struct.Struct(fmt) for fmt in ("<i", "<B", "<H", "<I", "<Q", ">d")}

# opcodes the interpreter does not run, named in its refusal (others by their byte)
_OTHER_OPCODES = {
    b"i": "INST",
    b"o": "OBJ",
    b"\x81": "NEWOBJ",
    b"\x92": "NEWOBJ_EX",
    b"\x82": "EXT1",
    b"\x83": "EXT2",
    b"\x84": "EXT4",
    b"P": "PERSID",
    b"I": "INT",
    b"L": "LONG",
    b"S": "STRING",
    b"V": "UNICODE",
    b"F": "FLOAT",
    b"T": "BINSTRING",
    b"U": "SHORT_BINSTRING",
    b"B": "BINBYTES",
    b"C": "SHORT_BINBYTES",
    b"\x8e": "BINBYTES8",
    b"\x96": "BYTEARRAY8",
    b"\x97": "NEXT_BUFFER",
    b"\x98": "READONLY_BUFFER",
    b"\x8f": "EMPTY_SET",
    b"\x90": "ADDITEMS",
    b"\x91": "FROZENSET",
    b"0": "POP",
    b"1": "POP_MARK",
    b"2": "DUP",
    b"g": "GET",
    b"p": "PUT",
    b"d": "DICT",
    b"l": "LIST",
}


def shown(text: str) -> str:
    """A name read from the file, fit for a one-line message: escaped, and cut when long."""
    text = ascii(text)[1:-1]
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


@dataclass(frozen=True)
class Global:
    """A global the file names, allowed to be named (calling it is checked apart)."""

    module: str
    name: str

    def __str__(self) -> str:
        return shown(f"{self.module}.{self.name}")


@dataclass(frozen=True)
class StorageRef:
    """A storage of the archive: record ``data/<key>``, ``numel`` elements of ``dtype``."""

    key: str
    dtype: np.dtype
    numel: int
    location: str


@dataclass(frozen=True)
class TensorRecord:
    """One rebuilt tensor: a strided view of ``offset`` elements into a storage. Immutable
    (``metadata`` a read-only mapping), so one record may serve every file of its pickle."""

    storage: StorageRef
    dtype: np.dtype
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    requires_grad: bool = False
    metadata: Mapping = field(default_factory=lambda: MappingProxyType({}))


class _Machine:
    """The stack, the marks and the memo of one run over ``data``."""

    def __init__(self, data: bytes, path: str | os.PathLike):
        self.data, self.path, self.pos = data, path, 0
        self.stack: list = []
        self.marks: list[int] = []
        self.memo: dict[int, object] = {}

    def fail(self, problem: str) -> PrecisionToolError:
        return PrecisionToolError(f"data.pkl: {problem}", self.path)

    def refuse(self, what: str) -> PrecisionToolError:
        return PrecisionToolError(f"refuses {what}: {ONLY_TENSORS}", self.path)

    def take(self, count: int) -> bytes:
        if count > len(self.data) - self.pos:
            raise self.fail(f"ends inside an opcode (at byte {self.pos} of {len(self.data)})")
        self.pos += count
        return self.data[self.pos - count : self.pos]

    def unpack(self, fmt: str) -> int | float:
        layout = _STRUCTS.get(fmt) or struct.Struct(fmt)
        if layout.size > len(self.data) - self.pos:
            raise self.fail(f"ends inside an opcode (at byte {self.pos} of {len(self.data)})")
        self.pos += layout.size
        return layout.unpack_from(self.data, self.pos - layout.size)[0]

    def line(self) -> str:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise self.fail("a GLOBAL's name does not end")
        return self.take(end + 1 - self.pos)[:-1].decode("utf-8", "replace")

    def pop(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise self.fail(f"pops an empty stack (at byte {self.pos})")
        return self.stack.pop()

    def pop_mark(self) -> list:
        if not self.marks:
            raise self.fail(f"no MARK for the opcode at byte {self.pos - 1}")
        start = self.marks.pop()
        items = self.stack[start:]
        del self.stack[start:]
        return items

    def top(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise self.fail(f"finds an empty stack (at byte {self.pos})")
        return self.stack[-1]

    def run(self):
        data, opcodes = self.data, _OPCODES
        while True:
            if self.pos >= len(data):
                raise self.fail(f"ends inside an opcode (at byte {self.pos} of {len(data)})")
            code = data[self.pos : self.pos + 1]
            self.pos += 1
            if code == b".":
                return self.pop()
            handler = opcodes.get(code)
            if handler is None:
                name = _OTHER_OPCODES.get(code, f"0x{code[0]:02x}")
                raise self.refuse(f"the pickle opcode {name}")
            handler(self)


def _global(machine: _Machine, module: str, name: str) -> object:
    """What the global ``module.name`` stands for, or the refusal."""
    if (module, name) in CALLS or (module, name) in UNTYPED_STORAGES:
        return Global(module, name)
    if module == "torch" and (name in TORCH_DTYPES or name in STORAGES):
        return Global(module, name)
    if module == "torch" and (name in NO_NUMPY_DTYPES or name in NO_NUMPY_STORAGES):
        raise PrecisionToolError(f"holds a tensor of torch.{name}, which numpy has no type for", machine.path)
    raise machine.refuse(f"to run {Global(module, name)}")


def _stack_global(machine: _Machine) -> None:
    name, module = machine.pop(), machine.pop()
    if not isinstance(module, str) or not isinstance(name, str):
        raise machine.fail("STACK_GLOBAL of names that are not strings")
    machine.stack.append(_global(machine, module, name))


def _persistent(machine: _Machine) -> None:
    """``("storage", storage class, key, location, numel)`` as a :class:`StorageRef`."""
    pid = machine.pop()
    if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
        first = _what(pid[0]) if isinstance(pid, tuple) and pid else _what(pid)
        raise machine.refuse(f"the persistent id {first}")
    if (
        len(pid) != 5
        or not isinstance(pid[1], Global)
        or not isinstance(pid[2], str)
        or not isinstance(pid[3], str)
        or not _is_count(pid[4])
    ):
        raise machine.fail("a storage id that is not (storage, type, key, location, numel)")
    kind, key, location, numel = pid[1], pid[2], pid[3], pid[4]
    if (kind.module, kind.name) in UNTYPED_STORAGES:
        dtype = np.dtype(np.uint8)
    elif kind.module == "torch" and kind.name in STORAGES:
        dtype = np.dtype(TORCH_DTYPES[STORAGES[kind.name]])
    else:
        raise machine.fail(f"a storage of {kind}, which is not a storage class")
    machine.stack.append(StorageRef(key, dtype, numel, location))


def _what(value) -> str:
    """A value from the file in a message: small values as written, others by their type
    (a repr of a nested list could be as deep as the file is long)."""
    if isinstance(value, (str, int, float, type(None), Global)):
        return shown(repr(value) if not isinstance(value, Global) else str(value))
    return f"a {type(value).__name__}"


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _dims(machine: _Machine, value, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(_is_count(d) for d in value):
        raise machine.fail(f"a tensor whose {what} is not a tuple of counts")
    return value


# how many arguments each rebuild takes (the last one optional, but for the oldest), and
# where its dtype is when the storage's is not the tensor's
_ARITY = {"tensor": (4, 4, None), "tensor_v2": (6, 7, None), "tensor_v3": (7, 8, 6)}


def _tensor(machine: _Machine, args: tuple, kind: str) -> TensorRecord:
    """A tensor from ``(storage, offset, size, stride[, requires_grad, hooks[, dtype]
    [, metadata]])``."""
    least, most, dtype_at = _ARITY[kind]
    if not least <= len(args) <= most:
        raise machine.fail(f"a tensor rebuilt from {len(args)} arguments")
    storage, offset = args[0], args[1]
    if not isinstance(storage, StorageRef) or not _is_count(offset):
        raise machine.fail("a tensor whose storage or offset is not one")
    shape, stride = _dims(machine, args[2], "size"), _dims(machine, args[3], "stride")
    if len(shape) != len(stride):
        raise machine.fail(f"a tensor of {len(shape)} dimensions with {len(stride)} strides")
    dtype = storage.dtype
    if dtype_at is not None:
        kind = args[dtype_at]
        if not (isinstance(kind, Global) and kind.module == "torch" and kind.name in TORCH_DTYPES):
            raise machine.fail(f"a tensor whose dtype is {_what(kind)}")
        dtype = np.dtype(TORCH_DTYPES[kind.name])
    metadata = args[least] if len(args) > least else {}
    return TensorRecord(
        storage,
        dtype,
        offset,
        shape,
        stride,
        len(args) > 4 and args[4] is True,
        MappingProxyType(dict(metadata) if isinstance(metadata, dict) else {}),
    )


def _call(machine: _Machine, func, args) -> object:
    """REDUCE: ``func(*args)`` for the allowed callables only."""
    kind = CALLS.get((func.module, func.name)) if isinstance(func, Global) else None
    if kind is None:
        raise machine.refuse(f"to call {func if isinstance(func, Global) else type(func).__name__}")
    if not isinstance(args, tuple):
        raise machine.fail(f"calls {func} with arguments that are not a tuple")
    if kind == "dict":
        if args and not (
            len(args) == 1 and isinstance(args[0], list) and all(isinstance(p, tuple) and len(p) == 2 for p in args[0])
        ):
            raise machine.fail("an OrderedDict made of something other than pairs")
        return dict(args[0]) if args else {}
    if kind == "parameter":
        if not args or not isinstance(args[0], TensorRecord):
            raise machine.fail(f"calls {func} on something that is not a tensor")
        return args[0]
    return _tensor(machine, args, kind)


def _reduce(machine: _Machine) -> None:
    args = machine.pop()
    machine.stack.append(_call(machine, machine.pop(), args))


def _build(machine: _Machine) -> None:
    """BUILD: state into a dict, or an empty state onto a tensor; nothing else has state."""
    state, target = machine.pop(), machine.top()
    if isinstance(target, dict) and isinstance(state, dict):
        target.update(state)
    elif not (isinstance(target, TensorRecord) and state in (None, {})):
        raise machine.refuse(f"to set the state of a {type(target).__name__}")


def _set_items(machine: _Machine, items: list) -> None:
    target = machine.top()
    if not isinstance(target, dict) or len(items) % 2:
        raise machine.fail("SETITEMS on something that is not a dict")
    for key, value in zip(items[::2], items[1::2]):
        if not isinstance(key, (str, int, float, type(None))):
            raise machine.fail(f"a dict key of {type(key).__name__}")
        target[key] = value


def _append(machine: _Machine, items: list) -> None:
    target = machine.top()
    if not isinstance(target, list):
        raise machine.fail("APPEND to something that is not a list")
    target.extend(items)


def _get(machine: _Machine, index: int) -> None:
    if index not in machine.memo:
        raise machine.fail(f"reads memo {index}, which was never stored")
    machine.stack.append(machine.memo[index])


def _put(machine: _Machine, index: int) -> None:
    machine.memo[index] = machine.top()


def _long(machine: _Machine, size_format: str) -> None:
    size = machine.unpack(size_format)
    if size > 64:  # a count of elements fits in 8 bytes; more is no tensor's
        raise machine.fail(f"an integer of {size} bytes")
    machine.stack.append(int.from_bytes(machine.take(size), "little", signed=True))


def _text(machine: _Machine, size_format: str) -> None:
    data = machine.take(machine.unpack(size_format))
    try:
        machine.stack.append(data.decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError:
        raise machine.fail(f"a string that is not UTF-8 (before byte {machine.pos})") from None


def _proto(machine: _Machine) -> None:
    version = machine.take(1)[0]
    if not 2 <= version <= 5:
        raise machine.fail(f"pickle protocol {version}, not one torch.save writes")


def _mark(machine: _Machine) -> None:
    machine.marks.append(len(machine.stack))


def _push(value):
    return lambda machine: machine.stack.append(value() if callable(value) else value)


def _tuple(count: int):
    def handler(machine: _Machine) -> None:
        items = [machine.pop() for _ in range(count)][::-1]
        machine.stack.append(tuple(items))

    return handler


_OPCODES = {
    b"\x80": _proto,
    b"\x95": lambda m: m.take(8),
    b"(": _mark,
    b")": _push(()),
    b"\x85": _tuple(1),
    b"\x86": _tuple(2),
    b"\x87": _tuple(3),
    b"t": lambda m: m.stack.append(tuple(m.pop_mark())),
    b"]": _push(list),
    b"a": lambda m: _append(m, [m.pop()]),
    b"e": lambda m: _append(m, m.pop_mark()),
    b"}": _push(dict),
    b"s": lambda m: _set_items(m, [m.pop(), m.pop()][::-1]),
    b"u": lambda m: _set_items(m, m.pop_mark()),
    b"N": _push(None),
    b"\x88": _push(True),
    b"\x89": _push(False),
    b"J": lambda m: m.stack.append(m.unpack("<i")),
    b"K": lambda m: m.stack.append(m.unpack("<B")),
    b"M": lambda m: m.stack.append(m.unpack("<H")),
    b"\x8a": lambda m: _long(m, "<B"),
    b"\x8b": lambda m: _long(m, "<I"),
    b"G": lambda m: m.stack.append(m.unpack(">d")),
    b"X": lambda m: _text(m, "<I"),
    b"\x8c": lambda m: _text(m, "<B"),
    b"\x8d": lambda m: _text(m, "<Q"),
    b"q": lambda m: _put(m, m.unpack("<B")),
    b"r": lambda m: _put(m, m.unpack("<I")),
    b"\x94": lambda m: _put(m, len(m.memo)),
    b"h": lambda m: _get(m, m.unpack("<B")),
    b"j": lambda m: _get(m, m.unpack("<I")),
    b"c": lambda m: m.stack.append(_global(m, m.line(), m.line())),
    b"\x93": _stack_global,
    b"Q": _persistent,
    b"R": _reduce,
    b"b": _build,
}


def read_tensor_pickle(data: bytes, path: str | os.PathLike) -> TensorRecord:
    """The one tensor the ``data.pkl`` bytes ``data`` rebuild, read without running anything.

    Raises:
        PrecisionToolError: naming ``path``: a global, call or opcode other than those that
            rebuild a tensor (named), a malformed or truncated stream, or an object that is not
            one tensor.
    """
    result = _Machine(data, path).run()
    if not isinstance(result, TensorRecord):
        kind = "a state dict" if isinstance(result, dict) else f"a value of type {type(result).__name__}"
        raise PrecisionToolError(f"holds {kind}, not one tensor", path)
    return result
