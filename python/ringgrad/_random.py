"""Random tensors with PyTorch's CPU streams: after manual_seed(s), rand, randn, randint,
randperm, multinomial, the Tensor.*_ fills and nn.init draw the numbers torch would draw
(core/torch_generator.h states the algorithms; float32 normals may differ in the last bits).

Numbers are drawn on the CPU from a Generator (MT19937) and then copied to the tensor's device,
as torch does for a CPU generator. manual_seed also seeds the engine's Philox generator, which
C++-side dropout and the engine's own rand use, so those stay deterministic too (their streams
are ringgrad's, not torch's).
"""
from ringgrad import _C
from ringgrad._creation import _placed, _shape

_SEED_MASK = (1 << 64) - 1


def _seed_bits(seed):
    """torch's seed range: [-2^63, 2^64), a negative seed taken as its two's complement."""
    seed = int(seed)
    if not -(1 << 63) <= seed <= _SEED_MASK:
        raise ValueError(f"manual_seed: seed {seed} is outside [-2**63, 2**64)")
    return seed & _SEED_MASK


class Generator:
    """torch.Generator on the CPU: manual_seed(s) (returns self), seed(), initial_seed(),
    get_state(), set_state(). A new one starts at torch's fixed seed, 67280421310721."""

    def __init__(self, device="cpu", _engine=None):
        if str(device) != "cpu":
            raise ValueError(f"Generator: only CPU generators are supported, got device={device!r}")
        self.device = "cpu"
        self._engine = _engine if _engine is not None else _C.Generator()

    def manual_seed(self, seed):
        self._engine.manual_seed(_seed_bits(seed))
        return self

    def seed(self):
        return self._engine.seed()

    def initial_seed(self):
        return self._engine.initial_seed()

    def get_state(self):
        return self._engine.get_state()

    def set_state(self, state):
        self._engine.set_state(state)
        return self


default_generator = Generator(_engine=_C.default_generator)


def manual_seed(seed):
    """Seeds the default generator (torch's streams) and the engine's Philox generator."""
    bits = _seed_bits(seed)
    _C.manual_seed(bits)
    return default_generator.manual_seed(bits)


