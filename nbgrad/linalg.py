"""``torch.linalg``'s vector norm (the part of it the tutorials use)."""

from nbgrad.ops.functions import vector_norm

__all__ = ["vector_norm"]
