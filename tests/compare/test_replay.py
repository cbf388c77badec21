"""Every replayed op against an independent float64 reference: plain Python loops over the
elements written here from the ops' definitions, never the vectorised replay code again."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare.replay import REGISTRY, ReplayArgs, ReplayError, run_replay

SETTINGS = settings(max_examples=40, deadline=None)


def replay(op_type, *inputs, attrs=None, formats=(), shapes=(), dtypes=(), types=()):
    args = ReplayArgs(
        tuple(np.asarray(x) for x in inputs),
        tuple(formats),
        attrs or {},
        tuple(tuple(s) for s in shapes),
        tuple(np.dtype(d) for d in dtypes),
        (),
        tuple(types),
    )
    outputs, label = run_replay(op_type, types, args)
    return outputs, label, args.notes


def one(op_type, *inputs, **kw):
    return replay(op_type, *inputs, **kw)[0][0]


# --- references -------------------------------------------------------------------------------


def ref_conv(x, w, strides, dilations, pads, groups):
    """NHWC x [kh, kw, cin/groups, cout], by the definition: every output element a sum."""
    n_, h, wd, c = x.shape
    kh, kw, cg, cout = w.shape
    (sh, sw), (dh, dw), (top, bottom, left, right) = strides, dilations, pads
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
    og = cout // groups
    out = np.zeros((n_, oh, ow, cout))
    for n, i, j, co in itertools.product(range(n_), range(oh), range(ow), range(cout)):
        g, total = co // og, 0.0
        for a, b, ci in itertools.product(range(kh), range(kw), range(cg)):
            y, xx = i * sh + a * dh - top, j * sw + b * dw - left
            if 0 <= y < h and 0 <= xx < wd:
                total += float(x[n, y, xx, g * cg + ci]) * float(w[a, b, ci, co])
        out[n, i, j, co] = total
    return out


def tf_same(size, k, s, d):
    """TensorFlow's SAME: output ceil(size / s); the odd pad goes at the end."""
    out = -(-size // s)
    need = max(0, (out - 1) * s + d * (k - 1) + 1 - size)
    return need // 2, need - need // 2


def ref_pool(x, k, s, pads, kind):
    n_, h, wd, c = x.shape
    top, bottom, left, right = pads
    oh, ow = (h + top + bottom - k[0]) // s[0] + 1, (wd + left + right - k[1]) // s[1] + 1
    out = np.zeros((n_, oh, ow, c))
    for n, i, j, ch in itertools.product(range(n_), range(oh), range(ow), range(c)):
        vals = [
            float(x[n, y, xx, ch])
            for y in range(i * s[0] - top, i * s[0] - top + k[0])
            for xx in range(j * s[1] - left, j * s[1] - left + k[1])
            if 0 <= y < h and 0 <= xx < wd
        ]
        out[n, i, j, ch] = max(vals) if kind == "max" else sum(vals) / len(vals)
    return out


def ref_matmul(a, b):
    m, k = a.shape
    _, n = b.shape
    return np.array([[sum(float(a[i, t]) * float(b[t, j]) for t in range(k)) for j in range(n)] for i in range(m)])


def ref_broadcast(fn, a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    rank = max(a.ndim, b.ndim)
    sa, sb = (1,) * (rank - a.ndim) + a.shape, (1,) * (rank - b.ndim) + b.shape
    shape = tuple(max(p, q) for p, q in zip(sa, sb))
    ra, rb = a.reshape(sa), b.reshape(sb)
    out = np.zeros(shape)
    for idx in itertools.product(*map(range, shape)):
        ia = tuple(i if d != 1 else 0 for i, d in zip(idx, sa))
        ib = tuple(i if d != 1 else 0 for i, d in zip(idx, sb))
        out[idx] = fn(float(ra[ia]), float(rb[ib]))
    return out


def close(actual, expected, tol=1e-9):
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


def arrays(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# --- Conv2D -------------------------------------------------------------------------------------


def to_format(x_nhwc, fmt):
    return x_nhwc if fmt == "NHWC" else x_nhwc.transpose(0, 3, 1, 2)


def four(hw, fmt):
    return [1, hw[0], hw[1], 1] if fmt == "NHWC" else [1, 1, hw[0], hw[1]]


@SETTINGS
@given(st.data())
def test_conv2d_matches_the_definition(data):
    groups = data.draw(st.sampled_from([1, 2, 3]))
    cg, og = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    h, w = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    sh, sw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    dh, dw = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    fmt = data.draw(st.sampled_from(["NHWC", "NCHW"]))
    mode = data.draw(st.sampled_from(["SAME", "VALID", "pads"]))
    if mode == "SAME":
        pads = (*tf_same(h, kh, sh, dh), *tf_same(w, kw, sw, dw))
        attrs = {"padding": "SAME"}
    elif mode == "VALID":
        pads, attrs = (0, 0, 0, 0), {"padding": "VALID"}
    else:
        pads = tuple(data.draw(st.integers(0, 2)) for _ in range(4))
        attrs = {"pads": list(pads)}
    if h + pads[0] + pads[1] < dh * (kh - 1) + 1 or w + pads[2] + pads[3] < dw * (kw - 1) + 1:
        return  # the filter does not fit: no output
    x = arrays((2, h, w, cg * groups), data.draw(st.integers(0, 99)))
    f = arrays((kh, kw, cg, og * groups), 7)
    attrs.update(strides=four((sh, sw), fmt), dilations=four((dh, dw), fmt), groups=groups, data_format=fmt)
    got = one("Conv2D", to_format(x, fmt), f, attrs=attrs, formats=(fmt, "HWCN"))
    close(got, to_format(ref_conv(x, f, (sh, sw), (dh, dw), pads, groups), fmt))


def test_conv2d_bias_input_and_filter_layouts():
    x, f, bias = arrays((1, 5, 4, 3)), arrays((3, 2, 3, 4), 1), arrays((4,), 2)
    expected = ref_conv(x, f, (1, 1), (1, 1), (1, 1, 0, 1), 1) + bias
    attrs = {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NHWC"}
    close(one("Conv2D", x, f, bias, attrs=attrs, formats=("NHWC", "HWCN", "ND")), expected)
    oihw = f.transpose(3, 2, 0, 1)  # GE's NCHW filter: [out, in, h, w]
    close(one("Conv2D", x, oihw, bias, attrs=attrs, formats=("NHWC", "NCHW", "ND")), expected)
    ohwi = f.transpose(3, 0, 1, 2)
    close(one("Conv2D", x, ohwi, bias, attrs=attrs, formats=("NHWC", "NHWC", "ND")), expected)


def test_conv2d_explicit_pads_corner_cases():
    x, f = arrays((1, 4, 4, 1)), arrays((3, 3, 1, 1), 3)
    for pads in [(0, 0, 0, 0), (2, 0, 0, 2), (0, 2, 2, 0), (1, 2, 1, 2)]:
        for strides in [(1, 1), (2, 2), (3, 1)]:
            attrs = {"strides": [1, *strides, 1], "pads": list(pads), "data_format": "NHWC"}
            close(one("Conv2D", x, f, attrs=attrs, formats=("NHWC", "HWCN")), ref_conv(x, f, strides, (1, 1), pads, 1))


def test_conv2d_without_geometry_infers_it_from_the_shapes_when_only_one_fits():
    x, f = arrays((1, 12, 12, 2)), arrays((3, 3, 2, 2), 4)
    outputs, _, notes = replay("Conv2D", x, f, formats=("NHWC", "HWCN"), shapes=[(1, 12, 12, 2)])
    close(outputs[0], ref_conv(x, f, (1, 1), (1, 1), (1, 1, 1, 1), 1))
    assert any("inferred from the shapes" in n and "pads [1, 1, 1, 1]" in n for n in notes)
    outputs, _, _ = replay("Conv2D", x, f, formats=("NHWC", "HWCN"), shapes=[(1, 10, 10, 2)])
    close(outputs[0], ref_conv(x, f, (1, 1), (1, 1), (0, 0, 0, 0), 1))
    with pytest.raises(ReplayError, match="fit no combination"):
        replay("Conv2D", x, f, formats=("NHWC", "HWCN"), shapes=[(1, 20, 20, 2)])


def test_conv2d_groups_inferred_from_the_filter_when_absent():
    x, f = arrays((1, 4, 4, 4)), arrays((2, 2, 2, 4), 5)
    outputs, _, notes = replay(
        "Conv2D", x, f, attrs={"strides": [1, 1, 1, 1], "padding": "VALID"}, formats=("NHWC", "HWCN")
    )
    close(outputs[0], ref_conv(x, f, (1, 1), (1, 1), (0, 0, 0, 0), 2))
    assert any("groups" in n for n in notes)


# --- pooling --------------------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_pooling_matches_the_definition(data):
    kind = data.draw(st.sampled_from(["max", "avg"]))
    h, w = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7))
    k = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    s = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    padding = data.draw(st.sampled_from(["SAME", "VALID"]))
    fmt = data.draw(st.sampled_from(["NHWC", "NCHW"]))
    if padding == "VALID" and (h < k[0] or w < k[1]):
        return
    pads = (*tf_same(h, k[0], s[0], 1), *tf_same(w, k[1], s[1], 1)) if padding == "SAME" else (0, 0, 0, 0)
    x = arrays((2, h, w, 3), data.draw(st.integers(0, 99)))
    attrs = {"ksize": four(k, fmt), "strides": four(s, fmt), "padding": padding, "data_format": fmt}
    got = one("MaxPool" if kind == "max" else "AvgPool", to_format(x, fmt), attrs=attrs, formats=(fmt,))
    close(got, to_format(ref_pool(x, k, s, pads, kind), fmt))


def test_pooling_without_ksize_says_so():
    with pytest.raises(ReplayError, match="no ksize"):
        replay("MaxPool", arrays((1, 4, 4, 1)), formats=("NHWC",), shapes=[(1, 2, 2, 1)])


# --- MatMul family --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op_type,first,second",
    [
        ("MatMul", "transpose_a", "transpose_b"),
        ("MatMulV2", "transpose_x1", "transpose_x2"),
        ("BatchMatMul", "adj_x1", "adj_x2"),
        ("BatchMatMulV2", "adj_x", "adj_y"),
    ],
)
@pytest.mark.parametrize("t1,t2", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(op_type, first, second, t1, t2):
    a, b = arrays((3, 4)), arrays((4, 5), 1)
    x1, x2 = (a.T.copy() if t1 else a), (b.T.copy() if t2 else b)
    close(one(op_type, x1, x2, attrs={first: t1, second: t2}), ref_matmul(a, b))


def test_matmul_bias_and_batch_broadcasting():
    a, b, bias = arrays((3, 4)), arrays((4, 2), 1), arrays((2,), 2)
    close(one("MatMulV2", a, b, bias), ref_matmul(a, b) + bias)
    x1, x2 = arrays((2, 1, 3, 4)), arrays((1, 3, 4, 2), 3)
    got = one("BatchMatMulV2", x1, x2)
    assert got.shape == (2, 3, 3, 2)
    for i, j in itertools.product(range(2), range(3)):
        close(got[i, j], ref_matmul(x1[i, 0], x2[0, j]))


# --- elementwise ----------------------------------------------------------------------------------

BINARY = {
    "Add": lambda p, q: p + q,
    "AddV2": lambda p, q: p + q,
    "Sub": lambda p, q: p - q,
    "Mul": lambda p, q: p * q,
    "RealDiv": lambda p, q: p / q,
}


@pytest.mark.parametrize("op_type", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 2))])
def test_binary_ops_broadcast(op_type, shapes):
    a, b = arrays(shapes[0]), arrays(shapes[1], 1) + 3.0  # away from 0 for RealDiv
    close(one(op_type, a, b), ref_broadcast(BINARY[op_type], a, b))


