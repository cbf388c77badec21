"""The blocked device formats: how each tiles a zero-padded host array (FORMATS.md section 3).

Blocked 4-D formats (NC1HWC0, NC1HWC0_C04, FRACTAL_Z, FRACTAL_Z_C04, C1HWNCoC0) are laid out
from a canonical NCHW host array, blocked 5-D formats (NDC1HWC0, FRACTAL_Z_3D) from NCDHW: each is a
:class:`BlockedFormat` of :data:`BLOCKED_FORMATS`, whose codec gives the device shape and
converts to and from the canonical array. FRACTAL_NZ tiles the last two dims of any rank
(:func:`nz_shape`, :func:`nz_to_host`, :func:`nz_from_host`). C0, the channel block, follows
the element width (:func:`c0_for`). Which host layout a tensor is in, and the transposes into
it, are :mod:`.layouts`' business. Everything here is pure numpy and vectorised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from precision_tool.errors import PrecisionToolError

from .dtypes import DumpDType, element_bits

FRACTAL_BLOCK = 16  # rows of a fractal: N block of FRACTAL_Z, H block of FRACTAL_NZ
_CUBE_ROW_BITS = 256  # a cube row (C0 elements) is 32 bytes
_MIN_C0 = 16  # wider types are not packed tighter: float32 keeps C0 = 16

Shape = tuple[int, ...]


def c0_for(dtype: DumpDType | np.dtype | type | str) -> int:
    """The C0 block of the blocked formats for tensors of ``dtype``: the cube's K size.

    32 bytes of elements, at least 16: float16/bfloat16 16, float32 (and wider) 16 too, 8-bit
    types 32, int4 64, 2-bit 128, 1-bit 256. This is GE's cube size by data type (32 for 1-byte
    types, else 16) and the ``[DtypeMKN]`` K column of CANN's platform ini files
    (``Default=16,16,16``, ``DT_INT8=16,32,16``, ``DT_INT4=16,64,16``). It sets C0 of NC1HWC0,
    NDC1HWC0, FRACTAL_Z (grouped too), FRACTAL_Z_3D and C1HWNCoC0, the fractal width of
    FRACTAL_NZ and the cube of FRACTAL_Z_C04; the N block of FRACTAL_Z and the H block of
    FRACTAL_NZ stay 16, and NC1HWC0_C04 keeps C0 = 4. A dump read back takes C0 from its device
    shape instead, which wins when the two disagree (FE gives some float32 ops C0 = 8).

    Args:
        dtype: a dump data type, its name (``"INT8"``, ``"DT_INT4"``, ``"float16"``) or a numpy
            dtype. Packed types need the dump type or its name: an unpacked int4 array is int8.
    """
    return max(_MIN_C0, _CUBE_ROW_BITS // element_bits(dtype))


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _pad_axis(array: np.ndarray, axis: int, size: int) -> np.ndarray:
    """Zero-pad ``array`` at the end of ``axis`` up to ``size``."""
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, size - array.shape[axis])
    return np.pad(array, widths) if size != array.shape[axis] else array


def shape_mismatch(device: np.ndarray, fmt: str, original: Shape) -> PrecisionToolError:
    """The error for ``device`` in ``fmt`` that cannot hold a host tensor of ``original``."""
    return PrecisionToolError(
        f"device shape {list(device.shape)} in format {fmt} does not fit original shape {list(original)}"
    )


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
        split = self._split(dims, c0)
        moved = [split[axis] for axis in self.perm]
        return tuple(math.prod(moved[end - k : end]) for k, end in zip(self.merge, accumulate(self.merge)))

    def tiles(self, device: np.ndarray, dims: Shape, groups: int = 1) -> np.ndarray:
        """The device as a view ``[N1, n0, C1, C0, *S]``: the padded canonical host, N and C split."""
        split = self._split(dims, device.shape[-1])  # C0 is the last device axis
        return device.reshape([split[axis] for axis in self.perm]).transpose(np.argsort(self.perm))

    def to_canon(self, device: np.ndarray, dims: Shape, groups: int = 1) -> np.ndarray:
        split = self._split(dims, device.shape[-1])
        host = self.tiles(device, dims).reshape(split[0] * split[1], split[2] * split[3], *split[4:])
        return host[: dims[0], : dims[1]]

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

    @staticmethod
    def tiles(device: np.ndarray, dims: Shape, groups: int) -> np.ndarray | None:
        """The ``[N1, n0, C1, C0, H, W]`` view when ungrouped; None for groups (a gather)."""
        return _FRACTAL_Z.tiles(device, dims) if groups == 1 else None

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
    def tiles(device: np.ndarray, dims: Shape, groups: int) -> np.ndarray:
        """The diagonal as a view ``[N, 1, C1, C0, H, W]``."""
        diagonal = np.diagonal(device, axis1=4, axis2=5)  # [C1, H, W, N, C0], a view
        return diagonal.transpose(3, 0, 4, 1, 2)[:, None]

    @staticmethod
    def to_canon(device: np.ndarray, dims: Shape, groups: int) -> np.ndarray:
        n, c, h, w = dims
        c1, c0 = device.shape[0], device.shape[5]
        return _C1HWNCoC0.tiles(device, dims, groups).reshape(n, c1 * c0, h, w)[:, :c]

    @staticmethod
    def from_canon(host: np.ndarray, c0: int, groups: int) -> np.ndarray:
        n, c, h, w = host.shape
        c1 = _ceil_div(c, c0)
        padded = _pad_axis(host, 1, c1 * c0).reshape(n, c1, c0, h, w)
        device = np.zeros((c1, h, w, n, c0, c0), dtype=host.dtype)
        k = np.arange(c0)
        device[..., k, k] = padded.transpose(1, 3, 4, 0, 2)
        return device


class _FractalZC04:
    """FRACTAL_Z_C04, the weight of a first convolution (C <= 4): ``[K1, N1, N0, C0]``.

    Defined by GE's NCHW -> FRACTAL_Z_C04 transfer (``FormatTransferNchwToFZC04``,
    ``ge/common/formats/format_transfers/format_transfer_nchw_fz_c04.cc`` in
    mindspore-ai/graphengine @ 5b11020): pad N to a multiple of the cube size C0 and C to 4,
    transpose to ``[N, H, W, 4]``, view it as ``[N, H*W*4]`` and pad that second dim to
    ``K1 * C0`` (K1 = ceil(H*W*4 / C0)), view as ``[N/C0, C0, K1, C0]`` and transpose it to
    ``[K1, N/C0, C0, C0]``. So an NCHW (64, 3, 7, 7) float16 weight is (13, 4, 16, 16) on the
    device, an int8 one (7, 2, 32, 32): the cube follows the dtype, the channels stay 4. The
    device's last two dims give the blocks when reading.
    """

    MAX_C = 4

    @classmethod
    def _check(cls, dims: Shape) -> None:
        if dims[1] > cls.MAX_C:
            raise PrecisionToolError(f"FRACTAL_Z_C04 holds at most {cls.MAX_C} channels, not {dims[1]}")

    @classmethod
    def shape(cls, dims: Shape, c0: int, groups: int = 1) -> Shape:
        cls._check(dims)
        n, _, h, w = dims
        return (_ceil_div(h * w * cls.MAX_C, c0), _ceil_div(n, c0), c0, c0)

    @classmethod
    def to_canon(cls, device: np.ndarray, dims: Shape, groups: int = 1) -> np.ndarray:
        cls._check(dims)
        n, c, h, w = dims
        k1, n1, n0, k0 = device.shape
        rows = device.transpose(1, 2, 0, 3).reshape(n1 * n0, k1 * k0)[:n, : h * w * cls.MAX_C]
        return rows.reshape(n, h, w, cls.MAX_C)[..., :c].transpose(0, 3, 1, 2)

    @classmethod
    def from_canon(cls, host: np.ndarray, c0: int, groups: int = 1) -> np.ndarray:
        cls._check(host.shape)
        n, c, h, w = host.shape
        k1, n1, _, _ = cls.shape(host.shape, c0)
        nhwc = _pad_axis(host, 1, cls.MAX_C).transpose(0, 2, 3, 1).reshape(n, h * w * cls.MAX_C)
        rows = _pad_axis(_pad_axis(nhwc, 0, n1 * c0), 1, k1 * c0)
        return rows.reshape(n1, c0, k1, c0).transpose(2, 0, 1, 3)


@dataclass(frozen=True)
class BlockedFormat:
    """A blocked format: its canonical host layout, inference candidates and codec."""

    canon: str  # canonical host layout, NCHW or NCDHW
    candidates: tuple[str, ...]  # origin formats tried, in order, when inferring
    codec: object  # has shape(dims, c0, groups), to_canon(device, dims, groups), from_canon,
    # and optionally tiles(device, dims, groups): the canonical host as a view [N1, n0, C1, C0, *S]
    fixed_c0: int | None = None


_NCHW_ORIGINS = ("NHWC", "NCHW")
_WEIGHT_ORIGINS = ("HWCN", "NCHW", "NHWC")
BLOCKED_FORMATS: dict[str, BlockedFormat] = {
    "NC1HWC0": BlockedFormat("NCHW", _NCHW_ORIGINS, _NC1HWC0),
    "NC1HWC0_C04": BlockedFormat("NCHW", _NCHW_ORIGINS, _NC1HWC0, fixed_c0=4),
    "FRACTAL_Z": BlockedFormat("NCHW", _WEIGHT_ORIGINS, _GroupedFractalZ),
    "FRACTAL_Z_C04": BlockedFormat("NCHW", _WEIGHT_ORIGINS, _FractalZC04),
    "C1HWNCoC0": BlockedFormat("NCHW", _WEIGHT_ORIGINS, _C1HWNCoC0),
    "NDC1HWC0": BlockedFormat("NCDHW", ("NDHWC", "NCDHW"), _NDC1HWC0),
    "FRACTAL_Z_3D": BlockedFormat("NCDHW", ("DHWCN", "NCDHW", "NDHWC"), _FRACTAL_Z_3D),
}


# --- FRACTAL_NZ: [..., H, W] -> [..., W1, H1, 16, C0] ------------------------------------


def _nz_dims(shape: Shape) -> tuple[Shape, int, int]:
    """Leading dims, H and W of a host shape; a 1-D (or 0-D) target has H = 1."""
    if len(shape) < 2:
        return (), 1, (shape[0] if shape else 1)
    return shape[:-2], shape[-2], shape[-1]


def nz_shape(shape: Shape, c0: int) -> Shape:
    """The FRACTAL_NZ device shape of a host shape, fractals ``16 x c0``."""
    lead, h, w = _nz_dims(shape)
    return lead + (_ceil_div(w, c0), _ceil_div(h, FRACTAL_BLOCK), FRACTAL_BLOCK, c0)


def nz_tiles(device: np.ndarray, original: Shape) -> np.ndarray:
    """A fitting FRACTAL_NZ ``device`` as a view ``[B, H1, 16, W1, C0]`` (B: the leading dims)."""
    w1, h1, h0, w0 = device.shape[-4:]
    return device.reshape(-1, w1, h1, h0, w0).transpose(0, 2, 3, 1, 4)


def nz_fits(device: np.ndarray, original: Shape) -> bool:
    """Whether ``device`` is the FRACTAL_NZ layout of a host tensor of shape ``original``."""
    return device.ndim >= 4 and device.shape[-1] > 0 and device.shape == nz_shape(original, device.shape[-1])


def nz_to_host(device: np.ndarray, original: Shape) -> np.ndarray:
    """A FRACTAL_NZ ``device`` array as the host array of shape ``original``."""
    if device.shape == original:
        return device  # short vectors (k == 1 or k % 16 == 0) may be stored unblocked
    fits = device.ndim >= 4 and device.shape[-1] > 0
    if not fits or device.shape != nz_shape(original, device.shape[-1]):
        raise shape_mismatch(device, "FRACTAL_NZ", original)
    lead, h, w = _nz_dims(original)
    w1, h1, h0, w0 = device.shape[-4:]
    b = math.prod(lead)
    blocked = device.reshape(b, w1, h1, h0, w0).transpose(0, 2, 3, 1, 4)
    return blocked.reshape(b, h1 * h0, w1 * w0)[:, :h, :w].reshape(original)


def nz_from_host(host: np.ndarray, c0: int) -> np.ndarray:
    """``host`` laid out in FRACTAL_NZ with fractals ``16 x c0``, zero-padded."""
    lead, h, w = _nz_dims(host.shape)
    h1, w1 = _ceil_div(h, FRACTAL_BLOCK), _ceil_div(w, c0)
    b = math.prod(lead)
    padded = _pad_axis(_pad_axis(host.reshape(b, h, w), 1, h1 * FRACTAL_BLOCK), 2, w1 * c0)
    blocked = padded.reshape(b, h1, FRACTAL_BLOCK, w1, c0).transpose(0, 3, 1, 2, 4)
    return blocked.reshape(lead + (w1, h1, FRACTAL_BLOCK, c0))
