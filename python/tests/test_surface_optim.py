"""torch.optim's surface: Adam, RMSprop (Python) and SGD, AdamW (C++) in float64 against
NumPy re-implementations of PyTorch's documented algorithms, param_groups with per-group
options and schedulers that change them (StepLR, OneCycleLR, CosineAnnealingLR, LambdaLR),
zero_grad and state_dict."""
import math

import numpy as np
import pytest

import ringgrad as rg
from ringgrad import nn

P0 = np.random.default_rng(0).standard_normal((3, 4))
GRADS = [np.random.default_rng(k + 1).standard_normal((3, 4)) for k in range(5)]


def run(make):
    p = nn.Parameter(rg.tensor(P0.copy(), dtype=rg.float64))
    opt = make([p])
    for g in GRADS:
        p.grad = rg.tensor(g, dtype=rg.float64)
        opt.step()
    return p.detach().numpy()


def adam_reference(lr, betas, eps, weight_decay=0.0, amsgrad=False, decoupled=False):
    p, m, v, vmax = P0.copy(), np.zeros_like(P0), np.zeros_like(P0), np.zeros_like(P0)
    for t, g in enumerate(GRADS, 1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * p
        m = m + (1 - betas[0]) * (g - m)
        v = betas[1] * v + (1 - betas[1]) * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / math.sqrt(1 - betas[1] ** t) + eps
        p = p - lr / (1 - betas[0] ** t) * m / denom
    return p


@pytest.mark.parametrize("options", [{}, {"weight_decay": 0.1, "amsgrad": True},
                                     {"betas": (0.3, 0.9), "lr": 0.05}])
def test_adam_matches_pytorchs_algorithm(options):
    full = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False)
    full.update(options)
    got = run(lambda ps: rg.optim.Adam(ps, **options))
    np.testing.assert_allclose(got, adam_reference(**full), rtol=1e-13, atol=1e-15)


def test_adamw_matches_decoupled_weight_decay():
    got = run(lambda ps: rg.optim.AdamW(ps, lr=0.05))
    np.testing.assert_allclose(got, adam_reference(0.05, (0.9, 0.999), 1e-8, 1e-2,
                                                   decoupled=True), rtol=1e-13)


@pytest.mark.parametrize("centered,momentum,weight_decay", [(False, 0.0, 0.0), (True, 0.9, 0.1)])
def test_rmsprop_matches_pytorchs_algorithm(centered, momentum, weight_decay):
    lr, alpha, eps = 0.01, 0.99, 1e-8
    p, sq, avg, buf = P0.copy(), np.zeros_like(P0), np.zeros_like(P0), np.zeros_like(P0)
    for g in GRADS:
        g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        avg = avg + (1 - alpha) * (g - avg)
        denom = np.sqrt(sq - avg * avg if centered else sq) + eps
        buf = momentum * buf + g / denom
        p = p - lr * (buf if momentum else g / denom)
    got = run(lambda ps: rg.optim.RMSprop(ps, lr=lr, momentum=momentum, centered=centered,
                                          weight_decay=weight_decay))
    np.testing.assert_allclose(got, p, rtol=1e-13, atol=1e-15)


def test_sgd_with_dampening_matches_pytorchs_algorithm():
    lr, mom, damp, wd = 0.1, 0.9, 0.1, 0.01
    p, buf = P0.copy(), None
    for g in GRADS:
        d = g + wd * p
        buf = d.copy() if buf is None else mom * buf + (1 - damp) * d
        p = p - lr * buf
    got = run(lambda ps: rg.optim.SGD(ps, lr=lr, momentum=mom, dampening=damp, weight_decay=wd))
    np.testing.assert_allclose(got, p, rtol=1e-14)


