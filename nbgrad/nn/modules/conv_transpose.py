"""ConvTranspose1d, ConvTranspose2d and ConvTranspose3d: ``F.conv_transpose1d``/``2d``/``3d``
with a weight of shape (in_channels, out_channels / groups, *kernel_size), initialised as
PyTorch's (kaiming uniform, whose fan-in is then ``out_channels / groups * kernel size``)."""

from nbgrad.autograd.tensor import Size
from nbgrad.nn import functional as F
from nbgrad.nn.modules.linear import reset_uniform
from nbgrad.nn.modules.module import Module
from nbgrad.nn.parameter import Parameter
from nbgrad.ops import creation


class _ConvTransposeNd(Module):
    spatial_dims = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        n = self.spatial_dims
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = F._tuple(kernel_size, n, "kernel_size")
        self.stride = F._tuple(stride, n, "stride")
        self.padding = F._tuple(padding, n, "padding")
        self.dilation = F._tuple(dilation, n, "dilation")
        self.transposed = True
        self.output_padding = F._tuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        self.weight = Parameter(
            creation.empty(in_channels, out_channels // groups, *self.kernel_size, dtype=dtype)
        )
        if bias:
            self.bias = Parameter(creation.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        reset_uniform(self.weight, self.bias)

    def forward(self, input, output_size=None):
        output_padding = self.output_padding
        if output_size is not None:
            output_padding = self._output_padding(input, output_size)
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self.spatial_dims - 1]
        return conv(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output ``output_size`` (its last dims)."""
        n = self.spatial_dims
        sizes = tuple(output_size)
        if len(sizes) == n + 2 or (len(sizes) == n + 1 and input.dim() == n + 1):
            sizes = sizes[-n:]
        if len(sizes) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                f"{n + 2} elements (got {len(output_size)})"
            )
        smallest = [
            (input.shape[-n + i] - 1) * self.stride[i]
            - 2 * self.padding[i]
            + self.dilation[i] * (self.kernel_size[i] - 1)
            + 1
            for i in range(n)
        ]
        largest = [low + s - 1 for low, s in zip(smallest, self.stride)]
        for size, low, high in zip(sizes, smallest, largest):
            if not low <= size <= high:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{smallest} to {largest} (for an input of {Size(input.shape[-n:])})"
                )
        return tuple(size - low for size, low in zip(sizes, smallest))

    def extra_repr(self):
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * len(self.padding):
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class ConvTranspose1d(_ConvTransposeNd):
    """The transpose of Conv1d over (N, C, L) or (C, L) inputs (the "deconvolution")."""

    spatial_dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """The transpose of Conv2d over (N, C, H, W) or (C, H, W) inputs; its node is
    ConvolutionBackward0 with ``_saved_transposed=True``, as in PyTorch."""

    spatial_dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    """The transpose of Conv3d (ConvolutionBackward0 with transposed=True)."""

    spatial_dims = 3
