"""GE graph dump file names, in every form real installations write, and finding them.

GE (``DUMP_GE_GRAPH``) names a graph dump ``ge_{form}_{index}_[graph_{id}_]{stage}.{ext}``:

=============================================  =============================================
``ge_proto_00000001_Build.txt``                TextFormat ``ge.proto.ModelDef``, 8-digit index
``ge_proto_00056_Build.txt``                   the same with a 5-digit index (older CANN)
``ge_proto_00000001_graph_31_Build.txt``       newer CANN: the graph id (31) in the name
``ge_proto_00000001_graph_0_PreRunBegin.txt``  another stage of compilation (not a Build graph)
``ge_onnx_00000000_graph_1_Build.pbtxt``       the graph as ONNX ModelProto TextFormat
``ge_proto_00000001_Build.txt.json``           what ``atc --mode=5`` writes from the ``.txt``
=============================================  =============================================

The tool reads the ``Build`` stage (the graph that ran); others only when asked for by stage.
A graph directory with no Build graph of these names may hold graphs under names of the user's:
``atc --mode=1 --om=resnet50.om --json=resnet50.json`` writes ``resnet50.json``, and atc's
``resnet50.om`` holds the model itself. Then each ``.json``, ``.txt``, ``.pbtxt`` or ``.om``
file there whose first KiB starts as a GE model (:func:`content_kind`) is a Build graph, once
per name without its suffixes (``resnet50.om`` over ``resnet50.txt`` over ``resnet50.json``:
the model over its conversions). Named dumps win when both are there.

What a file's first bytes say it is lives here too, for :mod:`.graph` and the finding alike: an
OM's magic (:func:`looks_like_om`), GE's ONNX text told from a ModelDef's (:func:`looks_like_onnx`),
any of the forms (:func:`content_kind`). The readers of each form are imported only when a graph
of that form is read.

When a graph is there in both forms, the ``ge_proto`` one is read and the ``ge_onnx`` one left
out: by name when both carry the same graph id (or the same index, without ids), and after
loading by content (:func:`prefer_ge_proto`). A Build graph name whose graph id is not a number
is an error naming the file, not a file silently left out.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError
from .files import open_regular

if TYPE_CHECKING:
    from .graph_model import Model

BUILD_STAGE = "Build"
GRAPH_FILE_RE = re.compile(r"^ge_(proto|onnx)_([0-9]+)_(?:graph_([^_]*)_)?([A-Za-z0-9_-]+)\.(txt|pbtxt)(\.json)?$")
"""form, index, graph id (any text; must be a number), stage, extension, ``.json`` of atc."""

_FORM_ORDER = {"ge_proto": 0, "ge_onnx": 1}
BUILD_FILE_FORMS = (
    "ge_proto_*_Build.txt, ge_proto_*_graph_*_Build.txt, ge_onnx_*_graph_*_Build.pbtxt, "
    "or a GE model in any .json, .txt, .pbtxt or .om"
)
"""The Build graph names, as messages list them."""

CONTENT_SUFFIXES = (".om", ".txt", ".pbtxt", ".json")
"""The files of a graph directory looked into when no Build graph has a GE dump name, in the
order of preference among files of one name (the model, then its conversions)."""
SNIFF_BYTES = 1024
# The first field of a ModelDef (ge.proto) or an ONNX ModelProto in TextFormat, after comments:
# a string value is quoted, a number is a number, a message opens a brace.
_TEXT_START = re.compile(
    rb"\A\s*(?:#[^\n]*\n\s*)*(?:(?:name|custom_version|producer_name|producer_version|domain|doc_string)"
    rb'\s*:\s*"|(?:version|ir_version|model_version)\s*:\s*[0-9]|(?:graph|attr|opset_import)\s*:?\s*[{<])'
)
# atc's JSON has its keys sorted (attr, custom_version, graph, name, version); protobuf's JSON
# writer puts them in field order (name, version, custom_version, graph, attr)
_JSON_START = re.compile(rb'\A\s*\{\s*"(attr|custom_version|graph|name|version)"\s*:')
_JSON_GRAPH = re.compile(rb'"graph"\s*:\s*\[')
OM_MAGIC = b"IMOD"  # an offline model's first 4 bytes: 0x444F4D49 as GE writes it (little-endian)
# The fields that tell GE's ONNX ModelProto text from a ge.proto ModelDef: the first one met decides
_ONNX_FIELD = re.compile(
    r"^[ \t]*(ir_version|opset_import|producer_name|producer_version|model_version|node|op_type"
    r"|op|input_desc|output_desc)[ \t]*[:{]",
    re.MULTILINE,
)
_ONNX_ONLY = {"ir_version", "opset_import", "producer_name", "producer_version", "model_version", "node", "op_type"}


@dataclass(frozen=True)
class GraphFileName:
    """What a graph dump's file name says. ``graph_id`` is None when the name has none (or a
    bad one, kept in ``bad_graph_id``)."""

    name: str
    form: str  # "ge_proto" or "ge_onnx"
    index: int
    graph_id: int | None
    stage: str
    is_json: bool = False
    bad_graph_id: str | None = None

    @property
    def is_onnx(self) -> bool:
        return self.form == "ge_onnx"

    @property
    def base(self) -> str:
        """The name without atc's ``.json``: the text dump this file is (a conversion of)."""
        return self.name[: -len(".json")] if self.is_json else self.name

    def sort_key(self) -> tuple:
        return (
            self.index,
            -1 if self.graph_id is None else self.graph_id,
            _FORM_ORDER[self.form],
            self.is_json,
            self.name,
        )


