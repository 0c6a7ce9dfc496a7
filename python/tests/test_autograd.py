"""Autograd from Python: backward against finite differences, .grad, requires_grad_,
detach and no_grad."""
import numpy as np
import pytest

import ringgrad as rg
from ringgrad import nn


def finite_difference(f, x, eps=1e-6):
    """d f(x).sum() / dx by central differences, f a NumPy function of an f64 array."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up).sum() - f(down).sum()) / (2 * eps)
    return grad


def test_gradient_of_tanh_matmul_broadcast_matches_finite_differences():
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(2)
    tx, tw = rg.tensor(x, requires_grad=True), rg.tensor(w, requires_grad=True)
    loss = (rg.tanh(tx @ tw + rg.tensor(b)) * tx.sum(dim=1, keepdim=True)).sum()
    loss.backward()

    def f_x(v):
        return np.tanh(v @ w + b) * v.sum(axis=1, keepdims=True)

    def f_w(v):
        return np.tanh(x @ v + b) * x.sum(axis=1, keepdims=True)

    np.testing.assert_allclose(tx.grad.numpy(), finite_difference(f_x, x), atol=1e-8)
    np.testing.assert_allclose(tw.grad.numpy(), finite_difference(f_w, w), atol=1e-8)


def test_gradients_accumulate_until_cleared():
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad is None and x.is_leaf
    (x * x).sum().backward()
    (x * 3.0).sum().backward()
    assert x.grad.numpy().tolist() == [5.0, 7.0]
    x.grad = None
    assert x.grad is None


def test_requires_grad_returns_self_and_detach_cuts_the_graph():
    x = rg.ones(2)
    assert x.requires_grad_() is x and x.requires_grad
    d = (x * 2.0).detach()
    assert not d.requires_grad and d.is_leaf
    y = (x * 2.0)
    assert y.requires_grad and not y.is_leaf


def test_no_grad_records_no_graph_and_restores_the_mode():
    x = rg.ones(3, requires_grad=True)
    with rg.no_grad():
        assert not rg.is_grad_enabled()
        y = x * 2.0
    assert rg.is_grad_enabled()
    assert not y.requires_grad
    with pytest.raises(RuntimeError, match="backward"):
        y.sum().backward()

    @rg.no_grad()
    def doubled(t):
        return t * 2.0

    assert not doubled(x).requires_grad and rg.is_grad_enabled()


def test_no_grad_restores_the_mode_after_an_exception():
    with pytest.raises(KeyError):
        with rg.no_grad():
            raise KeyError("inside")
    assert rg.is_grad_enabled()


def test_hooks_see_and_replace_gradients_and_run_after_accumulation():
    x = rg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)  # doubles x's gradient
    finished = []
    x.register_post_accumulate_grad_hook(lambda p: finished.append(p.grad.numpy().copy()))
    (x * x).sum().backward()
    assert seen[0].tolist() == [2.0, 4.0, 6.0]
    assert x.grad.numpy().tolist() == [4.0, 8.0, 12.0]
    assert finished[0].tolist() == [4.0, 8.0, 12.0]  # after the replacement was accumulated


def test_a_hook_that_raises_stops_backward_with_its_exception():
    x = rg.tensor([1.0], requires_grad=True)

    def fail(grad):
        raise KeyError("from the hook")

    x.register_hook(fail)
    with pytest.raises(KeyError, match="from the hook"):
        (x * 3).sum().backward()


def test_gradcheck_passes_the_ops_and_catches_a_wrong_gradient():
    rg.manual_seed(3)
    a = rg.randn(3, 4, dtype=rg.float64).requires_grad_()
    b = rg.randn(4, 2, dtype=rg.float64).requires_grad_()
    assert rg.autograd.gradcheck(lambda x, y: rg.softmax(x @ y, -1), (a, b))
    assert rg.autograd.gradcheck(lambda x: (nn.functional.gelu(x) * x).sum(), (a,))
    target = rg.tensor([0, 1, 3])
    assert rg.autograd.gradcheck(lambda x: nn.functional.cross_entropy(x, target), (a,))
    c = rg.randn(5, dtype=rg.float64).requires_grad_()
    c.register_hook(lambda g: g * 1.5)  # backward now disagrees with the function
    with pytest.raises(rg.autograd.GradcheckError, match="input 0"):
        rg.autograd.gradcheck(lambda x: (x * x).sum(), (c,))
    assert not rg.autograd.gradcheck(lambda x: (x * x).sum(), (c,), raise_exception=False)
    with pytest.raises(ValueError, match="float64"):
        rg.autograd.gradcheck(lambda x: x.sum(), (rg.randn(3).requires_grad_(),))


def test_ctrl_c_stops_backward_between_nodes_with_keyboard_interrupt():
    import os
    import signal
    import threading

    x = rg.randn(64, 64, dtype=rg.float64).requires_grad_()
    y = x
    for _ in range(20000):  # a long chain: backward has 40000 nodes to run
        y = y * 1.0 + 0.0
    # The first node backward runs starts a thread that sends SIGINT to this process: it runs
    # once the hook returns the GIL, while backward goes on without it.
    y.register_hook(lambda g: threading.Thread(
        target=os.kill, args=(os.getpid(), signal.SIGINT)).start())
    with pytest.raises(KeyboardInterrupt):
        y.sum().backward()
    assert x.grad is None  # stopped before reaching the leaf
    (x * 2).sum().backward()  # and the next backward runs normally
    assert x.grad.numpy()[0, 0] == 2.0
