"""Replays of the windowed ops: Conv2D (strides, SAME / VALID / explicit pads, dilations,
data_format, groups) and MaxPool / AvgPool, in float64.

Attribute encodings follow the GE IR (CANN's ``nn_calculation_ops.h`` / ``nn_pooling_ops.h``):
``strides``, ``dilations``, ``ksize`` have four entries in ``data_format`` order; ``pads`` is
``[top, bottom, left, right]``; graphs converted from TensorFlow also keep TF's ``padding``
(``SAME`` / ``VALID``), which wins when present. SAME padding is TensorFlow's: the output is
``ceil(in / stride)`` and the extra pad goes after. A Conv2D filter is in its host layout
(``HWCN`` from TensorFlow; ``NCHW`` = [out, in, h, w] and ``NHWC`` are accepted too).

When the graph lacks strides or padding (as the shipped sample's does), they are inferred from
the input, filter and output shapes when exactly one combination fits, and a note says so.
"""

from __future__ import annotations

import numpy as np

from .registry import ReplayArgs, ReplayError, replay_of

Pads = tuple[int, int, int, int]  # top, bottom, left, right


def data_format(args: ReplayArgs) -> str:
    """``NHWC`` or ``NCHW``: the attribute, else input 0's host layout, else NHWC."""
    fmt = args.attr("data_format", default=None) or args.format(0)
    if fmt not in ("NHWC", "NCHW"):
        args.note("data_format not in the graph: NHWC assumed")
        return "NHWC"
    return fmt


def to_nhwc(x: np.ndarray, fmt: str) -> np.ndarray:
    """A 4-D tensor in ``fmt`` as NHWC."""
    if x.ndim != 4:
        raise ReplayError(f"expected a 4-D input, got shape {list(x.shape)}")
    return x if fmt == "NHWC" else x.transpose(0, 2, 3, 1)


def from_nhwc(x: np.ndarray, fmt: str) -> np.ndarray:
    """An NHWC tensor back in ``fmt``."""
    return x if fmt == "NHWC" else x.transpose(0, 3, 1, 2)


def spatial(values, fmt: str, name: str) -> tuple[int, int]:
    """(h, w) of a ``strides``/``dilations``/``ksize`` list (4 entries in ``fmt`` order, or 2)."""
    values = [int(v) for v in (values if isinstance(values, (list, tuple)) else [values])]
    if len(values) == 4:
        return (values[1], values[2]) if fmt == "NHWC" else (values[2], values[3])
    if len(values) == 2:
        return values[0], values[1]
    if len(values) == 1:
        return values[0], values[0]
    raise ReplayError(f"{name} {values} has neither 2 nor 4 entries")


