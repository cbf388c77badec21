"""From what the user types (``pt``, ``cp``, ``dc`` NAME) to tensors and NPU dump files, over a
:class:`~.workspace.Workspace`, so every layer above the comparison can resolve a tensor name.

NAME is, in this order:

1. an existing path (as given, else relative to the data root): a ``.npy`` file, an NPU dump file
   (an all-digit alias is resolved through its directory's ``mapping.csv``), or, for ``dc``, a
   directory whose dump files are all decoded; a bare file name is also looked up under
   ``temp/decode/`` (where ``dc`` writes), so ``pt`` takes the names ``dc`` printed;
2. a name looked up in the selected step directories of the newest NPU run (``debug_0`` first;
   a later debug dir only when ``debug_0`` has no match) and in the golden directory. Matches are
   ranked; the best rank present wins:

   0. a dump or golden file name, exactly;
   1. an NPU op name (graph spelling ``model/conv1/Conv2D`` or file spelling), or a golden tensor
      ``name.index`` / ``name:index`` (``model_dense_MatMul.0``, ``resnet/conv1/Relu:0``);
   2. a golden tensor name without index, when it has one output index only;
   3. a prefix of dump or golden file names, or of NPU op names.

   Several ops or tensors at the best rank: a :class:`PrecisionToolError` listing them. Several
   launches of one op: the newest (``dc`` decodes them all). Several golden timestamps: the newest.

Prefixes narrow the search: ``npu:NAME`` (NPU dumps only), ``tf:NAME`` (golden only),
``debug_1:NAME`` (that NPU debug dir only). The suffix ``:input:N`` / ``:output:N`` picks one
tensor of a dump (default: ``output:0``, or ``input:0`` for a dump without outputs).

On an msprobe data root, names are msprobe's instead (:mod:`.msprobe_tensors`): a full tensor
name (``Functional.linear.0.forward.input.0``), a call key with ``:input:N`` / ``:output:N``,
``bench:`` for the bench side. A ``.pt`` file (msprobe's PyTorch tensors) is read wherever it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import PrecisionToolError
from ..formats import layouts
from ..formats.dump import read_dump
from ..formats.dump_names import list_dump_files, normalise_op_name, read_mapping
from ..formats.dump_tensor import DumpFile, DumpTensor
from ..formats.files import open_regular
from ..formats.golden import load_npy, normalise_tensor_name
from .workspace import Workspace

MAX_CANDIDATES = 10
DECODE_DIR = "decode"  # under the output root: where dc writes (dump_convert/, or -o there)
_SELECTOR = re.compile(r"^(?P<name>.+):(?P<kind>input|output):(?P<index>[0-9]+)$")
_PREFIX = re.compile(r"^(?P<source>npu|tf|golden|debug_[0-9]+):(?P<rest>.+)$")
_TF_INDEX = re.compile(r"^(?P<name>.+):(?P<index>[0-9]+)$")
_NPY_MAGIC = b"\x93NUMPY"


@dataclass(frozen=True)
class NameSpec:
    """A NAME split into the text to look up, the source it is narrowed to and the selector."""

    text: str
    source: str | None = None  # "npu", "tf" or None for both
    debug: str | None = None  # "debug_1" with a ``debug_1:`` prefix
    kind: str | None = None  # "input" / "output" from an ``:output:0`` suffix
    index: int | None = None


def parse_name(text: str) -> NameSpec:
    """Split ``[npu:|tf:|debug_N:]NAME[:input:N|:output:N]`` into its parts."""
    source = debug = kind = index = None
    prefix = _PREFIX.match(text)
    if prefix:
        source, text = prefix["source"], prefix["rest"]
        if source.startswith("debug_"):
            source, debug = "npu", source
        source = "tf" if source == "golden" else source
    selector = _SELECTOR.match(text)
    if selector:
        text, kind, index = selector["name"], selector["kind"], int(selector["index"])
    if not text.strip():
        raise PrecisionToolError("empty tensor name")
    return NameSpec(text, source, debug, kind, index)


@dataclass(frozen=True)
class ResolvedTensor:
    """One tensor: a whole ``.npy`` file or one input/output of an NPU dump file."""

    label: str  # "Conv2D.x.12.0.1764...:output:0" or the .npy file name
    path: Path
    dump_tensor: DumpTensor | None = None
    others: tuple[str, ...] = ()  # the dump's other tensors, for a hint
    op_name: str = ""  # the dump's op, or the msprobe call (empty for a lone file)
    dtype_name: str | None = None  # an msprobe tensor's dtype in dump.json (its .npy is read as it)
    msprobe: object | None = None  # an msprobe tensor: its MsprobeTensor (.msprobe_tensors)

    @property
    def is_dump(self) -> bool:
        return self.dump_tensor is not None

    def load(self, device: bool = False) -> np.ndarray:
        """The data: host layout for dump tensors (device layout with ``device``), the npy, or
        an msprobe tensor file (``.pt`` read without torch, ``.npy`` as dump.json's dtype)."""
        tensor = self.dump_tensor
        if tensor is None:
            return read_tensor_file(self.path, self.dtype_name)
        if tensor.problem:
            raise PrecisionToolError(tensor.problem, tensor.path)  # it names the tensor
        return tensor.device() if device else tensor.host()


def read_tensor_file(path: Path, dtype_name: str | None = None) -> np.ndarray:
    """A ``.pt`` file (:func:`~..formats.torch_file.read_pt`), else a ``.npy`` file: as
    ``dtype_name`` (an msprobe dump.json dtype) when given, else as it is."""
    if path.suffix == ".pt":
        from ..formats.torch_file import read_pt

        return read_pt(path)
    if dtype_name is not None:
        from ..formats.npy_file import read_npy

        return read_npy(path, dtype_name)
    return load_npy(path)


@dataclass(frozen=True)
class DumpTarget:
    """One NPU dump file to decode; ``file_name`` is its real name when ``path`` is an alias."""

    path: Path
    file_name: str


@dataclass(frozen=True)
class DumpSelection:
    """What ``dc`` decodes: the files, the entries skipped, and the tensor selector if any."""

    targets: list[DumpTarget]
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    kind: str | None = None
    index: int | None = None


@dataclass(frozen=True)
class _Candidate:
    tier: int
    group: tuple  # candidates of one group are the same op (NPU) or tensor (golden)
    label: str
    path: Path
    file_name: str


def real_dump_name(path: Path) -> str:
    """The dump file name of ``path``: its ``mapping.csv`` target when it is an alias."""
    return read_mapping(path.parent).aliases.get(path.name, path.name)


def host_layout(tensor: DumpTensor) -> str:
    """The layout of ``tensor.host()`` (see :func:`~precision_tool.formats.layouts.host_layout`)."""
    return layouts.host_layout(
        tensor.shape, tensor.format, tensor.original_shape, tensor.origin_format(), max(tensor.sub_format, 1)
    )


def _places(workspace: Workspace, text: str) -> Iterator[Path]:
    yield Path(text).expanduser()
    yield workspace.data.path / text  # only when the path as given is not there: it needs a data root


def _existing_path(workspace: Workspace, text: str) -> Path | None:
    """``text`` as a path that is there (as given, else under the data root), else the file dc
    wrote of that name, else None."""
    for path in _places(workspace, text):
        try:
            if path.exists():
                return path
            if path.is_symlink():  # there, but following it fails: say so, not "no match"
                raise PrecisionToolError("a symbolic link that loops or points nowhere", path)
        except OSError:  # e.g. a name too long to be a path
            continue
    return decoded_file(workspace, text)


def decoded_files(workspace: Workspace) -> list[Path]:
    """Every ``.npy`` file under ``temp/decode/`` (what ``dc`` wrote), sorted."""
    found = []
    for directory, _, files in os.walk(workspace.config.temp_dir / DECODE_DIR):
        found += [Path(directory) / name for name in files if name.endswith(".npy")]
    return sorted(found)


def decoded_file(workspace: Workspace, name: str) -> Path | None:
    """The file ``dc`` wrote under ``temp/decode/`` with the bare file name ``name``; None when
    there is none (or ``name`` is a path).

    Raises:
        PrecisionToolError: several directories under ``temp/decode/`` hold a file of that name.
    """
    if os.sep in name or "/" in name or not name.endswith(".npy"):
        return None
    found = [path for path in decoded_files(workspace) if path.name == name]
    if len(found) > 1:
        listed = ", ".join(str(p) for p in found[:MAX_CANDIDATES])
        raise PrecisionToolError(f"'{name}' is ambiguous; dc wrote it in several places: {listed}")
    return found[0] if found else None


def _is_npy(path: Path) -> bool:
    if path.suffix == ".npy":
        return True
    try:
        with open_regular(path, "tensor file") as handle:
            return handle.read(len(_NPY_MAGIC)) == _NPY_MAGIC
    except OSError as exc:
        raise PrecisionToolError(f"cannot read file ({exc.strerror or exc})", path) from None


def select_tensor(dump: DumpFile, spec: NameSpec, file_name: str) -> ResolvedTensor:
    """The tensor of ``dump`` that ``spec`` selects (default ``output:0``, else ``input:0``)."""
    names = ", ".join(t.name for t in dump.tensors) or "none"
    if spec.kind is not None:
        side = dump.inputs if spec.kind == "input" else dump.outputs
        if spec.index >= len(side):
            raise PrecisionToolError(f"no {spec.kind}:{spec.index} in this dump (it has: {names})", dump.path)
        chosen = side[spec.index]
    elif dump.tensors:
        chosen = (dump.outputs or dump.inputs)[0]
    else:
        raise PrecisionToolError("the dump holds no tensors", dump.path)
    others = tuple(t.name for t in dump.tensors if t is not chosen)
    return ResolvedTensor(f"{file_name}:{chosen.name}", dump.path, chosen, others, dump.op_name)


def _tensor_from_file(path: Path, spec: NameSpec, file_name: str | None = None) -> ResolvedTensor:
    if path.is_dir():
        raise PrecisionToolError("is a directory; give a .npy file, a dump file or a name", path)
    if path.suffix == ".pt" or _is_npy(path):
        if spec.kind is not None:
            raise PrecisionToolError(
                f":{spec.kind}:{spec.index} selects a tensor of an NPU dump, "
                f"but this is a {path.suffix or '.npy'} file",
                path,
            )
        return ResolvedTensor(path.name, path)
    name = file_name or real_dump_name(path)
    return select_tensor(read_dump(path, name=name), spec, name)


def _npu_tier(file_name: str, path_name: str, op_name: str, text: str) -> int | None:
    key, op_key = normalise_op_name(text), normalise_op_name(op_name)
    if text in (file_name, path_name):
        return 0
    if key == op_key:
        return 1
    if file_name.startswith(text) or op_key.startswith(key):
        return 3
    return None


def _npu_candidates(workspace: Workspace, spec: NameSpec) -> list[_Candidate]:
    debugs = [spec.debug] if spec.debug else workspace.debug_names()
    for debug in debugs:
        try:
            listings = workspace.step_listings(debug)
        except PrecisionToolError:
            continue
        found = []
        for step, listing in listings.items():
            for ref in listing.files:
                tier = _npu_tier(ref.name.file_name, ref.path.name, ref.name.op_name, spec.text)
                if tier is not None:
                    group = ("npu", str(step.path), normalise_op_name(ref.name.op_name))
                    found.append(_Candidate(tier, group, ref.name.file_name, ref.path, ref.name.file_name))
        if found:
            return found
    return []


def _golden_key(text: str) -> str:
    key = normalise_tensor_name(text)
    match = _TF_INDEX.match(key)
    return f"{match['name']}.{match['index']}" if match else key


def _golden_candidates(workspace: Workspace, spec: NameSpec) -> list[_Candidate]:
    try:
        index = workspace.golden()
    except PrecisionToolError:
        return []
    key, found = _golden_key(spec.text), []
    for entry in index.entries():
        if spec.text in (entry.file_name, os.path.basename(entry.location)):  # no Path an entry
            tier = 0
        elif f"{entry.name}.{entry.output_index}" == key:
            tier = 1
        elif entry.name == key:
            tier = 2
        elif entry.file_name.startswith(key):
            tier = 3
        else:
            continue
        group = ("tf", entry.name, entry.output_index)
        found.append(_Candidate(tier, group, entry.file_name, entry.path, entry.file_name))
    return found


def _choose(candidates: list[_Candidate], text: str, golden: bool = True) -> list[_Candidate]:
    """The candidates of the one group at the best tier; PrecisionToolError if none or several."""
    if not candidates:
        what = "NPU dump file or golden tensor" if golden else "NPU dump file"
        hint = ", or a golden name like name.0" if golden else ""
        raise PrecisionToolError(
            f"no {what} matches '{text}' (give a path or an op name{hint}; "
            "names are looked up in the selected steps of the newest run)"
        )
    best = min(c.tier for c in candidates)
    groups: dict[tuple, list[_Candidate]] = {}
    for candidate in candidates:
        if candidate.tier == best:
            groups.setdefault(candidate.group, []).append(candidate)
    if len(groups) == 1:
        return next(iter(groups.values()))
    labels = [members[-1].label for members in groups.values()]
    if len(set(labels)) < len(labels):  # same file in several step dirs: show the paths
        labels = [str(members[-1].path) for members in groups.values()]
    more = f" (and {len(labels) - MAX_CANDIDATES} more)" if len(labels) > MAX_CANDIDATES else ""
    raise PrecisionToolError(f"'{text}' is ambiguous; candidates: {', '.join(labels[:MAX_CANDIDATES])}{more}")


def _lookup(workspace: Workspace, spec: NameSpec, golden: bool = True) -> list[_Candidate]:
    candidates = []
    if spec.source in (None, "npu"):
        candidates += _npu_candidates(workspace, spec)
    if golden and spec.source in (None, "tf") and spec.kind is None:
        candidates += _golden_candidates(workspace, spec)
    return _choose(candidates, spec.text, golden)


def resolve_tensor(workspace: Workspace, text: str) -> ResolvedTensor:
    """The one tensor NAME ``text`` designates (see the module docstring for the forms)."""
    spec = parse_name(text)
    path = _existing_path(workspace, spec.text) if spec.source is None else None
    if path is not None:
        return _tensor_from_file(path, spec)
    if workspace.is_msprobe:
        return _msprobe_tensor(workspace, text)
    chosen = _lookup(workspace, spec)[-1]
    if chosen.group[0] == "tf":
        return ResolvedTensor(chosen.file_name, chosen.path)
    return _tensor_from_file(chosen.path, spec, chosen.file_name)


def _msprobe_tensor(workspace: Workspace, text: str) -> ResolvedTensor:
    """The tensor NAME ``text`` designates on an msprobe data root (:mod:`.msprobe_tensors`).

    Raises:
        PrecisionToolError: no such tensor, several rank directories hold it, or it has no
            file (the dump holds statistics only).
    """
    from .msprobe_calls import call_tensors
    from .msprobe_tensors import find_msprobe_tensor

    found, label = find_msprobe_tensor(workspace, text)
    item, ref = found.tensor, found.ref
    if item.path is None and item.tensor.data_name is None:
        raise PrecisionToolError(
            f"{item.name} has no tensor file: the dump holds statistics only (ni {ref.op.name} shows them)"
        )
    if item.path is None:
        raise PrecisionToolError(f"{item.name}: {item.problem}")
    others = tuple(t.name for t in call_tensors(ref.model, ref.op) if t.name != item.name)
    return ResolvedTensor(label, item.path, None, others, ref.op.name, item.tensor.dtype, found)


def resolve_dump_files(workspace: Workspace, text: str) -> DumpSelection:
    """The NPU dump files NAME ``text`` designates: a file, a directory's dump files, or every
    launch of one op in the selected step directories."""
    spec = parse_name(text)
    if spec.source == "tf":
        raise PrecisionToolError(f"'{text}' names a golden tensor; dc decodes NPU dump files")
    path = _existing_path(workspace, spec.text) if spec.source is None else None
    if path is not None and path.is_dir():
        listing = list_dump_files(path)
        if not listing.files:
            raise PrecisionToolError(
                f"no NPU dump files in this directory ({len(listing.skipped)} other entries)", path
            )
        targets = [DumpTarget(ref.path, ref.name.file_name) for ref in listing.files]
        return DumpSelection(targets, list(listing.skipped), spec.kind, spec.index)
    if path is not None:
        return DumpSelection([DumpTarget(path, real_dump_name(path))], [], spec.kind, spec.index)
    chosen = _lookup(workspace, spec, golden=False)
    return DumpSelection([DumpTarget(c.path, c.file_name) for c in chosen], [], spec.kind, spec.index)
