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
