"""Conversions between Ascend device (private) tensor formats and host layouts.

Every function here is pure numpy and vectorised. The formulas follow FORMATS.md section 3.

Blocked 4-D formats (NC1HWC0, NC1HWC0_C04, FRACTAL_Z, C1HWNCoC0) are converted through a
canonical NCHW host array, blocked 5-D formats (NDC1HWC0, FRACTAL_Z_3D) through NCDHW; the
canonical array is then transposed into the origin format. FRACTAL_NZ works on the last two
dims of any rank. The tiling of each is in :mod:`.blocked_formats`. Plain layouts (ND, NCHW,
NHWC, ...) are transposed into each other.

C0 is read from the device shape (its last dim) when a tensor comes back to the host, so a dump
keeps whatever C0 it was written with; going to the device it follows the dtype
(:func:`~.blocked_formats.c0_for`: 16 for float16/bfloat16/float32, 32 for int8, 64 for int4).

Origin-format inference in :func:`to_host` (``origin_format=None``, or an origin format that
cannot describe ``original_shape``):

* blocked formats: the candidate origins are tried in a fixed order and the first one whose
  computed device shape equals the actual device shape wins. The order prefers TensorFlow's
  layouts: NHWC then NCHW for NC1HWC0/NC1HWC0_C04; HWCN, NCHW, NHWC for FRACTAL_Z and
  C1HWNCoC0; NDHWC then NCDHW for NDC1HWC0; DHWCN, NCDHW, NDHWC for FRACTAL_Z_3D. So an
  NC1HWC0 tensor whose original dims 1 and 2 equal the device H and W (and whose dim 3 fits
  C1) is NHWC, otherwise NCHW.
* an original shape of lower rank than the blocked format is padded NCHW-style whatever the
  origin says: ``[a] -> [1,a,1,1]``, ``[a,b] -> [1,a,b,1]``, ``[a,b,c] -> [1,a,b,c]`` (5-D
  formats continue the pattern: ``[a,b,c,d] -> [1,a,b,c,d]``); the result is reshaped back.
* plain formats: the origin is the device format.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from precision_tool.errors import PrecisionToolError

from .blocked_formats import (
    BLOCKED_FORMATS,
    BlockedFormat,
    Shape,
    c0_for,
    nz_fits,
    nz_from_host,
    nz_shape,
    nz_tiles,
    shape_mismatch,
)
from .conversion_plans import ConversionPlans
from .layout_names import PLAIN_LAYOUTS
from .tile_copy import copy_tiles

SUPPORTED_DEVICE_FORMATS = frozenset(BLOCKED_FORMATS) | {"FRACTAL_NZ", "ND"} | PLAIN_LAYOUTS
_NAMES = {name.upper(): name for name in SUPPORTED_DEVICE_FORMATS}


# --- shared helpers ------------------------------------------------------------------------


def _name(fmt: str | None) -> str:
    """The official spelling of a format name, accepting any letter case."""
    text = "" if fmt is None else str(fmt).strip()
    return _NAMES.get(text.upper(), text)


def _transpose_axes(src: str, dst: str, ndim: int) -> tuple[int, ...] | None:
    """Axes taking a ``src`` array to ``dst``; None when it stays as it is."""
    for name in (src, dst):
        if name != "ND" and name not in PLAIN_LAYOUTS:
            raise PrecisionToolError(f"unknown host format {name!r}")
    if src == dst or "ND" in (src, dst):
        return None
    if sorted(src) != sorted(dst):
        raise PrecisionToolError(f"cannot convert {src} to {dst}")
    if ndim != len(src):
        raise PrecisionToolError(f"cannot convert a {ndim}-D tensor from {src} to {dst}")
    return tuple(src.index(letter) for letter in dst)


def _permute(shape: Shape, src: str, dst: str) -> Shape:
    axes = _transpose_axes(src, dst, len(shape))
    return shape if axes is None else tuple(shape[i] for i in axes)


def _layout_for(spec: BlockedFormat, shape: Shape, host_format: str | None) -> str | None:
    """The host layout ``shape`` is read in, or None when ``host_format`` cannot describe it."""
    rank = len(spec.canon)
    if len(shape) < rank:
        return spec.canon  # padded NCHW-style whatever the format says
    if len(shape) > rank:
        return None
    if host_format == "ND":
        return spec.canon
    if host_format in PLAIN_LAYOUTS and sorted(host_format) == sorted(spec.canon):
        return host_format
    return None


def _canon_dims(spec: BlockedFormat, shape: Shape, layout: str) -> Shape:
    """``shape`` in canonical order; short shapes padded [a] -> [1,a,1,1], [a,b] -> [1,a,b,1]."""
    rank = len(spec.canon)
    if len(shape) < rank:
        return (1,) + shape + (1,) * (rank - 1 - len(shape))
    return _permute(shape, layout, spec.canon)


def _resolve(spec: BlockedFormat, shape: Shape, host_format: str, fmt: str) -> tuple[str, Shape]:
    """The layout and canonical dims of a host shape given in ``host_format``, to write ``fmt``."""
    layout = _layout_for(spec, shape, host_format)
    if layout is None:
        raise PrecisionToolError(f"cannot lay out a {len(shape)}-D {host_format} tensor as {fmt}")
    return layout, _canon_dims(spec, shape, layout)


def _infer_layout(spec: BlockedFormat, actual: Shape, original: Shape, c0: int, groups: int) -> str | None:
    """The first candidate origin whose device shape equals the actual one."""
    for layout in spec.candidates:
        if len(original) != len(layout):
            continue
        try:
            if spec.codec.shape(_canon_dims(spec, original, layout), c0, groups) == actual:
                return layout
        except PrecisionToolError:  # e.g. N not a multiple of the groups in this reading
            continue
    return None


def _blocked_layout(
    spec: BlockedFormat, actual: Shape, original: Shape, origin: str | None, c0: int, groups: int
) -> str | None:
    """The host layout ``original`` is read in: the origin format when it fits, else inferred."""
    return _layout_for(spec, original, origin) or _infer_layout(spec, actual, original, c0, groups)


def _blocked_to_host(
    device: np.ndarray,
    fmt: str,
    original: Shape,
    origin: str | None,
    groups: int,
    out: np.ndarray | None,
    copies: list | None = None,
) -> np.ndarray:
    spec = BLOCKED_FORMATS[fmt]
    if device.ndim == 0 or device.shape[-1] == 0:  # no C0 to read the blocks by
        raise shape_mismatch(device, fmt, original)
    c0 = spec.fixed_c0 or device.shape[-1]
    layout = _blocked_layout(spec, device.shape, original, origin, c0, groups)
    if layout is None:
        raise shape_mismatch(device, fmt, original)
    dims = _canon_dims(spec, original, layout)
    if spec.codec.shape(dims, c0, groups) != device.shape:
        weight = _matmul_weight(spec, device, original, c0, groups)
        if weight is None:
            raise shape_mismatch(device, fmt, original)
        return _copied(weight, out) if out is not None else weight
    tiles = getattr(spec.codec, "tiles", None)
    view = tiles(device, dims, groups) if tiles is not None else None
    short = len(original) < len(spec.canon)
    merged = _merged(view) if out is None and view is not None else None
    if merged is not None:  # e.g. C1 == 1: the host is a view of the device
        host = merged[: dims[0], : dims[1]]
        return host.reshape(original) if short else convert_host_format(host, spec.canon, layout)
    out = _output(out, original, device.dtype)
    canon = out.reshape(dims) if short else convert_host_format(out, layout, spec.canon)
    if view is None:  # a gather (grouped FRACTAL_Z): the codec copies, then one more copy
        np.copyto(canon, spec.codec.to_canon(device, dims, groups))
    else:  # [N1, n0, C1, C0, *S] into [N, C, *S]
        copy_tiles(view, canon, (0, 1), copies)
    return out


def _matmul_weight(spec: BlockedFormat, device: np.ndarray, original: Shape, c0: int, groups: int) -> np.ndarray | None:
    """A 2-D FRACTAL_Z that GE laid out as a matmul weight: ``(K, N)`` as C = K, N = N
    (``[ceil(K/C0), ceil(N/16), 16, C0]``), not padded NCHW-style; read so when the padded
    reading does not fit the device shape but this one does. None otherwise."""
    if spec is not BLOCKED_FORMATS["FRACTAL_Z"] or len(original) != 2 or groups != 1:
        return None
    k, n = original
    dims = (n, k, 1, 1)
    if spec.codec.shape(dims, c0, 1) != device.shape:
        return None
    return np.ascontiguousarray(spec.codec.to_canon(device, dims, 1).reshape(n, k).T)


def _merged(tiles: np.ndarray) -> np.ndarray | None:
    """``[N1, n0, C1, C0, *S]`` as ``[N1 n0, C1 C0, *S]`` when that needs no copy, else None.

    Two axes merge in place when either is 1 long or the outer one steps over the whole inner
    one; told from the strides first, since numpy's own refusal (an exception) costs 25 us."""
    shape, strides = tiles.shape, tiles.strides
    for i in (0, 2):
        if shape[i] != 1 and shape[i + 1] != 1 and strides[i] != shape[i + 1] * strides[i + 1]:
            return None
    merged = tiles.view()
    try:
        merged.shape = (tiles.shape[0] * tiles.shape[1], tiles.shape[2] * tiles.shape[3], *tiles.shape[4:])
    except AttributeError:  # numpy: the axes cannot merge in place
        return None
    return merged