def test_binary_ops_that_do_not_broadcast_say_so():
    with pytest.raises(ReplayError, match="do not broadcast"):
        replay("Add", arrays((2, 3)), arrays((4,)))


def _gelu_tanh(v):
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))


UNARY = {
    "Relu": lambda v: max(v, 0.0),
    "Relu6": lambda v: min(max(v, 0.0), 6.0),
    "Tanh": math.tanh,
    "Sigmoid": lambda v: 1 / (1 + math.exp(-v)),
    "Exp": math.exp,
    "Log": math.log,
    "Sqrt": math.sqrt,
    "Rsqrt": lambda v: 1 / math.sqrt(v),
    "Gelu": _gelu_tanh,
}


@pytest.mark.parametrize("op_type", sorted(UNARY))
def test_unary_ops(op_type):
    x = arrays((3, 5)) * 4
    if op_type in ("Log", "Sqrt", "Rsqrt"):
        x = np.abs(x) + 0.1
    expected = np.vectorize(UNARY[op_type])(x)
    close(one(op_type, x), expected)


def test_gelu_pattern_uses_erf_when_the_fused_tf_ops_have_one():
    x = arrays((4, 4)) * 3
    exact = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x)
    close(one("Gelu", x, types=("Mul", "RealDiv", "Erf", "AddV2", "Mul")), exact)
    approx = np.vectorize(_gelu_tanh)(x)
    close(one("Gelu", x, types=("Mul", "Pow", "Mul", "AddV2", "Mul", "Tanh", "AddV2", "Mul")), approx)