def parse_graph_file_name(name: str) -> GraphFileName | None:
    """The parts of a graph dump file name, or None when ``name`` is not one (see module doc)."""
    match = GRAPH_FILE_RE.match(name)
    if match is None:
        return None
    form, index, graph_id, stage, ext, json_ext = match.groups()
    if json_ext and (form != "proto" or ext != "txt"):
        return None  # atc converts the TextFormat ge_proto dumps only
    numeric = graph_id is not None and graph_id.isascii() and graph_id.isdigit()
    return GraphFileName(
        name,
        f"ge_{form}",
        int(index),
        int(graph_id) if numeric else None,
        stage,
        bool(json_ext),
        None if numeric or graph_id is None else graph_id,
    )


def _bad_id_error(path: Path, parsed: GraphFileName) -> PrecisionToolError:
    return PrecisionToolError(
        f"graph id {parsed.bad_graph_id!r} in the file name is not a number "
        f"(GE writes ge_proto_00000001_graph_31_{parsed.stage}.txt)",
        path,
    )


def _listed(directory: Path) -> list[tuple[GraphFileName, Path]]:
    if not directory.is_dir():
        raise PrecisionToolError("graph directory not found", directory)
    found = []
    for entry in directory.iterdir():
        parsed = parse_graph_file_name(entry.name)
        if parsed is not None and entry.is_file():
            found.append((parsed, entry))
    return found


def _same_graph(onnx: GraphFileName, proto: GraphFileName) -> bool:
    if onnx.stage != proto.stage:
        return False
    if onnx.graph_id is not None and proto.graph_id is not None:
        return onnx.graph_id == proto.graph_id
    return onnx.graph_id is None and proto.graph_id is None and onnx.index == proto.index