def _output(out: np.ndarray | None, shape: Shape, dtype: np.dtype) -> np.ndarray:
    """``out`` checked to have ``shape``, or a new C-contiguous array of it."""
    if out is None:
        return np.empty(shape, dtype)
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out has shape {list(out.shape)}, the host tensor {list(shape)}")
    return out


def _nz_to_host(device: np.ndarray, original: Shape, out: np.ndarray | None, copies: list | None = None) -> np.ndarray:
    if device.shape == original:  # short vectors (k == 1 or k % 16 == 0) may be stored unblocked
        return device if out is None else _copied(device, out)
    if not nz_fits(device, original):
        raise shape_mismatch(device, "FRACTAL_NZ", original)
    out = _output(out, original, device.dtype)
    lead = math.prod(original[:-2]) if len(original) >= 2 else 1
    h, w = (original[-2], original[-1]) if len(original) >= 2 else (1, original[0] if original else 1)
    copy_tiles(nz_tiles(device, original), out.reshape(lead, h, w), (1, 2), copies)
    return out


def _copied(host: np.ndarray, out: np.ndarray) -> np.ndarray:
    np.copyto(_output(out, host.shape, host.dtype), host)
    return out


def _plain_to_host(device: np.ndarray, fmt: str, original: Shape, origin: str | None) -> np.ndarray:
    plain = origin in PLAIN_LAYOUTS and fmt in PLAIN_LAYOUTS
    if plain and origin != fmt and sorted(origin) == sorted(fmt) and device.ndim == len(fmt):
        moved = convert_host_format(device, fmt, origin)
        if moved.shape == original:
            return moved
        if device.shape == original:
            return device  # the shape was recorded in the origin order already
        raise shape_mismatch(device, fmt, original)
    if device.shape == original:
        return device
    # No layout says how the dims map, so only the element order counts.
    if device.size == math.prod(original):
        return device.reshape(original)
    raise shape_mismatch(device, fmt, original)


