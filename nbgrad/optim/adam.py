"""Adam and AdamW."""

import math

import numpy as np

from nbgrad.autograd.tensor import Tensor
from nbgrad.optim.optimizer import Optimizer, bump_version


class Adam(Optimizer):
    """Adam, as PyTorch computes it, for each parameter p with gradient g at step t::

        g = g + weight_decay * p                 (Adam)
        p = p * (1 - lr * weight_decay)          (AdamW, instead)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    With ``amsgrad`` the running maximum of v is used in place of v.
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
    ):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            weight_decay = group["weight_decay"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                values = param._data
                grad = param.grad._data
                if group["maximize"]:
                    grad = -grad
                state = self.state[param]
                if not state:
                    state["step"] = Tensor._make(np.zeros((), np.float32))
                    state["exp_avg"] = Tensor._make(np.zeros_like(values))
                    state["exp_avg_sq"] = Tensor._make(np.zeros_like(values))
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = Tensor._make(np.zeros_like(values))
                state["step"]._data += 1
                bump_version(state["step"])
                step = float(state["step"]._data)
                if weight_decay:
                    if group["decoupled_weight_decay"]:
                        values *= 1 - lr * weight_decay
                        bump_version(param)  # mul_
                    else:
                        grad = grad + weight_decay * values
                exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
                exp_avg += (1 - beta1) * (grad - exp_avg)
                exp_avg_sq *= beta2
                exp_avg_sq += (1 - beta2) * grad * grad
                bump_version(state["exp_avg"])  # lerp_
                bump_version(state["exp_avg_sq"], 2)  # mul_, addcmul_
                second_moment = exp_avg_sq
                if group["amsgrad"]:
                    np.maximum(
                        state["max_exp_avg_sq"]._data, exp_avg_sq, out=state["max_exp_avg_sq"]._data
                    )
                    bump_version(state["max_exp_avg_sq"])  # torch.maximum(..., out=)
                    second_moment = state["max_exp_avg_sq"]._data
                step_size = lr / (1 - beta1**step)
                denominator = np.sqrt(second_moment) / math.sqrt(1 - beta2**step) + eps
                values -= (step_size * exp_avg / denominator).astype(values.dtype, copy=False)
                bump_version(param)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay: the parameter shrinks by ``lr * weight_decay`` each
    step, instead of the decay being added to the gradient."""

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
        foreach=None,
        capturable=False,
        differentiable=False,
        fused=None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
