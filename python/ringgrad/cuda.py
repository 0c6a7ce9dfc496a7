"""torch.cuda's questions a script asks before it picks a device: is_available(),
device_count(), synchronize(). The answers are the engine's: a build without the cuda
backend (pip's default) or a machine without a GPU has 0 devices."""
from ringgrad import _C
from ringgrad import amp  # noqa: F401 (torch.cuda.amp.GradScaler, torch.cuda.amp.autocast)


def device_count():
    return _C.device_count("cuda")


def is_available():
    return device_count() > 0


def synchronize(device=None):
    """Waits until everything queued on the GPU has run."""
    if not is_available():
        raise RuntimeError("ringgrad.cuda.synchronize: no CUDA device (ringgrad.cuda.is_available() is False)")
    _C.synchronize("cuda" if device is None else str(device))


def is_bf16_supported():
    return is_available()


def manual_seed(seed):
    """As torch.cuda.manual_seed: ringgrad's device tensors draw from the generator that
    ringgrad.manual_seed seeds, so this seeds that one."""
    import ringgrad
    ringgrad.manual_seed(seed)


def manual_seed_all(seed):
    manual_seed(seed)


__all__ = ["device_count", "is_available", "synchronize", "is_bf16_supported", "manual_seed",
           "manual_seed_all"]