def test_bias_add_follows_data_format():
    x, b = arrays((2, 3, 4, 5)), arrays((5,), 1)
    expected = np.zeros(x.shape)
    for n, h, w, c in itertools.product(*map(range, x.shape)):
        expected[n, h, w, c] = x[n, h, w, c] + b[c]
    close(one("BiasAdd", x, b), expected)
    xc, bc = arrays((2, 3, 4, 5)), arrays((3,), 2)
    expected = np.zeros(xc.shape)
    for n, c, h, w in itertools.product(*map(range, xc.shape)):
        expected[n, c, h, w] = xc[n, c, h, w] + bc[c]
    close(one("BiasAdd", xc, bc, attrs={"data_format": "NCHW"}), expected)


# --- normalisation and reductions -------------------------------------------------------------------


@pytest.mark.parametrize("axes", [[-1], [0], [1], [0, 2]])
def test_softmax(axes):
    x = arrays((2, 3, 4)) * 3
    norm = sorted(a % 3 for a in axes)
    out = np.zeros_like(x)
    keep = [a for a in range(3) if a not in norm]
    for fixed in itertools.product(*(range(x.shape[a]) for a in keep)):
        cells = []
        for free in itertools.product(*(range(x.shape[a]) for a in norm)):
            idx = [0] * 3
            for a, v in zip(keep, fixed):
                idx[a] = v
            for a, v in zip(norm, free):
                idx[a] = v
            cells.append(tuple(idx))
        top = max(float(x[c]) for c in cells)
        total = sum(math.exp(float(x[c]) - top) for c in cells)
        for c in cells:
            out[c] = math.exp(float(x[c]) - top) / total
    close(one("SoftmaxV2", x, attrs={"axes": axes}), out)
    if axes == [-1]:
        close(one("Softmax", x), out)


