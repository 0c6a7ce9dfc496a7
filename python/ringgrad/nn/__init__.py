"""ringgrad.nn: Module, Parameter and layers in Python over the C++ ops (torch.nn's names)."""
from ringgrad.nn import functional, init
from ringgrad.nn.module import Module, Parameter
from ringgrad.nn.layers import (GELU, Dropout, Embedding, LayerNorm, Linear, ModuleList, ReLU,
                                Sequential)
from ringgrad.nn.activation import (Identity, Tanh, Sigmoid, SiLU, Softmax, LogSoftmax, Flatten,
                                    Unflatten)
from ringgrad.nn.loss import CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, BCEWithLogitsLoss
from ringgrad.nn.containers import ModuleDict, ParameterList
from ringgrad.nn.conv import (Conv1d, Conv2d, BatchNorm1d, BatchNorm2d, MaxPool2d, AvgPool2d,
                              AdaptiveAvgPool2d)
from ringgrad.nn import parallel, utils
from ringgrad.nn.gpt import GPT, GPTConfig

__all__ = ["Module", "Parameter", "Linear", "Embedding", "LayerNorm", "Dropout", "GELU", "ReLU",
           "Sequential", "ModuleList", "ModuleDict", "ParameterList", "Identity", "Tanh",
           "Sigmoid", "SiLU", "Softmax", "LogSoftmax", "Flatten", "Unflatten",
           "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "BCEWithLogitsLoss", "Conv1d",
           "Conv2d", "BatchNorm1d", "BatchNorm2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
           "GPT", "GPTConfig",
           "functional", "init", "parallel", "utils"]
