"""ringgrad.nn.functional: torch.nn.functional's signatures over the C++ ops."""
from ringgrad import _C


def linear(input, weight, bias=None):
    return _C.linear(input, weight, bias)


def gelu(input, approximate="none"):
    return _C.gelu_approximate(input, approximate)


def relu(input):
    return _C.relu(input)


def softmax(input, dim):
    return _C.softmax(input, dim)


def log_softmax(input, dim):
    return _C.log_softmax(input, dim)


def cross_entropy(input, target, ignore_index=-100, reduction="mean"):
    """input [N, C] logits, target [N] int64 class ids (ignore_index skipped)."""
    return _C.cross_entropy(input, target, reduction, ignore_index)


def mse_loss(input, target, reduction="mean"):
    return _C.mse_loss(input, target, reduction)


def embedding(input, weight):
    return _C.embedding(weight, input)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _C.layer_norm(input, shape, weight, bias, eps)


def scaled_dot_product_attention(query, key, value, is_causal=False, scale=None):
    """softmax(scale * q @ k^T) @ v by the fused kernel (no mask, no dropout; scale: 1/sqrt(D))."""
    return _C.scaled_dot_product_attention(query, key, value, is_causal,
                                           0.0 if scale is None else float(scale))


def packed_qkv_attention(qkv, n_head, is_causal=True):
    """Multi-head attention of the heads in one [B, T, 3C] projection (q, k, v side by side),
    cut and merged inside one node (GPT's c_attn output)."""
    return _C.packed_qkv_attention(qkv, n_head, is_causal)


def dropout(input, p=0.5, training=True):
    return _C.dropout(input, p, training)


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
