"""Tensors from Python: creation, dtypes, NumPy round trips (copied and shared), shapes,
broadcasting arithmetic against NumPy, and repr."""
import numpy as np
import pytest

import ringgrad as rg


def test_tensor_from_nested_lists_keeps_values_and_uses_pytorch_default_dtypes():
    t = rg.tensor([[1.5, 2.0], [3.0, -4.25]])
    assert t.shape == (2, 2)
    assert t.dtype == rg.float32
    np.testing.assert_array_equal(t.numpy(), np.array([[1.5, 2.0], [3.0, -4.25]], np.float32))
    assert rg.tensor([1, 2, 3]).dtype == rg.int64
    assert rg.tensor([True, False]).dtype == rg.bool
    assert rg.tensor([1, 2], dtype=rg.float64).numpy().tolist() == [1.0, 2.0]
    scalar = rg.tensor(3.5)
    assert scalar.shape == () and scalar.item() == 3.5
    assert rg.tensor([]).shape == (0,)


def test_tensor_copies_and_from_numpy_shares_memory():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    copied, shared = rg.tensor(a), rg.from_numpy(a)
    assert copied.dtype == rg.float64
    a[0, 0] = 42.0
    assert copied.numpy()[0, 0] == 0.0
    assert shared.numpy()[0, 0] == 42.0
    shared.numpy()[1, 2] = -1.0  # numpy() is a view too: writes reach the array
    assert a[1, 2] == -1.0


def test_from_numpy_keeps_strides_of_a_transposed_array_and_copies_a_reversed_one():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = rg.from_numpy(a.T)
    assert t.shape == (4, 3) and not t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), a.T)
    a[2, 1] = 100.0
    assert t.numpy()[1, 2] == 100.0  # still a view of a
    r = rg.from_numpy(a[::-1])
    np.testing.assert_array_equal(r.numpy(), a[::-1])


def test_from_numpy_copies_a_read_only_array():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = rg.from_numpy(a)
    t.numpy()[0] = 9.0  # writes to the copy, never to the read-only array
    assert a[0] == 0.0 and t.numpy().tolist() == [9.0, 1.0, 2.0, 3.0]
    big_endian = np.arange(3, dtype=">f8")
    assert rg.from_numpy(big_endian).numpy().tolist() == [0.0, 1.0, 2.0]


def test_numpy_round_trip_of_every_numpy_dtype():
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.bool_):
        a = (np.arange(5) % 3).astype(dtype)
        back = rg.tensor(a).numpy()
        assert back.dtype == dtype
        np.testing.assert_array_equal(back, a)


def test_tensor_outlives_the_array_it_views():
    t = rg.from_numpy(np.full((1000,), 3.0))
    import gc
    gc.collect()
    assert t.sum().item() == 3000.0


def test_factories():
    assert rg.zeros(2, 3).numpy().tolist() == [[0.0] * 3] * 2
    assert rg.ones((2,), dtype=rg.float64).numpy().tolist() == [1.0, 1.0]
    assert rg.arange(4).numpy().tolist() == [0, 1, 2, 3] and rg.arange(4).dtype == rg.int64
    assert rg.arange(0, 1, 0.25).numpy().tolist() == [0.0, 0.25, 0.5, 0.75]
    rg.manual_seed(7)
    first = rg.randn(1000, dtype=rg.float64).numpy()
    rg.manual_seed(7)
    np.testing.assert_array_equal(rg.randn(1000, dtype=rg.float64).numpy(), first)
    assert abs(first.mean()) < 0.15 and 0.85 < first.std() < 1.15


def test_arithmetic_broadcasts_like_numpy():
    a = np.random.default_rng(0).standard_normal((3, 1, 4))
    b = np.random.default_rng(1).standard_normal((2, 4))
    ta, tb = rg.tensor(a), rg.tensor(b)
    for got, want in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta / tb, a / b),
                      (-ta, -a), (2.0 * ta - 1, 2.0 * a - 1), (1 / tb, 1 / b), (ta ** 2, a ** 2)]:
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-15)
    m = np.random.default_rng(2).standard_normal((4, 5))
    np.testing.assert_allclose((ta @ rg.tensor(m)).numpy(), a @ m, rtol=1e-12)