# --- public API ----------------------------------------------------------------------------


def _tiled_to_host(
    plans: ConversionPlans | None, device: np.ndarray, original: Shape, key: tuple, out: np.ndarray | None, convert
) -> np.ndarray:
    """``convert(out, copies)`` of a blocked or FRACTAL_NZ tensor: worked out (``plans`` None),
    or through ``plans``, which replay the copies kept for ``key`` and the shapes."""
    if plans is None:
        return convert(out, None)
    return plans.convert(device, original, key, out, convert)


def to_host(
    device: np.ndarray,
    device_format: str,
    original_shape: Sequence[int],
    origin_format: str | None = None,
    groups: int = 1,
    out: np.ndarray | None = None,
    plans: ConversionPlans | None = None,
) -> np.ndarray:
    """Convert a device-shaped tensor into its host layout with exactly ``original_shape``.

    Blocked formats and FRACTAL_NZ are copied once, tile by tile, straight into the host array
    (:func:`.tile_copy.copy_tiles`); plain layouts are views. Rows of a row-separable device tensor
    (NC1HWC0 and friends, FRACTAL_NZ of rank 3 or more) convert on their own: pass the rows and
    ``(rows, *original_shape[1:])``.

    Args:
        device: the tensor, already shaped in its device shape.
        device_format: the device format name (``"NC1HWC0"``, ``"FRACTAL_Z"``, ...).
        original_shape: the host shape in the origin format's dim order; empty keeps ``device``.
        origin_format: the host layout of ``original_shape``. Defaults to None: inferred (see
            the module docstring); an origin format that cannot describe the shape is inferred too.
        groups: ``sub_format`` of a grouped FRACTAL_Z weight; ignored elsewhere. Defaults to 1.
        out: an array of ``original_shape`` (e.g. a reused C-contiguous buffer) to write the host
            tensor into; then it is returned, whatever the format. Defaults to None.
        plans: where a blocked or FRACTAL_NZ conversion's copies are kept by its shapes, dtype
            and names, and replayed for the next tensor of the same (:mod:`.conversion_plans`:
            the same copies, without working them out). Defaults to None: worked out each time.

    Returns:
        The host array: ``out``; else a new C-contiguous array for blocked formats, and a view
        of ``device`` (possibly read-only) where no copy is needed.

    Raises:
        PrecisionToolError: the shapes do not fit, or the format is unsupported and the element
            counts differ (an unsupported format with equal counts is only reshaped).
        ValueError: ``out`` does not have ``original_shape``.
    """
    original = tuple(int(d) for d in original_shape)
    if not original:
        return device if out is None else _copied(device, out)
    fmt = _name(device_format)
    origin = None if origin_format is None else _name(origin_format)
    groups = max(int(groups or 1), 1)
    if fmt in BLOCKED_FORMATS:
        return _tiled_to_host(
            plans,
            device,
            original,
            (fmt, origin, groups),
            out,
            lambda into, copies: _blocked_to_host(device, fmt, original, origin, groups, into, copies),
        )
    if fmt == "FRACTAL_NZ":
        return _tiled_to_host(
            plans, device, original, (fmt,), out, lambda into, copies: _nz_to_host(device, original, into, copies)
        )
    if fmt in PLAIN_LAYOUTS or fmt == "ND":
        host = _plain_to_host(device, fmt, original, origin)
    elif device.size == math.prod(original):
        host = device.reshape(original)
    else:
        raise PrecisionToolError(f"unsupported format {device_format}")
    return host if out is None else _copied(host, out)


