"""PyTorch's runtime switches under their names: cuda's device queries, autocast, TF32,
matmul precision, compile."""
import pytest

import ringgrad as torch


def test_cuda_queries_agree_with_the_build():
    count = torch.cuda.device_count()
    assert count >= 0
    assert torch.cuda.is_available() == (count > 0)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            torch.cuda.synchronize()


def test_autocast_lowers_matmul_to_bfloat16_and_restores_the_state():
    a = torch.ones(4, 4)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        assert (a @ a).dtype == torch.bfloat16
        with torch.autocast(device_type="cpu", enabled=False):
            assert (a @ a).dtype == torch.float32
        assert (a @ a).dtype == torch.bfloat16
    assert (a @ a).dtype == torch.float32
    with torch.amp.autocast("cuda", dtype=torch.bfloat16):
        assert (a @ a).dtype == torch.bfloat16


def test_autocast_refuses_other_dtypes_naming_them():
    with pytest.raises(ValueError, match="autocast: dtype .*float64 is not supported"):
        torch.autocast("cpu", dtype=torch.float64)


def test_tf32_switches_and_matmul_precision():
    torch.backends.cuda.matmul.allow_tf32 = False
    assert torch.get_float32_matmul_precision() == "highest"
    try:
        torch.set_float32_matmul_precision("high")
        assert torch.backends.cuda.matmul.allow_tf32 is True
        assert torch.get_float32_matmul_precision() == "high"
        torch.backends.cuda.matmul.allow_tf32 = False
        assert torch.get_float32_matmul_precision() == "highest"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    with pytest.raises(ValueError, match="set_float32_matmul_precision: 'fast'"):
        torch.set_float32_matmul_precision("fast")


def test_compile_returns_the_model_unchanged():
    model = torch.nn.Linear(2, 3)
    assert torch.compile(model) is model
    decorated = torch.compile()(lambda x: x + 1)
    assert decorated(1) == 2
