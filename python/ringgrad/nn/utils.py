"""torch.nn.utils' clip_grad_norm_ over ringgrad's (nn/optim/clip_grad.h)."""
import math

from ringgrad import _C


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scales the gradients in place so their global L2 norm is at most max_norm; returns the
    norm before clipping, as a 0-d float32 tensor (PyTorch's returns a tensor too)."""
    if float(norm_type) != 2.0:
        raise NotImplementedError(f"clip_grad_norm_: only norm_type=2 is supported, got "
                                  f"{norm_type}")
    params = [parameters] if isinstance(parameters, _C.Tensor) else list(parameters)
    norm = _C.clip_grad_norm_(params, float(max_norm))
    if error_if_nonfinite and not math.isfinite(norm):
        raise RuntimeError(f"clip_grad_norm_: the total norm of the gradients is {norm}")
    return _C.full([], norm, _C.dtype.float32)
