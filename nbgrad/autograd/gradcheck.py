"""``gradcheck``: compare autograd's Jacobian with central finite differences, as PyTorch does."""

import warnings

import numpy as np

from nbgrad.autograd.api import grad as autograd_grad
from nbgrad.autograd.tensor import Tensor


class GradcheckError(RuntimeError):
    pass


def _as_tuple(value):
    return (
        value if isinstance(value, tuple) else tuple(value) if isinstance(value, list) else (value,)
    )


def _differentiable_outputs(outputs):
    return [o for o in outputs if isinstance(o, Tensor) and o._requires_grad]


def _numerical_jacobians(func, inputs, index, eps):
    """For input ``index``: one matrix per output, rows = input elements, cols = output elements.

    Each element is nudged in place, in the input's own memory (so views and non-contiguous
    inputs work), with grad mode left as the caller had it: a function may differentiate inside.
    """
    data = inputs[index]._data
    sizes = [o._data.size for o in _outputs_of(func, inputs)]
    jacobians = [np.zeros((data.size, n)) for n in sizes]
    for row, position in enumerate(np.ndindex(data.shape)):
        original = data[position]
        data[position] = original + eps
        plus = [o._data.astype(np.float64).reshape(-1) for o in _outputs_of(func, inputs)]
        data[position] = original - eps
        minus = [o._data.astype(np.float64).reshape(-1) for o in _outputs_of(func, inputs)]
        data[position] = original
        for jacobian, p, m in zip(jacobians, plus, minus):
            jacobian[row] = (p - m) / (2 * eps)
    return jacobians


def _outputs_of(func, inputs):
    return [
        o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o._dtype.is_floating_point
    ]


def _analytical_jacobians(outputs, inputs, index):
    x = inputs[index]
    jacobians = []
    for out in outputs:
        jac = np.zeros((x._data.size, out._data.size))
        if out._requires_grad:
            for k in range(out._data.size):
                seed = np.zeros(out._data.size, out._data.dtype)
                seed[k] = 1
                (g,) = autograd_grad(
                    out,
                    x,
                    Tensor._make(seed.reshape(out._data.shape)),
                    retain_graph=True,
                    allow_unused=True,
                )
                if g is not None:
                    jac[:, k] = g._data.reshape(-1)
        jacobians.append(jac)
    return jacobians


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored):
    """True if ``func``'s backward agrees with finite differences for every input requiring grad."""
    inputs = _as_tuple(inputs)
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x._requires_grad and x._dtype.name != "float64":
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ",
                stacklevel=2,
            )
    outputs = _outputs_of(func, inputs)
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x._requires_grad):
            continue
        numerical = _numerical_jacobians(func, inputs, i, eps)
        analytical = _analytical_jacobians(outputs, inputs, i)
        for k, (num, ana) in enumerate(zip(numerical, analytical)):
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{Tensor._make(num)!r}\nanalytical:{Tensor._make(ana)!r}\n"
                )
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    **_ignored,
):
    """Check second derivatives: gradcheck of the (differentiable) backward of ``func``."""
    inputs = _as_tuple(inputs)
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            Tensor._make(rng.standard_normal(o._data.shape)).requires_grad_() for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivatives(*args):
        outs = _differentiable_outputs(_as_tuple(func(*args[:n])))
        wrt = [x for x in args[:n] if isinstance(x, Tensor) and x._requires_grad]
        grads = autograd_grad(outs, wrt, args[n:], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
    )