def test_layer_norm_outputs_y_mean_and_variance():
    x, gamma, beta = arrays((2, 3, 4)), arrays((3, 4), 1), arrays((3, 4), 2)
    outputs, _, notes = replay(
        "LayerNorm", x, gamma, beta, attrs={"begin_norm_axis": 1, "begin_params_axis": -2, "epsilon": 1e-5}
    )
    for n in range(2):
        values = [float(v) for v in x[n].ravel()]
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / len(values)
        for i, j in itertools.product(range(3), range(4)):
            expected = (x[n, i, j] - mean) / math.sqrt(var + 1e-5) * gamma[i, j] + beta[i, j]
            assert outputs[0][n, i, j] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert outputs[1][n, 0, 0] == pytest.approx(mean) and outputs[2][n, 0, 0] == pytest.approx(var)
    assert notes == []


def test_rms_norm_outputs_y_and_rstd():
    x, gamma = arrays((2, 3, 4)), arrays((3, 4), 1)
    (y, rstd), _, notes = replay("RmsNorm", x, gamma, attrs={"epsilon": 1e-3})
    for n in range(2):
        values = [float(v) for v in x[n].ravel()]
        inverse = 1 / math.sqrt(sum(v * v for v in values) / len(values) + 1e-3)
        assert rstd[n, 0, 0] == pytest.approx(inverse, rel=1e-12) and rstd.shape == (2, 1, 1)
        for i, j in itertools.product(range(3), range(4)):
            assert y[n, i, j] == pytest.approx(float(x[n, i, j]) * inverse * float(gamma[i, j]), rel=1e-12)
    assert notes == []
    _, _, notes = replay("RmsNorm", x, arrays((4,)))
    assert notes == ["epsilon not in the graph: 1e-06 assumed (the op's default)"]
    with pytest.raises(ReplayError, match="does not fit"):
        replay("RmsNorm", x, arrays((3,)))


