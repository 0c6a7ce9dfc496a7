"""Tensors print as PyTorch prints them (ringgrad/_printing.py): the expected texts below are
what PyTorch 2.15 printed for the same expressions (recorded once with `repr` under `import
torch`), compared with the dtype's name as ringgrad spells it (dtype=ringgrad.float64 where
PyTorch says torch.float64) and line breaks not counted (the longer name may wrap a line)."""
import pytest

import ringgrad as torch

CASES = [  # (expression, PyTorch 2.15's repr)
    ('torch.tensor([1.0, 2.5, 3.0])',
     'tensor([1.0000, 2.5000, 3.0000])'),
    ('torch.tensor([[1, 2], [3, 4]])',
     'tensor([[1, 2],\n        [3, 4]])'),
    ('torch.tensor([1e-5, 1.0], dtype=torch.float64)',
     'tensor([1.0000e-05, 1.0000e+00], dtype=torch.float64)'),
    ('torch.tensor([1.0, 2.0]).requires_grad_()',
     'tensor([1., 2.], requires_grad=True)'),
    ('torch.tensor([1.0, 2.0]).requires_grad_() * 2',
     'tensor([2., 4.], grad_fn=<MulBackward0>)'),
    ('torch.tensor(3.5)',
     'tensor(3.5000)'),
    ('torch.tensor(3)',
     'tensor(3)'),
    ('torch.zeros(0)',
     'tensor([])'),
    ('torch.zeros(2, 0)',
     'tensor([], size=(2, 0))'),
    ('torch.zeros(0, dtype=torch.int64)',
     'tensor([], dtype=torch.int64)'),
    ('torch.tensor([True, False, True])',
     'tensor([ True, False,  True])'),
    ("torch.tensor([1.0, float('inf'), float('nan'), -2.0])",
     'tensor([ 1., inf, nan, -2.])'),
    ('torch.tensor([1e9, 1.0])',
     'tensor([1.0000e+09, 1.0000e+00])'),
    ('torch.tensor([100.0, -3.0, 0.0])',
     'tensor([100.,  -3.,   0.])'),
    ('torch.tensor([0.0, 0.0])',
     'tensor([0., 0.])'),
    ('torch.arange(30, dtype=torch.float64).reshape(5, 6) / 7',
     'tensor([[0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143],\n        [0.8571, 1.0000, 1.1429, 1.2857, 1.4286, 1.5714],\n        [1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286],\n        [2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857],\n        [3.4286, 3.5714, 3.7143, 3.8571, 4.0000, 4.1429]], dtype=torch.float64)'),
    ('torch.arange(2000, dtype=torch.float32).reshape(40, 50) * 1.5',
     'tensor([[0.0000e+00, 1.5000e+00, 3.0000e+00,  ..., 7.0500e+01, 7.2000e+01,\n         7.3500e+01],\n        [7.5000e+01, 7.6500e+01, 7.8000e+01,  ..., 1.4550e+02, 1.4700e+02,\n         1.4850e+02],\n        [1.5000e+02, 1.5150e+02, 1.5300e+02,  ..., 2.2050e+02, 2.2200e+02,\n         2.2350e+02],\n        ...,\n        [2.7750e+03, 2.7765e+03, 2.7780e+03,  ..., 2.8455e+03, 2.8470e+03,\n         2.8485e+03],\n        [2.8500e+03, 2.8515e+03, 2.8530e+03,  ..., 2.9205e+03, 2.9220e+03,\n         2.9235e+03],\n        [2.9250e+03, 2.9265e+03, 2.9280e+03,  ..., 2.9955e+03, 2.9970e+03,\n         2.9985e+03]])'),
    ('torch.arange(1200, dtype=torch.int64)',
     'tensor([   0,    1,    2,  ..., 1197, 1198, 1199])'),
    ('torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) - 11.25',
     'tensor([[[-11.2500, -10.2500,  -9.2500,  -8.2500],\n         [ -7.2500,  -6.2500,  -5.2500,  -4.2500],\n         [ -3.2500,  -2.2500,  -1.2500,  -0.2500]],\n\n        [[  0.7500,   1.7500,   2.7500,   3.7500],\n         [  4.7500,   5.7500,   6.7500,   7.7500],\n         [  8.7500,   9.7500,  10.7500,  11.7500]]])'),
    ('torch.tensor([123456.789, -0.5], dtype=torch.float64)',
     'tensor([ 1.2346e+05, -5.0000e-01], dtype=torch.float64)'),
    ('torch.tensor([[1.5, -2.25], [3.0, 4.125]], dtype=torch.float64).sum()',
     'tensor(6.3750, dtype=torch.float64)'),
    ('torch.tensor([1, 2], dtype=torch.int32)',
     'tensor([1, 2], dtype=torch.int32)'),
    ('torch.tensor([0.1, 0.2, 0.3]).to(torch.bfloat16)',
     'tensor([0.1001, 0.2002, 0.3008], dtype=torch.bfloat16)'),
    ('torch.arange(40, dtype=torch.float32) * 1000.123',
     'tensor([    0.0000,  1000.1230,  2000.2460,  3000.3689,  4000.4919,  5000.6147,\n         6000.7378,  7000.8608,  8000.9839,  9001.1064, 10001.2295, 11001.3525,\n        12001.4756, 13001.5986, 14001.7217, 15001.8447, 16001.9678, 17002.0898,\n        18002.2129, 19002.3359, 20002.4590, 21002.5820, 22002.7051, 23002.8281,\n        24002.9512, 25003.0742, 26003.1973, 27003.3203, 28003.4434, 29003.5664,\n        30003.6895, 31003.8125, 32003.9355, 33004.0586, 34004.1797, 35004.3047,\n        36004.4258, 37004.5508, 38004.6719, 39004.7969])'),
]


@pytest.mark.parametrize("expression,pytorch_text", CASES)
def test_repr_is_pytorchs(expression, pytorch_text):
    expected = pytorch_text.replace("dtype=torch.", "dtype=ringgrad.")
    assert " ".join(repr(eval(expression)).split()) == " ".join(expected.split())


def test_a_parameter_and_a_grad_fn_print_as_in_pytorch():
    p = torch.nn.Linear(2, 1).weight
    assert repr(p).startswith("Parameter containing:\ntensor([[")
    assert repr(p).endswith("requires_grad=True)")
    x = torch.tensor([1.0, 2.0]).requires_grad_()
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr((x * x).sum()) == "tensor(5., grad_fn=<SumBackward0>)"
