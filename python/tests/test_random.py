"""ringgrad's random numbers are PyTorch's: after manual_seed(s) the factories, the Tensor fills,
nn.init, Linear's initialization and a shuffled DataLoader give the numbers torch gives.

The expected values were recorded from PyTorch 2.15 (CPU wheel, x86-64) by running the same
calls after torch.manual_seed(seed) and printing tensor.tolist() (float64 with repr); they are
test data, not computed here. float32 normals may differ from torch's AVX2 kernel in the last
bits, so those compare within 1e-6.
"""
import numpy as np
import pytest

import ringgrad as rg
from ringgrad.utils.data import DataLoader, DistributedSampler, TensorDataset, random_split


def values(t):
    return t.detach().numpy().tolist()


def test_rand_and_uniform_equal_torch_bit_for_bit():
    rg.manual_seed(0)
    assert values(rg.rand(4)) == [0.49625658988952637, 0.7682217955589294, 0.08847743272781372,
                                  0.13203048706054688]
    assert values(rg.rand(3, dtype=rg.float64)) == [0.45938294312745087, 0.9207476841219603,
                                                    0.6450241201227648]
    rg.manual_seed(0)
    assert values(rg.zeros(3, dtype=rg.float64).uniform_(-0.3, 0.7)) == [
        0.6700530018065531, 0.40781986439978796, 0.15938294312745088]
    rg.manual_seed(0)
    assert values(rg.zeros(3).uniform_(-0.31, 0.77)) == [0.22595708072185516, 0.5196794867515564,
                                                         -0.2144443839788437]


def test_randn_small_keeps_the_pair_and_big_uses_blocks_of_16():
    rg.manual_seed(0)
    assert values(rg.randn(3, dtype=rg.float64)) == [1.5409961082440433, -0.2934289057609464,
                                                     -2.1787893820745574]
    assert values(rg.randn(1, dtype=rg.float64)) == [0.5684312772806678]  # the cached second
    rg.manual_seed(0)
    big = values(rg.randn(17, dtype=rg.float64))
    assert big[0] == -2.310411800234176 and big[16] == 0.6748575435940039
    rg.manual_seed(0)
    np.testing.assert_allclose(values(rg.randn(16))[:4], [-1.1258398294448853, -1.152360200881958,
                                                          -0.2505785822868347, -0.4338788092136383],
                               rtol=1e-6)


def test_integers_permutations_and_other_distributions_equal_torch():
    rg.manual_seed(0)
    assert values(rg.randint(0, 10, (8,))) == [4, 9, 3, 0, 3, 9, 7, 3]
    rg.manual_seed(0)
    assert values(rg.randint(-5, 2**40, (3,))) == [741234585336, 506077272957, 291397093751]
    rg.manual_seed(0)
    assert values(rg.randperm(10)) == [4, 1, 7, 5, 3, 9, 0, 8, 6, 2]
    g = rg.Generator().manual_seed(123)
    assert values(rg.randperm(12, generator=g)) == [10, 4, 1, 3, 8, 2, 6, 9, 11, 0, 5, 7]
    assert values(rg.rand(2, generator=rg.Generator())) == [0.267295241355896, 0.8725283145904541]
    rg.manual_seed(0)
    assert values(rg.zeros(2, dtype=rg.int64).random_()) == [900450186894289455,
                                                             3969543146641149120]
    rg.manual_seed(0)
    assert values(rg.zeros(3, dtype=rg.float64).exponential_(2.5)) == [
        1.4033304746830568, 0.49215390567187073, 0.2460176375576046]
    rg.manual_seed(0)
    assert values(rg.zeros(10, dtype=rg.float64).bernoulli_(0.3)) == [0, 0, 0, 0, 0, 0, 1, 0, 0, 1]
    rg.manual_seed(2**40 + 7)  # only the low 32 bits reach the engine
    assert values(rg.rand(1)) == [0.5349225401878357]


def test_multinomial_equals_torch_with_and_without_replacement():
    p = rg.tensor([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], dtype=rg.float64)
    rg.manual_seed(0)
    assert values(rg.multinomial(p, 1)) == [[2], [2]]
    assert values(rg.multinomial(p, 3)) == [[3, 1, 2], [0, 1, 2]]
    assert values(rg.multinomial(p, 6, replacement=True)) == [[2, 1, 3, 3, 1, 3],
                                                              [0, 1, 0, 1, 1, 1]]
    with pytest.raises(ValueError, match="multinomial: cannot sample 5 > 4 samples"):
        rg.multinomial(p, 5)
    with pytest.raises(ValueError, match="multinomial: probability tensor contains"):
        rg.multinomial(rg.tensor([0.5, -1.0]), 1)


def test_linear_initialization_and_shuffled_loader_equal_torch():
    rg.manual_seed(0)
    layer = rg.nn.Linear(3, 2)
    assert values(layer.weight) == [[-0.004322517663240433, 0.3097158372402191, -0.4751853346824646],
                                    [-0.4248946011066437, -0.2223689705133438, 0.15482072532176971]]
    assert values(layer.bias) == [-0.011439144611358643, 0.45777493715286255]
    rg.manual_seed(0)
    loader = DataLoader(TensorDataset(rg.arange(10)), batch_size=4, shuffle=True)
    assert [values(b[0]) for b in loader] == [[6, 7, 1, 4], [2, 0, 9, 8], [3, 5]]
    assert [values(b[0]) for b in loader] == [[2, 4, 7, 0], [8, 9, 5, 3], [6, 1]]
    assert values(rg.rand(1)) == [0.455627977848053]  # each pass drew torch's two seeds
    sampler = DistributedSampler(TensorDataset(rg.arange(10)), num_replicas=3, rank=1, seed=5)
    sampler.set_epoch(1)
    assert list(sampler) == [7, 8, 2, 0]