@pytest.mark.parametrize("op_type", ["LogSoftmax", "LogSoftmaxV2"])
def test_log_softmax_over_the_last_axis(op_type):
    x = arrays((3, 5)) * 20  # large values: the shift keeps exp finite
    out = one(op_type, x)
    for row, got in zip(x, out):
        top = max(float(v) for v in row)
        total = sum(math.exp(float(v) - top) for v in row)
        for v, g in zip(row, got):
            assert g == pytest.approx(float(v) - top - math.log(total), rel=1e-12, abs=1e-12)
    assert one(op_type, x, attrs={"axes": [0]}).shape == (3, 5)


@pytest.mark.parametrize("op_type", ["BNInfer", "FusedBatchNormV3"])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_batch_norm_inference(op_type, fmt):
    x = arrays((2, 3, 4, 5))
    channels = 5 if fmt == "NHWC" else 3
    scale, offset, mean = arrays((channels,), 1), arrays((channels,), 2), arrays((channels,), 3)
    var = np.abs(arrays((channels,), 4)) + 0.5
    got = one(op_type, x, scale, offset, mean, var, attrs={"epsilon": 0.001, "data_format": fmt})
    for idx in itertools.product(*map(range, x.shape)):
        c = idx[3] if fmt == "NHWC" else idx[1]
        expected = (x[idx] - mean[c]) * scale[c] / math.sqrt(var[c] + 0.001) + offset[c]
        assert got[idx] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_batch_norm_without_epsilon_assumes_the_default_and_says_so():
    x, ones = arrays((1, 2, 2, 3)), np.ones(3)
    outputs, _, notes = replay("BNInfer", x, ones, np.zeros(3), np.zeros(3), ones)
    close(outputs[0], x / math.sqrt(1 + 1e-4))
    assert any("epsilon" in n for n in notes)
    with pytest.raises(ReplayError, match="training"):
        replay("FusedBatchNorm", x, ones, np.zeros(3), np.zeros(3), ones, attrs={"is_training": True})


def ref_reduce(x, axes, keep, fn):
    axes = sorted(a % x.ndim for a in axes) if axes else list(range(x.ndim))
    out_shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape))
    out = np.zeros(out_shape)
    for idx in itertools.product(*map(range, out_shape)):
        vals = [
            float(x[tuple(j if a in axes else idx[a] for a, j in enumerate(full))])
            for full in itertools.product(*map(range, x.shape))
            if all(full[a] == idx[a] for a in range(x.ndim) if a not in axes)
        ]
        out[idx] = fn(vals)
    return out if keep else out.reshape(tuple(n for a, n in enumerate(out_shape) if a not in axes))


@pytest.mark.parametrize("op_type,fn", [("ReduceMeanD", lambda v: sum(v) / len(v)), ("ReduceSumD", sum)])
@pytest.mark.parametrize("axes,keep", [([1, 2], False), ([0], True), ([-1], False), ([], False)])
def test_reductions(op_type, fn, axes, keep):
    x = arrays((2, 3, 4))
    close(one(op_type, x, attrs={"axes": axes, "keep_dims": keep}), ref_reduce(x, axes, keep, fn))
    plain = op_type[:-1]  # ReduceMean / ReduceSum take the axes as input 1
    close(one(plain, x, np.array(axes, np.int32), attrs={"keep_dims": keep}), ref_reduce(x, axes, keep, fn))


def test_reduction_axes_inferred_from_shapes_only_when_unique():
    x = arrays((4, 6, 6, 24))
    outputs, _, notes = replay("ReduceMeanD", x, shapes=[(4, 24)])
    close(outputs[0], ref_reduce(x, [1, 2], False, lambda v: sum(v) / len(v)))
    assert any("[1, 2]" in n for n in notes)
    with pytest.raises(ReplayError, match="several"):
        replay("ReduceMeanD", arrays((3, 3)), shapes=[(3,)])


# --- moving values ----------------------------------------------------------------------------------


def test_cast_truncates_to_int_and_rounds_to_float16():
    x = np.array([1.7, -1.7, 2.5, 65519.0, 1e-8])
    got = one("Cast", x, dtypes=["int32"])
    assert got.tolist() == [float(math.trunc(v)) for v in x]
    got = one("Cast", x, dtypes=["float16"])
    assert got.tolist() == [float(np.float16(v)) for v in x.tolist()]


