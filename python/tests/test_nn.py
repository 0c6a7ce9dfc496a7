"""ringgrad.nn and ringgrad.optim from Python: Module registration, and a small MLP trained
with SGD whose losses and weights equal the same computation written out in NumPy (f64)."""
import math

import numpy as np
import pytest

import ringgrad as rg
import ringgrad.nn.functional as F
from ringgrad import nn

ERF = np.vectorize(math.erf)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8, dtype=rg.float64)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(8, 3, dtype=rg.float64)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_module_registers_parameters_and_submodules_in_assignment_order():
    model = MLP()
    names = [name for name, _ in model.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [tuple(p.shape) for p in model.parameters()] == [(8, 4), (8,), (3, 8), (3,)]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in model.parameters())
    model.fc2 = nn.GELU()  # replacing a submodule drops its parameters
    assert [n for n, _ in model.named_parameters()] == ["fc1.weight", "fc1.bias"]


def test_linear_initialization_is_bounded_by_one_over_sqrt_fan_in():
    layer = nn.Linear(16, 32)
    w = layer.weight.detach().numpy()
    assert np.abs(w).max() <= 0.25 and w.std() > 0.1  # U(-1/4, 1/4): std 0.144


def numpy_step(params, x, y, lr):
    """One forward, backward and SGD step of MLP in NumPy; returns the loss."""
    w1, b1, w2, b2 = params
    h = x @ w1.T + b1
    cdf, pdf = 0.5 * (1 + ERF(h / math.sqrt(2))), np.exp(-h * h / 2) / math.sqrt(2 * math.pi)
    a = h * cdf
    z = a @ w2.T + b2
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.log(p[np.arange(n), y]).mean()
    dz = p.copy()
    dz[np.arange(n), y] -= 1
    dz /= n
    dh = (dz @ w2) * (cdf + h * pdf)
    for param, grad in zip(params, (dh.T @ x, dh.sum(0), dz.T @ a, dz.sum(0))):
        param -= lr * grad
    return loss


def test_mlp_trained_with_sgd_matches_numpy_and_its_loss_decreases():
    rg.manual_seed(0)
    model = MLP()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 4))
    y = x[:, :3].argmax(axis=1)  # learnable: the largest of the first three features
    reference = [p.detach().numpy().copy() for p in model.parameters()]
    optimizer = rg.optim.SGD(model.parameters(), lr=0.5)
    losses, numpy_losses = [], []
    for _ in range(20):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(rg.tensor(x)), rg.tensor(y))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        numpy_losses.append(numpy_step(reference, x, y, lr=0.5))
    assert losses[-1] < 0.8 * losses[0]
    np.testing.assert_allclose(losses, numpy_losses, rtol=1e-12, atol=0)
    for p, want in zip(model.parameters(), reference):
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12, atol=1e-12)


def test_adamw_step_matches_the_formula_with_pytorch_defaults():
    p0, g = np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.25, -1.0])
    p = nn.Parameter(rg.tensor(p0))
    optimizer = rg.optim.AdamW([p])  # lr 1e-3, betas (0.9, 0.999), eps 1e-8, decay 1e-2
    want, m, v = p0.copy(), np.zeros(3), np.zeros(3)
    for t in (1, 2):
        p.grad = rg.tensor(g)
        optimizer.step()
        want *= 1 - 1e-3 * 1e-2
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        want -= 1e-3 / (1 - 0.9 ** t) * m / (np.sqrt(v) / math.sqrt(1 - 0.999 ** t) + 1e-8)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12)
    assert not np.allclose(want, p0)


def test_sgd_with_momentum_nesterov_and_weight_decay_matches_the_formula():
    p0, g = np.array([1.0, -2.0]), np.array([0.5, -0.25])
    p = nn.Parameter(rg.tensor(p0))
    optimizer = rg.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
    want, buf = p0.copy(), None
    for _ in range(3):
        p.grad = rg.tensor(g)
        optimizer.step()
        d = g + 0.01 * want
        buf = d if buf is None else 0.9 * buf + d
        want -= 0.1 * (d + 0.9 * buf)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-15)


def test_zero_grad_clears_every_parameter():
    model = MLP()
    F.cross_entropy(model(rg.ones(2, 4, dtype=rg.float64)), rg.tensor([0, 2])).backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


needs_sim = pytest.mark.skipif(not rg._C.sim_backend_built(),
                               reason="built without the sim device (pip install .'s default)")


@needs_sim
def test_tensors_and_modules_move_between_devices_and_dtypes():
    t = rg.tensor([1.0, 2.0, 3.0])
    s = t.to("sim")
    assert s.device == "sim" and s.cpu().numpy().tolist() == [1.0, 2.0, 3.0]
    assert (s * 2).cpu().numpy().tolist() == [2.0, 4.0, 6.0]  # ops run on the sim device
    model = nn.Linear(3, 2)
    opt = rg.optim.SGD(model.parameters(), lr=0.1)
    weight = model.weight
    assert model.to(rg.float64) is model
    assert weight.dtype == rg.float64  # in place: the optimizer's handles see it
    model.to("sim")
    assert model.weight.device == "sim" and model.bias.device == "sim"
    model(rg.ones(4, 3, dtype=rg.float64).to("sim")).sum().backward()
    opt.step()
    assert model.weight.grad.device == "sim"
    model.to("cpu")
    assert weight.device == "cpu" and weight.grad.device == "cpu"
    with pytest.raises(ValueError):
        t.to("nowhere")


@needs_sim
def test_factories_place_tensors_on_a_device():
    for t in (rg.zeros(2, 3, device="sim"), rg.tensor([1.0, 2.0], device="sim"),
              rg.arange(4, device="sim"), rg.full((2,), 7.0, device="sim")):
        assert t.device == "sim"
    x = rg.randn(3, device="sim", requires_grad=True)
    assert x.requires_grad and x.device == "sim"
