"""``nbgrad.backends``: the flags of PyTorch's backends, as its CPU build reports them."""

from nbgrad.backends import cuda, cudnn, mps  # noqa: F401
