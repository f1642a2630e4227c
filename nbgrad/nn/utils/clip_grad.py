"""``nn.utils.clip_grad_norm_`` and ``clip_grad_value_`` (and the two halves of the first,
``get_total_norm`` and ``clip_grads_with_norm_``), as PyTorch's loops over tensors compute them."""

import nbgrad
from nbgrad.autograd import grad_mode


def _as_list(tensors):
    return [tensors] if isinstance(tensors, nbgrad.Tensor) else list(tensors)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the tensors' norms: the norm of all their elements as one vector."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return nbgrad.tensor(0.0)
    with grad_mode.no_grad():
        norms = [nbgrad.linalg.vector_norm(t, norm_type) for t in tensors]
        total = nbgrad.linalg.vector_norm(nbgrad.stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale every gradient by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with grad_mode.no_grad():
        coefficient = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coefficient)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Rescale the gradients so that their total norm is at most ``max_norm``; returns the total
    norm they had."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with grad_mode.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
