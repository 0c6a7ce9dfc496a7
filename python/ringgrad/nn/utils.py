"""torch.nn.utils' clip_grad_norm_ over ringgrad's (nn/optim/clip_grad.h)."""
from ringgrad import _C


def clip_grad_norm_(parameters, max_norm):
    """Scales the gradients in place so their global L2 norm is at most max_norm; returns the
    norm before clipping."""
    params = [parameters] if isinstance(parameters, _C.Tensor) else list(parameters)
    return _C.clip_grad_norm_(params, float(max_norm))
