"""Optimizers written in Python over in-place tensor ops, with torch.optim's base class:
param_groups (dicts of "params" and per-group options, which schedulers change), state,
zero_grad(set_to_none=True) and step(closure). Adam and RMSprop follow PyTorch's documented
single-tensor algorithms operation by operation, so float64 runs match PyTorch's to rounding.
(SGD and AdamW are the C++ optimizers: ringgrad/optim/__init__.py.)"""
import math

from ringgrad import _C
from ringgrad._creation import no_grad


class Optimizer:
    """params: tensors, or dicts {"params": tensors, option: value} (parameter groups)."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = {}
        self.param_groups = []
        groups = [params] if isinstance(params, _C.Tensor) else list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, _C.Tensor) else list(params)
        unknown = set(group) - set(self.defaults) - {"params", "initial_lr", "max_lr",
                                                     "min_lr", "base_momentum", "max_momentum"}
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown option(s) {sorted(unknown)} in a "
                             "parameter group")
        for name, value in self.defaults.items():
            group.setdefault(name, value)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    with no_grad():
                        p.grad.zero_()

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with _C_grad(True):
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, p.grad, group, self.state.setdefault(p, {}))
        return loss

    def state_dict(self):
        """{"state": {index: {name: value}}, "param_groups": [options and param indices]}."""
        index = {}
        groups = []
        for group in self.param_groups:
            ids = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: {k: v.clone() if isinstance(v, _C.Tensor) else v
                                for k, v in s.items()}
                 for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        params = [p for group in self.param_groups for p in group["params"]]
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {}
        for i, s in state_dict["state"].items():
            p = params[int(i)]
            self.state[p] = {k: v.to(p.dtype).clone() if isinstance(v, _C.Tensor) and
                             v.is_floating_point() else v for k, v in s.items()}

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])


class _C_grad:
    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        self.previous = _C.is_grad_enabled()
        _C.set_grad_enabled(self.mode)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self.previous)


def _lerp_(start, end, weight):
    """start.lerp_(end, weight) as PyTorch computes it (two forms, by the weight's size)."""
    if weight < 0.5:
        return start.add_(end - start, alpha=weight)
    return start.copy_(end - (end - start) * (1 - weight))


class Adam(Optimizer):
    """torch.optim.Adam: lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0 (L2, added to
    the gradient), amsgrad=False, maximize=False."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"Adam: invalid lr={lr}, betas={betas}, eps={eps} or "
                             f"weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused))

    def _decay(self, p, grad, group):
        return grad + group["weight_decay"] * p if group["weight_decay"] != 0 else grad

    def _update(self, p, grad, group, state):
        if not state:
            state["step"] = 0
            state["exp_avg"] = _C.zeros(list(p.shape), p.dtype).to(p.device)
            state["exp_avg_sq"] = _C.zeros(list(p.shape), p.dtype).to(p.device)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _C.zeros(list(p.shape), p.dtype).to(p.device)
        grad = -grad if group["maximize"] else grad
        beta1, beta2 = group["betas"]
        state["step"] += 1
        step = state["step"]
        grad = self._decay(p, grad, group)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        _lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        step_size = group["lr"] / (1 - beta1 ** step)
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
        if group["amsgrad"]:
            state["max_exp_avg_sq"].copy_(_C.maximum(state["max_exp_avg_sq"], exp_avg_sq))
            exp_avg_sq = state["max_exp_avg_sq"]
        denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + group["eps"]
        p.add_(exp_avg / denom, alpha=-step_size)


class RMSprop(Optimizer):
    """torch.optim.RMSprop: lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
    centered=False."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        if lr < 0 or eps < 0 or momentum < 0 or weight_decay < 0 or alpha < 0:
            raise ValueError(f"RMSprop: invalid lr={lr}, alpha={alpha}, eps={eps}, "
                             f"momentum={momentum} or weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize,
                                      capturable=capturable, foreach=foreach,
                                      differentiable=differentiable))

    def _update(self, p, grad, group, state):
        zeros = lambda: _C.zeros(list(p.shape), p.dtype).to(p.device)  # noqa: E731
        if not state:
            state["step"] = 0
            state["square_avg"] = zeros()
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros()
            if group["centered"]:
                state["grad_avg"] = zeros()
        state["step"] += 1
        grad = -grad if group["maximize"] else grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p
        alpha, square_avg = group["alpha"], state["square_avg"]
        square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
        if group["centered"]:
            grad_avg = _lerp_(state["grad_avg"], grad, 1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt()
        else:
            avg = square_avg.sqrt()
        avg = avg + group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).add_(grad / avg)
            p.add_(buf, alpha=-group["lr"])
        else:
            p.add_(grad / avg, alpha=-group["lr"])
