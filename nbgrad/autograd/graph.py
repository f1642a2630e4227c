"""``torch.autograd.graph``'s names: the node base class, for ``isinstance`` checks."""

from nbgrad.autograd.node import AccumulateGrad, Node

__all__ = ["AccumulateGrad", "Node"]
