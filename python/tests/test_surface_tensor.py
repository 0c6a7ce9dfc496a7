"""Tensor methods and module functions with PyTorch's names (ringgrad/_tensor.py,
_functions.py): conversions, devices, grad_fn and data, softmax/clamp/masked_fill/where,
split/chunk/unbind, the new_* and *_like factories, cat/stack, linspace/eye, comparisons,
grad-mode managers and the default dtype; values against NumPy, gradients where they flow."""
import numpy as np
import pytest

import ringgrad as rg


def test_dtype_names_and_conversions():
    assert rg.float is rg.float32 and rg.double == rg.float64 and rg.long == rg.int64
    assert rg.int == rg.int32 and rg.float64.is_floating_point and not rg.int64.is_floating_point
    x = rg.tensor([1.5, -2.5])
    assert x.double().dtype == rg.float64 and x.long().tolist() == [1, -2]
    assert x.int().dtype == rg.int32 and x.bool().tolist() == [True, True]
    assert x.bfloat16().dtype == rg.bfloat16 and x.float() .dtype == rg.float32
    assert x.type_as(rg.ones(1, dtype=rg.float64)).dtype == rg.float64
    assert x.is_floating_point() and not x.long().is_floating_point()
    assert x.element_size() == 4 and x.double().element_size() == 8
    with pytest.raises(TypeError, match="half: ringgrad has no float16"):
        x.half()


def test_to_in_every_form():
    x = rg.tensor([1.0, 2.0])
    assert x.to(rg.float64).dtype == rg.float64
    assert x.to("cpu") is x and x.to(device="cpu", dtype=rg.float64).dtype == rg.float64
    assert x.to("cpu", rg.int64).dtype == rg.int64
    assert x.to(rg.ones(1, dtype=rg.float64)).dtype == rg.float64
    assert x.to(rg.device("cpu")).device == "cpu" and x.cpu().device.type == "cpu"
    with pytest.raises(TypeError, match="to: expected a dtype"):
        x.to(3)
    if not rg.cuda.is_available():
        with pytest.raises(RuntimeError, match="to: device 'cuda' is not available"):
            x.cuda()


def test_device_objects_compare_with_strings():
    d = rg.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1" and d == "cuda:1"
    assert rg.device("cpu") == rg.ones(1).device and rg.ones(1).device != "cuda"
    assert repr(rg.device("cpu")) == "device(type='cpu')"


def test_grad_fn_data_and_detach_():
    w = rg.ones(2, requires_grad=True)
    y = (w * 2).sum()
    assert w.grad_fn is None and y.grad_fn is not None and "Backward" in y.grad_fn.name()
    d = w.data
    assert not d.requires_grad
    d[0] = 5.0  # shares w's storage
    assert w.tolist() == [5.0, 1.0]
    w.data = rg.tensor([[1.0, 2.0, 3.0]])
    assert w.shape == (1, 3) and w.requires_grad
    assert w.detach_() is w and not w.requires_grad
    with pytest.raises(NotImplementedError, match="detach_: detaching a non-leaf"):
        (rg.ones(1, requires_grad=True) * 3).detach_()


