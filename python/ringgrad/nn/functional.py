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


# ---- composite ops (python/src/bind_composite_ops.cpp over ops/*.cpp's composites) ----
def _pair(value, name, op):
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{op}: {name} must be an int or a pair of ints, got {value}")
    return value


def _single(value, name, op):
    if isinstance(value, int):
        return value
    value = tuple(value)
    if len(value) != 1 or not isinstance(value[0], int):
        raise ValueError(f"{op}: {name} must be an int or a 1-tuple of ints, got {value}")
    return value[0]


def one_hot(tensor, num_classes=-1):
    """int64 indices [...] -> int64 [..., num_classes] (-1: the largest index + 1)."""
    return _C.one_hot(tensor, num_classes)


def pad(input, pad, mode="constant", value=None):
    """(before, after) pairs from the last dim; mode constant, reflect, replicate, circular."""
    return _C.pad(input, list(pad), mode, 0.0 if value is None else float(value))


def _same_padding(kernel, dilation, stride, op):
    if any(s != 1 for s in stride):
        raise ValueError(f"{op}: padding='same' needs stride 1, got stride {stride}")
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return [(t // 2, t - t // 2) for t in total]


def _conv_padding(input, padding, kernel, dilation, stride, op):
    """(the input, padded when 'same' needs uneven padding, and the symmetric padding)."""
    if not isinstance(padding, str):
        return input, padding
    if padding == "valid":
        return input, [0] * len(kernel)
    if padding != "same":
        raise ValueError(f"{op}: padding '{padding}' is not one of 'valid', 'same' or ints")
    pairs = _same_padding(kernel, dilation, stride, op)
    if all(lo == hi for lo, hi in pairs):
        return input, [lo for lo, _ in pairs]
    amounts = []
    for lo, hi in reversed(pairs):
        amounts += [lo, hi]
    return _C.pad(input, amounts, "constant", 0.0), [0] * len(kernel)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """im2col + matmul (ops/convolution.cpp): input [N, C, H, W], weight [O, C/groups, KH, KW]."""
    stride, dilation = _pair(stride, "stride", "conv2d"), _pair(dilation, "dilation", "conv2d")
    kernel = tuple(weight.shape[-2:])
    input, padding = _conv_padding(input, padding, kernel, dilation, stride, "conv2d")
    return _C.conv2d(input, weight, bias, stride, _pair(padding, "padding", "conv2d"), dilation,
                     groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """input [N, C, L], weight [O, C/groups, K]; conv2d over a height of 1."""
    stride, dilation = _single(stride, "stride", "conv1d"), _single(dilation, "dilation", "conv1d")
    input, padding = _conv_padding(input, padding, tuple(weight.shape[-1:]), (dilation,),
                                   (stride,), "conv1d")
    return _C.conv1d(input, weight, bias, stride, _single(padding, "padding", "conv1d"),
                     dilation, groups)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        raise ValueError("max_pool2d: return_indices=True is not supported")
    kernel = _pair(kernel_size, "kernel_size", "max_pool2d")
    stride = kernel if stride is None or stride == [] else _pair(stride, "stride", "max_pool2d")
    return _C.max_pool2d(input, kernel, stride, _pair(padding, "padding", "max_pool2d"),
                         _pair(dilation, "dilation", "max_pool2d"), ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise ValueError("avg_pool2d: divisor_override is not supported")
    kernel = _pair(kernel_size, "kernel_size", "avg_pool2d")
    stride = kernel if stride is None or stride == [] else _pair(stride, "stride", "avg_pool2d")
    return _C.avg_pool2d(input, kernel, stride, _pair(padding, "padding", "avg_pool2d"),
                         ceil_mode, count_include_pad)


def adaptive_avg_pool2d(input, output_size):
    """The mean over windows [floor(i*H/oh), ceil((i+1)*H/oh)) x (the same in W); a None in
    output_size keeps that size."""
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    sizes = tuple(input.shape[i - 2] if s is None else s for i, s in enumerate(output_size))
    sizes = _pair(sizes, "output_size", "adaptive_avg_pool2d")
    return _C.adaptive_avg_pool2d(input, sizes)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """max_pool2d over a height of 1: input [N, C, L] (or [C, L])."""
    one = lambda v, name: _single(v, name, "max_pool1d")  # noqa: E731
    stride = kernel_size if stride is None or stride == [] else stride
    return max_pool2d(input.unsqueeze(-2), (1, one(kernel_size, "kernel_size")),
                      (1, one(stride, "stride")), (0, one(padding, "padding")),
                      (1, one(dilation, "dilation")), ceil_mode, return_indices).squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """avg_pool2d over a height of 1: input [N, C, L] (or [C, L])."""
    one = lambda v, name: _single(v, name, "avg_pool1d")  # noqa: E731
    stride = kernel_size if stride is None or stride == [] else stride
    return avg_pool2d(input.unsqueeze(-2), (1, one(kernel_size, "kernel_size")),
                      (1, one(stride, "stride")), (0, one(padding, "padding")), ceil_mode,
                      count_include_pad).squeeze(-2)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Training: batch statistics (biased variance), running stats updated in place with the
    unbiased variance; evaluation: the running statistics."""
    if momentum is None:
        raise ValueError("batch_norm: momentum=None (a cumulative average) is not supported")
    return _C.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
# ---- end of composite ops ----
