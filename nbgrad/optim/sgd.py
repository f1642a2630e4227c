"""Stochastic gradient descent, with momentum, Nesterov momentum and weight decay."""

import numpy as np

from nbgrad.autograd.tensor import Tensor
from nbgrad.optim.optimizer import Optimizer, bump_version


class SGD(Optimizer):
    """For each parameter p with gradient g (PyTorch's update, step by step)::

    g = g + weight_decay * p
    buf = g                                  (first step)
    buf = momentum * buf + (1 - dampening) * g
    g = g + momentum * buf   (nesterov)   or   g = buf
    p = p - lr * g
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0,
        dampening=0,
        weight_decay=0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, momentum = group["lr"], group["momentum"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                values = param._data
                grad = param.grad._data
                if group["maximize"]:
                    grad = -grad
                if group["weight_decay"]:
                    grad = grad + group["weight_decay"] * values
                if momentum:
                    state = self.state[param]
                    buffer = state.get("momentum_buffer")
                    if buffer is None:
                        buffer = state["momentum_buffer"] = Tensor._make(np.array(grad))
                    else:
                        buffer._data *= momentum
                        buffer._data += (1 - group["dampening"]) * grad
                        bump_version(buffer, 2)  # mul_, add_
                    grad = grad + momentum * buffer._data if group["nesterov"] else buffer._data
                values -= (lr * grad).astype(values.dtype, copy=False)
                bump_version(param)
        return loss
