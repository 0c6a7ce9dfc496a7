"""Indexing, scans and sorts from Python against NumPy in float64: gather / scatter /
index_select / index_add / cumsum / sort / topk / max / min (functions and methods), their
gradients, advanced indexing reads and writes (integer tensors and lists, boolean masks,
None and ... mixed in), negative dims, non-contiguous inputs, empty tensors, and errors."""
import numpy as np
import pytest

import ringgrad as rg


def f64(a):
    return rg.tensor(np.asarray(a, np.float64))


def grad_of(fn, a, upstream_seed=0):
    """fn(x)'s gradient for x = a, with a random upstream gradient; and that upstream."""
    x = f64(a).requires_grad_(True)
    y = fn(x)
    g = np.random.default_rng(upstream_seed).standard_normal(y.shape)
    (y * f64(g)).sum().backward()
    return x.grad.numpy(), g


def test_gather_and_its_gradient_match_numpy_take_along_axis():
    a = np.random.default_rng(1).standard_normal((4, 5))
    idx = np.array([[0, 4, 4], [1, 1, 2], [3, 0, 0], [2, 2, 2]])
    got = rg.gather(f64(a), 1, rg.tensor(idx))
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx, 1))
    np.testing.assert_array_equal(f64(a).gather(-1, rg.tensor(idx)).numpy(), got.numpy())
    dx, g = grad_of(lambda x: x.gather(1, rg.tensor(idx)), a)
    want = np.zeros_like(a)
    np.add.at(want, (np.arange(4)[:, None], idx), g)
    np.testing.assert_allclose(dx, want, rtol=0, atol=1e-15)


def test_scatter_scatter_add_index_select_index_add():
    a = np.random.default_rng(2).standard_normal((3, 4))
    idx = np.array([[1, 3], [0, 0], [2, 1]])
    src = np.random.default_rng(3).standard_normal((3, 2))
    added = a.copy()
    np.add.at(added, (np.arange(3)[:, None], idx), src)
    np.testing.assert_allclose(rg.scatter_add(f64(a), 1, rg.tensor(idx), f64(src)).numpy(), added,
                               rtol=0, atol=1e-15)
    put = f64(a).scatter(1, rg.tensor([[1], [2], [0]]), 9.0).numpy()
    want = a.copy()
    want[[0, 1, 2], [1, 2, 0]] = 9.0
    np.testing.assert_array_equal(put, want)
    sel = rg.tensor([2, 0, 2])
    np.testing.assert_array_equal(f64(a).index_select(0, sel).numpy(), a[[2, 0, 2]])
    np.testing.assert_array_equal(f64(a).T.index_select(1, sel).numpy(), a.T[:, [2, 0, 2]])
    src2 = np.ones((3, 4))
    want = a.copy()
    np.add.at(want, [2, 0, 2], 2 * src2)
    np.testing.assert_allclose(f64(a).index_add(0, sel, f64(src2), alpha=2).numpy(), want,
                               rtol=0, atol=1e-15)


def test_cumsum_matches_numpy_and_its_gradient_is_the_reversed_cumsum():
    a = np.random.default_rng(4).standard_normal((5, 6))
    np.testing.assert_allclose(rg.cumsum(f64(a), -1).numpy(), np.cumsum(a, -1), rtol=1e-15)
    np.testing.assert_allclose(f64(a).T.cumsum(0).numpy(), np.cumsum(a.T, 0), rtol=1e-15)
    assert rg.tensor([True, True, False]).cumsum(0).dtype == rg.int64
    assert rg.cumsum(f64(a), 0, dtype=rg.float32).dtype == rg.float32
    dx, g = grad_of(lambda x: x.cumsum(1), a)
    np.testing.assert_allclose(dx, np.cumsum(g[:, ::-1], 1)[:, ::-1], rtol=1e-13)
    assert rg.zeros(0, 3).cumsum(0).shape == (0, 3)