def host_layout(
    device_shape: Sequence[int],
    device_format: str,
    original_shape: Sequence[int],
    origin_format: str | None = None,
    groups: int = 1,
) -> str:
    """The layout of what :func:`to_host` returns for these shapes, without touching data.

    A plain layout name (``"NHWC"``, ``"HWCN"``...), or ``"ND"`` when the dims carry no layout
    (ND tensors, short original shapes that were padded and reshaped back, unknown formats).
    """
    shape, original = tuple(int(d) for d in device_shape), tuple(int(d) for d in original_shape)
    fmt = _name(device_format)
    origin = None if origin_format is None else _name(origin_format)
    if not original:
        return fmt if fmt in PLAIN_LAYOUTS else "ND"
    if fmt in BLOCKED_FORMATS:
        spec = BLOCKED_FORMATS[fmt]
        if len(original) < len(spec.canon):
            return "ND"
        if not shape or not shape[-1]:  # no C0 to infer the layout by
            return _layout_for(spec, original, origin) or spec.canon
        c0 = spec.fixed_c0 or shape[-1]
        return _blocked_layout(spec, shape, original, origin, c0, max(int(groups or 1), 1)) or spec.canon
    if fmt in PLAIN_LAYOUTS and len(shape) == len(fmt):
        if origin in PLAIN_LAYOUTS and origin != fmt and sorted(origin) == sorted(fmt):
            if _permute(shape, fmt, origin) == original:
                return origin
        return fmt if shape == original else "ND"
    return "ND"


