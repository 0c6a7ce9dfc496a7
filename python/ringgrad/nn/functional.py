"""ringgrad.nn.functional: torch.nn.functional's signatures over the C++ ops."""
from ringgrad import _C


def linear(input, weight, bias=None):
    return _C.linear(input, weight, bias)


def gelu(input, approximate="none"):
    return _C.gelu_approximate(input, approximate)


def relu(input, inplace=False):
    return _C.relu(input)


def silu(input, inplace=False):
    return _C.silu(input)


def tanh(input):
    return _C.tanh(input)


def sigmoid(input):
    return _C.sigmoid(input)


def _dim(name, input, dim):
    if dim is None:  # PyTorch's implicit dim (deprecated there): 0 for 0-D, 1-D and 3-D
        if input.dim() in (0, 1, 3):
            return 0
        return 1
    return dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.softmax(input if dtype is None else input.to(dtype), _dim("softmax", input, dim))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.log_softmax(input if dtype is None else input.to(dtype),
                          _dim("log_softmax", input, dim))


def _reduce(name, loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction '{reduction}' is not one of 'mean', 'sum', 'none'")


def _class_dim_last(input, target):
    """PyTorch's [N, C, d1, ...] with targets [N, d1, ...] as [N * d1 * ..., C] and [...]."""
    if input.dim() > 2:
        input = input.movedim(1, -1) if hasattr(input, "movedim") else \
            input.permute(0, *range(2, input.dim()), 1)
    return input.reshape(-1, input.shape[-1]), target.reshape(-1)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """-input[n, target[n]] from log-probabilities input [N, C] (or [N, C, d...])."""
    if weight is not None:
        raise NotImplementedError("nll_loss: weight= is not supported yet")
    shape = [target.shape[0]] + list(target.shape[1:])
    logp, flat = _class_dim_last(input, target)
    classes = _C.arange(0, logp.shape[-1], 1, _C.dtype.int64)
    picked = (flat.unsqueeze(1) == classes).to(logp.dtype)
    kept = (flat != ignore_index).to(logp.dtype)
    loss = -(logp * picked).sum(1) * kept
    if reduction == "mean":
        return loss.sum() / kept.sum()
    return _reduce("nll_loss", loss.reshape(shape) if reduction == "none" else loss, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """input [N, C] logits (or [N, C, d...]), target [N] (or [N, d...]) int64 class ids
    (ignore_index skipped); label_smoothing mixes in the uniform distribution."""
    if weight is not None:
        raise NotImplementedError("cross_entropy: weight= is not supported yet")
    if target.is_floating_point():
        raise NotImplementedError("cross_entropy: class probabilities as targets are not "
                                  "supported yet: pass int64 class ids")
    if input.dim() > 2:
        logits, flat = _class_dim_last(input, target)
        loss = cross_entropy(logits, flat, None, None, ignore_index, None, reduction,
                             label_smoothing)
        return loss.reshape(list(target.shape)) if reduction == "none" else loss
    loss = _C.cross_entropy(input, target, reduction, ignore_index)
    if label_smoothing == 0.0:
        return loss
    kept = (target != ignore_index).to(input.dtype)
    smooth = -_C.log_softmax(input, -1).mean(-1) * kept
    if reduction == "mean":
        smooth = smooth.sum() / kept.sum()
    else:
        smooth = _reduce("cross_entropy", smooth, reduction)
    return (1 - label_smoothing) * loss + label_smoothing * smooth


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _C.mse_loss(input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce("l1_loss", (input - target).abs(), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """log(1 + exp(-|x|)) + max(x, 0) - x * t, the stable form."""
    if weight is not None or pos_weight is not None:
        raise NotImplementedError("binary_cross_entropy_with_logits: weight= and pos_weight= "
                                  "are not supported yet")
    loss = (1 + (-input.abs()).exp()).log() + input.relu() - input * target
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)


def _pool_windows(name, input, kernel_size, stride, padding):
    """input [N, C, H, W] as [N, C, H/k, k, W/k, k] (stride = kernel, no padding, sizes
    divisible after flooring: the trailing rows and columns are dropped, as PyTorch's)."""
    k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    s = k if stride is None else (stride, stride) if isinstance(stride, int) else tuple(stride)
    p = (padding, padding) if isinstance(padding, int) else tuple(padding)
    if s != k or p != (0, 0):
        raise NotImplementedError(f"{name}: only stride == kernel_size and padding 0 are "
                                  f"supported, got kernel {k}, stride {s}, padding {p}")
    if input.dim() not in (3, 4):
        raise ValueError(f"{name}: expected a 3-D or 4-D input, got {input.dim()}-D")
    x = input if input.dim() == 4 else input.unsqueeze(0)
    n, c, h, w = x.shape
    oh, ow = h // k[0], w // k[1]
    x = x.narrow(2, 0, oh * k[0]).narrow(3, 0, ow * k[1])
    return x.reshape(n, c, oh, k[0], ow, k[1]), input.dim() == 3


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    windows, squeeze = _pool_windows("max_pool2d", input, kernel_size, stride, padding)
    out = windows.amax((3, 5))
    return out.squeeze(0) if squeeze else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    windows, squeeze = _pool_windows("avg_pool2d", input, kernel_size, stride, padding)
    out = windows.mean((3, 5))
    return out.squeeze(0) if squeeze else out


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported")
    return _C.embedding(weight, input)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _C.layer_norm(input, shape, weight, bias, eps)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(scale * q @ k^T) @ v by the fused kernel (scale: 1/sqrt(D)); attn_mask and
    dropout_p > 0 are not supported (is_causal is)."""
    if attn_mask is not None or dropout_p != 0.0:
        raise NotImplementedError("scaled_dot_product_attention: attn_mask and dropout_p are "
                                  "not supported: use is_causal=True or compose the ops")
    return _C.scaled_dot_product_attention(query, key, value, is_causal,
                                           0.0 if scale is None else float(scale))


def packed_qkv_attention(qkv, n_head, is_causal=True):
    """Multi-head attention of the heads in one [B, T, 3C] projection (q, k, v side by side),
    cut and merged inside one node (GPT's c_attn output)."""
    return _C.packed_qkv_attention(qkv, n_head, is_causal)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1/(1-p). On the CPU the mask
    is torch's (bernoulli_(1-p) from the seeded generator, then divided by 1-p), so a seeded
    program drops what torch drops; on other devices it comes from the engine's Philox stream,
    as torch's CUDA dropout comes from its CUDA generator."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or p == 1 or input.device != "cpu":
        return _C.dropout(input, p, training)
    noise = _C.dropout_noise(_C.default_generator, list(input.shape), input.dtype, 1.0 - p)
    return input * noise
