"""MaxUnpool1d, MaxUnpool2d, MaxUnpool3d and ChannelShuffle."""

from nbgrad.nn import functional as F
from nbgrad.nn.functional_layers_more import _ntuple
from nbgrad.nn.modules.module import Module


class _MaxUnpoolNd(Module):
    _dims = 0

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._dims)
        self.stride = _ntuple(kernel_size if stride is None else stride, self._dims)
        self.padding = _ntuple(padding, self._dims)

    def forward(self, input, indices, output_size=None):  # noqa: A002
        unpool = getattr(F, f"max_unpool{self._dims}d")
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Undo a MaxPool1d: each value back at its index, zeros elsewhere."""

    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Undo a MaxPool2d: each value back at its index, zeros elsewhere."""

    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """Undo a MaxPool3d: each value back at its index, zeros elsewhere."""

    _dims = 3


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups (ShuffleNet's channel shuffle)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
