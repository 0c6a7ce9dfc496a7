"""ringgrad.optim: SGD and AdamW with torch.optim's signatures and defaults, over the C++
optimizers (nn/optim/), which update the parameters in place. Parameter groups are dicts with
"params" and, optionally, "weight_decay" (other per-group settings are not supported by these
two: their param_groups' options must stay equal across groups; a scheduler may change "lr").
Adam and RMSprop (optim/optimizer.py) are Python, with every per-group option.
lr_scheduler holds LambdaLR, StepLR, CosineAnnealingLR, OneCycleLR and cosine_with_warmup."""
from ringgrad import _C
from ringgrad.optim.optimizer import Adam, Optimizer, RMSprop


def _groups(params):
    """[(tensors, weight decay or None)] from a list of tensors or of parameter-group dicts."""
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    if not isinstance(params[0], dict):
        return [(params, None)]
    groups = []
    for n, group in enumerate(params):
        unknown = set(group) - {"params", "weight_decay"}
        if unknown:
            raise NotImplementedError(f"parameter group {n}: {sorted(unknown)} per group is not "
                                      "supported yet (only 'params' and 'weight_decay')")
        groups.append((list(group["params"]), group.get("weight_decay")))
    return groups


class _StateDict:
    """state_dict and param_groups (torch.optim's view) over a C++ optimizer: the groups'
    options are read at each step(); those the C++ optimizer fixes at construction must be
    left as they were (NotImplementedError otherwise)."""

    def _make_groups(self, params, options):
        groups = _groups(params)
        self.defaults = dict(options)
        self.param_groups = [dict(options, params=list(tensors),
                                  weight_decay=options["weight_decay"] if wd is None else wd)
                             for tensors, wd in groups]
        self._fixed = [dict(g) for g in self.param_groups]
        return groups

    @property
    def lr(self):
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value):
        for group in self.param_groups:
            group["lr"] = value

    def step(self, closure=None):
        loss = None
        if closure is not None:
            previous = _C.is_grad_enabled()
            _C.set_grad_enabled(True)
            try:
                loss = closure()
            finally:
                _C.set_grad_enabled(previous)
        lrs = {group["lr"] for group in self.param_groups}
        if len(lrs) > 1:
            raise NotImplementedError(f"{type(self).__name__}: a different lr per parameter "
                                      "group is not supported (use Adam)")
        for group, fixed in zip(self.param_groups, self._fixed):
            changed = [k for k in fixed if k not in ("lr", "params") and group.get(k) != fixed[k]]
            if changed:
                raise NotImplementedError(
                    f"{type(self).__name__}: changing {changed} after construction is not "
                    "supported (only 'lr'); with OneCycleLR pass cycle_momentum=False, or use "
                    "Adam, whose every option may change")
        _C.Optimizer.lr.__set__(self, lrs.pop())
        super().step()
        return loss

    def state_dict(self):
        """{"state": {name: tensor}, "lr": lr}: the moments and step, copied."""
        return {"state": {name: t.clone() for name, t in _C.optimizer_state.get(self)},
                "lr": self.lr}

    def load_state_dict(self, state_dict):
        _C.optimizer_state.load(self, list(state_dict["state"].items()))
        self.lr = state_dict["lr"]


class SGD(_StateDict, _C.SGD):
    """torch.optim.SGD: lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if maximize:
            raise NotImplementedError("SGD: maximize=True is not supported")
        groups = self._make_groups(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                                weight_decay=weight_decay, nesterov=nesterov))
        super().__init__(groups, lr, momentum, dampening, weight_decay, nesterov)


class AdamW(_StateDict, _C.AdamW):
    """torch.optim.AdamW: lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        if amsgrad or maximize:
            raise NotImplementedError("AdamW: amsgrad and maximize are not supported")
        groups = self._make_groups(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                                weight_decay=weight_decay))
        super().__init__(groups, lr, betas[0], betas[1], eps, weight_decay)


from ringgrad.optim import lr_scheduler  # noqa: E402 (torch.optim.lr_scheduler)
