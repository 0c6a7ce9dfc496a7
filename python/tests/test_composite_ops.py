"""The composite ops (var, std, norm, tril/triu, repeat, pad, einsum, conv, pooling,
batch_norm, one_hot) from Python, in the spirit of PyTorch's OpInfo: one record per op case
drives its value test against NumPy in float64, its gradient test against central finite
differences of the NumPy reference, and its test on non-contiguous inputs. Zero-size
inputs and the errors that name the op have their own tests."""
import math

import numpy as np
import pytest

import ringgrad as rg
import ringgrad.nn.functional as F


def R(a, requires_grad=False):
    t = rg.from_numpy(np.ascontiguousarray(a, dtype=np.float64))
    if requires_grad:
        t.requires_grad_()
    return t


def transposed(a):
    """A ringgrad view of `a` with the same values whose last two dims are strided."""
    axes = list(range(a.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return R(np.transpose(a, axes)).transpose(-1, -2)


# ---- NumPy references (float64) ----
def np_norm(x, p, axis=None, keepdims=False):
    a = np.abs(x)
    if p == math.inf:
        return a.max(axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return a.min(axis=axis, keepdims=keepdims)
    if p == 0:
        return (x != 0).sum(axis=axis, keepdims=keepdims).astype(np.float64)
    return (a ** p).sum(axis=axis, keepdims=keepdims) ** (1.0 / p)


def np_conv2d(x, w, b, stride, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for y in range(ho):
            for z in range(wo):
                patch = xp[:, g * cg:(g + 1) * cg, y * sh:y * sh + dh * (kh - 1) + 1:dh,
                           z * sw:z * sw + dw * (kw - 1) + 1:dw]
                out[:, oc, y, z] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def np_pool(x, k, s, p, reduce, fill):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.zeros((n, c, ho, wo))
    for y in range(ho):
        for z in range(wo):
            out[:, :, y, z] = reduce(xp[:, :, y * s:y * s + k, z * s:z * s + k], axis=(2, 3))
    return out


def np_batch_norm(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = [1, -1] + [1] * (x.ndim - 2)
    m, v = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w.reshape(shape) + b.reshape(shape)


PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def np_pad(x, amounts, mode):
    widths = [(0, 0)] * x.ndim
    for i in range(len(amounts) // 2):
        widths[x.ndim - 1 - i] = (amounts[2 * i], amounts[2 * i + 1])
    return np.pad(x, widths, mode=PAD_MODES[mode])


# ---- the records: (id, ringgrad function, NumPy reference, input shapes) ----
CONV_CASES = [((2, 3, 6, 5), (4, 3, 3, 2), 1, 0, 1, 1), ((1, 4, 7, 7), (6, 2, 3, 3), 2, 1, 1, 2),
              ((1, 2, 8, 6), (2, 2, 2, 3), (2, 1), (1, 2), (2, 1), 1),
              ((2, 4, 5, 5), (4, 1, 3, 3), 1, 1, 2, 4)]


def pair(v):
    return (v, v) if isinstance(v, int) else v


def conv_record(xs, ws, s, p, d, g):
    fn = lambda x, w, b: F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g)  # noqa: E731
    ref = lambda x, w, b: np_conv2d(x, w, b, pair(s), pair(p), pair(d), g)  # noqa: E731
    return (f"conv2d {xs} {ws} s{s} p{p} d{d} g{g}", fn, ref, [xs, ws, (ws[0],)])


RECORDS = [
    ("var", lambda x: rg.var(x), lambda x: np.var(x, ddof=1), [(3, 4)]),
    ("var dim -1 keepdim", lambda x: x.var(-1, keepdim=True),
     lambda x: np.var(x, axis=-1, ddof=1, keepdims=True), [(3, 4)]),
    ("var dims correction 0", lambda x: x.var((0, 2), correction=0),
     lambda x: np.var(x, axis=(0, 2)), [(2, 3, 4)]),
    ("var unbiased=False", lambda x: x.var(1, False), lambda x: np.var(x, axis=1), [(3, 4)]),
    ("std", lambda x: x.std(0), lambda x: np.std(x, axis=0, ddof=1), [(4, 3)]),
    ("std_mean", lambda x: sum(rg.std_mean(x, 1)),
     lambda x: np.std(x, axis=1, ddof=1) + x.mean(axis=1), [(3, 5)]),
    ("var_mean", lambda x: sum(rg.var_mean(x, -2, keepdim=True)),
     lambda x: np.var(x, axis=-2, ddof=1, keepdims=True) + x.mean(axis=-2, keepdims=True),
     [(3, 5)]),
    ("norm fro", lambda x: x.norm(), lambda x: np_norm(x, 2), [(3, 4)]),
    ("norm 1 dim", lambda x: rg.norm(x, 1, dim=1), lambda x: np_norm(x, 1, 1), [(3, 4)]),
    ("norm inf dim -1 keepdim", lambda x: x.norm(math.inf, -1, True),
     lambda x: np_norm(x, math.inf, -1, True), [(3, 4)]),
    ("norm -inf", lambda x: x.norm(-math.inf, 0), lambda x: np_norm(x, -math.inf, 0), [(3, 4)]),
    ("norm 3 dims", lambda x: x.norm(3, (0, 2)), lambda x: np_norm(x, 3, (0, 2)), [(2, 3, 4)]),
    ("tril", lambda x: x.tril(), np.tril, [(4, 5)]),
    ("tril -1 batched", lambda x: rg.tril(x, -1), lambda x: np.tril(x, -1), [(2, 4, 3)]),
    ("triu 2", lambda x: x.triu(2), lambda x: np.triu(x, 2), [(4, 5)]),
    ("repeat", lambda x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3)), [(2, 3)]),
    ("repeat tuple", lambda x: x.repeat((1, 2)), lambda x: np.tile(x, (1, 2)), [(2, 3)]),
    ("repeat_interleave dim", lambda x: x.repeat_interleave(2, dim=-1),
     lambda x: np.repeat(x, 2, axis=-1), [(2, 3)]),
    ("repeat_interleave flat", lambda x: rg.repeat_interleave(x, 3),
     lambda x: np.repeat(x, 3), [(2, 3)]),
    ("outer", lambda a, b: rg.outer(a, b), np.outer, [(3,), (4,)]),
    ("einsum ij,jk->ik", lambda a, b: rg.einsum("ij,jk->ik", a, b),
     lambda a, b: np.einsum("ij,jk->ik", a, b), [(3, 4), (4, 2)]),
    ("einsum bij,bjk->bik", lambda a, b: rg.einsum("bij,bjk->bik", a, b),
     lambda a, b: np.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)]),
    ("einsum bhqd,bhkd->bhqk", lambda a, b: rg.einsum("bhqd,bhkd->bhqk", [a, b]),
     lambda a, b: np.einsum("bhqd,bhkd->bhqk", a, b), [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("einsum i,j->ij", lambda a, b: rg.einsum("i,j->ij", a, b),
     lambda a, b: np.einsum("i,j->ij", a, b), [(3,), (4,)]),
    ("einsum implicit", lambda a, b: rg.einsum("ba,cb", a, b),
     lambda a, b: np.einsum("ba,cb", a, b), [(3, 4), (2, 3)]),
    ("einsum ellipsis", lambda a, b: rg.einsum("...ij,...jk->...ik", a, b),
     lambda a, b: np.einsum("...ij,...jk->...ik", a, b), [(2, 3, 4), (4, 2)]),
    ("einsum three operands", lambda a, b, c: rg.einsum("ij,jk,kl->li", a, b, c),
     lambda a, b, c: np.einsum("ij,jk,kl->li", a, b, c), [(2, 3), (3, 4), (4, 5)]),
    ("einsum sum and permute", lambda a: rg.einsum("ijk->kj", a),
     lambda a: np.einsum("ijk->kj", a), [(2, 3, 4)]),
] + [(f"pad {mode}", (lambda m: lambda x: F.pad(x, (2, 1, 1, 2), m))(mode),
      (lambda m: lambda x: np_pad(x, (2, 1, 1, 2), m))(mode), [(2, 4, 5)])
     for mode in PAD_MODES] + [
    ("pad constant value, crop", lambda x: F.pad(x, (-1, 2), value=3.5),
     lambda x: np.pad(x[:, 1:], ((0, 0), (0, 2)), constant_values=3.5), [(3, 4)]),
] + [conv_record(*case) for case in CONV_CASES] + [
    ("conv2d no bias", lambda x, w: F.conv2d(x, w, padding=1),
     lambda x, w: np_conv2d(x, w, None, (1, 1), (1, 1), (1, 1), 1), [(1, 2, 4, 4), (3, 2, 3, 3)]),
    ("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
     lambda x, w, b: np_conv2d(x[:, :, None], w[:, :, None], b, (1, 2), (0, 1), (1, 1), 1)[:, :, 0],
     [(2, 3, 9), (4, 3, 3), (4,)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, 1),
     lambda x: np_pool(x, 3, 2, 1, np.max, -np.inf), [(2, 2, 7, 6)]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 2, 1, 1),
     lambda x: np_pool(x, 2, 1, 1, np.mean, 0.0), [(1, 3, 5, 5)]),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, None)),
     lambda x: np.stack([x[:, :, 0:3].mean(2), x[:, :, 2:5].mean(2), x[:, :, 4:7].mean(2)], 2),
     [(1, 2, 7, 4)]),
    ("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1),
     lambda x: np_pool(x[:, :, None], 3, 2, 1, np.max, -np.inf)[:, :, 0], [(2, 3, 9)]),
    ("avg_pool1d", lambda x: F.avg_pool1d(x, 2), lambda x: x.reshape(2, 3, 4, 2).mean(-1),
     [(2, 3, 8)]),
    ("batch_norm training", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     np_batch_norm, [(4, 3, 2, 3), (3,), (3,)]),
]

