"""Conversions between Ascend device (private) tensor formats and host layouts.

Every function here is pure numpy and vectorised. The formulas follow FORMATS.md section 3.

Blocked 4-D formats (NC1HWC0, NC1HWC0_C04, FRACTAL_Z, C1HWNCoC0) are converted through a
canonical NCHW host array, blocked 5-D formats (NDC1HWC0, FRACTAL_Z_3D) through NCDHW; the
canonical array is then transposed into the origin format. FRACTAL_NZ works on the last two
dims of any rank. Plain layouts (ND, NCHW, NHWC, ...) are transposed into each other.

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
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from precision_tool.errors import PrecisionToolError

FRACTAL_BLOCK = 16  # rows of a fractal: N block of FRACTAL_Z, H block of FRACTAL_NZ

# Plain layouts are words over the dim letters, so converting is a transpose by letter.
PLAIN_LAYOUTS = frozenset(
    {"NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "DHWNC", "NC", "CN"}
)

Shape = tuple[int, ...]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _pad_axis(array: np.ndarray, axis: int, size: int) -> np.ndarray:
    """Zero-pad ``array`` at the end of ``axis`` up to ``size``."""
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, size - array.shape[axis])
    return np.pad(array, widths) if size != array.shape[axis] else array


@dataclass(frozen=True)
class _Tiled:
    """A format that is its zero-padded canonical host, split, transposed and merged.

    The canonical host ``[N, C, *S]`` (S = H, W or D, H, W) is padded and split into
    ``[N1, n0, C1, C0, *S]`` (n0 = 16 for the fractal N block, else 1), transposed by ``perm``
    and reshaped into the device shape, whose axes each merge ``merge[i]`` transposed axes.
    These are the reshape/transpose recipes of FORMATS.md read backwards.
    """

    perm: tuple[int, ...]
    merge: tuple[int, ...]
    n0: int = 1

    def _split(self, dims: Shape, c0: int) -> Shape:
        n, c, *spatial = dims
        return (_ceil_div(n, self.n0), self.n0, _ceil_div(c, c0), c0, *spatial)

    def shape(self, dims: Shape, c0: int, groups: int = 1) -> Shape:
        moved = [self._split(dims, c0)[axis] for axis in self.perm]
        ends = np.cumsum(self.merge)
        return tuple(math.prod(moved[end - k:end]) for k, end in zip(self.merge, ends))

    def to_canon(self, device: np.ndarray, dims: Shape, groups: int = 1) -> np.ndarray:
        split = self._split(dims, device.shape[-1])  # C0 is the last device axis
        moved = device.reshape([split[axis] for axis in self.perm])
        host = moved.transpose(np.argsort(self.perm))
        host = host.reshape(split[0] * split[1], split[2] * split[3], *split[4:])
        return host[:dims[0], :dims[1]]

    def from_canon(self, host: np.ndarray, c0: int, groups: int = 1) -> np.ndarray:
        split = self._split(host.shape, c0)
        padded = _pad_axis(_pad_axis(host, 0, split[0] * split[1]), 1, split[2] * c0)
        return padded.reshape(split).transpose(self.perm).reshape(self.shape(host.shape, c0))


# Split axes: 0 N1, 1 n0, 2 C1, 3 C0, then 4.. the spatial dims (H, W or D, H, W).
_NC1HWC0 = _Tiled(perm=(0, 1, 2, 4, 5, 3), merge=(2, 1, 1, 1, 1))  # [N, C1, H, W, C0]
_NDC1HWC0 = _Tiled(perm=(0, 1, 4, 2, 5, 6, 3), merge=(2, 1, 1, 1, 1, 1))  # [N, D, C1, H, W, C0]
_FRACTAL_Z = _Tiled(perm=(2, 4, 5, 0, 1, 3), merge=(3, 1, 1, 1), n0=FRACTAL_BLOCK)
_FRACTAL_Z_3D = _Tiled(perm=(4, 2, 5, 6, 0, 1, 3), merge=(4, 1, 1, 1), n0=FRACTAL_BLOCK)


class _GroupedFractalZ:
    """FRACTAL_Z, and with sub_format G > 1 the grouped layout: ``[G/e*C1*H*W, Co/16, 16, C0]``."""

    @staticmethod
    def _plan(dims: Shape, c0: int, groups: int) -> tuple[int, int, Shape]:
        """cout, e and the device seen as ``[G/e, C1, H, W, cout_opt, C0]`` (FORMATS.md)."""
        n, cin, h, w = dims
        if n % groups:
            raise PrecisionToolError(f"FRACTAL_Z: N={n} is not a multiple of the {groups} groups")
        cout = n // groups
        # Empty dims would divide by zero; any e works for an empty tensor.
        a = math.lcm(max(cin, 1), c0) // max(cin, 1)
        b = math.lcm(max(cout, 1), FRACTAL_BLOCK) // max(cout, 1)
        e = min(math.lcm(a, b), groups)
        cout_opt = _ceil_div(e * cout, FRACTAL_BLOCK) * FRACTAL_BLOCK
        return cout, e, (_ceil_div(groups, e), _ceil_div(e * cin, c0), h, w, cout_opt, c0)

    @classmethod
    def _index(cls, dims: Shape, c0: int, groups: int) -> tuple:
        """Index picking host ``[g, n, c, :, :]`` out of the ``[G/e, C1, H, W, Co, C0]`` view."""
        cout, e, _ = cls._plan(dims, c0, groups)
        g = np.arange(groups)[:, None, None]
        ci = g % e * dims[1] + np.arange(dims[1])[None, None, :]
        co = g % e * cout + np.arange(cout)[None, :, None]
        # Advanced indices split by slices put the broadcast [G, cout, cin] dims first.
        return (g // e, ci // c0, slice(None), slice(None), co, ci % c0)

    @classmethod
    def shape(cls, dims: Shape, c0: int, groups: int) -> Shape:
        if groups == 1:
            return _FRACTAL_Z.shape(dims, c0)
        blocks, c1, h, w, cout_opt, c0 = cls._plan(dims, c0, groups)[2]
        return (blocks * c1 * h * w, cout_opt // FRACTAL_BLOCK, FRACTAL_BLOCK, c0)

    @classmethod
    def to_canon(cls, device: np.ndarray, dims: Shape, groups: int) -> np.ndarray:
        if groups == 1:
            return _FRACTAL_Z.to_canon(device, dims)
        c0 = device.shape[-1]
        blocked = device.reshape(cls._plan(dims, c0, groups)[2])
        return blocked[cls._index(dims, c0, groups)].reshape(dims)

    @classmethod
    def from_canon(cls, host: np.ndarray, c0: int, groups: int) -> np.ndarray:
        if groups == 1:
            return _FRACTAL_Z.from_canon(host, c0)
        n, c, h, w = host.shape
        blocked = np.zeros(cls._plan(host.shape, c0, groups)[2], dtype=host.dtype)
        blocked[cls._index(host.shape, c0, groups)] = host.reshape(groups, n // groups, c, h, w)
        return blocked.reshape(cls.shape(host.shape, c0, groups))


class _C1HWNCoC0:
    """``[C1, H, W, N, Co, C0]`` holding each value on the Co == C0 diagonal."""

    @staticmethod
    def shape(dims: Shape, c0: int, groups: int) -> Shape:
        n, c, h, w = dims
        return (_ceil_div(c, c0), h, w, n, c0, c0)

    @staticmethod
    def to_canon(device: np.ndarray, dims: Shape, groups: int) -> np.ndarray:
        n, c, h, w = dims
        c1, c0 = device.shape[0], device.shape[5]
        diagonal = np.diagonal(device, axis1=4, axis2=5)  # [C1, H, W, N, C0], a view
        return diagonal.transpose(3, 0, 4, 1, 2).reshape(n, c1 * c0, h, w)[:, :c]

    @staticmethod
    def from_canon(host: np.ndarray, c0: int, groups: int) -> np.ndarray:
        n, c, h, w = host.shape
        c1 = _ceil_div(c, c0)
        padded = _pad_axis(host, 1, c1 * c0).reshape(n, c1, c0, h, w)
        device = np.zeros((c1, h, w, n, c0, c0), dtype=host.dtype)
        k = np.arange(c0)
        device[..., k, k] = padded.transpose(1, 3, 4, 0, 2)
        return device


@dataclass(frozen=True)
class _Blocked:
    """A blocked format: its canonical host layout, inference candidates and codec."""

    canon: str  # canonical host layout, NCHW or NCDHW
    candidates: tuple[str, ...]  # origin formats tried, in order, when inferring
    codec: object  # has shape(dims, c0, groups), to_canon(device, dims, groups), from_canon
    fixed_c0: int | None = None


_NCHW_ORIGINS = ("NHWC", "NCHW")
_WEIGHT_ORIGINS = ("HWCN", "NCHW", "NHWC")
_BLOCKED: dict[str, _Blocked] = {
    "NC1HWC0": _Blocked("NCHW", _NCHW_ORIGINS, _NC1HWC0),
    "NC1HWC0_C04": _Blocked("NCHW", _NCHW_ORIGINS, _NC1HWC0, fixed_c0=4),
    "FRACTAL_Z": _Blocked("NCHW", _WEIGHT_ORIGINS, _GroupedFractalZ),
    "C1HWNCoC0": _Blocked("NCHW", _WEIGHT_ORIGINS, _C1HWNCoC0),
    "NDC1HWC0": _Blocked("NCDHW", ("NDHWC", "NCDHW"), _NDC1HWC0),
    "FRACTAL_Z_3D": _Blocked("NCDHW", ("DHWCN", "NCDHW", "NDHWC"), _FRACTAL_Z_3D),
}
SUPPORTED_DEVICE_FORMATS = frozenset(_BLOCKED) | {"FRACTAL_NZ", "ND"} | PLAIN_LAYOUTS
_NAMES = {name.upper(): name for name in SUPPORTED_DEVICE_FORMATS}


# --- FRACTAL_NZ: [..., H, W] -> [..., W1, H1, 16, C0] ------------------------------------


def _nz_dims(shape: Shape) -> tuple[Shape, int, int]:
    """Leading dims, H and W of a host shape; a 1-D (or 0-D) target has H = 1."""
    if len(shape) < 2:
        return (), 1, (shape[0] if shape else 1)
    return shape[:-2], shape[-2], shape[-1]


def _nz_shape(shape: Shape, c0: int) -> Shape:
    lead, h, w = _nz_dims(shape)
    return lead + (_ceil_div(w, c0), _ceil_div(h, FRACTAL_BLOCK), FRACTAL_BLOCK, c0)


def _nz_to_host(device: np.ndarray, original: Shape) -> np.ndarray:
    if device.shape == original:
        return device  # short vectors (k == 1 or k % 16 == 0) may be stored unblocked
    fits = device.ndim >= 4 and device.shape[-1] > 0
    if not fits or device.shape != _nz_shape(original, device.shape[-1]):
        raise _mismatch(device, "FRACTAL_NZ", original)
    lead, h, w = _nz_dims(original)
    w1, h1, h0, w0 = device.shape[-4:]
    b = math.prod(lead)
    blocked = device.reshape(b, w1, h1, h0, w0).transpose(0, 2, 3, 1, 4)
    return blocked.reshape(b, h1 * h0, w1 * w0)[:, :h, :w].reshape(original)


def _nz_from_host(host: np.ndarray, c0: int) -> np.ndarray:
    lead, h, w = _nz_dims(host.shape)
    h1, w1 = _ceil_div(h, FRACTAL_BLOCK), _ceil_div(w, c0)
    b = math.prod(lead)
    padded = _pad_axis(_pad_axis(host.reshape(b, h, w), 1, h1 * FRACTAL_BLOCK), 2, w1 * c0)
    blocked = padded.reshape(b, h1, FRACTAL_BLOCK, w1, c0).transpose(0, 3, 1, 2, 4)
    return blocked.reshape(lead + (w1, h1, FRACTAL_BLOCK, c0))


# --- shared helpers ------------------------------------------------------------------------


def _name(fmt: str | None) -> str:
    """The official spelling of a format name, accepting any letter case."""
    text = "" if fmt is None else str(fmt).strip()
    return _NAMES.get(text.upper(), text)


def _mismatch(device: np.ndarray, fmt: str, original: Shape) -> PrecisionToolError:
    return PrecisionToolError(
        f"device shape {list(device.shape)} in format {fmt} does not fit "
        f"original shape {list(original)}"
    )


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


def _layout_for(spec: _Blocked, shape: Shape, host_format: str | None) -> str | None:
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


def _canon_dims(spec: _Blocked, shape: Shape, layout: str) -> Shape:
    """``shape`` in canonical order; short shapes padded [a] -> [1,a,1,1], [a,b] -> [1,a,b,1]."""
    rank = len(spec.canon)
    if len(shape) < rank:
        return (1,) + shape + (1,) * (rank - 1 - len(shape))
    return _permute(shape, layout, spec.canon)


def _resolve(spec: _Blocked, shape: Shape, host_format: str, fmt: str) -> tuple[str, Shape]:
    """The layout and canonical dims of a host shape given in ``host_format``, to write ``fmt``."""
    layout = _layout_for(spec, shape, host_format)
    if layout is None:
        raise PrecisionToolError(f"cannot lay out a {len(shape)}-D {host_format} tensor as {fmt}")
    return layout, _canon_dims(spec, shape, layout)


def _infer_layout(spec: _Blocked, actual: Shape, original: Shape, c0: int,
                  groups: int) -> str | None:
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


def _blocked_to_host(device: np.ndarray, fmt: str, original: Shape, origin: str | None,
                     groups: int) -> np.ndarray:
    spec = _BLOCKED[fmt]
    if device.ndim == 0 or device.shape[-1] == 0:  # no C0 to read the blocks by
        raise _mismatch(device, fmt, original)
    c0 = spec.fixed_c0 or device.shape[-1]
    layout = _layout_for(spec, original, origin)
    if layout is None:
        layout = _infer_layout(spec, device.shape, original, c0, groups)
    if layout is None:
        raise _mismatch(device, fmt, original)
    dims = _canon_dims(spec, original, layout)
    if spec.codec.shape(dims, c0, groups) != device.shape:
        raise _mismatch(device, fmt, original)
    host = spec.codec.to_canon(device, dims, groups)
    if len(original) < len(spec.canon):
        return host.reshape(original)
    return convert_host_format(host, spec.canon, layout)


def _plain_to_host(device: np.ndarray, fmt: str, original: Shape,
                   origin: str | None) -> np.ndarray:
    plain = origin in PLAIN_LAYOUTS and fmt in PLAIN_LAYOUTS
    if plain and origin != fmt and sorted(origin) == sorted(fmt) and device.ndim == len(fmt):
        moved = convert_host_format(device, fmt, origin)
        if moved.shape == original:
            return moved
        if device.shape == original:
            return device  # the shape was recorded in the origin order already
        raise _mismatch(device, fmt, original)
    if device.shape == original:
        return device
    # No layout says how the dims map, so only the element order counts.
    if device.size == math.prod(original):
        return device.reshape(original)
    raise _mismatch(device, fmt, original)


# --- public API ----------------------------------------------------------------------------


def to_host(device: np.ndarray, device_format: str, original_shape: Sequence[int],
            origin_format: str | None = None, groups: int = 1) -> np.ndarray:
    """Convert a device-shaped tensor into its host layout with exactly ``original_shape``.

    Args:
        device: the tensor, already shaped in its device shape.
        device_format: the device format name (``"NC1HWC0"``, ``"FRACTAL_Z"``, ...).
        original_shape: the host shape in the origin format's dim order; empty keeps ``device``.
        origin_format: the host layout of ``original_shape``. Defaults to None: inferred (see
            the module docstring); an origin format that cannot describe the shape is inferred too.
        groups: ``sub_format`` of a grouped FRACTAL_Z weight; ignored elsewhere. Defaults to 1.

    Returns:
        The host array: a view of ``device`` (possibly read-only) where no copy is needed.

    Raises:
        PrecisionToolError: the shapes do not fit, or the format is unsupported and the element
            counts differ (an unsupported format with equal counts is only reshaped).
    """
    original = tuple(int(d) for d in original_shape)
    if not original:
        return device
    fmt = _name(device_format)
    origin = None if origin_format is None else _name(origin_format)
    groups = max(int(groups or 1), 1)
    if fmt in _BLOCKED:
        return _blocked_to_host(device, fmt, original, origin, groups)
    if fmt == "FRACTAL_NZ":
        return _nz_to_host(device, original)
    if fmt in PLAIN_LAYOUTS or fmt == "ND":
        return _plain_to_host(device, fmt, original, origin)
    if device.size == math.prod(original):
        return device.reshape(original)
    raise PrecisionToolError(f"unsupported format {device_format}")


def to_device(host: np.ndarray, device_format: str, host_format: str, groups: int = 1,
              c0: int = 16) -> np.ndarray:
    """Lay a host tensor out in a device format, zero-padded: the inverse of :func:`to_host`.

    Args:
        host: the tensor in ``host_format`` (short shapes are padded NCHW-style).
        device_format: the device format name.
        host_format: the host layout (``"NHWC"``, ``"HWCN"``, ``"ND"``, ...).
        groups: groups of a grouped FRACTAL_Z weight. Defaults to 1.
        c0: the C0 block: 16 for float16/float32, 32 for int8, 64 for int4. NC1HWC0_C04 always
            uses 4; FRACTAL_NZ fractals are 16 x c0. Defaults to 16.

    Returns:
        A C-contiguous device-shaped array of ``host``'s dtype.
    """
    fmt, layout_name = _name(device_format), _name(host_format)
    groups = max(int(groups or 1), 1)
    if fmt in _BLOCKED:
        spec = _BLOCKED[fmt]
        layout, dims = _resolve(spec, host.shape, layout_name, fmt)
        if host.ndim < len(dims):
            canon = host.reshape(dims)  # a short shape padded NCHW-style
        else:
            canon = convert_host_format(host, layout, spec.canon)
        device = spec.codec.from_canon(canon, spec.fixed_c0 or c0, groups)
    elif fmt == "FRACTAL_NZ":
        device = _nz_from_host(host, c0)
    elif fmt in PLAIN_LAYOUTS or fmt == "ND":
        device = convert_host_format(host, layout_name, fmt)
    else:
        raise PrecisionToolError(f"unsupported format {device_format}")
    return np.ascontiguousarray(device)


def device_shape(host_shape: Sequence[int], device_format: str, host_format: str,
                 groups: int = 1, c0: int = 16) -> tuple[int, ...]:
    """The device shape :func:`to_device` gives a host tensor of ``host_shape``."""
    shape = tuple(int(d) for d in host_shape)
    fmt, layout_name = _name(device_format), _name(host_format)
    groups = max(int(groups or 1), 1)
    if fmt in _BLOCKED:
        spec = _BLOCKED[fmt]
        dims = _resolve(spec, shape, layout_name, fmt)[1]
        return spec.codec.shape(dims, spec.fixed_c0 or c0, groups)
    if fmt == "FRACTAL_NZ":
        return _nz_shape(shape, c0)
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
