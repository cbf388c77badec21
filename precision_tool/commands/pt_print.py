"""What ``pt NAME`` does: print a tensor (an NPU dump tensor or a golden ``.npy``) and export it as text.

The export is ``pt/{tensor}.txt`` under the output root (``temp/`` of the data root unless
``--out``; never next to the input): a ``#`` header line with the source, shape and dtype, then
every value of the flattened tensor, one a line, so ``numpy.loadtxt`` reads it back. float16, float32, bfloat16 and fp8 values are written
with 9 significant digits (exact for float32, so exact for all of them), float64 with 17,
integers and booleans as integers, complex values as "real imag" pairs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.text import Text

from ..compare.tensor_names import ResolvedTensor, host_layout, resolve_tensor
from ..compare.tensor_summary import tensor_stats
from ..context import Context
from ..errors import PrecisionToolError
from ..formats.output_root import OutputRoot
from ..formats.text import safe_file_name
from ..render.limits import LIST_LIMIT, head, more_note
from ..render.lines import data_text, visible
from ..render.tensor_view import format_value, key_value_table, values_table
from .registry import CommandResult, UsageError

_CHUNK = 1 << 20  # values formatted per step of the export


def _text_format(dtype: np.dtype) -> tuple[str, np.dtype | None]:
    if dtype == np.bool_:
        return "%d", np.dtype(np.uint8)
    if dtype.kind in "iu":
        return "%d", None
    if dtype.kind == "f" and dtype.itemsize >= 8:
        return "%.17g", np.dtype(np.float64)
    return "%.9g", np.dtype(np.float32)  # float16/32 and ml_dtypes' bfloat16 / fp8 / fp4


def export_text(root: OutputRoot, array: np.ndarray, path: Path, header: str) -> Path:
    """Write every value of ``array`` (flattened, C order) to ``path`` under ``root``, one a
    line, after a ``# header`` line; in chunks, so a huge tensor never becomes one huge string.
    The file appears under ``path`` only once complete."""
    flat = np.asarray(array).reshape(-1)
    with root.create(path) as handle:  # complete or absent, even after Ctrl-C or a full disk
        handle.write(f"# {header}\n")
        if flat.dtype.kind == "c":
            for start in range(0, flat.size, _CHUNK):
                chunk = flat[start : start + _CHUNK]
                np.savetxt(handle, np.column_stack([chunk.real, chunk.imag]), fmt="%.17g")
            return path
        fmt, cast = _text_format(flat.dtype)
        for start in range(0, flat.size, _CHUNK):
            chunk = flat[start : start + _CHUNK]
            handle.flush()
            (chunk.astype(cast) if cast is not None else chunk).tofile(handle, sep="\n", format=fmt)
            handle.write("\n")
    return path


def _layout_row(tensor: ResolvedTensor, device: bool) -> tuple[str, str]:
    t = tensor.dump_tensor
    if device:
        return "layout", f"device {t.format} {list(t.shape)}"
    return "layout", f"host {host_layout(t)} (from device {t.format} {list(t.shape)})"


def _golden_row(context: Context, tensor: ResolvedTensor) -> tuple[str, Text]:
    """Which golden tensor ``vc`` compares this NPU tensor with (the one pairing rule)."""
    from ..compare.plan import golden_counterpart

    t = tensor.dump_tensor
    found = golden_counterpart(context, tensor.op_name, t.kind, t.index)
    if found is None:
        return "golden", Text(f"unknown: no Build graph holds {visible(tensor.op_name)}", style="muted")
    where = f" -> {found.path.name}" if found.path is not None else " (no such golden file in tf/dump)"
    return "golden", Text(visible(f"{found.tensor}{where}"), style="muted" if found.path is None else "")


def _msprobe_rows(context: Context, tensor: ResolvedTensor) -> list:
    """An msprobe tensor's call, its ``dump.json`` statistics (to hold against the file's), and
    the bench tensor ``vc`` compares it with."""
    from ..compare.msprobe_calls import bench_counterpart, call_tensors
    from ..compare.workspace import MSPROBE_BENCH

    found = tensor.msprobe
    t = found.tensor.tensor
    stats = "  ".join(
        f"{name} {format_value(value)}"
        for name, value in (("max", t.max), ("min", t.min), ("mean", t.mean), ("norm", t.norm))
        if value is not None
    )
    rows = [
        (
            "call",
            Text(
                visible(f"{found.ref.op.name} {found.tensor.index_name}  ({found.ref.debug}, {found.ref.graph.name})"),
                style="op.name",
            ),
        ),
        ("dump.json", f"{t.dtype or '?'}  {stats}".strip()),
    ]
    if found.ref.debug == MSPROBE_BENCH:
        return rows
    counterpart = bench_counterpart(context, found.ref)
    if counterpart.ref is None:
        return rows + [("bench", Text(visible(f"none ({counterpart.note})"), style="muted"))]
    same = [
        b for b in call_tensors(counterpart.ref.model, counterpart.ref.op) if b.index_name == found.tensor.index_name
    ]
    text = (
        f"{same[0].name}  (pt bench:{counterpart.ref.graph.name}:{same[0].name})"
        if same
        else f"{counterpart.ref.op.name} has no {found.tensor.index_name}"
    )
    return rows + [("bench", Text(visible(text), style="" if same else "muted"))]


def _stats_rows(tensor: ResolvedTensor, array: np.ndarray, dtype_name: str, device: bool) -> list:
    stats = tensor_stats(array, dtype_name)
    rows = [("file", Text(str(tensor.path), style="path")), ("shape", str(list(array.shape))), ("dtype", dtype_name)]
    if tensor.is_dump:
        rows.append(_layout_row(tensor, device))
    rows += [
        ("elements", str(array.size)),
        ("max", format_value(stats.max)),
        ("min", format_value(stats.min)),
        ("mean", format_value(stats.mean)),
    ]
    if not stats.finite:
        rows += [("NaN", Text(str(stats.nan), style="warn")), ("Inf", Text(str(stats.inf), style="warn"))]
    return rows


def _load(tensor: ResolvedTensor, device: bool) -> np.ndarray:
    try:
        return tensor.load(device=device)
    except PrecisionToolError as exc:
        if tensor.is_dump and not device and tensor.dump_tensor.problem is None:
            raise PrecisionToolError(f"{exc.problem} (pt NAME --device shows the device layout)", exc.path) from None
        raise


def print_tensor(args, context: Context) -> CommandResult:
    """Show NAME's statistics and first values; export all of its values under ``temp/pt/``."""
    if args.count < 0:
        raise UsageError("pt: -n/--count must be 0 or more")
    tensor = resolve_tensor(context, args.name)
    if args.device and not tensor.is_dump:
        raise UsageError(f"pt: --device applies to NPU dump tensors; {tensor.label} is a .npy file")
    array = _load(tensor, args.device)
    dtype_name = tensor.dump_tensor.dtype_name if tensor.is_dump else str(array.dtype)
    rows = _stats_rows(tensor, array, dtype_name, args.device)
    if tensor.is_dump:
        rows.append(_golden_row(context, tensor))
    if tensor.msprobe is not None:
        rows += _msprobe_rows(context, tensor)
    out = [data_text(tensor.label, "op.name"), key_value_table("", rows)]
    if args.count and array.size:
        out.append(values_table(np.asarray(array).reshape(-1)[: args.count], array.shape, array.size))
    stem = tensor.label.removesuffix(".npy").replace(":", ".") + (".device" if args.device else "")
    header = f"{tensor.label} shape={list(array.shape)} dtype={dtype_name}"
    root = context.output
    path = export_text(root, array, root.path / "pt" / safe_file_name(stem, ".txt"), header)
    out.append(Text.assemble("all values written to ", (str(path), "path")))
    if tensor.others:
        others, hidden = head(tensor.others, None if args.full else LIST_LIMIT)
        more = f", {more_note(hidden)}" if hidden else ""
        how = "pt takes any of these names" if tensor.msprobe is not None else "select with NAME:input:0 ..."
        out.append(Text(f"this dump also holds {', '.join(others)}{more} ({how})", style="muted"))
    return CommandResult(out, files=[path])