IDS = [r[0] for r in RECORDS]


def inputs_of(record, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in record[3]]


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_values_equal_numpy(record):
    _, fn, ref, _ = record
    xs = inputs_of(record, 1)
    got = fn(*[R(x) for x in xs])
    want = np.asarray(ref(*xs))
    assert got.dtype == rg.float64
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_values_on_non_contiguous_inputs(record):
    _, fn, ref, _ = record
    xs = inputs_of(record, 2)
    views = [transposed(x) if x.ndim >= 2 else R(x) for x in xs]
    assert any(not v.is_contiguous() for v in views) or all(x.ndim < 2 for x in xs)
    np.testing.assert_allclose(fn(*views).numpy(), np.asarray(ref(*xs)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_gradients_equal_finite_differences_of_numpy(record):
    """d sum(out * G) / d input, against central differences of the NumPy reference."""
    _, fn, ref, _ = record
    xs = inputs_of(record, 3)
    leaves = [R(x, requires_grad=True) for x in xs]
    out = fn(*leaves)
    weights = np.random.default_rng(4).standard_normal(tuple(out.shape))
    (out * R(weights)).sum().backward()
    eps = 1e-6
    for i, x in enumerate(xs):
        numeric = np.zeros_like(x)
        for j in range(x.size):
            shifted = [a.copy() for a in xs]
            shifted[i].flat[j] += eps
            up = (np.asarray(ref(*shifted)) * weights).sum()
            shifted[i].flat[j] -= 2 * eps
            down = (np.asarray(ref(*shifted)) * weights).sum()
            numeric.flat[j] = (up - down) / (2 * eps)
        np.testing.assert_allclose(leaves[i].grad.numpy(), numeric, rtol=1e-5, atol=1e-6,
                                   err_msg=f"input {i}")


def test_zero_gradient_of_the_norm_and_std_of_constants_as_pytorch():
    for method in ("norm", "std"):
        x = rg.full([4], 0.0 if method == "norm" else 2.0, dtype=rg.float64)
        x.requires_grad_()
        getattr(x, method)().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))


