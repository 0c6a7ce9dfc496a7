"""ringgrad.optim: SGD and AdamW with torch.optim's signatures and defaults, over the C++
optimizers (nn/optim/), which update the parameters in place. Parameter groups are dicts with
"params" and, optionally, "weight_decay" (other per-group settings are not supported yet).
lr_scheduler holds LambdaLR, CosineAnnealingLR and cosine_with_warmup."""
from ringgrad import _C


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
                 nesterov=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(_groups(params), lr, momentum, dampening, weight_decay, nesterov)


class AdamW(_StateDict, _C.AdamW):
    """torch.optim.AdamW: lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(_groups(params), lr, betas[0], betas[1], eps, weight_decay)


from ringgrad.optim import lr_scheduler  # noqa: E402 (torch.optim.lr_scheduler)
