"""rg::Error reaches Python as the builtin exception that fits, with the C++ message."""
import pytest

import ringgrad as rg
import ringgrad.nn.functional as F


def test_bad_arguments_raise_value_error_with_the_shapes():
    with pytest.raises(ValueError, match=r"matmul: shapes \[2,3\] and \[2,3\] cannot be multiplied"):
        rg.ones(2, 3) @ rg.ones(2, 3)
    with pytest.raises(ValueError, match=r"reshape: shape \[4,4\] is invalid"):
        rg.ones(2, 3).reshape(4, 4)
    with pytest.raises(ValueError, match="reduction: 'avg'"):
        F.cross_entropy(rg.ones(2, 3), rg.tensor([0, 1]), reduction="avg")


def test_dim_out_of_range_raises_index_error():
    with pytest.raises(IndexError, match="sum: dim 5 out of range"):
        rg.ones(2, 3).sum(dim=5)


def test_failures_of_state_raise_runtime_error():
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        rg.ones(2, 3, requires_grad=True).backward()
    with pytest.raises(RuntimeError, match="detach"):
        rg.ones(2, requires_grad=True).numpy()


def test_errors_are_not_swallowed_as_generic_exceptions():
    with pytest.raises(ValueError) as caught:
        rg.ones(3) + rg.ones(4)
    assert type(caught.value) is ValueError and "3" in str(caught.value)