def test_zero_size_inputs():
    empty = rg.zeros(0, 3, dtype=rg.float64)
    assert np.isnan(empty.var(0).numpy()).all() and tuple(empty.var(0).shape) == (3,)
    np.testing.assert_array_equal(empty.norm(dim=0).numpy(), np.zeros(3))
    assert tuple(empty.tril().shape) == (0, 3)
    assert tuple(empty.repeat(2, 2).shape) == (0, 6)
    assert tuple(F.pad(empty, (1, 1)).shape) == (0, 5)
    assert tuple(rg.einsum("ij,jk->ik", empty, rg.zeros(3, 2, dtype=rg.float64)).shape) == (0, 2)
    np.testing.assert_array_equal(rg.einsum("ij,jk->ik", rg.zeros(2, 0, dtype=rg.float64),
                                            rg.zeros(0, 3, dtype=rg.float64)).numpy(),
                                  np.zeros((2, 3)))
    assert tuple(F.one_hot(rg.tensor(np.zeros(0, dtype=np.int64)), 4).shape) == (0, 4)


def test_one_hot_is_int64_like_pytorch():
    idx = rg.tensor(np.array([[0, 2], [1, 2]], dtype=np.int64))
    out = F.one_hot(idx)
    assert out.dtype == rg.int64
    np.testing.assert_array_equal(out.numpy(), np.eye(3, dtype=np.int64)[[[0, 2], [1, 2]]])
    assert tuple(F.one_hot(idx, num_classes=5).shape) == (2, 2, 5)


