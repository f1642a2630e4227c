"""RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam, step for step as PyTorch's single-tensor
implementations (the ones PyTorch runs on CPU), so that parameters agree to rounding.

Each update works on the parameter's memory, under no graph, and bumps its version. The scalar
factors are Python floats and the arrays keep the parameter's dtype, as in PyTorch, where a float
scalar is rounded to the tensor's dtype before it multiplies.
"""

import math

import numpy as np

from nbgrad.autograd.tensor import Tensor
from nbgrad.optim.optimizer import Optimizer, bump_version


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not lr >= 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check(value, name, low=0.0, high=None, high_open=False):
    ok = low <= value
    if high is not None:
        ok = ok and (value < high if high_open else value <= high)
    if not ok:
        raise ValueError(f"Invalid {name}: {value}")


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _zeros_like(values):
    return Tensor._make(np.zeros_like(values))


def _new_step():
    return Tensor._make(np.zeros((), np.float32))


def _sparse_check(param, name):
    if getattr(param.grad, "is_sparse", False):
        raise RuntimeError(f"{name} does not support sparse gradients")


def _cast(array, values):
    return array.astype(values.dtype, copy=False)


def _count_step(state):
    """``state["step"] += 1``: the step counter is a tensor written in place, as in PyTorch."""
    state["step"]._data += 1
    bump_version(state["step"])


def _count_moments(state):
    """The versions of Adam-like moments after one step: ``exp_avg.lerp_``, and
    ``exp_avg_sq.mul_(...).addcmul_(...)``."""
    bump_version(state["exp_avg"])
    bump_version(state["exp_avg_sq"], 2)


def _lerp(start, end, weight):
    """``start.lerp_(end, weight)`` in place, with PyTorch's two formulas."""
    if weight < 0.5:
        start += weight * (end - start)
    else:
        start[...] = end - (end - start) * (1 - weight)


class _Adaptive(Optimizer):
    """Loops over the parameters with a gradient; subclasses update one (``_update``)."""

    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                _sparse_check(param, type(self).__name__)
                grad = param.grad._data
                if group["maximize"]:
                    grad = -grad
                self._update(group, param, param._data, grad, self.state[param])
                bump_version(param)
        return loss


class RMSprop(_Adaptive):
    """``v = alpha * v + (1 - alpha) * g * g``; ``p -= lr * g / (sqrt(v) + eps)``, with
    ``centered`` subtracting the squared running mean of g from v, and ``momentum`` a buffer
    ``b = momentum * b + g / (sqrt(v) + eps)``; ``p -= lr * b``."""

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        _check_lr(lr)
        _check(eps, "epsilon value")
        _check(momentum, "momentum value")
        _check(weight_decay, "weight_decay value")
        _check(alpha, "alpha value")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, group, param, values, grad, state):
        if not state:
            state["step"] = _new_step()
            state["square_avg"] = _zeros_like(values)
            if group["momentum"] > 0:
                state["momentum_buffer"] = _zeros_like(values)
            if group["centered"]:
                state["grad_avg"] = _zeros_like(values)
        _count_step(state)
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * values
        square_avg = state["square_avg"]._data
        square_avg *= alpha
        square_avg += (1 - alpha) * grad * grad
        bump_version(state["square_avg"], 2)  # mul_, addcmul_
        if group["centered"]:
            grad_avg = state["grad_avg"]._data
            _lerp(grad_avg, grad, 1 - alpha)
            bump_version(state["grad_avg"])
            avg = np.sqrt(square_avg + -1 * grad_avg * grad_avg)
        else:
            avg = np.sqrt(square_avg)
        avg += eps
        if group["momentum"] > 0:
            buffer = state["momentum_buffer"]._data
            buffer *= group["momentum"]
            buffer += grad / avg
            bump_version(state["momentum_buffer"], 2)  # mul_, addcdiv_
            values += _cast(-lr * buffer, values)
        else:
            values += _cast(-lr * grad / avg, values)


