"""``torch.renorm``: each slice along ``dim`` whose p-norm is above ``maxnorm`` is scaled down to
norm ``maxnorm`` (by maxnorm / (norm + 1e-7), PyTorch's factor); the others are left alone.

Its derivative (PyTorch's renorm_backward) in the two implementations ``formula_math``
describes: on NumPy arrays (``ARRAY_NAMESPACE``) and on differentiable Tensors
(``tensor_namespace()``), so that double backward works.
"""

import numpy as np

from nbgrad.ops.formula_more import _vector_norm_backward, vector_norm

EPSILON = 1e-7  # PyTorch adds it to the norm before dividing


def _other_dims(ndim, dim):
    return tuple(d for d in range(ndim) if d != dim % ndim)


def renorm(x, p, dim, maxnorm):
    norm = vector_norm(x, p, _other_dims(x.ndim, dim), True)
    factor = np.where(norm > maxnorm, maxnorm / (norm + EPSILON), 1.0)
    # a new contiguous tensor whatever the input's layout, as PyTorch's
    return np.ascontiguousarray((x * factor).astype(x.dtype, copy=False))


def _renorm_backward(grad, self, p, dim, maxnorm):
    """Through a scaled slice the gradient is factor * grad less the part along the norm's own
    change; an untouched slice passes ``grad`` as it is."""
    axes = _other_dims(self.ndim, dim)
    norm = vector_norm(self, p, axes, True)
    along = (self * grad).sum(axis=axes, keepdims=True)
    norm_grad = _vector_norm_backward(along, self, p, norm, axes, True)
    inverse = 1 / (norm + EPSILON)
    factor = inverse * maxnorm
    return np.where(norm > maxnorm, factor * grad - (factor * inverse) * norm_grad, grad).astype(
        grad.dtype, copy=False
    )


ARRAY_NAMESPACE = {"renorm_backward": _renorm_backward}


def renorm_backward_tensor(grad, self, p, dim, maxnorm):
    """``_renorm_backward`` over nbgrad Tensors, so that it has a graph of its own."""
    import nbgrad as nb
    from nbgrad.ops.formula_more import vector_norm_backward_tensor

    axes = _other_dims(self.ndim, dim)
    norm = nb.linalg.vector_norm(self, p, axes, True)
    along = (self * grad).sum(dim=axes, keepdim=True)
    norm_grad = vector_norm_backward_tensor(along, self, p, norm, axes, True)
    inverse = (norm + EPSILON).reciprocal()
    factor = inverse * maxnorm
    scaled = factor * grad - (factor * inverse) * norm_grad
    return nb.where((norm > maxnorm).detach(), scaled, grad)


def tensor_namespace():
    return {"renorm_backward": renorm_backward_tensor}