def test_batch_norm_updates_running_stats_and_evaluates_with_them():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 2, 3))
    mean, var = R(np.zeros(2)), R(np.ones(2))
    F.batch_norm(R(x), mean, var, training=True, momentum=0.2)
    per_channel = x.transpose(1, 0, 2).reshape(2, -1)
    np.testing.assert_allclose(mean.numpy(), 0.2 * per_channel.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), 0.8 + 0.2 * per_channel.var(axis=1, ddof=1),
                               rtol=1e-12)
    y = F.batch_norm(R(x), mean, var, training=False)
    want = (x - mean.numpy()[None, :, None]) / np.sqrt(var.numpy()[None, :, None] + 1e-5)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10)


def test_conv_same_and_valid_padding():
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((1, 2, 6, 7)), rng.standard_normal((3, 2, 2, 3))
    same = F.conv2d(R(x), R(w), padding="same")
    assert tuple(same.shape) == (1, 3, 6, 7)
    # 'same' with an even kernel pads (0 before, 1 after) in height, as PyTorch
    want = np_conv2d(np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 1))), w, None, (1, 1), (0, 0),
                     (1, 1), 1)
    np.testing.assert_allclose(same.numpy(), want, rtol=1e-10)
    valid = F.conv2d(R(x), R(w), padding="valid")
    np.testing.assert_allclose(valid.numpy(), np_conv2d(x, w, None, (1, 1), (0, 0), (1, 1), 1),
                               rtol=1e-10)


ERRORS = [
    (lambda: rg.einsum("ii->i", R(np.eye(3))), ValueError, "einsum: subscript 'i' repeated"),
    (lambda: rg.einsum("ij,jk->ik", R(np.ones((2, 3))), R(np.ones((2, 3)))), ValueError,
     "einsum: subscript 'j' has sizes 3 and 2"),
    (lambda: rg.tril(R(np.ones(3))), ValueError, "tril: expected a tensor of at least 2 dims"),
    (lambda: R(np.ones((2, 3))).repeat(2), ValueError, "repeat: 1 repeat counts"),
    (lambda: R(np.ones((2, 3))).var(2), IndexError, "var: dim 2 out of range"),
    (lambda: R(np.ones((2, 3))).std(-3), IndexError, "std: dim -3 out of range"),
    (lambda: rg.var(rg.tensor(np.ones(3, dtype=np.int64))), ValueError,
     "var: expected a floating-point input, got int64"),
    (lambda: R(np.ones(3)).norm("nuc"), ValueError, "norm: p = 'nuc' is not supported"),
    (lambda: R(np.ones(3)).var(correction=0, unbiased=True), ValueError,
     "var: pass either correction or unbiased"),
    (lambda: F.pad(R(np.ones((2, 3))), (3, 0), mode="reflect"), ValueError,
     "pad: mode 'reflect' needs padding 3 < the size 3"),
    (lambda: F.pad(R(np.ones((2, 3))), (1, 1), mode="wrap"), ValueError, "pad: mode 'wrap'"),
    (lambda: F.one_hot(rg.tensor(np.array([3])), 3), IndexError,
     "one_hot: class value 3 is out of range for 3 classes"),
    (lambda: F.conv2d(R(np.ones((1, 3, 5, 5))), R(np.ones((2, 2, 3, 3)))), ValueError,
     "conv2d: input of shape [1,3,5,5] has 3 channels"),
    (lambda: F.conv2d(R(np.ones((1, 2, 5, 5))), R(np.ones((2, 2, 3, 3))), stride=2,
                      padding="same"), ValueError, "conv2d: padding='same' needs stride 1"),
    (lambda: F.conv2d(R(np.ones((1, 2, 5, 5))), R(np.ones((2, 2, 3, 3))), stride=(1, 2, 3)),
     ValueError, "conv2d: stride must be an int or a pair"),
    (lambda: F.max_pool2d(R(np.ones((1, 1, 4, 4))), 2, padding=2), ValueError,
     "max_pool2d: padding (2, 2) must be at most half the kernel size"),
    (lambda: F.batch_norm(R(np.ones((1, 3))), None, None, training=True), ValueError,
     "batch_norm: expected more than 1 value per channel"),
    (lambda: F.batch_norm(R(np.ones((4, 3))), None, None, training=False), ValueError,
     "batch_norm: evaluation needs running_mean and running_var"),
]


