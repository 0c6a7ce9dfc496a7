"""ringgrad.nn: Module, Parameter and layers in Python over the C++ ops (torch.nn's names)."""
from ringgrad.nn import functional, init
from ringgrad.nn.module import Module, Parameter
from ringgrad.nn.layers import (GELU, Dropout, Embedding, LayerNorm, Linear, ModuleList, ReLU,
                                Sequential)
from ringgrad.nn import parallel, utils
from ringgrad.nn.gpt import GPT, GPTConfig

__all__ = ["Module", "Parameter", "Linear", "Embedding", "LayerNorm", "Dropout", "GELU", "ReLU",
           "Sequential", "ModuleList", "GPT", "GPTConfig", "functional", "init", "parallel", "utils"]
