"""torch.backends' switches that scripts set: backends.cuda.matmul.allow_tf32 (f32 GEMMs
on tensor cores with a 10-bit mantissa; off by default, as in PyTorch) and
backends.cudnn.allow_tf32 / .benchmark / .deterministic (ringgrad has no cuDNN: accepted and
kept, without effect; its kernels are deterministic); backends.mps (none)."""
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

    @staticmethod
    def is_built():
        return _C.cuda_backend_built()


class _Cudnn:
    allow_tf32 = True
    benchmark = False
    deterministic = True
    enabled = False

    @staticmethod
    def is_available():
        return False


class _Mps:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def is_built():
        return False


cuda = _Cuda()
cudnn = _Cudnn()
mps = _Mps()
__all__ = ["cuda", "cudnn", "mps"]