@pytest.mark.parametrize("call,error,message", ERRORS, ids=[e[2] for e in ERRORS])
def test_bad_arguments_raise_an_error_naming_the_op(call, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        call()


def test_linalg_vector_norm_and_frobenius_norm_equal_numpy():
    x = np.random.default_rng(7).standard_normal((3, 4))
    for ord in (2, 1, math.inf, -math.inf, 3.5):
        np.testing.assert_allclose(rg.linalg.vector_norm(R(x), ord, dim=1).numpy(),
                                   np.linalg.norm(x, ord, axis=1), rtol=1e-12)
    np.testing.assert_allclose(rg.linalg.vector_norm(R(x)).numpy(), np.linalg.norm(x.ravel()),
                               rtol=1e-12)
    np.testing.assert_allclose(rg.linalg.norm(R(x), "fro").numpy(), np.linalg.norm(x, "fro"),
                               rtol=1e-12)
    np.testing.assert_allclose(rg.linalg.norm(R(x), dim=0, keepdim=True).numpy(),
                               np.linalg.norm(x, axis=0, keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match="linalg.norm: the matrix norm ord=2 is not supported"):
        rg.linalg.norm(R(x), 2)


def test_conv_modules_hold_torch_shaped_parameters_and_call_the_functional_ops():
    from ringgrad.nn.conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d
    rg.manual_seed(0)
    conv = Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2, dtype=rg.float64)
    assert tuple(conv.weight.shape) == (6, 2, 3, 2) and tuple(conv.bias.shape) == (6,)
    bound = 1 / math.sqrt(2 * 3 * 2)  # kaiming_uniform_(a=sqrt(5)): 1 / sqrt(fan_in)
    w = conv.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    x = np.random.default_rng(8).standard_normal((2, 4, 5, 6))
    want = np_conv2d(x, w, conv.bias.detach().numpy(), (2, 2), (1, 1), (1, 1), 2)
    np.testing.assert_allclose(conv(R(x)).detach().numpy(), want, rtol=1e-10)
    reflect = Conv2d(4, 3, 3, padding=1, padding_mode="reflect", bias=False, dtype=rg.float64)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")
    want = np_conv2d(padded, reflect.weight.detach().numpy(), None, (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(reflect(R(x)).detach().numpy(), want, rtol=1e-10)
    conv1 = Conv1d(4, 2, 3, padding="same", dtype=rg.float64)
    assert tuple(conv1(R(x[:, :, 0])).shape) == (2, 2, 6)
    np.testing.assert_allclose(MaxPool2d(2)(R(x)).numpy(), np_pool(x, 2, 2, 0, np.max, 0.0))
    np.testing.assert_allclose(AvgPool2d(3, 1, 1)(R(x)).numpy(),
                               np_pool(x, 3, 1, 1, np.mean, 0.0), rtol=1e-12)
    np.testing.assert_allclose(AdaptiveAvgPool2d(1)(R(x)).numpy(),
                               x.mean(axis=(2, 3), keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match="Conv2d: groups 3 must divide in_channels 4"):
        Conv2d(4, 6, 3, groups=3)