def test_same_seed_same_numbers_and_generators_are_independent():
    rg.manual_seed(3)
    first = values(rg.randn(40, dtype=rg.float64))
    g = rg.Generator().manual_seed(99)
    rg.manual_seed(3)
    rg.rand(5, generator=g)  # drawing from g leaves the default generator alone
    assert values(rg.randn(40, dtype=rg.float64)) == first
    assert g.initial_seed() == 99 and rg.initial_seed() == 3
    state = rg.get_rng_state()
    a = values(rg.rand(3))
    rg.set_rng_state(state)
    assert values(rg.rand(3)) == a
    assert rg.manual_seed(-1).initial_seed() == 2**64 - 1


def test_dtypes_devices_and_shapes():
    rg.manual_seed(1)
    x = rg.randn(2, 3, dtype=rg.float64)
    assert x.dtype == rg.float64 and list(x.shape) == [2, 3]
    assert rg.randint(0, 5, (4,), dtype=rg.int32).dtype == rg.int32
    assert rg.randn((), dtype=rg.float64).dim() == 0
    assert rg.rand(3, dtype=rg.bfloat16).dtype == rg.bfloat16
    assert rg.rand_like(x).dtype == rg.float64 and rg.randn_like(x).dtype == rg.float64
    assert sorted(values(rg.randperm(6))) == list(range(6))
    if rg._C.sim_backend_built():
        rg.manual_seed(1)
        on_sim = rg.rand(5, device="sim")
        rg.manual_seed(1)
        assert on_sim.device == "sim" and values(on_sim.to("cpu")) == values(rg.rand(5))
    parts = random_split(range(10), [3, 7], generator=rg.Generator().manual_seed(42))
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))


def test_nn_init_matches_torch_formulas():
    init = rg.nn.init
    assert init.calculate_gain("relu") == pytest.approx(2**0.5)
    assert init.calculate_gain("leaky_relu", 5**0.5) == pytest.approx((1 / 3)**0.5)
    w = init.xavier_uniform_(rg.zeros(20, 30, dtype=rg.float64))
    assert np.abs(w.numpy()).max() <= (6 / 50)**0.5
    q = init.orthogonal_(rg.zeros(8, 5, dtype=rg.float64)).numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(5), atol=1e-12)
    assert values(init.constant_(rg.zeros(2), 3.0)) == [3.0, 3.0]
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.kaiming_uniform_(rg.zeros(3))
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        init.calculate_gain("swish")


def test_wrong_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="randint: expected low < high"):
        rg.randint(5, 5, (2,))
    with pytest.raises(TypeError, match="rand: expected a floating dtype"):
        rg.rand(2, dtype=rg.int64)
    with pytest.raises(ValueError, match="randperm: expected n >= 0"):
        rg.randperm(-1)
    with pytest.raises(TypeError, match="ringgrad.Generator"):
        rg.rand(2, generator=42)
    with pytest.raises(ValueError, match="normal: expected std >= 0"):
        rg.zeros(3).normal_(0.0, -1.0)
    with pytest.raises(ValueError, match="manual_seed: seed"):
        rg.manual_seed(2**64)
    with pytest.raises(ValueError, match="only CPU generators"):
        rg.Generator(device="cuda")


def test_cpu_dropout_drops_what_torch_drops():
    rg.manual_seed(0)
    k = 1 / 0.75
    assert values(rg.nn.functional.dropout(rg.ones(12, dtype=rg.float64), 0.25)) == [
        0.0, k, k, 0.0, k, 0.0, k, k, k, k, k, k]
    x = rg.ones(5, dtype=rg.float64).requires_grad_()
    rg.manual_seed(0)
    y = rg.nn.Dropout(0.25)(x)
    y.sum().backward()
    assert values(x.grad) == values(y)  # the gradient is the mask itself
    with pytest.raises(ValueError, match="dropout probability"):
        rg.nn.functional.dropout(x, 1.5)


def test_a_non_contiguous_tensor_is_filled_in_memory_order():
    # torch fills element by element in memory order: a transposed view gets the numbers its
    # storage would get, and small-path normals (no blocks of 16) even when it has 21 elements.
    rg.manual_seed(4)
    base = rg.zeros(7, 3, dtype=rg.float64)
    base.t().uniform_(-1.0, 1.0)
    rg.manual_seed(4)
    assert values(base) == values(rg.zeros(7, 3, dtype=rg.float64).uniform_(-1.0, 1.0))
    rg.manual_seed(4)
    view = rg.zeros(7, 3, dtype=rg.float64).t()
    view.normal_()
    rg.manual_seed(4)
    small_path = [values(rg.randn(1, dtype=rg.float64))[0] for _ in range(21)]
    assert values(view.t().reshape(21)) == small_path