def test_item_tolist_bool_int_float():
    assert rg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert rg.tensor(2.5).item() == 2.5 and float(rg.tensor(2.5)) == 2.5
    assert int(rg.tensor(3)) == 3 and [0, 1, 2][rg.tensor(1)] == 1
    assert bool(rg.tensor([True])) and not bool(rg.tensor(0.0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(rg.ones(2))


def test_softmax_clamp_masked_fill_and_where():
    a = np.random.default_rng(0).standard_normal((3, 4))
    x = rg.tensor(a)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(x.softmax(1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(rg.log_softmax(x, dim=-1).numpy(),
                               np.log(e / e.sum(1, keepdims=True)), rtol=1e-12)
    assert x.float().softmax(0, dtype=rg.float64).dtype == rg.float64
    np.testing.assert_array_equal(x.clamp(min=-0.5).numpy(), np.maximum(a, -0.5))
    np.testing.assert_array_equal(rg.clip(x, -0.5, 0.5).numpy(), np.clip(a, -0.5, 0.5))
    with pytest.raises(ValueError, match="clamp: at least one"):
        x.clamp()
    mask = x > 0
    np.testing.assert_array_equal(x.masked_fill(mask, float("-inf")).numpy(),
                                  np.where(a > 0, -np.inf, a))
    np.testing.assert_array_equal(rg.where(mask, x, 0.0).numpy(), np.where(a > 0, a, 0.0))
    np.testing.assert_array_equal(x.where(mask, rg.zeros(1, dtype=rg.float64)).numpy(),
                                  np.where(a > 0, a, 0.0))


def test_split_chunk_unbind_are_views_that_carry_gradients():
    x = rg.arange(10.0).requires_grad_()
    parts = x.split(4)
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.shape[0] for p in rg.split(x, [3, 7])] == [3, 7]
    assert [p.shape[0] for p in x.chunk(3)] == [4, 4, 2]
    with pytest.raises(ValueError, match="split: sizes"):
        x.split([3, 3])
    (parts[1] * 2).sum().backward()
    assert x.grad.tolist() == [0, 0, 0, 0, 2, 2, 2, 2, 0, 0]
    m = rg.tensor([[1, 2], [3, 4]])
    assert [r.tolist() for r in m.unbind(1)] == [[1, 3], [2, 4]]


def test_shape_helpers():
    x = rg.zeros(2, 3, 4)
    assert x.view_as(rg.zeros(6, 4)).shape == (6, 4)
    assert x.reshape_as(rg.zeros(4, 6)).shape == (4, 6)
    assert rg.ones(1, 4).expand_as(x[0]).shape == (3, 4)
    assert rg.flatten(x, 1).shape == (2, 12) and rg.squeeze(rg.zeros(1, 3)).shape == (3,)
    assert rg.unsqueeze(x, -1).shape == (2, 3, 4, 1) and rg.transpose(x, 0, 2).shape == (4, 3, 2)
    assert rg.permute(x, (2, 0, 1)).shape == (4, 2, 3) and rg.reshape(x, (6, -1)).shape == (6, 4)
    assert x.size() == (2, 3, 4) and x.size(-1) == 4 and x.ndim == 3 and rg.numel(x) == 24


def test_new_and_like_factories_keep_dtype_and_device():
    x = rg.ones(2, dtype=rg.float64)
    assert x.new_zeros(3).dtype == rg.float64 and x.new_ones((2, 2)).shape == (2, 2)
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_tensor([1, 2]).dtype == rg.float64 and x.new_empty(4).shape == (4,)
    assert rg.zeros_like(x).tolist() == [0, 0] and rg.ones_like(x, dtype=rg.int64).dtype == \
        rg.int64
    assert rg.full_like(x, 3.0).tolist() == [3.0, 3.0] and rg.empty_like(x).shape == (2,)
    assert rg.empty(2, 3).shape == (2, 3) and rg.full((2,), 1).dtype == rg.int64


def test_cat_stack_and_their_gradients():
    a = rg.tensor([[1.0, 2.0]], requires_grad=True)
    b = rg.tensor([[3.0, 4.0]], requires_grad=True)
    assert rg.cat([a, b]).tolist() == [[1, 2], [3, 4]] and rg.concat((a, b), 1).shape == (1, 4)
    s = rg.stack([a, b], dim=-1)
    assert s.shape == (1, 2, 2) and s.tolist() == [[[1, 3], [2, 4]]]
    (s * rg.tensor([1.0, 10.0])).sum().backward()
    assert a.grad.tolist() == [[1, 1]] and b.grad.tolist() == [[10, 10]]
    with pytest.raises(ValueError, match="stack: expects each tensor to be equal size"):
        rg.stack([a, rg.ones(3)])
    with pytest.raises(ValueError, match="cat"):
        rg.cat([])


def test_linspace_logspace_eye_outer():
    np.testing.assert_allclose(rg.linspace(-1, 1, 5, dtype=rg.float64).numpy(),
                               np.linspace(-1, 1, 5))
    np.testing.assert_allclose(rg.logspace(0, 2, 3).numpy(), [1, 10, 100], rtol=1e-6)
    assert rg.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert rg.outer(rg.tensor([1.0, 2.0]), rg.tensor([3.0, 4.0, 5.0])).tolist() == \
        [[3, 4, 5], [6, 8, 10]]


def test_allclose_isclose_equal_all_any():
    a = rg.tensor([1.0, 2.0, float("nan")], dtype=rg.float64)
    b = rg.tensor([1.0, 2.0 + 1e-7, float("nan")], dtype=rg.float64)
    assert rg.isclose(a, b).tolist() == [True, True, False]
    assert rg.isclose(a, b, equal_nan=True).tolist() == [True, True, True]
    assert rg.allclose(a[:2], b[:2]) and not rg.allclose(a[:2], b[:2], rtol=0, atol=0)
    assert rg.equal(rg.ones(2), rg.ones(2)) and not rg.equal(rg.ones(2), rg.ones(3))
    assert rg.all(rg.tensor([True, True])).item() and not rg.ones(2).any(0).logical_not().item()
    assert rg.tensor([[1, 0], [1, 1]]).all(1).tolist() == [False, True]


def test_grad_mode_managers():
    w = rg.ones(1, requires_grad=True)
    with rg.no_grad():
        assert not (w * 2).requires_grad
        with rg.enable_grad():
            assert (w * 2).requires_grad
    with rg.inference_mode():
        assert not rg.is_grad_enabled()
    with rg.set_grad_enabled(False):
        assert not rg.is_grad_enabled()
    assert rg.is_grad_enabled()

    @rg.enable_grad()
    def grads():
        return rg.is_grad_enabled()

    with rg.no_grad():
        assert grads()


def test_default_dtype_sets_floating_factories():
    try:
        rg.set_default_dtype(rg.float64)
        assert rg.get_default_dtype() == rg.float64
        assert rg.tensor([1.5]).dtype == rg.float64 and rg.zeros(2).dtype == rg.float64
        assert rg.arange(0.0, 1.0, 0.5).dtype == rg.float64 and rg.tensor([1]).dtype == rg.int64
        with pytest.raises(TypeError, match="set_default_dtype"):
            rg.set_default_dtype(rg.int64)
    finally:
        rg.set_default_dtype(rg.float32)
    assert rg.zeros(1).dtype == rg.float32 and rg.is_tensor(rg.zeros(1)) and not rg.is_tensor(1)


def test_tensor_of_python_floats_asked_as_float64_keeps_their_precision():
    assert rg.tensor([2.0 + 1e-9], dtype=rg.float64).item() == 2.0 + 1e-9
    assert rg.tensor([2.0 + 1e-9]).dtype == rg.float32


def test_type_and_the_matrix_products():
    x = rg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=rg.float64)
    assert x.type() == "torch.DoubleTensor" and x.type(rg.int64).dtype == rg.int64
    assert (x > 1).type(rg.float).sum().item() == 3.0
    assert x.mm(x).tolist() == [[7, 10], [15, 22]] and rg.mm(x, x).tolist() == x.matmul(x).tolist()
    assert rg.bmm(x.unsqueeze(0), x.unsqueeze(0)).shape == (1, 2, 2)
    assert rg.dot(x[0], x[1]).item() == 11.0 and rg.mv(x, x[0]).tolist() == [5.0, 11.0]
    with pytest.raises(ValueError, match="mm: expected 2-D and 2-D tensors, got 3-D"):
        rg.mm(x.unsqueeze(0), x)


def test_format_array_and_size():
    assert f"{rg.tensor(0.123456):.3f}" == "0.123" and f"{rg.tensor(7)}" == "7"
    assert "tensor" in f"{rg.ones(2)}"
    assert np.array_equal(np.asarray(rg.tensor([[1, 2]])), [[1, 2]])
    assert np.asarray(rg.ones(2, dtype=rg.bfloat16), dtype=np.float64).dtype == np.float64
    assert rg.Size([2, 3]) == rg.zeros(2, 3).shape and rg.Size((2, 3)).numel() == 6


def test_the_tensor_constructor_as_pytorchs_legacy_one():
    assert rg.Tensor([1, 2]).dtype == rg.float32 and rg.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert rg.Tensor(2, 3).shape == (2, 3) and rg.Tensor().shape == (0,)
    assert rg.Tensor(rg.ones(1, dtype=rg.float64)).dtype == rg.float64  # a new handle
    with pytest.raises(TypeError, match="Tensor\\(\\): expected sizes"):
        rg.Tensor([1], [2])


def test_clip_grad_norm_returns_a_tensor_and_refuses_other_norms():
    p = rg.tensor([3.0, 4.0], requires_grad=True)
    p.grad = rg.tensor([3.0, 4.0])
    norm = rg.nn.utils.clip_grad_norm_(p, 1.0)
    assert norm.item() == pytest.approx(5.0) and p.grad.tolist() == pytest.approx([0.6, 0.8])
    with pytest.raises(NotImplementedError, match="norm_type"):
        rg.nn.utils.clip_grad_norm_(p, 1.0, norm_type=1)


def test_the_runtime_knobs_of_training_scripts():
    rg.backends.cuda.matmul.allow_tf32 = True  # accepted, as nanoGPT's train.py sets it
    rg.backends.cudnn.allow_tf32 = True
    model = rg.nn.Linear(2, 2)
    assert rg.compile(model) is model and rg.compile()(len) is len
    scaler = rg.amp.GradScaler(enabled=False)
    opt = rg.optim.SGD(model.parameters(), lr=1.0)
    loss = scaler.scale(model(rg.ones(1, 2)).sum())
    loss.backward()
    scaler.unscale_(opt)
    before = model.bias.tolist()
    scaler.step(opt)
    scaler.update()
    assert model.bias.tolist() == pytest.approx([b - 1 for b in before])
    with pytest.raises(NotImplementedError, match="GradScaler: loss scaling is for float16"):
        rg.cuda.amp.GradScaler()
    with rg.autocast("cpu", enabled=False):
        pass
    rg.backends.cuda.matmul.allow_tf32 = False


def test_isnan_isinf_isfinite_match_numpy():
    values = np.array([np.nan, np.inf, -np.inf, 1.5, 0.0, -2.0])
    for dtype in (rg.float32, rg.float64):
        x = rg.tensor(values, dtype=dtype)
        assert rg.isnan(x).tolist() == np.isnan(values).tolist()
        assert x.isinf().tolist() == np.isinf(values).tolist()
        assert rg.isfinite(x).tolist() == np.isfinite(values).tolist()
    ints = rg.tensor([1, -3])
    assert rg.isnan(ints).tolist() == [False, False] and ints.isfinite().tolist() == [True, True]
