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
