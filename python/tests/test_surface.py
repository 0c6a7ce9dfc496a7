"""The op tables' Python surface (ringgrad.<name> and Tensor.<name>, generated from
core/op_table.h), in the spirit of PyTorch's OpInfo: every row's values against NumPy in
float64 and its gradient against central differences; broadcasting, numbers on either side,
negative dims, keepdim, dtype=, transposed (non-contiguous) and zero-size inputs, and errors
that name the op."""
import math

import numpy as np
import pytest

import ringgrad as rg

_erf = np.vectorize(math.erf)
UNARY = {  # NumPy references; a row missing here is still checked (method == function, grad)
    "neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "abs": np.abs, "sign": np.sign, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: x * 0.5 * (1 + _erf(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                  (x + 0.044715 * x ** 3))),
    "silu": lambda x: x / (1 + np.exp(-x)), "sin": np.sin, "cos": np.cos, "square": np.square,
    "reciprocal": lambda x: 1 / x, "logical_not": lambda x: x == 0,
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "eq": np.equal, "ne": np.not_equal,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}
REDUCE = {"sum": np.sum, "mean": np.mean, "amax": np.amax, "amin": np.amin, "prod": np.prod}
INDEX = {"argmax": np.argmax, "argmin": np.argmin}
TABLES = rg._C.op_tables  # generated from core/op_table.h's X-macros
TABLE = [name for names in TABLES.values() for name in names]


def positive(shape, seed=0):
    """Values in [0.5, 2): inside every unary op's domain, away from kinks and ties."""
    return np.random.default_rng(seed).uniform(0.5, 2.0, shape)


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)).sum() / (2 * eps)
    return g


def test_every_table_row_is_a_function_and_a_method():
    assert {"exp", "add", "sum", "argmax"} <= set(TABLE)
    for name in TABLE:
        assert callable(getattr(rg, name)) and callable(getattr(rg.Tensor, name)), name


@pytest.mark.parametrize("name", TABLES["unary"])
def test_unary_values_and_gradients_in_float64(name):
    a = positive((3, 4)) * np.where(np.arange(12).reshape(3, 4) % 2, 1, -1)
    if name in ("log", "sqrt", "rsqrt"):
        a = np.abs(a)
    x = rg.tensor(a, requires_grad=True)
    y = getattr(rg, name)(x)
    assert np.array_equal(y.detach().numpy(), getattr(x, name)().detach().numpy())
    if name in UNARY:
        np.testing.assert_allclose(y.detach().numpy(), UNARY[name](a), rtol=1e-12, atol=1e-15)
    if y.dtype != rg.float64:
        return  # boolean rows: no gradient
    (y * rg.tensor(positive((3, 4), 1))).sum().backward()
    want = numeric_grad(lambda v: getattr(rg, name)(rg.tensor(v)).numpy() * positive((3, 4), 1),
                        a)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-8)


def test_unary_on_transposed_and_zero_size_inputs():
    a = positive((4, 3))
    t = rg.tensor(a).t()
    assert not t.is_contiguous()
    np.testing.assert_allclose(rg.exp(t).numpy(), np.exp(a.T), rtol=1e-15)
    assert rg.tanh(rg.zeros(0, 3, dtype=rg.float64)).shape == (0, 3)


@pytest.mark.parametrize("name", TABLES["binary"])
def test_binary_values_gradients_and_broadcasting_in_float64(name):
    a, b = positive((3, 1), 2), positive((1, 4), 3)
    x, y = rg.tensor(a, requires_grad=True), rg.tensor(b, requires_grad=True)
    out = getattr(rg, name)(x, y)
    assert out.shape == (3, 4)
    if name in BINARY:
        np.testing.assert_allclose(out.detach().numpy(), BINARY[name](a, b), rtol=1e-14)
    assert np.array_equal(getattr(x, name)(y).detach().numpy(), out.detach().numpy())
    if out.dtype == rg.bool:
        return
    out.sum().backward()
    f = getattr(rg, name)
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(
        lambda v: f(rg.tensor(v), rg.tensor(b)).numpy(), a), rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), numeric_grad(
        lambda v: f(rg.tensor(a), rg.tensor(v)).numpy(), b), rtol=1e-6)


@pytest.mark.parametrize("name", TABLES["binary"])
def test_binary_ops_take_a_number_on_either_side(name):
    a = positive((2, 3))
    x = rg.tensor(a)
    f = getattr(rg, name)
    want = BINARY.get(name, lambda p, q: f(rg.tensor(p), rg.tensor(q)).numpy())
    np.testing.assert_allclose(f(x, 1.5).numpy(), want(a, np.full_like(a, 1.5)), rtol=1e-14)
    np.testing.assert_allclose(f(1.5, x).numpy(), want(np.full_like(a, 1.5), a), rtol=1e-14)
    assert f(x, 2).dtype in (rg.bool, rg.float64)


def test_python_numbers_keep_the_tensor_dtype_as_pytorch_scalars_do():
    ints, floats = rg.tensor([1, 2, 3]), rg.tensor([1.0, 2.0])
    assert (ints + 1).dtype == rg.int64 and (ints * 2).tolist() == [2, 4, 6]
    assert (ints + 0.5).dtype == rg.float32 and (ints + 0.5).tolist() == [1.5, 2.5, 3.5]
    assert (floats * 2).dtype == rg.float32 and (2 ** floats).tolist() == [2.0, 4.0]
    assert (rg.tensor([True, False]) + 1).tolist() == [2, 1]


