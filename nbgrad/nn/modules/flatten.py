"""Flatten and Unflatten."""

from nbgrad.nn.modules.module import Module
from nbgrad.ops import functions


class Flatten(Module):
    """Flattens dims ``start_dim`` to ``end_dim`` into one (a view when possible)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return functions.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input):
        dim = self.dim % input.dim()
        shape = (*input.shape[:dim], *self.unflattened_size, *input.shape[dim + 1 :])
        return input.view(shape)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