def test_sort_argsort_topk_and_gradients():
    a = np.random.default_rng(5).standard_normal((3, 7))
    values, indices = f64(a).sort(dim=1, descending=True)
    np.testing.assert_array_equal(indices.numpy(), np.argsort(-a, 1, kind="stable"))
    np.testing.assert_array_equal(values.numpy(), -np.sort(-a, 1))
    s = rg.sort(f64(a), 0)
    np.testing.assert_array_equal(s.values.numpy(), np.sort(a, 0))
    np.testing.assert_array_equal(rg.argsort(f64(a)).numpy(), np.argsort(a, -1, kind="stable"))
    top = f64(a).topk(3)
    np.testing.assert_array_equal(top.indices.numpy(), np.argsort(-a, 1, kind="stable")[:, :3])
    low_v, low_i = rg.topk(f64(a), 2, dim=0, largest=False)
    np.testing.assert_array_equal(low_v.numpy(), np.sort(a, 0)[:2])
    dx, g = grad_of(lambda x: x.topk(3).values, a)
    want = np.zeros_like(a)
    np.put_along_axis(want, np.argsort(-a, 1, kind="stable")[:, :3], g, 1)
    np.testing.assert_array_equal(dx, want)
    nan = rg.tensor([1.0, float("nan"), 0.0]).sort()
    assert nan.indices.numpy().tolist() == [2, 0, 1]


def test_max_and_min_forms():
    a = np.array([[1.0, 5.0, 5.0], [2.0, -1.0, 0.0]])
    v, i = f64(a).max(1)
    assert i.numpy().tolist() == [1, 0] and v.numpy().tolist() == [5.0, 2.0]
    r = rg.min(f64(a), dim=0, keepdim=True)
    assert r.values.shape == (1, 3) and r.indices.numpy().tolist() == [[0, 1, 1]]
    assert f64(a).max().item() == 5.0 and rg.min(f64(a)).item() == -1.0
    np.testing.assert_array_equal(rg.max(f64(a), f64(a[::-1].copy())).numpy(),
                                  np.maximum(a, a[::-1]))
    dx, g = grad_of(lambda x: x.max(1).values, a)
    want = np.zeros_like(a)
    want[0, 1], want[1, 0] = g[0], g[1]  # the first of the tied 5.0s only
    np.testing.assert_array_equal(dx, want)


def test_advanced_reads_match_numpy():
    a = np.random.default_rng(6).standard_normal((4, 5, 3))
    x = f64(a)
    for key in [([0, 2],), (slice(None), [-1]), (rg.tensor([3, 1]), 1), (..., [2, 0]),
                (None, [1, 1], slice(1, 3)), ([0, 3], [4, 1]), ([0, 3], slice(None), [2, 1]),
                (np.array([[1, 2], [0, 0]]),), ([0, 1], slice(None), [1, 2]),
                ([[0], [3]], [1, 2]), ([],),
                (slice(None), np.array([True, False, True, False, True]), 0)]:
        np_key = tuple(k.numpy() if isinstance(k, rg.Tensor) else k for k in key)
        np.testing.assert_array_equal(x[key].numpy(), a[np_key], err_msg=str(key))
    # An int selects first, as PyTorch's (NumPy would put the list's dim first: [2, 5]).
    np.testing.assert_array_equal(x[1, :, [0, 2]].numpy(), a[1][:, [0, 2]])
    mask = a[:, :, 0] > 0
    np.testing.assert_array_equal(x[rg.tensor(mask)].numpy(), a[mask])
    np.testing.assert_array_equal(x.T[[1, 0]].numpy(), a.T[[1, 0]])
    assert x[rg.tensor(np.zeros((4, 5), bool))].shape == (0, 3)


def test_advanced_read_gradient_adds_repeated_rows():
    a = np.random.default_rng(7).standard_normal((4, 3))
    dx, g = grad_of(lambda x: x[[2, 0, 2]], a)
    want = np.zeros_like(a)
    np.add.at(want, [2, 0, 2], g)
    np.testing.assert_allclose(dx, want, rtol=0, atol=1e-15)