def test_operators_match_the_functions():
    a, b = positive((2, 3), 4), positive((2, 3), 5)
    x, y = rg.tensor(a), rg.tensor(b)
    pairs = [(x + y, a + b), (x - 1, a - 1), (2 - x, 2 - a), (x * y, a * b), (x / y, a / b),
             (1 / x, 1 / a), (x ** 2, a ** 2), (2 ** x, 2 ** a), (-x, -a), (abs(-x), a),
             (x == y, a == b), (x != y, a != b), (x < y, a < b), (x <= 1, a <= 1),
             (x > y, a > b), (x >= 1, a >= 1), ((x > 1) & (y > 1), (a > 1) & (b > 1)),
             ((x > 1) | (y > 1), (a > 1) | (b > 1)), ((x > 1) ^ (y > 1), (a > 1) ^ (b > 1)),
             (~(x > 1), ~(a > 1))]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-15)
    assert (x == None) is False and (x != "a") is True  # noqa: E711
    assert {x: 1}[x] == 1 and len({x, y}) == 2  # hashable by identity, as PyTorch's


def test_bitwise_operators_on_integers_and_wrong_operands_raise_naming_the_op():
    with pytest.raises(TypeError, match="__and__: only bool"):
        rg.tensor([1, 2]) & rg.tensor([1, 0])
    with pytest.raises(TypeError, match="__invert__"):
        ~rg.tensor([1.0])
    with pytest.raises(TypeError, match="add: expected a tensor or a number, got str"):
        rg.add(rg.ones(2), "x")
    with pytest.raises(TypeError, match="mul: expected at least one tensor"):
        rg.mul(2, 3)
    with pytest.raises(ValueError, match="add"):
        rg.ones(2) + rg.ones(3)


def test_in_place_forms_return_self_and_refuse_tensors_that_require_grad():
    x = rg.tensor([1.0, 2.0])
    assert x.add_(1) is x and x.tolist() == [2.0, 3.0]
    assert x.sub_(rg.tensor([1.0, 1.0]), alpha=2).tolist() == [0.0, 1.0]
    assert x.mul_(3).div_(2).tolist() == [0.0, 1.5]
    assert x.clamp_(0.5, 1.0).tolist() == [0.5, 1.0] and x.zero_().tolist() == [0.0, 0.0]
    x += 2
    x *= rg.tensor([1.0, 3.0])
    assert x.tolist() == [2.0, 6.0]
    w = rg.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="add_: in-place operation"):
        w.add_(1)
    with rg.no_grad():
        w.sub_(0.5)
    assert w.tolist() == [0.5, 0.5]
    h = w
    h += 1  # recorded by autograd: out of place, as PyTorch's in-place autograd would give
    h.sum().backward()
    assert w.grad.tolist() == [1.0, 1.0] and w.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("name", [n for n in TABLES["reduce"] if n not in INDEX])
def test_reductions_over_dims_with_keepdim_and_gradients(name):
    """Against NumPy for the rows REDUCE lists; every row's gradient by central differences."""
    a = positive((2, 3, 4), 6)
    f = getattr(rg, name)
    for dim in [None, 0, -1, (0, 2), [1, -1]]:
        for keepdim in (False, True):
            x = rg.tensor(a, requires_grad=True)
            y = getattr(x, name)(dim, keepdim=keepdim)
            axis = None if dim is None else tuple(dim) if not isinstance(dim, int) else dim
            if name in REDUCE:
                want = REDUCE[name](a, axis=axis, keepdims=keepdim)
                np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-13)
            assert np.array_equal(f(x, dim=dim, keepdim=keepdim).detach().numpy(),
                                  y.detach().numpy())
            y.sum().backward()
            grad = numeric_grad(lambda v: np.asarray(f(rg.tensor(v), dim).numpy()), a)
            np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-6, atol=1e-9)


def test_reductions_on_transposed_zero_size_and_with_dtype():
    a = positive((3, 4), 7)
    t = rg.tensor(a).t()
    np.testing.assert_allclose(t.sum(0).numpy(), a.T.sum(0), rtol=1e-15)
    assert rg.zeros(0, 3).sum(0).tolist() == [0.0, 0.0, 0.0]
    assert rg.tensor([1, 2, 3]).sum(dtype=rg.float64).dtype == rg.float64
    assert rg.tensor([1, 2, 3]).sum().dtype == rg.int64
    with pytest.raises(TypeError, match="sum: dim must be"):
        rg.ones(2).sum("0")
    with pytest.raises((ValueError, IndexError), match="mean"):
        rg.ones(2).mean(3)


@pytest.mark.parametrize("name", [n for n in TABLES["reduce"] if n in INDEX])
def test_argmax_and_argmin_over_a_dim_or_everything(name):
    a = np.random.default_rng(8).permutation(24).reshape(2, 3, 4).astype(np.float64)
    x = rg.tensor(a).transpose(0, 2)
    want = INDEX[name](a.transpose(2, 1, 0), axis=1)
    assert np.array_equal(getattr(x, name)(1).numpy(), want)
    assert np.array_equal(getattr(rg, name)(x, dim=-2, keepdim=True).numpy(),
                          np.expand_dims(want, 1))
    assert getattr(x, name)().item() == INDEX[name](a.transpose(2, 1, 0))
    assert getattr(x, name)(keepdim=True).shape == (1, 1, 1)


def test_max_and_min_with_a_dim_give_values_and_indices():
    x = rg.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    values, indices = rg.max(x, 1)
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    assert x.min(dim=0, keepdim=True).indices.tolist() == [[0, 1, 0]]
    assert rg.max(x).item() == 7.0 and rg.min(x, rg.ones(1)).tolist() == [[1, 1, 1], [1, 0, 1]]