def looks_like_om(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts as an OM does."""
    return head[:4] == OM_MAGIC


def looks_like_onnx(text: str) -> bool | None:
    """Whether TextFormat ``text`` is an ONNX model (True) or a ge.proto one (False), by the
    first field name only one of them has; None when it holds none of those."""
    match = _ONNX_FIELD.search(text)
    return None if match is None else match.group(1) in _ONNX_ONLY


def content_kind(head: bytes) -> str | None:
    """``"om"``, ``"json"`` or ``"text"`` when ``head`` (a file's first KiB) starts as a GE model
    does: an OM's magic, atc's JSON of a ModelDef, or a ModelDef (or GE's ONNX ModelProto) in
    TextFormat; None otherwise. Which text form it is :mod:`.graph` decides when it reads it."""
    if looks_like_om(head):
        return "om"
    head = head.removeprefix(b"\xef\xbb\xbf")
    match = _JSON_START.match(head)
    if match is not None:
        first_is_graph_field = match.group(1) not in (b"name", b"version")
        return "json" if first_is_graph_field or _JSON_GRAPH.search(head) else None
    return "text" if _TEXT_START.match(head) else None


def _head(path: Path) -> bytes | None:
    try:
        with open_regular(path, "graph file") as handle:
            return handle.read(SNIFF_BYTES)
    except (PrecisionToolError, OSError):  # unreadable: not shown to hold a graph
        return None


def content_graph_files(directory: str | os.PathLike) -> list[Path]:
    """The files of ``directory`` with no GE dump name that hold a GE model by their first KiB
    (:func:`content_kind`; a ``.om`` always, for the OM reader to say what is wrong with it),
    among the suffixes of :data:`CONTENT_SUFFIXES`, one per name without suffixes (see the
    module doc), by name."""
    candidates = sorted(
        (CONTENT_SUFFIXES.index(entry.suffix.lower()), entry.name, entry)
        for entry in Path(directory).iterdir()
        if entry.suffix.lower() in CONTENT_SUFFIXES and parse_graph_file_name(entry.name) is None
    )
    chosen: dict[str, Path] = {}
    for _, name, entry in candidates:
        base = _model_name(name)
        if base in chosen or not entry.is_file():
            continue
        if entry.suffix.lower() == ".om" or ((head := _head(entry)) is not None and content_kind(head)):
            chosen[base] = entry
    return sorted(chosen.values(), key=lambda p: p.name)


def _model_name(name: str) -> str:
    """``resnet50`` of ``resnet50.om``, ``resnet50.json`` and atc's ``resnet50.txt.json``."""
    return Path(name[: -len(".json")] if name.lower().endswith(".json") else name).stem.lower()


def is_content_named(path: Path | None) -> bool:
    """Whether the graph file ``path`` has a name of the user's, not a GE dump name (it was
    found by its content, or given by path)."""
    return path is not None and parse_graph_file_name(Path(path).name) is None


def find_graph_files(directory: str | os.PathLike, suffix: str | None = BUILD_STAGE) -> list[Path]:
    """The graph dumps in ``directory`` of stage ``suffix`` (None: every stage), by index.

    A graph present both as ``.txt`` and as ``.txt.json`` is listed once, as the ``.txt``; a
    ``ge_onnx`` dump of a graph that is also there as ``ge_proto`` is left out. When no dump of
    stage Build has a GE name, the Build graphs are the files that hold a GE model under other
    names (:func:`content_graph_files`): ``resnet50.json``, ``model.om``.

    Raises:
        PrecisionToolError: ``directory`` is not a directory, or a file of the stage asked for
            has a graph id that is not a number.
    """
    directory = Path(directory)
    chosen: dict[str, tuple[GraphFileName, Path]] = {}
    for parsed, path in _listed(directory):
        if suffix is not None and parsed.stage != suffix:
            continue
        if parsed.bad_graph_id is not None:
            raise _bad_id_error(path, parsed)
        if parsed.is_json and parsed.base in chosen:
            continue  # the text form is the one GE wrote; the JSON is a conversion of it
        chosen[parsed.base] = (parsed, path)
    protos = [p for p, _ in chosen.values() if not p.is_onnx]
    kept = [(p, path) for p, path in chosen.values() if not (p.is_onnx and any(_same_graph(p, q) for q in protos))]
    named = [path for _, path in sorted(kept, key=lambda item: item[0].sort_key())]
    if suffix in (BUILD_STAGE, None) and not any(p.stage == BUILD_STAGE for p, _ in kept):
        return named + content_graph_files(directory)
    return named


def graph_stages(directory: str | os.PathLike) -> set[str]:
    """The stages of the graph dumps in ``directory`` (``Build``, ``PreRunBegin``, ...)."""
    return {parsed.stage for parsed, _ in _listed(Path(directory))}


def file_graph_id(path: Path | None) -> int | None:
    """The graph id a dump's file name carries (``..._graph_31_Build.txt``), else None."""
    parsed = None if path is None else parse_graph_file_name(Path(path).name)
    return None if parsed is None else parsed.graph_id


def prefer_ge_proto(models: list[Model]) -> list[Model]:
    """``models`` without the ``ge_onnx`` ones whose every graph a ``ge_proto`` model holds too
    (the same graph dumped in both forms: the ge_proto one is complete)."""

    def is_onnx(model) -> bool:
        parsed = parse_graph_file_name(model.source_path.name) if model.source_path else None
        return parsed is not None and parsed.is_onnx

    proto_graphs = {g.name for m in models if not is_onnx(m) for g in m.graphs}
    return [m for m in models if not (is_onnx(m) and m.graphs and all(g.name in proto_graphs for g in m.graphs))]