def test_reductions_and_views():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    t = rg.tensor(a)
    assert t.sum().item() == a.sum() and t.mean().item() == a.mean()
    np.testing.assert_array_equal(t.sum(dim=1).numpy(), a.sum(axis=1))
    np.testing.assert_array_equal(t.mean(dim=(0, 2), keepdim=True).numpy(),
                                  a.mean(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    np.testing.assert_array_equal(t.reshape(6, 4).numpy(), a.reshape(6, 4))
    np.testing.assert_array_equal(t.view((4, 6)).numpy(), a.reshape(4, 6))
    assert isinstance(rg.tensor([3]).item(), int) and rg.tensor([2.5]).item() == 2.5


def test_repr_shows_values_pytorch_style():
    assert repr(rg.tensor([[1.0, 2.5]])) == "tensor([[1.0000, 2.5000]])"
    assert repr(rg.tensor([1, 2])) == "tensor([1, 2])"  # int64 is the default integer dtype
    assert repr(rg.tensor([1, 2], dtype=rg.int32)) == "tensor([1, 2], dtype=ringgrad.int32)"
    assert "requires_grad=True" in repr(rg.ones(2, requires_grad=True))
    assert repr(rg.float32) == "ringgrad.float32"


def test_unsupported_numpy_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="unsupported dtype"):
        rg.from_numpy(np.zeros(3, dtype=np.complex64))


def test_dlpack_round_trips_with_numpy_share_memory():
    t = rg.arange(6, dtype=rg.float32).reshape(2, 3)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)  # NumPy takes the tensor without a copy
    assert a.shape == (2, 3) and a.dtype == np.float32
    a[0, 0] = 42
    assert t.numpy()[0, 0] == 42
    b = np.arange(4, dtype=np.float64)
    u = rg.from_dlpack(b)  # and ringgrad takes NumPy's
    b[1] = -7
    assert u.dtype == rg.float64 and u.numpy().tolist() == [0.0, -7.0, 2.0, 3.0]
    back = np.from_dlpack(rg.from_dlpack(b))
    back[2] = 5
    assert b[2] == 5
    assert rg.from_dlpack(t) is t


def test_indexing_gives_views_that_share_memory_and_carry_gradients():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = rg.from_numpy(a.copy())
    for key in [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 0), (0, slice(1, 3)),
                (slice(None, None, 2), slice(None), slice(1, None, 2)), (None, 0), (0, None, 2),
                (Ellipsis, None), slice(5, 9), (1, Ellipsis, slice(-3, -1))]:
        assert np.array_equal(t[key].numpy(), a[key]), key
    view = t[1, :, 1:3]
    view[0, 0] = 100.0  # writes through to t
    assert t.numpy()[1, 0, 1] == 100.0
    t[0] = 7.0
    assert (t.numpy()[0] == 7.0).all()
    t[1, 2] = rg.tensor([1.0, 2.0, 3.0, 4.0])
    assert t.numpy()[1, 2].tolist() == [1.0, 2.0, 3.0, 4.0]
    x = rg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    (x[:, 1:] * 2).sum().backward()
    assert x.grad.numpy().tolist() == [[0.0, 2.0, 2.0], [0.0, 2.0, 2.0]]
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 3"):
        t[0, 3]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0, 0]
    with pytest.raises(TypeError, match="not supported"):
        t[1.5]
    with pytest.raises(ValueError, match="step"):
        t[::-1]


@pytest.mark.skipif(not rg._C.sim_backend_built(),
                    reason="built without the sim device (pip install .'s default)")
def test_pin_memory_and_non_blocking_copies_keep_values():
    t = rg.tensor([[1.0, 2.0], [3.0, -4.5]])
    assert not t.is_pinned()
    pinned = t.pin_memory()
    assert pinned.is_pinned() and not t.is_pinned()
    assert pinned.pin_memory().is_pinned()
    np.testing.assert_array_equal(pinned.numpy(), t.numpy())
    on_sim = pinned.to("sim", non_blocking=True)  # the simulated GPU of every build
    assert on_sim.device == "sim"
    np.testing.assert_array_equal(on_sim.cpu().numpy(), t.numpy())
    np.testing.assert_array_equal(t.to("cpu", non_blocking=True).numpy(), t.numpy())
    with pytest.raises(ValueError, match="only cpu tensors can be pinned"):
        on_sim.pin_memory()