class Adagrad(_Adaptive):
    """``s += g * g``; ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)``."""

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        _check_lr(lr)
        _check(lr_decay, "lr_decay value")
        _check(weight_decay, "weight_decay value")
        _check(initial_accumulator_value, "initial_accumulator_value value")
        _check(eps, "epsilon value")
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        # PyTorch fills the state of every parameter at construction.
        for group in self.param_groups:
            for param in group["params"]:
                self._initial_state(param)

    def _initial_state(self, param):
        state = self.state[param]
        state["step"] = _new_step()
        state["sum"] = Tensor._make(
            np.full_like(param._data, self.defaults["initial_accumulator_value"])
        )

    def _update(self, group, param, values, grad, state):
        if not state:
            self._initial_state(param)
        _count_step(state)
        step = float(state["step"]._data)
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * values
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"]._data
        state_sum += 1 * grad * grad
        bump_version(state["sum"])  # addcmul_
        std = np.sqrt(state_sum)
        std += group["eps"]
        values += _cast(-clr * grad / std, values)


class Adadelta(_Adaptive):
    """``v = rho * v + (1 - rho) * g * g``; ``delta = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho * u + (1 - rho) * delta * delta``; ``p -= lr * delta``."""

    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        _check_lr(lr)
        _check(rho, "rho value", high=1.0)
        _check(eps, "epsilon value")
        _check(weight_decay, "weight_decay value")
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, group, param, values, grad, state):
        if not state:
            state["step"] = _new_step()
            state["square_avg"] = _zeros_like(values)
            state["acc_delta"] = _zeros_like(values)
        _count_step(state)
        rho, eps = group["rho"], group["eps"]
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * values
        square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
        square_avg *= rho
        square_avg += (1 - rho) * grad * grad
        bump_version(state["square_avg"], 2)  # mul_, addcmul_
        std = np.sqrt(square_avg + eps)
        delta = np.sqrt(acc_delta + eps)
        delta /= std
        delta *= grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        bump_version(state["acc_delta"], 2)  # mul_, addcmul_
        values += _cast(-group["lr"] * delta, values)


class Adamax(_Adaptive):
    """Adam with the infinity norm: ``u = max(beta2 * u, |g| + eps)``;
    ``p -= lr / (1 - beta1**t) * m / u``."""

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        _check_lr(lr)
        _check(eps, "epsilon value")
        _check_betas(betas)
        _check(weight_decay, "weight_decay value")
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, group, param, values, grad, state):
        if not state:
            state["step"] = _new_step()
            state["exp_avg"] = _zeros_like(values)
            state["exp_inf"] = _zeros_like(values)
        _count_step(state)
        step = float(state["step"]._data)
        beta1, beta2 = group["betas"]
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * values
        exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
        _lerp(exp_avg, grad, 1 - beta1)
        exp_inf *= beta2
        np.maximum(exp_inf, np.abs(grad) + group["eps"], out=exp_inf)
        bump_version(state["exp_avg"])  # lerp_
        bump_version(state["exp_inf"], 2)  # mul_, amax(out=)
        clr = group["lr"] / (1 - beta1**step)
        values += _cast(-clr * exp_avg / exp_inf, values)


def _decay(group, param, values, grad):
    """L2 penalty added to the gradient, or (decoupled) the parameter shrunk."""
    weight_decay = group["weight_decay"]
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            values *= 1 - group["lr"] * weight_decay
            bump_version(param)  # mul_
        else:
            grad = grad + weight_decay * values
    return grad