def _block_c0(c0: int | None, dtype, host: np.ndarray | None = None) -> int:
    """The C0 to write with: the caller's when given, else the dtype's (or the host array's)."""
    if c0:
        return int(c0)
    return c0_for(host.dtype if dtype is None and host is not None else dtype)


def to_device(
    host: np.ndarray, device_format: str, host_format: str, groups: int = 1, c0: int | None = None, dtype=None
) -> np.ndarray:
    """Lay a host tensor out in a device format, zero-padded: the inverse of :func:`to_host`.

    Args:
        host: the tensor in ``host_format`` (short shapes are padded NCHW-style).
        device_format: the device format name.
        host_format: the host layout (``"NHWC"``, ``"HWCN"``, ``"ND"``, ...).
        groups: groups of a grouped FRACTAL_Z weight. Defaults to 1.
        c0: the C0 block, overriding the dtype's (a device that used another). NC1HWC0_C04
            always uses 4; FRACTAL_NZ fractals are 16 x c0. Defaults to None: the dtype's.
        dtype: the data type C0 follows (:func:`~.blocked_formats.c0_for`): a dump data type,
            its name or a numpy dtype; packed types need the name (``"INT4"``: C0 64) since
            their host array is unpacked to int8. Defaults to None: ``host.dtype``.

    Returns:
        A C-contiguous device-shaped array of ``host``'s dtype.
    """
    fmt, layout_name = _name(device_format), _name(host_format)
    groups = max(int(groups or 1), 1)
    if fmt in BLOCKED_FORMATS:
        spec = BLOCKED_FORMATS[fmt]
        layout, dims = _resolve(spec, host.shape, layout_name, fmt)
        if host.ndim < len(dims):
            canon = host.reshape(dims)  # a short shape padded NCHW-style
        else:
            canon = convert_host_format(host, layout, spec.canon)
        device = spec.codec.from_canon(canon, spec.fixed_c0 or _block_c0(c0, dtype, host), groups)
    elif fmt == "FRACTAL_NZ":
        device = nz_from_host(host, _block_c0(c0, dtype, host))
    elif fmt in PLAIN_LAYOUTS or fmt == "ND":
        device = convert_host_format(host, layout_name, fmt)
    else:
        raise PrecisionToolError(f"unsupported format {device_format}")
    return np.ascontiguousarray(device)


def device_shape(
    host_shape: Sequence[int],
    device_format: str,
    host_format: str,
    groups: int = 1,
    c0: int | None = None,
    dtype=np.float16,
) -> tuple[int, ...]:
    """The device shape :func:`to_device` gives a host tensor of ``host_shape`` and ``dtype``.

    ``c0`` and ``dtype`` are :func:`to_device`'s; ``dtype`` defaults to float16 (C0 16).
    """
    shape = tuple(int(d) for d in host_shape)
    fmt, layout_name = _name(device_format), _name(host_format)
    groups = max(int(groups or 1), 1)
    if fmt in BLOCKED_FORMATS:
        spec = BLOCKED_FORMATS[fmt]
        dims = _resolve(spec, shape, layout_name, fmt)[1]
        return spec.codec.shape(dims, spec.fixed_c0 or _block_c0(c0, dtype), groups)
    if fmt == "FRACTAL_NZ":
        return nz_shape(shape, _block_c0(c0, dtype))
    if fmt in PLAIN_LAYOUTS or fmt == "ND":
        return _permute(shape, layout_name, fmt)
    raise PrecisionToolError(f"unsupported format {device_format}")


def convert_host_format(array: np.ndarray, from_format: str, to_format: str) -> np.ndarray:
    """Transpose ``array`` between host layouts (NCHW, NHWC, HWCN, CHWN, NCDHW, NDHWC, ...).

    ``ND`` on either side leaves the array as it is. Returns a view.

    Raises:
        PrecisionToolError: an unknown layout, layouts over different dims, or a rank that
            does not match ``from_format``.
    """
    axes = _transpose_axes(_name(from_format), _name(to_format), array.ndim)
    return array if axes is None else array.transpose(axes)
