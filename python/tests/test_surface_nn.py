"""torch.nn's names over ringgrad: activation and shape layers, losses (against NumPy in
float64, with gradients), pooling, containers, and Module's API (buffers, state_dict,
apply, named_modules, dtype moves, repr). Conv and batch-norm layers: shapes only (their
functional ops and nn.init come from elsewhere; skipped where absent)."""
import math

import numpy as np
import pytest

import ringgrad as rg
from ringgrad import nn
from ringgrad.nn import functional as F


def data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def log_softmax(a):
    m = a.max(-1, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(-1, keepdims=True))


def test_activation_and_shape_layers():
    a = data((2, 3, 4))
    x = rg.tensor(a)
    np.testing.assert_allclose(nn.Tanh()(x).numpy(), np.tanh(a), rtol=1e-14)
    np.testing.assert_allclose(nn.Sigmoid()(x).numpy(), 1 / (1 + np.exp(-a)), rtol=1e-14)
    np.testing.assert_allclose(nn.SiLU()(x).numpy(), a / (1 + np.exp(-a)), rtol=1e-14)
    np.testing.assert_allclose(nn.LogSoftmax(dim=-1)(x).numpy(), log_softmax(a), rtol=1e-12)
    np.testing.assert_allclose(nn.Softmax(-1)(x).numpy(), np.exp(log_softmax(a)), rtol=1e-12)
    assert nn.Identity(3, k=1)(x) is x
    assert nn.Flatten()(x).shape == (2, 12) and nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(1, (3, 1))(rg.zeros(2, 3)).shape == (2, 3, 1)
    assert F.softmax(rg.tensor(a[0, 0]), dim=0).sum().item() == pytest.approx(1.0)


def test_cross_entropy_with_ignore_index_and_label_smoothing_against_numpy():
    a, target = data((5, 4)), np.array([0, 3, -100, 1, 2])
    for smoothing in (0.0, 0.2):
        x = rg.tensor(a, requires_grad=True)
        loss = nn.CrossEntropyLoss(label_smoothing=smoothing)(x, rg.tensor(target))
        lp = log_softmax(a)
        kept = target != -100
        nll = -lp[np.arange(5), np.where(kept, target, 0)]
        per = (1 - smoothing) * nll - smoothing * lp.mean(-1)
        assert loss.item() == pytest.approx(per[kept].mean(), rel=1e-12)
        loss.backward()
        onehot = np.eye(4)[np.where(kept, target, 0)]
        soft = (1 - smoothing) * onehot + smoothing / 4
        want = (np.exp(lp) - soft) * kept[:, None] / kept.sum()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-10, atol=1e-14)


def test_cross_entropy_over_extra_dims_and_reductions():
    a, target = data((2, 3, 4)), np.array([[0, 1, 2, 0], [2, 2, 1, 0]])  # [N, C, d]
    loss = F.cross_entropy(rg.tensor(a), rg.tensor(target), reduction="none")
    lp = log_softmax(a.transpose(0, 2, 1))
    want = -np.take_along_axis(lp, target[..., None], -1)[..., 0]
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)
    assert F.cross_entropy(rg.tensor(a), rg.tensor(target), reduction="sum").item() == \
        pytest.approx(want.sum(), rel=1e-12)
    with pytest.raises(ValueError, match="reduction 'avg'"):
        nn.MSELoss(reduction="avg")


def test_nll_mse_l1_and_bce_with_logits_against_numpy():
    a, target = data((4, 3)), np.array([2, 0, 1, 1])
    x = rg.tensor(a, requires_grad=True)
    loss = nn.NLLLoss()(x, rg.tensor(target))
    assert loss.item() == pytest.approx(-a[np.arange(4), target].mean(), rel=1e-13)
    loss.backward()
    want = np.zeros((4, 3))
    want[np.arange(4), target] = -0.25
    np.testing.assert_allclose(x.grad.numpy(), want)
    b = data((4, 3), 1)
    assert nn.MSELoss()(x, rg.tensor(b)).item() == pytest.approx(((a - b) ** 2).mean())
    assert nn.L1Loss(reduction="sum")(x, rg.tensor(b)).item() == pytest.approx(
        np.abs(a - b).sum())
    t = (b > 0).astype(np.float64)
    want = np.mean(np.log1p(np.exp(-np.abs(a))) + np.maximum(a, 0) - a * t)
    assert nn.BCEWithLogitsLoss()(x, rg.tensor(t)).item() == pytest.approx(want, rel=1e-13)