def same_pads(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TensorFlow's SAME padding of one spatial axis: (before, after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def out_size(size: int, kernel: int, stride: int, dilation: int, before: int, after: int) -> int:
    """Output length of one spatial axis."""
    return (size + before + after - (kernel - 1) * dilation - 1) // stride + 1


def _axis_solutions(size, kernel, dilation, out, stride, padding) -> set[tuple[int, int, int]]:
    strides = [stride] if stride is not None else range(1, max(size, 1) + 1)
    modes = [padding] if padding is not None else ("SAME", "VALID")
    found = set()
    for s in strides:
        for mode in modes:
            before, after = same_pads(size, kernel, s, dilation) if mode == "SAME" else (0, 0)
            if out_size(size, kernel, s, dilation, before, after) == out:
                found.add((s, before, after))
    return found


def _padding(args: ReplayArgs) -> str | None:
    padding = args.attr("padding", "padding_mode", default=None)
    if isinstance(padding, str) and padding.upper() in ("SAME", "VALID"):
        return padding.upper()
    return None


def geometry(
    args: ReplayArgs, fmt: str, in_hw, k_hw, d_hw, out_index: int = 0, stride_name: str = "strides"
) -> tuple[tuple[int, int], Pads]:
    """(strides (h, w), pads) from the attributes, inferring what is absent from the shapes."""
    strides = args.attr(stride_name, default=None)
    stride_hw = spatial(strides, fmt, stride_name) if strides is not None else (None, None)
    padding = _padding(args)
    pads = args.attr("pads", default=None)
    if padding is None and pads is not None and len(pads) == 4 and None not in stride_hw:
        top, bottom, left, right = (int(p) for p in pads)
        if min(top, bottom, left, right) < 0:
            raise ReplayError(f"negative pads {list(pads)}")
        return stride_hw, (top, bottom, left, right)
    if padding is not None and None not in stride_hw:
        h = same_pads(in_hw[0], k_hw[0], stride_hw[0], d_hw[0]) if padding == "SAME" else (0, 0)
        w = same_pads(in_hw[1], k_hw[1], stride_hw[1], d_hw[1]) if padding == "SAME" else (0, 0)
        return stride_hw, (*h, *w)
    return _inferred(args, fmt, in_hw, k_hw, d_hw, stride_hw, padding, out_index)


def _inferred(args, fmt, in_hw, k_hw, d_hw, stride_hw, padding, out_index):
    shape = args.output_shape(out_index)
    if shape is None or len(shape) != 4:
        raise ReplayError("strides/padding are not in the graph and the output shape is unknown")
    out_hw = (shape[1], shape[2]) if fmt == "NHWC" else (shape[2], shape[3])
    axes = [_axis_solutions(in_hw[i], k_hw[i], d_hw[i], out_hw[i], stride_hw[i], padding) for i in range(2)]
    if any(len(found) != 1 for found in axes):
        raise ReplayError(
            "strides/padding are not in the graph and the shapes fit "
            f"{'no' if any(not f for f in axes) else 'more than one'} combination"
        )
    (sh, top, bottom), (sw, left, right) = (next(iter(found)) for found in axes)
    args.note(
        f"strides/padding not in the graph: inferred from the shapes (strides {sh}x{sw}, "
        f"pads {[top, bottom, left, right]})"
    )
    return (sh, sw), (top, bottom, left, right)


def filter_hwio(w: np.ndarray, layout: str | None, args: ReplayArgs) -> np.ndarray:
    """A Conv2D filter as [kh, kw, in/groups, out]."""
    if w.ndim != 4:
        raise ReplayError(f"expected a 4-D filter, got shape {list(w.shape)}")
    if layout in (None, "", "HWCN", "ND"):
        if not layout:
            args.note("the filter's layout is unknown: HWCN assumed")
        return w
    orders = {"NCHW": (2, 3, 1, 0), "NHWC": (1, 2, 3, 0), "CHWN": (1, 2, 0, 3)}
    if layout not in orders:
        raise ReplayError(f"filter layout {layout} is not supported")
    return w.transpose(orders[layout])


def conv_nhwc(x: np.ndarray, w: np.ndarray, strides, dilations, pads: Pads, groups: int) -> np.ndarray:
    """NHWC x [kh, kw, in/groups, out] grouped convolution, one matmul per kernel tap."""
    n, h, wid, c = x.shape
    kh, kw, cg, cout = w.shape
    if c != cg * groups or cout % groups:
        raise ReplayError(f"input channels {c}, filter {list(w.shape)} and groups {groups} do not fit")
    (sh, sw), (dh, dw), (top, bottom, left, right) = strides, dilations, pads
    oh, ow = out_size(h, kh, sh, dh, top, bottom), out_size(wid, kw, sw, dw, left, right)
    if oh <= 0 or ow <= 0:
        raise ReplayError("the filter is larger than the padded input")
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    out = np.zeros((n, oh, ow, cout))
    og = cout // groups
    for g in range(groups):
        xg, wg = xp[..., g * cg : (g + 1) * cg], w[..., g * og : (g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                tap = xg[:, i * dh : i * dh + (oh - 1) * sh + 1 : sh, j * dw : j * dw + (ow - 1) * sw + 1 : sw, :]
                out[..., g * og : (g + 1) * og] += tap @ wg[i, j]
    return out


def _groups(args: ReplayArgs, channels: int, filter_in: int) -> int:
    groups = int(args.attr("groups", default=1) or 1)
    if groups == 1 and filter_in and channels != filter_in and channels % filter_in == 0:
        groups = channels // filter_in
        args.note(f"groups not in the graph: {groups} inferred from the filter")
    return groups


@replay_of("Conv2D")
def conv2d(args: ReplayArgs) -> np.ndarray:
    """Conv2D (+ the optional bias input of GE's Conv2D)."""
    fmt = data_format(args)
    x = to_nhwc(args.x(0), fmt)
    w = filter_hwio(args.x(1), args.format(1), args)
    dilations = spatial(args.attr("dilations", default=[1, 1, 1, 1]), fmt, "dilations")
    strides, pads = geometry(args, fmt, x.shape[1:3], w.shape[:2], dilations)
    y = conv_nhwc(x, w, strides, dilations, pads, _groups(args, x.shape[3], w.shape[2]))
    if len(args.inputs) > 2:
        y = y + args.x(2).reshape(-1)
    return from_nhwc(y, fmt)


def _pool(args: ReplayArgs, kind: str) -> np.ndarray:
    fmt = data_format(args)
    x = to_nhwc(args.x(0), fmt)
    kernel = spatial(args.attr("ksize", "window", default=None) or _no_ksize(), fmt, "ksize")
    strides, (top, bottom, left, right) = geometry(args, fmt, x.shape[1:3], kernel, (1, 1))
    n, h, w, c = x.shape
    oh, ow = out_size(h, kernel[0], strides[0], 1, top, bottom), out_size(w, kernel[1], strides[1], 1, left, right)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)
    ones = np.pad(np.ones((1, h, w, 1)), ((0, 0), (top, bottom), (left, right), (0, 0)))
    out = np.full((n, oh, ow, c), fill)
    count = np.zeros((1, oh, ow, 1))
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rows = slice(i, i + (oh - 1) * strides[0] + 1, strides[0])
            cols = slice(j, j + (ow - 1) * strides[1] + 1, strides[1])
            tap = xp[:, rows, cols, :]
            out = np.maximum(out, tap) if kind == "max" else out + tap
            count += ones[:, rows, cols, :]
    if kind == "avg":
        out = out / count  # TensorFlow's AvgPool leaves the padding out of the count
    return from_nhwc(out, fmt)


def _no_ksize():
    raise ReplayError("the graph has no ksize attribute (the pooling window cannot be inferred)")


@replay_of("MaxPool")
def max_pool(args: ReplayArgs) -> np.ndarray:
    """MaxPool: ksize, strides, SAME/VALID padding (or pads), data_format."""
    return _pool(args, "max")


@replay_of("AvgPool")
def avg_pool(args: ReplayArgs) -> np.ndarray:
    """AvgPool, dividing by the number of non-padding elements of each window (TensorFlow's)."""
    return _pool(args, "avg")