def test_param_groups_take_per_group_options_and_zero_grad_sets_none():
    a, b = nn.Parameter(rg.ones(2, dtype=rg.float64)), nn.Parameter(rg.ones(2, dtype=rg.float64))
    opt = rg.optim.Adam([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5] and opt.param_groups[1]["betas"] \
        == (0.9, 0.999)
    a.grad, b.grad = rg.ones(2, dtype=rg.float64), rg.ones(2, dtype=rg.float64)
    opt.step()
    assert a.tolist() == pytest.approx([0.9, 0.9]) and b.tolist() == pytest.approx([0.5, 0.5])
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    with pytest.raises(ValueError, match="unknown option"):
        rg.optim.Adam([{"params": [a], "momentum": 0.9}])
    with pytest.raises(ValueError, match="empty parameter list"):
        rg.optim.Adam([])


def test_python_optimizer_state_dict_resumes_the_same_trajectory():
    p = nn.Parameter(rg.tensor(P0.copy(), dtype=rg.float64))
    opt = rg.optim.Adam([p], lr=0.1)
    p.grad = rg.tensor(GRADS[0], dtype=rg.float64)
    opt.step()
    saved, p_saved = opt.state_dict(), p.detach().clone()
    p.grad = rg.tensor(GRADS[1], dtype=rg.float64)
    opt.step()
    q = nn.Parameter(p_saved)
    other = rg.optim.Adam([q], lr=0.1)
    other.load_state_dict(saved)
    q.grad = rg.tensor(GRADS[1], dtype=rg.float64)
    other.step()
    assert np.array_equal(q.detach().numpy(), p.detach().numpy())


def lrs_of(opt, scheduler, steps, key="lr"):
    out = [opt.param_groups[0][key]]
    for _ in range(steps):
        opt.step()
        scheduler.step()
        out.append(opt.param_groups[0][key])
    return out


def test_step_lr_and_cosine_annealing_set_param_groups():
    opt = rg.optim.SGD([rg.ones(1).requires_grad_()], lr=1.0)
    assert lrs_of(opt, rg.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5), 5) == \
        [1, 1, 0.5, 0.5, 0.25, 0.25]
    opt = rg.optim.Adam([rg.ones(1).requires_grad_()], lr=1.0)
    got = lrs_of(opt, rg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.1), 8)
    want = [0.1 + 0.9 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(9)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_one_cycle_lr_follows_the_1cycle_policy_and_cycles_beta1():
    opt = rg.optim.Adam([rg.ones(1).requires_grad_()], lr=1.0)
    sched = rg.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
    lrs = lrs_of(opt, sched, 9)
    betas = []
    up, cos = 10 * 0.3 - 1, lambda a, b, pct: b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)
    for t in range(10):
        if t <= up:
            want, beta = cos(0.004, 0.1, t / up), cos(0.95, 0.85, t / up)
        else:
            pct = (t - up) / (9 - up)
            want, beta = cos(0.1, 0.004 / 1e4, pct), cos(0.85, 0.95, pct)
        assert lrs[t] == pytest.approx(want, rel=1e-12)
        betas.append(beta)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(betas[-1])
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        sched.step()
        sched.step()
    with pytest.raises(ValueError, match="total_steps"):
        rg.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1)


def test_cpp_optimizers_expose_param_groups_and_refuse_unsupported_changes():
    w = nn.Parameter(rg.ones(2, dtype=rg.float64))
    opt = rg.optim.SGD([w], lr=0.5, momentum=0.9)
    opt.param_groups[0]["lr"] = 0.25  # what a scheduler does
    w.grad = rg.ones(2, dtype=rg.float64)
    opt.step()
    assert w.tolist() == [0.75, 0.75] and opt.lr == 0.25
    opt.param_groups[0]["momentum"] = 0.5
    with pytest.raises(NotImplementedError, match="changing \\['momentum'\\]"):
        opt.step()
    opt = rg.optim.AdamW([{"params": [w]}, {"params": [nn.Parameter(rg.ones(1))]}])
    opt.param_groups[1]["lr"] = 0.1
    with pytest.raises(NotImplementedError, match="lr per parameter group"):
        opt.step()
    assert rg.optim.AdamW([w]).defaults["weight_decay"] == 1e-2


def test_multistep_and_exponential_lr():
    opt = rg.optim.Adam([rg.ones(1).requires_grad_()], lr=1.0)
    got = lrs_of(opt, rg.optim.lr_scheduler.MultiStepLR(opt, [2, 4], gamma=0.5), 5)
    assert got == [1, 1, 0.5, 0.5, 0.25, 0.25]
    opt = rg.optim.Adam([rg.ones(1).requires_grad_()], lr=1.0)
    got = lrs_of(opt, rg.optim.lr_scheduler.ExponentialLR(opt, 0.5), 3)
    assert got == [1, 0.5, 0.25, 0.125]
