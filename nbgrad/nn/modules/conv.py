"""Conv1d and Conv2d: unfold the input into columns, then one matrix multiply (see nn_kernels)."""

from nbgrad.nn import functional as F
from nbgrad.nn.modules.linear import reset_uniform
from nbgrad.nn.modules.module import Module
from nbgrad.nn.parameter import Parameter
from nbgrad.ops import creation

PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    spatial_dims = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        n = self.spatial_dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {F.PADDING_STRINGS}"
                )
            if padding == "same" and any(s != 1 for s in F._tuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {PADDING_MODES}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = F._tuple(kernel_size, n, "kernel_size")
        self.stride = F._tuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else F._tuple(padding, n, "padding")
        self.dilation = F._tuple(dilation, n, "dilation")
        self.transposed = False
        self.output_padding = (0,) * n
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._padding_for_mode()
        self.weight = Parameter(
            creation.empty(out_channels, in_channels // groups, *self.kernel_size, dtype=dtype)
        )
        if bias:
            self.bias = Parameter(creation.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _padding_for_mode(self):
        """The ``F.pad`` amounts (last dim first) for a padding_mode other than zeros."""
        if isinstance(self.padding, str):
            if self.padding == "valid":
                return [0, 0] * self.spatial_dims
            amounts = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                amounts += [total // 2, total - total // 2]
            return amounts
        return [p for p in reversed(self.padding) for _ in range(2)]

    def reset_parameters(self):
        reset_uniform(self.weight, self.bias)

    def _conv_forward(self, input, weight, bias):
        conv = (F.conv1d, F.conv2d, F.conv3d)[self.spatial_dims - 1]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self):
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * len(self.padding):
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """A 1-d convolution over (N, C, L) or (C, L) inputs."""

    spatial_dims = 1


class Conv2d(_ConvNd):
    """A 2-d convolution over (N, C, H, W) or (C, H, W) inputs; its node is
    ConvolutionBackward0, as in PyTorch."""

    spatial_dims = 2


class Conv3d(_ConvNd):
    """A 3-d convolution over (N, C, D, H, W) or (C, D, H, W) inputs (ConvolutionBackward0)."""

    spatial_dims = 3
