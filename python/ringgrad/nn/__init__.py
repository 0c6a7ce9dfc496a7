"""ringgrad.nn: Module, Parameter and layers in Python over the C++ ops (torch.nn's names)."""
from ringgrad.nn import functional
from ringgrad.nn.module import Module, Parameter
from ringgrad.nn.layers import GELU, Embedding, LayerNorm, Linear, ReLU, Sequential
from ringgrad.nn import parallel

__all__ = ["Module", "Parameter", "Linear", "Embedding", "LayerNorm", "GELU", "ReLU",
           "Sequential", "functional", "parallel"]
