"""torch.backends' switches that scripts set: backends.cuda.matmul.allow_tf32 (f32 GEMMs
on tensor cores with a 10-bit mantissa; off by default, as in PyTorch) and
backends.cudnn.allow_tf32 / .benchmark / .deterministic (ringgrad has no cuDNN: accepted and
kept, without effect; its kernels are deterministic)."""
from ringgrad import _C


class _Matmul:
    @property
    def allow_tf32(self):
        return _C.allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        _C.set_allow_tf32(bool(value))


class _Cuda:
    matmul = _Matmul()


class _Cudnn:
    allow_tf32 = True
    benchmark = False
    deterministic = True
    enabled = True


cuda = _Cuda()
cudnn = _Cudnn()
__all__ = ["cuda", "cudnn"]
