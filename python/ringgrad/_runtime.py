"""The runtime knobs PyTorch training scripts (nanoGPT's train.py) call, answered for
ringgrad: torch.compile (returns the model itself: ringgrad runs eagerly) and the float32
matmul precision (TF32 on a GPU, the switch of ringgrad.backends.cuda.matmul.allow_tf32)."""
from ringgrad import _C

_MATMUL_PRECISION = {"highest": False, "high": True, "medium": True}


def compile(model=None, **options):  # noqa: A001 (torch.compile)
    """The model itself (ringgrad has no graph compiler); usable as a decorator too. CUDA
    graphs are ringgrad's own way to cut launch costs (docs/cuda-graphs.md)."""
    if model is None:
        return lambda fn: fn
    return model


def set_float32_matmul_precision(precision):
    """'highest': f32 GEMMs in f32; 'high'/'medium': TF32 allowed (on a GPU), as PyTorch."""
    if precision not in _MATMUL_PRECISION:
        raise ValueError(f"set_float32_matmul_precision: {precision!r} is not one of "
                         "'highest', 'high', 'medium'")
    _C.set_allow_tf32(_MATMUL_PRECISION[precision])


def get_float32_matmul_precision():
    return "high" if _C.allow_tf32() else "highest"
