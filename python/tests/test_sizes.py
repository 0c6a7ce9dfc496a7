"""Shapes too large to count, and bounds that are not numbers, raise one ValueError naming the
op and the sizes (core's checked element and byte counts), never a crash or an empty tensor."""
import math

import pytest

import ringgrad as rg

TOO_MANY = r"too many elements"


def test_factories_refuse_shapes_whose_element_count_overflows():
    with pytest.raises(ValueError, match=r"full: shape \[4294967296,4294967296\] has " + TOO_MANY):
        rg.full((2**32, 2**32), 1.0)
    with pytest.raises(ValueError, match=r"ones: shape \[4294967296,4294967296,2\] has " + TOO_MANY):
        rg.ones(2**32, 2**32, 2)
    with pytest.raises(ValueError, match=r"zeros: shape \[8589934592,8589934592\] has " + TOO_MANY):
        rg.zeros(2**33, 2**33)


def test_factories_refuse_shapes_whose_byte_size_overflows():
    # 2**62 elements fit an int64; 2**62 float32 elements (2**64 bytes) do not fit a byte count.
    with pytest.raises(ValueError, match=r"randn: shape \[2147483648,2147483648\] of 4-byte "
                       r"elements is more than 2\^63-1 bytes"):
        rg.randn(2**31, 2**31)


def test_arange_refuses_nan_and_infinite_bounds_and_huge_counts():
    with pytest.raises(ValueError, match=r"arange: start, end and step must be finite"):
        rg.arange(0, math.nan)
    with pytest.raises(ValueError, match=r"arange: start, end and step must be finite"):
        rg.arange(0.0, math.inf)
    with pytest.raises(ValueError, match=r"arange: \[0, 1e\+30\) in steps of 1 has " + TOO_MANY):
        rg.arange(0, 1e30)
    assert rg.arange(0, 5).numpy().tolist() == [0, 1, 2, 3, 4]


def test_expand_refuses_negative_and_overflowing_sizes():
    with pytest.raises(ValueError, match=r"expand: invalid size -5 .* \[-5,3\]"):
        rg.ones(1, 3).expand(-5, 3)
    with pytest.raises(ValueError, match=r"expand: shape \[4294967296,4294967296,3\] has " + TOO_MANY):
        rg.ones(1, 1, 3).expand(2**32, 2**32, 3)
    assert rg.ones(1, 3).expand(2, -1).shape == (2, 3)


def test_view_refuses_overflowing_shapes_of_an_empty_tensor():
    with pytest.raises(ValueError, match=r"view: shape \[0,4294967296,4294967296\] has " + TOO_MANY):
        rg.ones(0).view(0, 2**32, 2**32)
