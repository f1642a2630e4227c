"""Bilinear: ``y = x1^T A x2 + b`` for each output feature."""

import math

from nbgrad.nn import functional as F
from nbgrad.nn import init
from nbgrad.nn.modules.module import Module
from nbgrad.nn.parameter import Parameter
from nbgrad.ops import creation


class Bilinear(Module):
    """``weight`` of shape (out_features, in1_features, in2_features), ``bias`` (out_features);
    both start uniform in +-1/sqrt(in1_features), PyTorch's default."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):  # fmt: skip
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(
            creation.empty(out_features, in1_features, in2_features, dtype=dtype)
        )
        if bias:
            self.bias = Parameter(creation.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
