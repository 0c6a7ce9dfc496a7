"""torch.autocast (also torch.amp.autocast): inside it, matmuls and linears compute in
bfloat16 and the precision-sensitive ops in float32, as ops/autocast.h's table says. Only
bfloat16 is supported (ringgrad has no float16); device_type is accepted as PyTorch's and the
same policy applies on every device."""
import functools

from ringgrad import _C


class autocast:
    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise TypeError(f"autocast: device_type must be a str like 'cuda' or 'cpu', got {device_type!r}")
        self.dtype = _C.dtype.bfloat16 if dtype is None else dtype
        self.enabled = bool(enabled)
        if self.enabled and self.dtype != _C.dtype.bfloat16:
            raise ValueError(f"autocast: dtype {self.dtype} is not supported "
                             "(ringgrad's autocast lowers to bfloat16 only)")

    def __enter__(self):
        self._previous = _C.autocast_state()
        _C.set_autocast_state(self.enabled, self.dtype)
        return self

    def __exit__(self, *exc):
        _C.set_autocast_state(*self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with autocast(dtype=self.dtype, enabled=self.enabled):
                return fn(*args, **kwargs)
        return wrapped


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


__all__ = ["autocast", "GradScaler"]