class NAdam(_Adaptive):
    """Adam with Nesterov momentum, whose momentum ``mu_t = beta1 * (1 - 0.5 * 0.96 **
    (t * momentum_decay))`` warms up; the product of the mu's is kept in the state."""

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_lr(lr)
        _check(eps, "epsilon value")
        _check_betas(betas)
        _check(weight_decay, "weight_decay value")
        _check(momentum_decay, "momentum_decay value")
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, group, param, values, grad, state):
        if not state:
            state["step"] = _new_step()
            state["mu_product"] = Tensor._make(np.ones((), np.float32))
            state["exp_avg"] = _zeros_like(values)
            state["exp_avg_sq"] = _zeros_like(values)
        _count_step(state)
        step = float(state["step"]._data)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        bias_correction2 = 1 - beta2**step
        grad = _decay(group, param, values, grad)
        momentum_decay = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        state["mu_product"]._data *= np.float32(mu)
        bump_version(state["mu_product"])
        mu_product = float(state["mu_product"]._data)
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        _lerp(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        _count_moments(state)
        denom = np.sqrt(exp_avg_sq / bias_correction2)
        denom += eps
        mu_product_next = mu_product * mu_next
        values += _cast((-lr * (1.0 - mu) / (1.0 - mu_product)) * grad / denom, values)
        values += _cast((-lr * mu_next) / (1.0 - mu_product_next) * exp_avg / denom, values)
        bump_version(param)  # two addcdiv_: the step bumps it once more


class RAdam(_Adaptive):
    """Rectified Adam: plain momentum steps while the variance estimate is unreliable
    (``rho_t <= 5``), Adam steps scaled by the rectification term after."""

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_lr(lr)
        _check(eps, "epsilon value")
        _check_betas(betas)
        _check(weight_decay, "weight_decay value")
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, group, param, values, grad, state):
        if not state:
            state["step"] = _new_step()
            state["exp_avg"] = _zeros_like(values)
            state["exp_avg_sq"] = _zeros_like(values)
        _count_step(state)
        step = float(state["step"]._data)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        grad = _decay(group, param, values, grad)
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        _lerp(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        _count_moments(state)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        corrected = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt(
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            )
            adaptive = bias_correction2**0.5 / (np.sqrt(exp_avg_sq) + eps)
            update = corrected * lr * adaptive * rect
        else:
            update = corrected * lr
        values += _cast(-1.0 * update, values)


class ASGD(_Adaptive):
    """Averaged SGD: ``p = p * (1 - lambd * eta) - eta * g``, and the running average ``ax`` of
    the parameters (a plain copy until step ``t0``); ``eta = lr / (1 + lambd * lr * t) ** alpha``
    and ``mu = 1 / max(1, t - t0)`` for the next step."""

    def __init__(
        self,
        params,
        lr=1e-2,
        lambd=1e-4,
        alpha=0.75,
        t0=1e6,
        weight_decay=0,
        foreach=None,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        _check_lr(lr)
        _check(weight_decay, "weight_decay value")
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, group, param, values, grad, state):
        if not state:
            state["step"] = _new_step()
            state["eta"] = Tensor._make(np.array(float(group["lr"]), np.float32))
            state["mu"] = Tensor._make(np.ones((), np.float32))
            state["ax"] = _zeros_like(values)
        _count_step(state)
        lambd, lr = group["lambd"], float(group["lr"])
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * values
        eta = float(state["eta"]._data)
        values *= 1 - lambd * eta
        values += _cast(-eta * grad, values)
        bump_version(param)  # mul_, add_: the step bumps it once more
        ax, mu = state["ax"]._data, state["mu"]._data
        if float(mu) != 1:
            ax += (values - ax) * mu
        else:
            np.copyto(ax, values)
        step = float(state["step"]._data)
        state["eta"]._data[...] = lr / ((1 + lambd * lr * step) ** group["alpha"])
        state["mu"]._data[...] = 1 / max(1, step - group["t0"])
        for name in ("ax", "eta", "mu"):
            bump_version(state[name])


class Rprop(_Adaptive):
    """Resilient backpropagation: each element has its own step size, multiplied by
    ``etaplus`` while the gradient keeps its sign and by ``etaminus`` when it flips (that
    element then skips its update), clamped to ``step_sizes``; ``p -= sign(g) * step_size``."""

    def __init__(
        self,
        params,
        lr=1e-2,
        etas=(0.5, 1.2),
        step_sizes=(1e-6, 50),
        *,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, group, param, values, grad, state):
        if not state:
            state["step"] = _new_step()
            state["prev"] = _zeros_like(values)
            state["step_size"] = Tensor._make(np.full_like(grad, float(group["lr"])))
        _count_step(state)
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        prev, step_size = state["prev"]._data, state["step_size"]._data
        sign = np.sign(grad * prev)
        factor = np.where(sign > 0, etaplus, np.where(sign < 0, etaminus, 1)).astype(grad.dtype)
        step_size *= factor
        np.clip(step_size, step_size_min, step_size_max, out=step_size)
        bump_version(state["step_size"], 2)  # mul_, clamp_
        grad = np.where(factor == np.asarray(etaminus, grad.dtype), 0, grad).astype(grad.dtype)
        values -= _cast(np.sign(grad) * step_size, values)
        np.copyto(prev, grad)
        bump_version(state["prev"])  # copy_