def test_advanced_writes_match_numpy():
    a = np.random.default_rng(8).standard_normal((4, 6))
    x, want = f64(a), a.copy()
    v = x.topk(2).values
    x[x < v[:, [-1]]] = -float("inf")  # nanoGPT's top-k sampling
    want[want < np.sort(want, 1)[:, -2:][:, [0]]] = -np.inf
    np.testing.assert_array_equal(x.numpy(), want)
    x[[0, 2]] = 7.0
    want[[0, 2]] = 7.0
    x[:, [1, -1]] = f64([[1.0, 2.0]])
    want[:, [1, -1]] = [[1.0, 2.0]]
    x[rg.tensor(want > 6.5)] = f64(np.arange((want > 6.5).sum()))
    want[want > 6.5] = np.arange((want > 6.5).sum())
    np.testing.assert_array_equal(x.numpy(), want)


def test_errors_name_the_op():
    x = f64(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        x[[0, 3]]
    with pytest.raises(IndexError, match="gather: index 4 out of range"):
        x.gather(1, rg.tensor([[4]]))
    with pytest.raises(IndexError, match="gather: dim 2 out of range"):
        x.gather(2, rg.tensor([[0]]))
    with pytest.raises(ValueError, match="gather: index must be int64 or int32"):
        x.gather(1, rg.tensor([[0.5]]))
    with pytest.raises(IndexError, match="topk: k 5 out of range"):
        x.topk(5)
    with pytest.raises(IndexError, match="mask"):
        x[rg.tensor([True, False])]


@pytest.mark.skipif(not rg._C.sim_backend_built(),
                    reason="built without the sim device (pip install .'s default)")
def test_the_sim_device_gives_the_cpu_results():
    a = np.random.default_rng(9).standard_normal((5, 8))
    x, s = f64(a), f64(a).to("sim")
    idx = rg.tensor([[7, 0], [1, 1], [2, 3], [0, 0], [5, 6]])
    np.testing.assert_array_equal(s.gather(1, idx.to("sim")).cpu().numpy(),
                                  x.gather(1, idx).numpy())
    np.testing.assert_array_equal(s.topk(3).indices.cpu().numpy(), x.topk(3).indices.numpy())
    np.testing.assert_array_equal(s.cumsum(0).cpu().numpy(), x.cumsum(0).numpy())
    np.testing.assert_array_equal(s[[4, 0], 1:].cpu().numpy(), a[[4, 0], 1:])
    s[s < rg.tensor(0.0, dtype=rg.float64, device="sim")] = 0.0
    np.testing.assert_array_equal(s.cpu().numpy(), np.where(a < 0, 0.0, a))


def test_index_put_accumulates_repeats_and_carries_gradients():
    a = np.random.default_rng(10).standard_normal((4, 3))
    rows, cols = np.array([0, 2, 0]), np.array([1, 1, 1])
    v = np.array([1.0, 2.0, 3.0])
    want = a.copy()
    np.add.at(want, (rows, cols), v)
    got = rg.index_put(f64(a), (rg.tensor(rows), rg.tensor(cols)), f64(v), accumulate=True)
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-15)
    x, values = f64(a).requires_grad_(True), f64(v[:2]).requires_grad_(True)
    y = x.index_put((rg.tensor([3, 1]),), values.reshape(2, 1))
    g = np.random.default_rng(11).standard_normal((4, 3))
    (y * f64(g)).sum().backward()
    want_dx = g.copy()
    want_dx[[3, 1]] = 0.0  # overwritten rows get no gradient
    np.testing.assert_array_equal(x.grad.numpy(), want_dx)
    np.testing.assert_allclose(values.grad.numpy(), g[[3, 1]].sum(1), rtol=1e-15)
    z = f64(a)
    z.index_put_((rg.tensor([0]),), 5.0)
    assert (z.numpy()[0] == 5.0).all()
