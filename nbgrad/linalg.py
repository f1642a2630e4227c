"""``torch.linalg``: vector norms of any order, the Frobenius matrix norm, ``norm`` built from
them as PyTorch builds it, and ``cross``."""

from nbgrad.ops.functions import vector_norm
from nbgrad.ops.functions.linalg_more import cross, matrix_norm, norm

__all__ = ["cross", "matrix_norm", "norm", "vector_norm"]
