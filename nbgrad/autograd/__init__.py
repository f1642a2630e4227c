"""nbgrad.autograd: the graph, the engine, custom Functions and the checking tools."""

from nbgrad.autograd import functional, graph, observe, profiler
from nbgrad.autograd.anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from nbgrad.autograd.api import backward, grad
from nbgrad.autograd.function import Function, FunctionCtx, once_differentiable
from nbgrad.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from nbgrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
    "profiler",
    "set_detect_anomaly",
    "set_grad_enabled",
]
