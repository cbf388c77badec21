"""What ``dc NAME`` does: decode NPU dump files into one ``.npy`` per input and output.

Each tensor becomes ``{dumpfile}.{input|output}.{i}.{d0xd1x...}.npy`` (the dims of the saved
array joined by ``x``; a 0-d array gets ``scalar``), in the host layout and original shape by
default, in the device layout and shape with ``--device``, or transposed to ``-f FORMAT`` from
the host layout. Names are made safe (only ``A-Za-z0-9_.+-``, no ``..``) and at most 255
characters (a long dump-file name is cut and given a short hash).

numpy cannot save bfloat16 and the fp8/fp4 types portably (they become opaque void records), so
those are written as float32, which holds every one of their values exactly. Everything else
keeps its dtype. Arrays are saved with ``allow_pickle=False``.

Default OUT: ``decode/dump_convert/`` under the output root (``temp/`` of the data root). The
dump and golden directories are never written to, not even with ``-o``; OUT is written like the
output root (:class:`~precision_tool.formats.output_root.OutputRoot`: no link followed in it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.text import Text

from ..compare.tensor_names import DECODE_DIR, DumpSelection, host_layout, resolve_dump_files
from ..context import Context
from ..errors import PrecisionToolError
from ..formats.dump import read_dump
from ..formats.dump_tensor import DumpFile, DumpTensor
from ..formats.held_dir import OutputError
from ..formats.layouts import convert_host_format
from ..formats.output_root import OutputRoot
from ..formats.text import safe_file_name
from ..render.fit import FitTable
from ..render.lines import visible
from ..status import ExitStatus
from .registry import CommandResult


@dataclass(frozen=True)
class Decoded:
    """One tensor written: where from, how it was laid out, where to."""

    file_name: str
    tensor: DumpTensor
    layout: str
    shape: tuple[int, ...]
    path: Path


def output_name(file_name: str, tensor: DumpTensor, shape: tuple[int, ...]) -> str:
    """``{file_name}.{kind}.{index}.{d0xd1...}.npy`` (``scalar`` for 0-d), made safe."""
    dims = "x".join(str(d) for d in shape) or "scalar"
    return safe_file_name(file_name, f".{tensor.kind}.{tensor.index}.{dims}.npy")


def _output_dir(context: Context, out: str | None) -> tuple[OutputRoot, Path]:
    """The root the arrays are written under and their directory (created): OUT itself, or
    ``decode/dump_convert`` of the output root."""
    root = context.output if out is None else context.output_at(out)
    parts = (DECODE_DIR, "dump_convert") if out is None else ()
    return root, root.directory(*parts)


def decode_tensor(tensor: DumpTensor, device: bool, fmt: str | None) -> tuple[np.ndarray, str]:
    """The array to save and a description of its layout; PrecisionToolError if it cannot be."""
    if tensor.problem:
        raise PrecisionToolError(tensor.problem)
    if device:
        return tensor.device(), f"device {tensor.format}"
    try:
        host = tensor.host()
    except PrecisionToolError as exc:
        raise PrecisionToolError(exc.problem) from None
    layout = host_layout(tensor)
    if fmt is None or fmt == layout:
        return host, f"host {layout}"
    if layout == "ND" or fmt == "ND":
        return host, f"{layout} (kept: no dim order)"
    return convert_host_format(host, layout, fmt), f"{fmt} from {layout}"


def save_npy(root: OutputRoot, path: Path, array: np.ndarray) -> None:
    """``np.save`` without pickling; dtypes numpy cannot save portably become float32. The file
    appears under ``path`` (in ``root``) only once complete (Ctrl-C or a full disk leaves
    nothing half-written)."""
    if array.dtype.kind == "V" and array.dtype.names is None:  # ml_dtypes' bfloat16, fp8, fp4
        array = array.astype(np.float32)
    with root.create(path, binary=True) as handle:  # a handle: np.save adds no second suffix
        np.save(handle, array, allow_pickle=False)


def _selected(dump: DumpFile, selection: DumpSelection) -> list[DumpTensor]:
    if selection.kind is None:
        return dump.tensors
    side = dump.inputs if selection.kind == "input" else dump.outputs
    if selection.index >= len(side):
        names = ", ".join(t.name for t in dump.tensors) or "none"
        raise PrecisionToolError(f"no {selection.kind}:{selection.index} in this dump (it has: {names})", dump.path)
    return [side[selection.index]]


def _decode_file(
    dump: DumpFile,
    file_name: str,
    selection: DumpSelection,
    out: tuple[OutputRoot, Path],
    args,
    fmt: str | None,
    problems: list[str],
) -> list[Decoded]:
    root, directory = out
    written = []
    for tensor in _selected(dump, selection):
        try:
            array, layout = decode_tensor(tensor, args.device, fmt)
        except PrecisionToolError as exc:
            problems.append(f"{file_name} {tensor.name}: {exc.problem}")
            continue
        path = directory / output_name(file_name, tensor, array.shape)
        save_npy(root, path, array)  # a write that fails (a full disk) ends the command
        written.append(Decoded(file_name, tensor, layout, tuple(array.shape), path))
    return written


def _table(decoded: list[Decoded]) -> FitTable:
    table = FitTable(title="decoded tensors (pt takes these file names)", title_style="")
    table.add_column("file written", style="path")
    for column in ("tensor", "dtype", "device", "saved as"):
        table.add_column(column)
    for d in decoded:
        table.add_row(
            d.path.name,
            d.tensor.name,
            d.tensor.dtype_name,
            f"{d.tensor.format} {list(d.tensor.shape)}",
            f"{list(d.shape)} {d.layout}",
        )
    return table


def _report(decoded: list[Decoded], problems: list[str], selection: DumpSelection, out: Path) -> CommandResult:
    lines: list = [_table(decoded)] if decoded else []
    lines += [Text(f"skipped {visible(path.name)}: {visible(why)}", style="muted") for path, why in selection.skipped]
    lines += [Text(f"not decoded: {visible(problem)}", style="warn") for problem in problems]
    files = len({d.file_name for d in decoded})
    lines.append(Text.assemble(f"{len(decoded)} tensor(s) of {files} dump file(s) written to ", (str(out), "path")))
    status = ExitStatus.OK if not problems else ExitStatus.FLAGGED if decoded else ExitStatus.ERROR
    return CommandResult(lines, status, [d.path for d in decoded])


def decode(args, context: Context, fmt: str | None) -> CommandResult:
    """Decode the dump files NAME designates (host tensors transposed to ``fmt`` when given);
    per-tensor problems are reported and skipped."""
    selection = resolve_dump_files(context, args.name)
    out = _output_dir(context, args.output)
    decoded: list[Decoded] = []
    problems: list[str] = []
    for target in selection.targets:
        try:
            dump = read_dump(target.path, name=target.file_name)
            decoded += _decode_file(dump, target.file_name, selection, out, args, fmt, problems)
        except OutputError:
            raise  # the output is gone (a full disk): the next file would fail the same way
        except PrecisionToolError as exc:
            if len(selection.targets) == 1:
                raise
            problems.append(str(exc))
    return _report(decoded, problems, selection, out[1])