def seed():
    s = default_generator.seed()
    _C.manual_seed(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def _engine(generator):
    if generator is None:
        return _C.default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected generator to be a ringgrad.Generator, got {type(generator).__name__}")
    return generator._engine


def int64_seed(generator=None):
    """torch.empty((), dtype=torch.int64).random_(generator=generator).item(): the seed a
    DataLoader and a RandomSampler draw."""
    return _engine(generator).random64() % (1 << 63)


def _float_dtype(dtype, op):
    if dtype is None:
        from ringgrad._creation import get_default_dtype
        dtype = get_default_dtype()
    if dtype not in (_C.dtype.float32, _C.dtype.float64, _C.dtype.bfloat16):
        raise TypeError(f"{op}: expected a floating dtype, got {dtype}")
    return dtype


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    dtype = _float_dtype(dtype, "rand")
    return _placed(_C.uniform(_engine(generator), _shape(size), dtype, 0.0, 1.0, "rand"), device, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    dtype = _float_dtype(dtype, "randn")
    out = _C.normal(_engine(generator), _shape(size), dtype, 0.0, 1.0, True, "randn")
    return _placed(out, device, requires_grad)


def _or(value, default):
    return default if value is None else value


def rand_like(input, dtype=None, device=None, requires_grad=False):
    return rand(input.shape, dtype=_or(dtype, input.dtype), device=_or(device, input.device),
                requires_grad=requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False):
    return randn(input.shape, dtype=_or(dtype, input.dtype), device=_or(device, input.device),
                 requires_grad=requires_grad)


def _integers(generator, shape, dtype, low, high, op):
    low, high = int(low), int(high)
    if low >= high:
        raise ValueError(f"{op}: expected low < high, got low={low} >= high={high}")
    wide = high - low >= (1 << 32) and dtype != _C.dtype.int32 and dtype != _C.dtype.bool
    return _C.integers(_engine(generator), shape, dtype, high - low, low, wide)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """randint(high, size) or randint(low, high, size): integers in [low, high)."""
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint: expected a size, as randint(high, size) or randint(low, high, size)")
    dtype = _C.dtype.int64 if dtype is None else dtype
    out = _integers(generator, list(size), dtype, low, high, "randint")
    return _placed(out, device, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    if high is None:
        low, high = 0, low
    out = _integers(None, list(input.shape), _or(dtype, input.dtype), low, high, "randint_like")
    return _placed(out, _or(device, input.device), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    if int(n) < 0:
        raise ValueError(f"randperm: expected n >= 0, got {n}")
    out = _C.randperm(_engine(generator), int(n))
    if dtype is not None and dtype != out.dtype:
        out = out.to(dtype)
    return _placed(out, device, requires_grad)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """normal(mean, std, size) with numbers, or with tensors (the draws scaled and shifted)."""
    tensors = isinstance(mean, _C.Tensor) or isinstance(std, _C.Tensor)
    if not tensors:
        if size is None:
            raise TypeError("normal: expected a size when mean and std are numbers")
        out = _C.normal(_engine(generator), list(size), _float_dtype(dtype, "normal"),
                        float(mean), float(std), True, "normal")
        return _placed(out, device, requires_grad)
    like = mean if isinstance(mean, _C.Tensor) else std
    shape = list((mean + std).shape) if isinstance(mean, _C.Tensor) and isinstance(std, _C.Tensor) \
        else list(like.shape)
    if isinstance(std, _C.Tensor):
        draws = _C.normal(_engine(generator), shape, like.dtype, 0.0, 1.0, True, "normal")
        out = draws.to(like.device) * std + mean
    else:
        out = _C.normal(_engine(generator), shape, like.dtype, 0.0, float(std), True,
                        "normal").to(like.device) + mean
    return out.detach().requires_grad_(requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """1 with probability input[i] (or p), else 0, in input's dtype."""
    if p is None:
        out = _C.bernoulli_tensor(_engine(generator), input)
    else:
        out = _C.bernoulli_scalar(_engine(generator), list(input.shape), input.dtype, float(p))
    return out.to(input.device)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from each row's probabilities: torch's CPU algorithms (exponential race
    without replacement or for one sample, binary search over the cumulative sums with it)."""
    out = _C.multinomial(_engine(generator), input, int(num_samples), bool(replacement))
    return out.to(input.device)


def _in_memory_order(tensor):
    """A view of tensor whose row-major order is its memory order (dims by falling stride):
    torch fills a non-contiguous tensor element by element in that order."""
    strides = tensor.stride()
    order = sorted(range(tensor.dim()), key=lambda d: -strides[d])
    return tensor.permute(*order) if order != list(range(tensor.dim())) else tensor


def _fill(tensor, draw):
    """tensor's elements replaced in place by draw(shape), drawn in torch's order; returns
    tensor (torch's x.uniform_())."""
    target = tensor if tensor.is_contiguous() else _in_memory_order(tensor)
    target.copy_(draw(list(target.shape)).to(tensor.device))
    return tensor


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    dtype = _float_dtype(self.dtype, "uniform_")
    return _fill(self, lambda shape: _C.uniform(_engine(generator), shape, dtype, float(a),
                                                float(b), "uniform_"))


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    dtype, contiguous = _float_dtype(self.dtype, "normal_"), self.is_contiguous()
    return _fill(self, lambda shape: _C.normal(_engine(generator), shape, dtype, float(mean),
                                               float(std), contiguous, "normal_"))


def _exponential_(self, lambd=1.0, *, generator=None):
    dtype = _float_dtype(self.dtype, "exponential_")
    return _fill(self, lambda shape: _C.exponential(_engine(generator), shape, dtype,
                                                    float(lambd)))


def _bernoulli_(self, p=0.5, *, generator=None):
    if isinstance(p, _C.Tensor):
        return _fill(self, lambda shape: _C.bernoulli_tensor(_engine(generator), p).to(self.dtype))
    dtype = _float_dtype(self.dtype, "bernoulli_")
    return _fill(self, lambda shape: _C.bernoulli_scalar(_engine(generator), shape, dtype,
                                                         float(p)))


# random_()'s draw per dtype: (64-bit draws, modulus), as torch's uniform_int.
_RANDOM_BITS = {_C.dtype.int64: (True, 1 << 63), _C.dtype.int32: (False, 1 << 31),
                _C.dtype.float64: (True, (1 << 53) + 1), _C.dtype.float32: (False, (1 << 24) + 1),
                _C.dtype.bfloat16: (False, (1 << 8) + 1), _C.dtype.bool: (False, 2)}


def _random_(self, from_=None, to=None, *, generator=None):
    """random_(): torch's full-range integers per dtype; random_(to); random_(from, to)."""
    if from_ is None and to is None:
        wide, modulus = _RANDOM_BITS[self.dtype]
        return _fill(self, lambda shape: _C.integers(_engine(generator), shape, self.dtype,
                                                     modulus, 0, wide))
    if to is None:
        from_, to = 0, from_
    return _fill(self, lambda shape: _integers(generator, shape, self.dtype, from_, to, "random_"))


_C.Tensor.uniform_ = _uniform_
_C.Tensor.normal_ = _normal_
_C.Tensor.exponential_ = _exponential_
_C.Tensor.bernoulli_ = _bernoulli_
_C.Tensor.random_ = _random_

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "randn", "rand_like", "randn_like", "randint",
           "randint_like", "randperm", "normal", "bernoulli", "multinomial"]
