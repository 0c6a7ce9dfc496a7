"""ringgrad.optim: SGD and AdamW with torch.optim's signatures and defaults, over the C++
optimizers (nn/optim/), which update the parameters in place."""
from ringgrad import _C


def _tensors(params):
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    if isinstance(params[0], dict):
        raise NotImplementedError("parameter groups are not supported yet: pass the parameters")
    return params


class SGD(_C.SGD):
    """torch.optim.SGD: lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(_tensors(params), lr, momentum, dampening, weight_decay, nesterov)


class AdamW(_C.AdamW):
    """torch.optim.AdamW: lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(_tensors(params), lr, betas[0], betas[1], eps, weight_decay)