def test_transdata_identity_reshape_and_transpose():
    x = arrays((2, 3, 4))
    close(one("TransData", x, shapes=[(2, 3, 4)]), x)
    got = one("Reshape", x, np.array([4, 6]), shapes=[(4, 6)])
    assert got.ravel().tolist() == [float(v) for v in x.ravel()] and got.shape == (4, 6)
    for perm in itertools.permutations(range(3)):
        expected = np.zeros(tuple(x.shape[p] for p in perm))
        for idx in itertools.product(*map(range, expected.shape)):
            src = [0] * 3
            for k, p in enumerate(perm):
                src[p] = idx[k]
            expected[idx] = x[tuple(src)]
        close(one("TransposeD", x, attrs={"perm": list(perm)}), expected)
        close(one("Transpose", x, np.array(perm)), expected)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_forms(axis):
    a, b = arrays((2, 3)), arrays((2, 3), 1)
    if axis == 0:
        expected = [list(r) for r in a] + [list(r) for r in b]
    else:
        expected = [list(ra) + list(rb) for ra, rb in zip(a, b)]
    close(one("ConcatV2D", a, b, attrs={"concat_dim": axis}), np.array(expected))
    close(one("ConcatV2", a, b, np.array(axis)), np.array(expected))


# --- fused ops and the registry ----------------------------------------------------------------------


def test_fused_conv_bias_relu_composes_the_tf_ops():
    x, f, bias = arrays((1, 5, 5, 2)), arrays((3, 3, 2, 3), 1), arrays((3,), 2)
    outputs, label, _ = replay(
        "Conv2D",
        x,
        f,
        bias,
        attrs={"strides": [1, 1, 1, 1], "padding": "SAME"},
        formats=("NHWC", "HWCN", "ND"),
        types=("Conv2D", "BiasAdd", "Relu"),
    )
    assert label == "Conv2D+BiasAdd+Relu"
    close(outputs[0], np.maximum(ref_conv(x, f, (1, 1), (1, 1), (1, 1, 1, 1), 1) + bias, 0))


def test_fused_matmul_bias_add():
    a, b, bias = arrays((3, 4)), arrays((4, 2), 1), arrays((2,), 2)
    outputs, label, _ = replay("MatMulV2", a, b, bias, types=("MatMul", "BiasAdd"))
    assert label == "MatMul+BiasAdd"
    close(outputs[0], ref_matmul(a, b) + bias)


def test_fusions_that_do_not_chain_fall_back_to_the_npu_type():
    x = arrays((2, 4))
    _, label, _ = replay("Gelu", x, types=("Mul", "Pow", "Tanh"))
    assert label == "Gelu"


def test_an_unknown_type_says_no_replay():
    with pytest.raises(ReplayError, match="^no replay for GatherV2$"):
        replay("GatherV2", arrays((2,)), np.array([0]))


def test_the_registry_covers_the_issues_list():
    wanted = {
        "Conv2D",
        "MatMul",
        "MatMulV2",
        "BatchMatMul",
        "BatchMatMulV2",
        "BiasAdd",
        "Add",
        "AddV2",
        "Sub",
        "Mul",
        "RealDiv",
        "Relu",
        "Relu6",
        "Gelu",
        "Tanh",
        "Sigmoid",
        "Exp",
        "Log",
        "Sqrt",
        "Rsqrt",
        "Softmax",
        "SoftmaxV2",
        "LogSoftmax",
        "LogSoftmaxV2",
        "LayerNorm",
        "RmsNorm",
        "BNInfer",
        "FusedBatchNorm",
        "ReduceMean",
        "ReduceSum",
        "MaxPool",
        "AvgPool",
        "Cast",
        "TransData",
        "Reshape",
        "Transpose",
        "ConcatV2",
    }
    assert wanted <= set(REGISTRY)


def test_tensors_the_op_does_not_accept_are_a_reason_not_a_crash():
    with pytest.raises(ReplayError, match="cannot use these tensors"):
        replay(
            "LayerNorm",
            arrays((2, 3)),
            arrays((5,)),
            arrays((5,)),
            attrs={"begin_norm_axis": 1, "begin_params_axis": 1},
        )


def test_a_launch_whose_input_cannot_be_read_is_a_replay_error_naming_it():
    from pathlib import Path

    from precision_tool.compare.op_tensors import OpTensors, TensorSide
    from precision_tool.compare.replay.launch import replay_op

    side = TensorSide("input", 1, tensor=None, origin_format=None, source=None, golden_path=None)
    tensors = OpTensors(ref=None, step=None, dump_path=Path("op.dump"), inputs=(side,), outputs=())
    with pytest.raises(ReplayError, match="^input:1 cannot be read$"):
        replay_op(tensors, [None], [])