def test_pools_over_windows_with_gradients():
    a = data((2, 3, 5, 4))
    x = rg.tensor(a, requires_grad=True)
    windows = a[:, :, :4, :4].reshape(2, 3, 2, 2, 2, 2)
    out = nn.MaxPool2d(2)(x)
    np.testing.assert_array_equal(out.detach().numpy(), windows.max((3, 5)))
    out.sum().backward()
    assert x.grad.numpy().sum() == 2 * 3 * 2 * 2 and x.grad.numpy()[:, :, 4].sum() == 0
    np.testing.assert_allclose(F.avg_pool2d(x, 2).detach().numpy(), windows.mean((3, 5)),
                               rtol=1e-14)
    assert F.max_pool2d(rg.tensor(a[0]), (2, 2)).shape == (3, 2, 2)
    overlapping = F.max_pool2d(x, 3, stride=1).detach().numpy()
    assert overlapping.shape == (2, 3, 3, 2) and overlapping[0, 0, 0, 0] == a[0, 0, :3, :3].max()
    with pytest.raises(ValueError, match="max_pool2d: return_indices=True is not supported"):
        F.max_pool2d(x, 2, return_indices=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 1)})
        self.extra = nn.ParameterList([rg.zeros(2), nn.Parameter(rg.ones(1))])
        self.register_buffer("steps", rg.zeros(1))
        self.register_buffer("scratch", rg.zeros(1), persistent=False)

    def forward(self, x):
        h = self.body(x)
        return self.heads["a"](h), self.heads["b"](h)


def test_module_walks_buffers_and_state_dict():
    net = Net()
    names = [n for n, _ in net.named_modules()]
    assert names == ["", "body", "body.0", "body.1", "heads", "heads.a", "heads.b", "extra"]
    assert [n for n, _ in net.named_children()] == ["body", "heads", "extra"]
    assert len(list(net.modules())) == 8 and "a" in net.heads and len(net.extra) == 2
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    state = net.state_dict()
    assert "steps" in state and "scratch" not in state and "extra.1" in state
    net.steps = rg.ones(1)  # a buffer stays a buffer when reassigned
    assert net.state_dict()["steps"].tolist() == [1.0]
    other = Net()
    other.load_state_dict(net.state_dict())
    assert other.steps.tolist() == [1.0]
    assert rg.equal(other.heads["a"].weight, net.heads["a"].weight)
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen[-1] == "Net" and seen.count("Linear") == 3
    assert all(not p.requires_grad for p in net.requires_grad_(False).parameters())


def test_module_dtype_moves_and_repr():
    net = Net().double()
    assert all(p.dtype == rg.float64 for p in net.parameters()) and net.steps.dtype == \
        rg.float64
    a, b = net(rg.ones(5, 3, dtype=rg.float64))
    assert a.shape == (5, 2) and b.shape == (5, 1)
    assert net.float().steps.dtype == rg.float32 and net.cpu() is net
    with pytest.raises(TypeError, match="half"):
        net.half()
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.Flatten()))
    assert text == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                    "  (1): Flatten(start_dim=1, end_dim=-1)\n)")
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_conv_and_batch_norm_modules_shapes():
    conv = nn.Conv2d(3, 8, 3, padding=1, bias=True)
    assert conv.weight.shape == (8, 3, 3, 3) and conv.bias.shape == (8,)
    assert nn.Conv1d(4, 6, 5, groups=2).weight.shape == (6, 2, 5)
    bn = nn.BatchNorm2d(8)
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var",
                                                  "num_batches_tracked"]
    with pytest.raises(ValueError, match="Conv2d: groups 2 must divide in_channels 3"):
        nn.Conv2d(3, 8, 3, groups=2)
    if hasattr(F, "conv2d") and hasattr(F, "batch_norm"):
        y = bn(conv(rg.randn(2, 3, 5, 5)))
        assert y.shape == (2, 8, 5, 5) and bn.num_batches_tracked.item() == 1


def test_functional_signatures_refuse_what_they_do_not_support():
    q = rg.zeros(1, 2, 3, 4)
    with pytest.raises(NotImplementedError, match="attn_mask"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=rg.ones(3, 3))
    assert F.scaled_dot_product_attention(q, q, q, is_causal=True).shape == (1, 2, 3, 4)
    with pytest.raises(ValueError, match="dropout probability"):
        F.dropout(q, 1.5)
    with pytest.raises(NotImplementedError, match="weight="):
        nn.CrossEntropyLoss(weight=rg.ones(2))
    assert math.isclose(F.gelu(rg.tensor([1.0], dtype=rg.float64)).item(),
                        0.5 * (1 + math.erf(1 / math.sqrt(2))))


def test_layers_take_pytorchs_arguments():
    from collections import OrderedDict
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU(inplace=True))]))
    assert [n for n, _ in seq.named_children()] == ["fc", "act"]
    assert isinstance(seq[:1], nn.Sequential) and len(seq[:1]) == 1
    assert len(seq.append(nn.Dropout(0.1, inplace=False))) == 3
    assert len(nn.ModuleList([nn.ReLU()]).extend([nn.Tanh(), nn.SiLU()])) == 3
    ln = nn.LayerNorm(4, elementwise_affine=False)
    assert ln.weight is None and ln.bias is None and list(ln.parameters()) == []
    x = rg.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=rg.float64)
    assert abs(ln(x).mean().item()) < 1e-12
    assert nn.LayerNorm([4], bias=False, dtype=rg.float64).weight.dtype == rg.float64
