"""The runtime knobs PyTorch training scripts (nanoGPT's train.py) set or call, answered for
ringgrad: torch.backends' flags (accepted, no effect: ringgrad's matmuls do not use TF32),
torch.compile (returns the model itself: ringgrad runs eagerly), and torch.amp's autocast
and GradScaler when disabled (float16 mixed precision does not exist here)."""
import contextlib
import types


def _flags(**values):
    return types.SimpleNamespace(**values)


backends = _flags(
    cuda=_flags(matmul=_flags(allow_tf32=False), is_built=lambda: False),
    cudnn=_flags(allow_tf32=False, benchmark=False, deterministic=False, enabled=False,
                 is_available=lambda: False),
    mps=_flags(is_available=lambda: False, is_built=lambda: False),
)


def compile(model=None, **options):  # noqa: A001 (torch.compile)
    """The model itself (ringgrad has no graph compiler); usable as a decorator too."""
    if model is None:
        return lambda fn: fn
    return model


class GradScaler:
    """torch.amp.GradScaler with enabled=False (what float32 and bfloat16 runs use): every
    method passes through. enabled=True needs float16, which ringgrad does not have."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if enabled:
            raise NotImplementedError("GradScaler: loss scaling is for float16, which ringgrad "
                                      "does not have; pass enabled=False (bfloat16 and float32 "
                                      "need none)")

    def is_enabled(self):
        return False

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        pass

    def get_scale(self):
        return 1.0

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def autocast(device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
    """torch.autocast: only enabled=False (a null context) is supported here."""
    if enabled:
        raise NotImplementedError("autocast: not supported from Python yet; run in the model's "
                                  "dtype (model.to(ringgrad.bfloat16)) or pass enabled=False")
    return contextlib.nullcontext()


amp = types.SimpleNamespace(GradScaler=GradScaler, autocast=autocast)
