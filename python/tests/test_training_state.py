"""Training state from Python: state dicts, rg.save/rg.load (safetensors), optimizer state,
parameter groups, learning-rate schedules, clip_grad_norm_, Dropout and ModuleList."""
import math

import numpy as np
import pytest

import ringgrad as rg
from ringgrad import nn


def make():
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))


def test_state_dict_round_trips_through_a_safetensors_file(tmp_path):
    rg.manual_seed(1)
    model = make()
    state = model.state_dict()
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    rg.save(state, tmp_path / "model.safetensors")
    loaded = rg.load(tmp_path / "model.safetensors")
    rg.manual_seed(2)
    other = make()
    assert not np.array_equal(other[0].weight.detach().numpy(), model[0].weight.detach().numpy())
    missing, unexpected = other.load_state_dict(loaded)
    assert (missing, unexpected) == ([], [])
    for (name, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy()), name
    with pytest.raises(RuntimeError, match="missing keys \\['2.bias'\\]"):
        other.load_state_dict({k: v for k, v in loaded.items() if k != "2.bias"})
    with pytest.raises(RuntimeError, match="has shape"):
        other.load_state_dict({**loaded, "0.bias": rg.zeros(3)})
    with pytest.raises(TypeError, match="dict of name"):
        rg.save([1, 2], tmp_path / "x.safetensors")


def test_optimizer_state_dict_resumes_the_same_trajectory():
    def run(steps, resume_from=None):
        rg.manual_seed(5)
        model = make()
        opt = rg.optim.AdamW(model.parameters(), lr=0.05)
        x = rg.randn(16, 4)
        for step in range(steps):
            if resume_from is not None and step == 2:
                model.load_state_dict(resume_from[0])
                opt.load_state_dict(resume_from[1])
            (model(x) * model(x)).mean().backward()
            opt.step()
            opt.zero_grad()
            if step == 1:
                saved = ({k: v.clone() for k, v in model.state_dict().items()},
                         opt.state_dict())
        return model, saved

    straight, saved = run(4)
    resumed, _ = run(4, resume_from=saved)
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_parameter_groups_set_weight_decay_per_group():
    w = rg.ones(3).requires_grad_()
    b = rg.ones(3).requires_grad_()
    opt = rg.optim.SGD([{"params": [w], "weight_decay": 0.5}, {"params": [b]}], lr=0.1)
    w.grad, b.grad = rg.zeros(3), rg.zeros(3)
    opt.step()
    assert np.allclose(w.detach().numpy(), 0.95) and np.allclose(b.detach().numpy(), 1.0)
    with pytest.raises(NotImplementedError, match="'lr'"):
        rg.optim.AdamW([{"params": [w], "lr": 0.1}])


def test_schedules_set_the_learning_rate():
    opt = rg.optim.SGD([rg.ones(1).requires_grad_()], lr=1.0)
    sched = rg.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5 ** step)
    assert opt.lr == 1.0
    sched.step()
    sched.step()
    assert opt.lr == 0.25
    opt = rg.optim.SGD([rg.ones(1).requires_grad_()], lr=1.0)
    sched = rg.optim.lr_scheduler.cosine_with_warmup(opt, warmup_steps=2, total_steps=10,
                                                     min_lr_ratio=0.1)
    lrs = [opt.lr]
    for _ in range(11):
        sched.step()
        lrs.append(opt.lr)
    assert lrs[0] < lrs[1] < lrs[2] == 1.0 and lrs[2] > lrs[6] > lrs[10]
    assert math.isclose(lrs[10], 0.1) and math.isclose(lrs[11], 0.1)
    opt = rg.optim.SGD([rg.ones(1).requires_grad_()], lr=2.0)
    sched = rg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    for _ in range(4):
        sched.step()
    assert abs(opt.lr) < 1e-12


def test_clip_grad_norm_scales_to_the_max_norm():
    p = rg.tensor([3.0, 4.0], requires_grad=True)
    p.grad = rg.tensor([3.0, 4.0])
    norm = nn.utils.clip_grad_norm_([p], 1.0)
    assert math.isclose(norm, 5.0)
    assert np.allclose(p.grad.numpy(), [0.6, 0.8], atol=1e-6)


def test_dropout_and_module_list():
    rg.manual_seed(0)
    drop = nn.Dropout(0.5)
    x = rg.ones(1000)
    y = drop(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 300 < (y == 0).sum() < 700
    drop.eval()
    assert np.array_equal(drop(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 3)])
    assert len(layers) == 2 and layers[1].out_features == 3
    assert [n for n, _ in layers.named_parameters()] == ["0.weight", "0.bias", "1.weight",
                                                         "1.bias"]
