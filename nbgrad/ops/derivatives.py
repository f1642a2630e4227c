"""The table of differentiable operations: every op's forward, what it saves, and its derivatives.

Read it like PyTorch's derivatives.yaml. Each entry names the backward node as PyTorch names it,
lists what the backward reads (exposed on the node as ``_saved_<name>``), and gives one formula
per input. ``grad`` is the gradient of the output; the engine itself sums a gradient back down
to the input's shape when the forward broadcast it, and casts it to the input's dtype.

The formulas are Python expressions compiled against NumPy for ``backward()`` and against
nbgrad operations for ``backward(create_graph=True)`` (see ``formula_math``); the graph widget
shows the same text.
"""

import numpy as np

from nbgrad import dtypes
from nbgrad.generated import compile_registered
from nbgrad.ops import formula_math, formula_more, gamma_kernels, nn_kernels, storage_geometry
from nbgrad.ops.formula_math import reduce_keeping
from nbgrad.ops.spec import OpSpec

OPS = {}


def op(name, node, inputs, grads, forward, **options):
    spec = OpSpec(name, node, inputs, grads, forward, **options)
    OPS[name] = spec
    return spec


# --- arithmetic --------------------------------------------------------------------------------
# Tensors broadcast against each other and Python numbers; inputs that need no grad cost nothing.

op("add", "AddBackward0", ("self", "other"), {"self": "grad", "other": "grad"},
   np.add, saves=("alpha",), constants={"alpha": 1}, promote=True, layout="elementwise")
op("add_scaled", "AddBackward0", ("self", "other"), {"self": "grad", "other": "grad * alpha"},
   lambda self, other, alpha: self + alpha * other, attrs=("alpha",), saves=("alpha",),
   promote=True, layout="elementwise")
op("sub", "SubBackward0", ("self", "other"), {"self": "grad", "other": "-grad"},
   np.subtract, saves=("alpha",), constants={"alpha": 1}, promote=True, layout="elementwise")
op("sub_scaled", "SubBackward0", ("self", "other"), {"self": "grad", "other": "-grad * alpha"},
   lambda self, other, alpha: self - alpha * other, attrs=("alpha",), saves=("alpha",),
   promote=True, layout="elementwise")
op("rsub", "RsubBackward1", ("self",), {"self": "-grad * alpha"},
   lambda self, other, alpha: other - alpha * self, attrs=("other", "alpha"), saves=("alpha",),
   promote=True)
op("mul", "MulBackward0", ("self", "other"),
   {"self": "grad * other", "other": "grad * self"},
   np.multiply, saves=("other", "self"), promote=True, layout="elementwise")
op("div", "DivBackward0", ("self", "other"),
   # div_tensor_other_backward's order, -grad * ((self / other) / other): create_graph records
   # PyTorch's nodes
   {"self": "grad / other", "other": "-grad * ((self / other) / other)"},
   np.true_divide, saves=("other", "self"), promote=True, floating=True, layout="elementwise")
op("div_rounded", "DivBackward2", ("self", "other"),
   # A step function is flat: zero gradients, shaped as PyTorch's formulas shape them. An
   # explicit rounding_mode=None is this node too, dividing truly.
   {"self": "grad / other if rounding_mode is None else zeros_like(grad / other)",
    "other": "-grad * self / (other * other) if rounding_mode is None else "
             "zeros_like(grad * self / other)"},
   lambda self, other, rounding_mode: _rounded_divide(self, other, rounding_mode),
   attrs=("rounding_mode",), saves=("other", "rounding_mode", "self"), promote=True,
   layout="elementwise")
# remainder and fmod: the result moves with self at slope 1; a tensor divisor moves it at
# -floor(self / other) (remainder) or -trunc(self / other) (fmod), as derivatives.yaml says.
op("remainder", "RemainderBackward0", ("self",), {"self": "grad"},
   lambda self, other: np.remainder(self, other), attrs=("other",), same_shape=True)
op("remainder_tensor", "RemainderBackward1", ("self", "other"),
   {"self": "grad", "other": "-grad * rounded_divide(self, other, 'floor')"},
   np.remainder, saves=("other", "self"), promote=True, layout="elementwise")
op("fmod", "FmodBackward0", ("self",), {"self": "grad"},
   lambda self, other: np.fmod(self, other), attrs=("other",), same_shape=True)
op("fmod_tensor", "FmodBackward1", ("self", "other"),
   {"self": "grad", "other": "-grad * rounded_divide(self, other, 'trunc')"},
   np.fmod, saves=("other", "self"), promote=True, layout="elementwise")
op("neg", "NegBackward0", ("self",), {"self": "-grad"}, np.negative, same_shape=True,
   inplace=True)
op("pow", "PowBackward0", ("self",),
   # pow_backward's order: grad * (exponent * self.pow(exponent - 1)), the inner product being
   # the Scalar overload (create_graph records MulBackward1 below MulBackward0, as PyTorch does)
   {"self": "0 * grad if exponent == 0 else "
            "grad * scalar_times(exponent, power(self, exponent - 1.0))"},
   formula_math.power, attrs=("exponent",), saves=("self", "exponent"))
op("pow_tensor", "PowBackward1", ("self", "exponent"),
   {"self": "where(exponent == 0, 0 * grad, grad * exponent * self ** (exponent - 1))",
    "exponent": "grad * where((self == 0) & (exponent >= 0), 0 * result, result * log(self))"},
   # saved in PyTorch's order (inputs, then the result): it packs them and checks their
   # versions at backward in that order
   np.power, saves=("exponent", "self", "result"), promote=True, layout="elementwise")
op("rpow", "PowBackward2", ("exponent",),
   {"exponent": "grad * result * scalar_log(self) if self != 0 else "
                "grad * where(exponent >= 0, 0 * result, result * scalar_log(self))"},
   lambda exponent, self: np.power(self, exponent), attrs=("self",),
   saves=("self", "exponent", "result"), layout="contiguous")
op("maximum", "MaximumBackward0", ("self", "other"),
   {"self": "where(self > other, grad, where(self == other, grad / 2, 0 * grad))",
    "other": "where(other > self, grad, where(self == other, grad / 2, 0 * grad))"},
   np.maximum, saves=("other", "self"), promote=True, layout="elementwise")
op("minimum", "MinimumBackward0", ("self", "other"),
   {"self": "where(self < other, grad, where(self == other, grad / 2, 0 * grad))",
    "other": "where(other < self, grad, where(self == other, grad / 2, 0 * grad))"},
   np.minimum, saves=("other", "self"), promote=True, layout="elementwise")

# --- backward functions that are ops of their own --------------------------------------------
# PyTorch computes many first derivatives with a function of their own, itself an op with an
# entry (``sigmoid: self: sigmoid_backward(grad, result)``), so that differentiating a gradient
# (``create_graph=True``) records that function's node: SigmoidBackwardBackward0, with its
# ``_saved_grad_output`` and ``_saved_output``. Each entry here is such a function. Its forward
# is written in the formulas' language; formulas call it by name (its arguments: tensors, then
# the rest, in the entry's order), which runs the forward on arrays in a plain backward, and
# the op itself under create_graph. The graph widget shows a call by its forward's text.

BACKWARD_FUNCTIONS = {}  # name -> (its parameters, its forward's text or None)


def backward_function(name, node, inputs, text, grads, attrs=(), **options):
    """``text``: the forward in the formulas' language, or the NumPy kernel that computes it
    when the formulas' language cannot say it shortly (the losses')."""
    params = (*inputs, *attrs)
    if callable(text):
        forward, text = text, None
    else:
        source = f"lambda {', '.join(params)}: {text}"
        forward = eval(  # noqa: S307 - our own table
            compile_registered(source, f"<{name}>", "eval"),
            {**formula_math.ARRAY_NAMESPACE, "__name__": "nbgrad.ops.formulas"},
        )
    formula_math.ARRAY_NAMESPACE[name] = forward  # before its own formulas, which may call it
    BACKWARD_FUNCTIONS[name] = (params, text)
    # PyTorch's code generator saves everything a backward function's formulas read, whichever
    # inputs need a gradient (it skips that trimming for *_backward ops): ``joint``.
    return op(name, node, inputs, grads, forward, attrs=attrs, promote=True, joint=True,
              **options)


backward_function(
    "sigmoid_backward", "SigmoidBackwardBackward0", ("grad_output", "output"),
    "grad_output * output * (1 - output)",
    {"grad_output": "sigmoid_backward(grad, output)",
     "output": "grad * grad_output * (-2 * output + 1)"},
    saves=("grad_output", "output"))
backward_function(
    "tanh_backward", "TanhBackwardBackward0", ("grad_output", "output"),
    "grad_output * (1 - output * output)",
    {"grad_output": "tanh_backward(grad, output)",
     "output": "grad * (-2 * output * grad_output)"},
    saves=("grad_output", "output"))
# ReLU's gradient is threshold_backward(grad, result, 0): it passes where the input was above
# the threshold; as a function of that input it is flat, so its own gradient there is zero.
backward_function(
    "threshold_backward", "ThresholdBackwardBackward0", ("grad_output", "self"),
    "where(self <= threshold, 0 * grad_output, grad_output)",
    {"grad_output": "threshold_backward(grad, self, threshold)", "self": "zeros_like(grad)"},
    attrs=("threshold",), saves=("self", "threshold"))
backward_function(
    "leaky_relu_backward", "LeakyReluBackwardBackward0", ("grad_output", "self"),
    "where(self > 0, grad_output, grad_output * negative_slope)",
    {"grad_output": "leaky_relu_backward(grad, self, negative_slope, False)",
     "self": "zeros_like(grad)"},
    attrs=("negative_slope", "self_is_result"), saves=("negative_slope", "self"))
backward_function(
    "hardtanh_backward", "HardtanhBackwardBackward0", ("grad_output", "self"),
    "where((self > min_val) & (self < max_val), grad_output, 0 * grad_output)",
    {"grad_output": "hardtanh_backward(grad, self, min_val, max_val)",
     "self": "zeros_like(grad)"},
    attrs=("min_val", "max_val"), saves=("max_val", "min_val", "self"))
backward_function(
    "hardshrink_backward", "HardshrinkBackwardBackward0", ("grad_out", "self"),
    "where((self >= -lambd) & (self <= lambd), 0 * grad_out, grad_out)",
    {"grad_out": "hardshrink_backward(grad, self, lambd)", "self": "zeros_like(grad)"},
    attrs=("lambd",), saves=("lambd", "self"))
backward_function(
    "softshrink_backward", "SoftshrinkBackwardBackward0", ("grad_output", "self"),
    "where((self >= -lambd) & (self <= lambd), 0 * grad_output, grad_output)",
    {"grad_output": "softshrink_backward(grad, self, lambd)", "self": "zeros_like(grad)"},
    attrs=("lambd",), saves=("lambd", "self"))
backward_function(
    "hardswish_backward", "HardswishBackwardBackward0", ("grad_output", "self"),
    "where(self < -3, 0 * grad_output, where(self <= 3, grad_output * (self / 3 + 0.5), "
    "grad_output))",
    {"grad_output": "hardswish_backward(grad, self)",
     "self": "where((self > -3) & (self < 3), grad * grad_output / 3.0, 0 * grad)"},
    saves=("grad_output", "self"))
# elu (and selu, celu, in place too) differentiates through elu_backward, whose second input is
# the input, or the result for the in-place forms (is_result): its slope below zero depends on it.
backward_function(
    "elu_backward", "EluBackwardBackward0", ("grad_output", "self_or_result"),
    "where(self_or_result > 0, grad_output * scale, grad_output * input_scale * "
    "(self_or_result + elu_result_alpha(alpha) * scale)) if is_result else "
    "where(self_or_result > 0, grad_output * scale, "
    "grad_output * input_scale * (alpha * scale) * exp(self_or_result * input_scale))",
    {"grad_output": "elu_backward(grad, self_or_result, alpha, scale, input_scale, is_result)",
     "self_or_result": "where(self_or_result < 0, grad * grad_output * input_scale, 0 * grad) "
                       "if is_result else where(self_or_result < 0, grad * grad_output * "
                       "input_scale * input_scale * (alpha * scale) * "
                       "exp(self_or_result * input_scale), 0 * grad)"},
    attrs=("alpha", "scale", "input_scale", "is_result"),
    saves=("alpha", "grad_output", "input_scale", "is_result", "scale", "self_or_result"))
backward_function(
    "softplus_backward", "SoftplusBackwardBackward0", ("grad_output", "self"),
    "where(self * beta > threshold, grad_output, grad_output * sigmoid(self * beta))",
    {"grad_output": "softplus_backward(grad, self, beta, threshold)",
     "self": "where(self * beta > threshold, 0 * grad, grad * grad_output * beta * "
             "sigmoid(self * beta) * (1 - sigmoid(self * beta)))"},
    attrs=("beta", "threshold"), saves=("beta", "grad_output", "self", "threshold"))
# softmax's gradient y * (g - sum(g * y)); differentiated in y: g - sum(g * y) times the incoming
# gradient, less g times the sum of the incoming gradient times y.
backward_function(
    "softmax_backward_data", "SoftmaxBackwardDataBackward0", ("grad_output", "output"),
    "output * (grad_output - sum_dim(grad_output * output, dim, True))",
    {"grad_output": "softmax_backward_data(grad, output, dim)",
     "output": "grad * (grad_output - sum_dim(grad_output * output, dim, True)) "
               "- grad_output * sum_dim(grad * output, dim, True)"},
    attrs=("dim",), saves=("dim", "grad_output", "output"))
backward_function(
    "log_softmax_backward_data", "LogSoftmaxBackwardDataBackward0", ("grad_output", "output"),
    "grad_output - exp(output) * sum_dim(grad_output, dim, True)",
    {"grad_output": "grad - sum_dim(grad * exp(output), dim, True)",
     "output": "-sum_dim(grad_output, dim, True) * exp(output) * grad"},
    attrs=("dim",), saves=("dim", "grad_output", "output"))

# --- element-wise functions ---------------------------------------------------------------------
# The flags make the public names (ops/public.py): ``function`` nbgrad.exp, ``method`` x.exp(),
# ``inplace`` x.exp_() and nbgrad.exp_, ``out`` nbgrad.exp(x, out=y).

op("exp", "ExpBackward0", ("self",), {"self": "grad * result"}, np.exp, saves=("result",),
   floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("log", "LogBackward0", ("self",), {"self": "grad / self"}, np.log, saves=("self",),
   floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("sin", "SinBackward0", ("self",), {"self": "grad * cos(self)"}, np.sin, saves=("self",),
   floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("cos", "CosBackward0", ("self",), {"self": "-grad * sin(self)"}, np.cos, saves=("self",),
   floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("tan", "TanBackward0", ("self",), {"self": "grad * (1 + result * result)"}, np.tan,
   saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("tanh", "TanhBackward0", ("self",), {"self": "tanh_backward(grad, result)"}, np.tanh,
   saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("sigmoid", "SigmoidBackward0", ("self",), {"self": "sigmoid_backward(grad, result)"},
   lambda self: 0.5 * np.tanh(0.5 * self) + 0.5, saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("relu", "ReluBackward0", ("self",), {"self": "threshold_backward(grad, result, 0)"},
   lambda self: np.maximum(self, 0), saves=("result",), same_shape=True,
   function=True, method=True, inplace=True)  # torch.relu takes no out=
op("sqrt", "SqrtBackward0", ("self",), {"self": "grad / (2 * result)"}, np.sqrt,
   saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("rsqrt", "RsqrtBackward0", ("self",), {"self": "-0.5 * grad * result * result * result"},
   lambda self: 1 / np.sqrt(self), saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("reciprocal", "ReciprocalBackward0", ("self",), {"self": "-grad * (result * result)"},
   np.reciprocal, saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("abs", "AbsBackward0", ("self",), {"self": "grad * sign(self)"}, np.abs, saves=("self",),
   same_shape=True, function=True, method=("abs", "absolute"), inplace=True, out=True)
op("sign", "SignBackward0", ("self",), {"self": "zeros_like(grad)"}, lambda self: _sign(self),
   same_shape=True,
   function=True, method=True, inplace="method", out=True)  # PyTorch has no torch.sign_
# Step functions: flat almost everywhere, so their gradient is zero (but they are recorded).
op("floor", "FloorBackward0", ("self",), {"self": "zeros_like(grad)"}, np.floor, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("ceil", "CeilBackward0", ("self",), {"self": "zeros_like(grad)"}, np.ceil, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("trunc", "TruncBackward0", ("self",), {"self": "zeros_like(grad)"}, np.trunc, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("round", "RoundBackward0", ("self",), {"self": "zeros_like(grad)"}, np.round, same_shape=True,
   inplace=True)
op("round_decimals", "RoundBackward1", ("self",), {"self": "zeros_like(grad)"},
   lambda self, decimals: np.round(self, decimals), attrs=("decimals",))
op("log1p", "Log1PBackward0", ("self",), {"self": "grad / scalar_plus(self, 1)"},
   np.log1p, saves=("self",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("expm1", "Expm1Backward0", ("self",), {"self": "grad * scalar_plus(result, 1)"},
   np.expm1, saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("erf", "ErfBackward0", ("self",),
   {"self": "1.1283791670955126 * exp(-self ** 2) * grad"},  # 2 / sqrt(pi)
   nn_kernels.erf, saves=("self",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("clamp", "ClampBackward1", ("self",), {"self": "clamp_backward(grad, self, min, max)"},
   lambda self, min, max: np.clip(self, min, max), attrs=("min", "max"),  # noqa: A006
   saves=("min", "max", "self"))
op("clamp_min", "ClampMinBackward0", ("self",), {"self": "clamp_backward(grad, self, min, None)"},
   lambda self, min: np.maximum(self, min), attrs=("min",), saves=("min", "self"))  # noqa: A006
op("clamp_max", "ClampMaxBackward0", ("self",), {"self": "clamp_backward(grad, self, None, max)"},
   lambda self, max: np.minimum(self, max), attrs=("max",), saves=("max", "self"))  # noqa: A006
op("clamp_min_tensor", "ClampMinBackward1", ("self", "min"),
   {"self": "clamp_backward(grad, self, min, None)", "min": "where(self < min, grad, 0 * grad)"},
   np.maximum, saves=("min", "self"), promote=True, layout="elementwise")
op("clamp_max_tensor", "ClampMaxBackward1", ("self", "max"),
   {"self": "clamp_backward(grad, self, None, max)", "max": "where(self > max, grad, 0 * grad)"},
   np.minimum, saves=("max", "self"), promote=True, layout="elementwise")
op("clamp_tensor", "ClampBackward0", ("self", "min", "max"),
   {"self": "clamp_backward(grad, self, min, max)",
    "min": "where(self < min, grad, 0 * grad)", "max": "where(self > max, grad, 0 * grad)"},
   lambda self, min, max: np.clip(self, min, max),  # noqa: A006
   saves=("max", "min", "self"), promote=True, layout="elementwise")
op("where", "WhereBackward0", ("self", "other"),
   {"self": "where(condition, grad, 0)", "other": "where(condition, 0, grad)"},
   lambda self, other, condition: np.where(condition, self, other), attrs=("condition",),
   saves=("condition",), promote=True,
   layout="elementwise", layout_from=("condition", "self", "other"))
op("masked_fill", "MaskedFillBackward0", ("self",), {"self": "masked_zero(grad, mask)"},
   lambda self, mask, value: np.where(mask, np.asarray(value, self.dtype), self),
   attrs=("mask", "value"), saves=("mask",), layout="contiguous")
op("masked_fill_tensor", "MaskedFillBackward1", ("self", "value"),
   {"self": "masked_zero(grad, mask)", "value": "where(mask, grad, 0 * grad)"},
   lambda self, value, mask: np.where(mask, value.astype(self.dtype), self),
   attrs=("mask",), saves=("mask",), layout="contiguous")
op("softmax", "SoftmaxBackward0", ("self",),
   {"self": "softmax_backward_data(grad, result, dim)"},
   lambda self, dim: _softmax(self, dim), attrs=("dim",), saves=("dim", "result"),
   floating=True, same_shape=True, layout="contiguous")
op("log_softmax", "LogSoftmaxBackward0", ("self",),
   {"self": "log_softmax_backward_data(grad, result, dim)"},
   lambda self, dim: _log_softmax(self, dim), attrs=("dim",), saves=("dim", "result"),
   floating=True, same_shape=True, layout="contiguous")


def _rounded_divide(a, b, rounding_mode):
    quotient = np.true_divide(a, b)
    if rounding_mode is None:  # true division: integers give the default float dtype
        from nbgrad import dtypes

        kind = np.result_type(a, b)
        return quotient.astype(kind if kind.kind == "f" else dtypes.get_default_dtype().numpy,
                               copy=False)
    rounded = np.floor(quotient) if rounding_mode == "floor" else np.trunc(quotient)
    return rounded.astype(np.result_type(a, b), copy=False)


def _sign(x):
    """np.sign, but 0 for nan as in PyTorch."""
    out = np.sign(x)
    if out.dtype.kind == "f":
        out = np.where(np.isnan(out), out.dtype.type(0), out)
    return out


def _expand(x, size):
    """``np.broadcast_to``, writeable as PyTorch's expand is: a write into elements it repeats
    is refused before it happens (dispatch's overlap check), one into the others is allowed."""
    view = np.broadcast_to(x, size)
    # PyTorch's strides: 0 for new and stretched dims, the input's own for the others.
    new = view.ndim - x.ndim
    strides = view.strides[:new] + tuple(
        stride if n == m else 0 for n, m, stride in zip(x.shape, view.shape[new:], x.strides)
    )
    return np.lib.stride_tricks.as_strided(
        x, view.shape, strides, writeable=x.flags.writeable
    )


def _mean(x):
    """NumPy's mean without its Python-level wrapper: the same sum, divided the same way."""
    return np.add.reduce(x, axis=None) / x.size


def _axis(x, dim):
    """NumPy's axis for PyTorch's dim: a 0-d tensor accepts dim 0 or -1, NumPy no axis at all."""
    return None if x.ndim == 0 or dim == () else dim


# A softmax runs in every classifier's loss: its reductions skip ndarray.max's and .sum's
# Python-level wrappers, and take NumPy's fast way over short rows (formula_math).


def _softmax(x, dim):
    if x.size == 0:
        return x.copy()
    axis = _axis(x, dim)
    shifted = np.exp(x - reduce_keeping(np.maximum, x, axis))
    return shifted / reduce_keeping(np.add, shifted, axis)


def _log_softmax(x, dim):
    if x.size == 0:
        return x.copy()
    axis = _axis(x, dim)
    shifted = x - reduce_keeping(np.maximum, x, axis)
    return shifted - np.log(reduce_keeping(np.add, np.exp(shifted), axis))


# --- matrix products ----------------------------------------------------------------------------

op("mm", "MmBackward0", ("self", "mat2"),
   {"self": "grad @ matrix_t(mat2)", "mat2": "matrix_t(self) @ grad"},
   np.matmul, saves=("mat2", "mat2_sym_sizes", "mat2_sym_strides", "self", "self_sym_sizes",
                     "self_sym_strides"), promote=True)
op("mv", "MvBackward0", ("self", "vec"),
   {"self": "outer(grad, vec)", "vec": "matrix_t(self) @ grad"},
   np.matmul, saves=("self", "vec"), promote=True)
op("dot", "DotBackward0", ("self", "tensor"),
   {"self": "grad * tensor", "tensor": "grad * self"},
   np.dot, saves=("self", "tensor"), promote=True)
op("bmm", "BmmBackward0", ("self", "mat2"),
   {"self": "grad @ swap_last(mat2)", "mat2": "swap_last(self) @ grad"},
   np.matmul, saves=("mat2", "self"), promote=True)
op("addmm", "AddmmBackward0", ("self", "mat1", "mat2"),
   {"self": "grad", "mat1": "grad @ matrix_t(mat2)", "mat2": "matrix_t(mat1) @ grad"},
   lambda self, mat1, mat2: _add_product(self, mat1 @ mat2), constants={"alpha": 1, "beta": 1},
   saves=("alpha", "beta", "mat1", "mat1_sym_sizes", "mat1_sym_strides", "mat2",
          "mat2_sym_sizes", "mat2_sym_strides"), promote=True)
op("addmm_scaled", "AddmmBackward0", ("self", "mat1", "mat2"),
   {"self": "grad * beta", "mat1": "grad @ matrix_t(mat2) * alpha",
    "mat2": "matrix_t(mat1) @ grad * alpha"},
   lambda self, mat1, mat2, beta, alpha: _addmm(self, mat1, mat2, beta, alpha),
   attrs=("beta", "alpha"),
   saves=("alpha", "beta", "mat1", "mat1_sym_sizes", "mat1_sym_strides", "mat2",
          "mat2_sym_sizes", "mat2_sym_strides"), promote=True)


def _add_product(bias, product):
    product += bias
    return product


def _addmm(bias, mat1, mat2, beta, alpha, sum_batches=False):
    product = mat1 @ mat2
    if sum_batches:  # addbmm: the batch of products, added up
        product = product.sum(axis=0)
    if alpha != 1:
        product *= alpha
    if beta != 0:  # with beta=0 PyTorch ignores the bias, nan and inf included
        product += bias if beta == 1 else beta * bias
    return product


# --- reductions ---------------------------------------------------------------------------------

# The reductions that take ``dtype=`` accumulate in it (a NumPy dtype, None for the input's);
# the gradient comes back in the input's dtype.
op("sum", "SumBackward0", ("self",), {"self": "expand(grad, self_sym_sizes)"},
   lambda self, dtype: self.sum(dtype=dtype), attrs=("dtype",), saves=("self_sym_sizes",))
op("sum_dim", "SumBackward1", ("self",),
   {"self": "expand(restore_reduced(grad, self_sym_sizes, dim, keepdim), self_sym_sizes)"},
   lambda self, dim, keepdim, dtype: self.sum(axis=_axis(self, dim), keepdims=keepdim,
                                              dtype=dtype),
   attrs=("dim", "keepdim", "dtype"), saves=("dim", "keepdim", "self_sym_sizes"),
   layout="contiguous")
op("mean", "MeanBackward0", ("self",),
   {"self": "expand(grad, self_sym_sizes) / self_sym_numel"},  # a new tensor, as PyTorch's
   lambda self, dtype: _mean(self if dtype is None else self.astype(dtype)), attrs=("dtype",),
   saves=("self_sym_numel", "self_sym_sizes"), floating=True)
op("mean_dim", "MeanBackward1", ("self",),
   {"self": "expand(restore_reduced(grad, self_sym_sizes, dim, keepdim), self_sym_sizes)"
            " / reduced_count(self_sym_sizes, dim)"},
   lambda self, dim, keepdim, dtype: self.mean(axis=_axis(self, dim), keepdims=keepdim,
                                               dtype=dtype),
   attrs=("dim", "keepdim", "dtype"),
   saves=("dim", "keepdim", "self_sym_numel", "self_sym_sizes"), floating=True,
   layout="contiguous")
op("max", "MaxBackward1", ("self",), {"self": "evenly_distribute(grad, self, result)"},
   lambda self: self.max(), saves=("result", "self"))
op("min", "MinBackward1", ("self",), {"self": "evenly_distribute(grad, self, result)"},
   lambda self: self.min(), saves=("result", "self"))
op("max_dim", "MaxBackward0", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, keepdim)"},
   lambda self, dim, keepdim: _select_extreme(self, dim, keepdim, np.argmax),
   attrs=("dim", "keepdim"), extra_outputs=("indices",),
   saves=("dim", "indices", "keepdim", "self_sym_sizes"), layout="contiguous")
op("min_dim", "MinBackward0", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, keepdim)"},
   lambda self, dim, keepdim: _select_extreme(self, dim, keepdim, np.argmin),
   attrs=("dim", "keepdim"), extra_outputs=("indices",),
   saves=("dim", "indices", "keepdim", "self_sym_sizes"), layout="contiguous")
op("amax", "AmaxBackward0", ("self",), {"self": "amax_backward(grad, self, result, dim, keepdim)"},
   lambda self, dim, keepdim: self.max(axis=_axis(self, dim), keepdims=keepdim),
   attrs=("dim", "keepdim"), saves=("dim", "keepdim", "result", "self"), layout="contiguous")
op("amin", "AminBackward0", ("self",), {"self": "amax_backward(grad, self, result, dim, keepdim)"},
   lambda self, dim, keepdim: self.min(axis=_axis(self, dim), keepdims=keepdim),
   attrs=("dim", "keepdim"), saves=("dim", "keepdim", "result", "self"), layout="contiguous")


def _select_extreme(x, dim, keepdim, arg):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    indices = arg(x, axis=dim, keepdims=True)
    values = np.take_along_axis(x, indices, axis=dim)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values, indices


# --- shapes and views ---------------------------------------------------------------------------
# These share memory with their input (``view=True``), as PyTorch's views do: an in-place change
# through one is seen by the other, and both count as modified.

op("view", "ViewBackward0", ("self",), {"self": "reshape(grad, self_sym_sizes)"},
   np.reshape, attrs=("shape",), saves=("self_sym_sizes",), view=True)
op("reshape_alias", "ReshapeAliasBackward0", ("self",), {"self": "reshape(grad, self_sym_sizes)"},
   np.reshape, attrs=("shape",), saves=("self_sym_sizes",), view=True)
op("alias", "AliasBackward0", ("self",), {"self": "grad"}, lambda self: self[...], view=True)
op("unsafe_view", "UnsafeViewBackward0", ("self",), {"self": "reshape(grad, self_sym_sizes)"},
   np.reshape, attrs=("shape",), saves=("self_sym_sizes",))
op("t", "TBackward0", ("self",), {"self": "matrix_t(grad)"}, np.transpose, view=True)
op("transpose", "TransposeBackward0", ("self",), {"self": "transpose(grad, dim0, dim1)"},
   lambda self, dim0, dim1: self[...] if self.ndim == 0 else np.swapaxes(self, dim0, dim1),
   attrs=("dim0", "dim1"), saves=("dim0", "dim1"), view=True)
op("permute", "PermuteBackward0", ("self",), {"self": "permute_back(grad, dims)"},
   np.transpose, attrs=("dims",), saves=("dims",), view=True)
op("unsqueeze", "UnsqueezeBackward0", ("self",), {"self": "squeeze(grad, dim)"},
   np.expand_dims, attrs=("dim",), saves=("dim",), view=True)
op("squeeze", "SqueezeBackward0", ("self",), {"self": "reshape(grad, self_sym_sizes)"},
   np.squeeze, saves=("self_sym_sizes",), view=True)
op("squeeze_dim", "SqueezeBackward1", ("self",), {"self": "reshape(grad, self_sym_sizes)"},
   lambda self, dim: np.squeeze(self, dim) if self.ndim and self.shape[dim] == 1 else self[...],
   attrs=("dim",), saves=("dim", "self_sym_sizes"), view=True)
op("squeeze_dims", "SqueezeBackward4", ("self",), {"self": "reshape(grad, self_sym_sizes)"},
   lambda self, dim: np.squeeze(self, dim), attrs=("dim",), saves=("dim", "self_sym_sizes"),
   view=True)
op("expand", "ExpandBackward0", ("self",), {"self": "sum_to(grad, self_sym_sizes)"},
   lambda self, size: _expand(self, size), attrs=("size",), saves=("self_sym_sizes",),
   view=True)
op("select", "SelectBackward0", ("self",),
   {"self": "select_backward(grad, self_sym_sizes, dim, index)"},
   # The trailing ``...`` makes NumPy return a 0-d view, not a copied scalar, for a 1-d tensor.
   lambda self, dim, index: self[(slice(None),) * dim + (index, Ellipsis)],
   attrs=("dim", "index"), saves=("dim", "index", "self_sym_sizes"), view=True)
op("slice", "SliceBackward0", ("self",),
   {"self": "slice_backward(grad, self_sym_sizes, dim, start, end, step)"},
   storage_geometry.sliced, attrs=("dim", "start", "end", "step"),
   saves=("dim", "end", "self_sym_sizes", "start", "step"), view=True)
# The view any view is, once an in-place write went through it or one of its siblings: PyTorch
# then describes it by its geometry in the base's storage (size, stride, offset, in elements).
# Backward also reads where the input itself lies there, which PyTorch keeps but does not show.
op("as_strided", "AsStridedBackward0", ("self",),
   {"self": "as_strided_backward(grad, self_geometry, size, stride, storage_offset)"},
   lambda self, size, stride, storage_offset, self_geometry: storage_geometry.as_strided_view(
       self, self_geometry, size, stride, storage_offset),
   attrs=("size", "stride", "storage_offset", "self_geometry"),
   saves=("self_geometry", "size", "storage_offset", "stride"), hidden=("self_geometry",),
   view=True)
op("index", "IndexBackward0", ("self",),
   {"self": "index_backward(grad, self_sym_sizes, indices)"},
   lambda self, indices: self[indices], attrs=("indices",),
   saves=("indices", "self_sym_sizes"), layout="advanced_index", layout_from=("self", "indices"))
op("gather", "GatherBackward0", ("self",),
   {"self": "gather_backward(grad, self.shape, dim, index)"},
   # Index's shape, which may be smaller than self's (np.take_along_axis would broadcast it).
   lambda self, dim, index, sparse_grad: self[formula_math._gather_key(index, dim)]
   if self.ndim else self.copy(),
   attrs=("dim", "index", "sparse_grad"), saves=("dim", "index", "self", "sparse_grad"))
op("cat", "CatBackward0", ("tensors",), {"tensors": "split_along(grad, dim, tensors_sym_sizes)"},
   lambda tensors, dim: np.concatenate(tensors, axis=dim), attrs=("dim",),
   saves=("dim", "tensors_sym_sizes"), hidden=("tensors_sym_sizes",), variadic=True,
   layout="contiguous")
op("stack", "StackBackward0", ("tensors",),
   {"tensors": "unstack(grad, dim, len(tensors_sym_sizes))"},
   lambda tensors, dim: np.stack(tensors, axis=dim), attrs=("dim",),
   saves=("dim", "tensors_sym_sizes"), hidden=("tensors_sym_sizes",), variadic=True,
   layout="contiguous")
op("clone", "CloneBackward0", ("self",), {"self": "grad"}, np.array, same_shape=True,
   layout="like_self")
op("to_dtype", "ToCopyBackward0", ("self",), {"self": "astype(grad, self_dtype)"},
   lambda self, dtype: self.astype(dtype.numpy), attrs=("dtype",), saves=("self_dtype",),
   hidden=("self_dtype",), layout="like_self")  # PyTorch keeps the input's options privately

# The backward of the indexing ops, as ops of their own, so that create_graph can differentiate
# a gradient that went through indexing.
op("select_backward", "SelectBackwardBackward0", ("grad_output",),
   {"grad_output": "grad[(slice(None),) * dim + (index,)]"},
   lambda grad_output, sizes, dim, index: formula_math.select_backward(
       grad_output, sizes, dim, index),
   attrs=("sizes", "dim", "index"), saves=("dim", "index"))
op("slice_backward", "SliceBackwardBackward0", ("grad_output",),
   {"grad_output": "grad[(slice(None),) * dim + (slice(start, end, step),)]"},
   lambda grad_output, sizes, dim, start, end, step: formula_math.slice_backward(
       grad_output, sizes, dim, start, end, step),
   attrs=("sizes", "dim", "start", "end", "step"), saves=("dim", "end", "start", "step"))
op("index_put_into_zeros", "IndexPutBackward0", ("values",), {"values": "grad[indices]"},
   lambda values, sizes, indices: formula_math.index_backward(values, sizes, indices),
   attrs=("sizes", "indices"), saves=("indices",))

# --- in-place writes ----------------------------------------------------------------------------
# Run by the in-place machinery: the forward computes the new value, which is then written into
# the tensor's own memory; ``self`` below is the tensor's value before the write.

op("copy_slices", "CopySlices", ("self", "src"),
   {"self": "zero_at(grad, key)", "src": "grad[key]"},
   lambda self, src, key: _assign(self, key, src), attrs=("key",), saves=("key",),
   hidden=("key",))
op("index_put", "IndexPutBackward0", ("self", "values"),
   {"self": "zero_at(grad, indices)", "values": "grad[indices]"},
   lambda self, values, indices, accumulate: _assign(self, indices, values),
   attrs=("indices", "accumulate"), saves=("accumulate", "indices"), layout="like_self")
op("fill_whole", "FillBackward3", ("self", "value"),
   {"self": "zeros_like(grad)", "value": "grad"},  # summed to value's 0-d shape
   lambda self, value: np.full_like(self, value))
op("copy", "CopyBackwards", ("self", "src"), {"self": "zeros_like(grad)", "src": "grad"},
   lambda self, src: np.broadcast_to(src, self.shape).astype(self.dtype))
op("zero", "ZeroBackward0", ("self",), {"self": "zeros_like(grad)"}, np.zeros_like)
# fill_ is ATen's in-place overload: FillBackward2 for a number, FillBackward3 for a 0-d tensor,
# whose gradient is the sum of the gradient of every element it was written to.
op("fill", "FillBackward2", ("self",), {"self": "zeros_like(grad)"},
   lambda self, value: np.full_like(self, value), attrs=("value",))
op("fill_tensor", "FillBackward3", ("self", "value"),
   {"self": "zeros_like(grad)", "value": "grad"},
   lambda self, value: np.full_like(self, value), promote=True)


def _assign(array, key, value):
    out = array.copy()
    out[key] = value
    return out


# --- neural-network layers ---------------------------------------------------------------------
# The layers of nbgrad.nn, with the backward nodes PyTorch gives them; their NumPy kernels are in
# nn_kernels. Arguments that are tensors but never get a gradient (a loss's target and class
# weights, batch norm's running statistics, embedding indices) are attrs here, as in PyTorch,
# where they have no edge in next_functions but are still shown as ``_saved_*`` tensors.
# Reductions are PyTorch's enum: 0 = "none", 1 = "mean", 2 = "sum".

# The helpers of the backward functions below that are ops of their own (their Tensor versions
# join the formulas' Tensor namespace in formula_tensor).
from nbgrad.ops import double_backward_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(double_backward_kernels.ARRAY_FUNCTIONS)

# ConvolutionBackward0: one formula (convolution_backward) for every input in PyTorch, so input
# and weight are saved whichever needs a gradient (joint). convolution_backward is an op of its
# own (see "the layers' backward functions, as ops"): a gradient of the gradient records
# ConvolutionBackwardBackward0. All four convolution entries share these formulas.
_CONVOLUTION_GRADS = {
    name: f"convolution_backward_output({k}, grad, input, weight, stride, padding, dilation, "
          "transposed, output_padding, groups)"
    for k, name in enumerate(("input", "weight", "bias"))}
op("convolution", "ConvolutionBackward0", ("input", "weight", "bias"), _CONVOLUTION_GRADS,
   lambda x, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
   bias_sym_sizes_opt: nn_kernels.convolution(x, weight, bias, stride, padding, dilation, groups),
   attrs=("stride", "padding", "dilation", "transposed", "output_padding", "groups",
          "bias_sym_sizes_opt"),
   saves=("bias_sym_sizes_opt", "dilation", "groups", "input", "output_padding", "padding",
          "stride", "transposed", "weight"),
   joint=True)
op("im2col", "Im2ColBackward0", ("self",),
   {"self": "col2im(grad, (self_sym_argsize_minus_2, self_sym_argsize_minus_1), kernel_size, "
            "dilation, padding, stride)"},
   lambda self, kernel_size, dilation, padding, stride, self_sym_argsize_minus_2,
   self_sym_argsize_minus_1: nn_kernels.unbatched_im2col(self, kernel_size, dilation, padding,
                                                         stride),
   attrs=("kernel_size", "dilation", "padding", "stride", "self_sym_argsize_minus_2",
          "self_sym_argsize_minus_1"),
   saves=("dilation", "kernel_size", "padding", "self_sym_argsize_minus_1",
          "self_sym_argsize_minus_2", "stride"))
op("col2im", "Col2ImBackward0", ("self",),
   {"self": "im2col(grad, kernel_size, dilation, padding, stride)"},
   nn_kernels.unbatched_col2im,
   attrs=("output_size", "kernel_size", "dilation", "padding", "stride"),
   saves=("dilation", "kernel_size", "padding", "stride"))
# Max pooling's backward puts each gradient at its maximum's index: linear in the gradient, flat
# in the input (PyTorch's edge to ``self`` carries zeros), so its own gradient reads the incoming
# one back at the indices (max_pool_double_backward).
backward_function(
    "max_pool2d_with_indices_backward", "MaxPool2DWithIndicesBackwardBackward0",
    ("grad_output", "self"), "max_pool2d_backward(grad_output, self.shape, indices)",
    {"grad_output": "max_pool_double_backward(grad, indices, 2)", "self": "zeros_like(grad)"},
    attrs=("kernel_size", "stride", "padding", "dilation", "ceil_mode", "indices"),
    saves=("indices",))
op("max_pool2d", "MaxPool2DWithIndicesBackward0", ("self",),
   {"self": "max_pool2d_with_indices_backward(grad, self, kernel_size, stride, padding, "
            "dilation, ceil_mode, result1)"},
   nn_kernels.max_pool2d, attrs=("kernel_size", "stride", "padding", "dilation", "ceil_mode"),
   extra_outputs=("result1",),
   saves=("ceil_mode", "dilation", "kernel_size", "padding", "result1", "self", "stride"))
op("avg_pool2d", "AvgPool2DBackward0", ("self",),
   {"self": "avg_pool2d_backward(grad, self, kernel_size, stride, padding, ceil_mode, "
            "count_include_pad, divisor_override)"},
   nn_kernels.avg_pool2d,
   attrs=("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
          "divisor_override"),
   saves=("ceil_mode", "count_include_pad", "divisor_override", "kernel_size", "padding", "self",
          "stride"))
# Average pooling is linear: its backward is an op too, whose own backward is average pooling
# again, so that backward(create_graph=True) through a pooling layer can be differentiated;
# ``self`` has PyTorch's edge (a zero gradient: only its shape matters).
op("avg_pool2d_backward", "AvgPool2DBackwardBackward0", ("grad_output", "self"),
   {"grad_output": "avg_pool2d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                   "divisor_override)",
    "self": "zeros_like(grad)"},
   lambda grad_output, self, *options: nn_kernels.avg_pool2d_backward(
       grad_output, self.shape, *options),
   attrs=("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
          "divisor_override"),
   saves=("ceil_mode", "count_include_pad", "divisor_override", "kernel_size", "padding",
          "stride"))
op("constant_pad_nd", "ConstantPadNdBackward0", ("self",),
   {"self": "constant_pad_nd(grad, [-p for p in pad])"},
   nn_kernels.constant_pad_nd, attrs=("pad", "value"), saves=("pad",))
# Reflection and replication padding copy input elements: the backward adds each copy's
# gradient back (linear in the gradient, flat in the input), and its own gradient is the padding.
for _dims in (1, 2, 3):
    for _mode, _name in (("reflect", "Reflection"), ("replicate", "Replication")):
        backward_function(
            f"{_name.lower()}_pad{_dims}d_backward", f"{_name}Pad{_dims}DBackwardBackward0",
            ("grad_output", "self"),
            f"index_pad_backward(grad_output, self.shape, padding, {_mode!r})",
            {"grad_output": f"index_pad(grad, padding, {_mode!r})", "self": "zeros_like(grad)"},
            attrs=("padding",), saves=("padding",))
        op(f"{_mode}_pad{_dims}d", f"{_name}Pad{_dims}DBackward0", ("self",),
           {"self": f"{_name.lower()}_pad{_dims}d_backward(grad, self, padding)"},
           lambda self, padding, _mode=_mode: nn_kernels.index_pad(self, padding, _mode),
           attrs=("padding",), saves=("padding", "self"), layout="contiguous")
# embedding's backward (dense: sparse=False) adds each looked-up row's gradient into its row:
# linear, so its own gradient reads the rows back.
backward_function(
    "embedding_dense_backward", "EmbeddingDenseBackwardBackward0", ("grad_output",),
    lambda grad_output, indices, num_weights, padding_idx, scale_grad_by_freq:
    nn_kernels.embedding_backward(grad_output, np.asarray(getattr(indices, "_data", indices)),
                                  num_weights, padding_idx, scale_grad_by_freq),
    {"grad_output": "embedding_dense_double_backward(grad, indices, padding_idx)"},
    attrs=("indices", "num_weights", "padding_idx", "scale_grad_by_freq"),
    saves=("indices", "padding_idx"))
op("embedding", "EmbeddingBackward0", ("weight",),
   {"weight": "embedding_backward(grad, indices, weight_sym_argsize_0, padding_idx, "
              "scale_grad_by_freq, sparse) if sparse else embedding_dense_backward(grad, "
              "indices, weight_sym_argsize_0, padding_idx, scale_grad_by_freq)"},
   lambda weight, indices, padding_idx, scale_grad_by_freq, sparse, weight_sym_argsize_0:
   weight[indices],
   attrs=("indices", "padding_idx", "scale_grad_by_freq", "sparse", "weight_sym_argsize_0"),
   saves=("indices", "padding_idx", "scale_grad_by_freq", "sparse", "weight_sym_argsize_0"))
# result1 and result2 are the mean and 1/std the forward normalised with (per row for layer
# norm, per channel for batch norm). Each layer's three gradients are one function in PyTorch,
# itself an op (native_layer_norm_backward, native_batch_norm_backward: see "the layers'
# backward functions, as ops"), so a gradient of the gradient records its node.
op("layer_norm", "NativeLayerNormBackward0", ("input", "weight", "bias"),
   {name: f"layer_norm_backward_output({k}, grad, input, normalized_shape, result1, result2, "
          "weight, bias)" for k, name in enumerate(("input", "weight", "bias"))},
   lambda x, weight, bias, normalized_shape, eps: nn_kernels.layer_norm(
       x, normalized_shape, weight, bias, eps),
   attrs=("normalized_shape", "eps"), extra_outputs=("result1", "result2"),
   saves=("bias", "input", "normalized_shape", "result1", "result2", "weight"),
   joint=True, layout="contiguous")
op("batch_norm", "NativeBatchNormBackward0", ("input", "weight", "bias"),
   {name: f"batch_norm_backward_output({k}, grad, input, weight, running_mean, running_var, "
          "result1, result2, training, eps)" for k, name in enumerate(("input", "weight", "bias"))},
   nn_kernels.batch_norm, attrs=("running_mean", "running_var", "training", "momentum", "eps"),
   extra_outputs=("result1", "result2"),
   saves=("eps", "input", "result1", "result2", "running_mean", "running_var", "training",
          "weight"), joint=True, layout="contiguous")
backward_function(
    "gelu_backward", "GeluBackwardBackward0", ("grad_output", "self"), nn_kernels.gelu_backward,
    {"grad_output": "gelu_backward(grad, self, approximate)",
     "self": "grad * grad_output * gelu_second_derivative(self, approximate)"},
    attrs=("approximate",), saves=("approximate", "grad_output", "self"))
op("gelu", "GeluBackward0", ("self",), {"self": "gelu_backward(grad, self, approximate)"},
   nn_kernels.gelu, attrs=("approximate",), saves=("approximate", "self"), floating=True)
op("leaky_relu", "LeakyReluBackward0", ("self",),
   {"self": "leaky_relu_backward(grad, self, negative_slope, False)"},
   lambda self, negative_slope: np.where(self > 0, self, self * negative_slope),
   attrs=("negative_slope",), saves=("negative_slope", "self"))
op("linalg_vector_norm", "LinalgVectorNormBackward0", ("self",),
   {"self": "norm_backward(grad, self, ord, result, dim, keepdim)"},
   nn_kernels.vector_norm, attrs=("ord", "dim", "keepdim"),
   saves=("dim", "keepdim", "ord", "result", "self"), floating=True)
# Multiplying or dividing by a Python number inside a composite layer (cross-entropy's label
# smoothing, its mean over probabilities) is ATen's Scalar overload, with its own node names.
op("mul_scalar", "MulBackward1", ("self",), {"self": "grad * other"},
   np.multiply, attrs=("other",), saves=("other",))
op("div_scalar", "DivBackward1", ("self",), {"self": "grad / other"},
   np.true_divide, attrs=("other",), saves=("other",), floating=True)

# --- losses ---
op("mse_loss", "MseLossBackward0", ("self", "target"),
   {"self": "mse_loss_backward(grad, self, target, reduction)",
    "target": "mse_loss_backward(grad, target, self, reduction)"},
   nn_kernels.mse_loss, attrs=("reduction",), saves=("reduction", "self", "target"), promote=True)
# nll_loss's backward is linear in the incoming gradient and flat in the log-probabilities: its
# own gradient is nll_loss again, of the gradient-of-gradient (PyTorch's entry, as an op too).
for _name, _node, _backward in (
    ("nll_loss", "NllLossBackward0", nn_kernels.nll_loss_backward),
    ("nll_loss2d", "NllLoss2DBackward0", nn_kernels.nll_loss2d_backward),
):
    backward_function(
        f"{_name}_backward", _node.replace("Backward0", "BackwardBackward0"),
        ("grad_output", "self"), _backward,
        {"grad_output": "nll_loss_value(grad, target, weight, reduction, ignore_index)",
         "self": "zeros_like(grad)"},
        attrs=("target", "weight", "reduction", "ignore_index", "total_weight"),
        saves=("ignore_index", "reduction", "target", "weight"))
    op(_name, _node, ("self",),
       {"self": f"{_name}_backward(grad, self, target, weight, reduction, ignore_index, "
                "total_weight)"},
       nn_kernels.nll_loss, attrs=("target", "weight", "reduction", "ignore_index"),
       extra_outputs=("total_weight",),
       saves=("ignore_index", "reduction", "self", "target", "total_weight", "weight"))
op("binary_cross_entropy", "BinaryCrossEntropyBackward0", ("self", "target"),
   {"self": "binary_cross_entropy_backward(grad, self, target, weight, reduction)",
    "target": "binary_cross_entropy_target_backward(grad, self, target, weight, reduction)"},
   nn_kernels.binary_cross_entropy, attrs=("weight", "reduction"),
   saves=("reduction", "self", "target", "weight"))
op("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0",
   ("self", "target"),
   {"self": "binary_cross_entropy_with_logits_backward(grad, self, target, weight, pos_weight, "
            "reduction)",
    "target": "binary_cross_entropy_with_logits_target_backward(grad, self, target, weight, "
              "pos_weight, reduction)"},
   nn_kernels.binary_cross_entropy_with_logits, attrs=("weight", "pos_weight", "reduction"),
   saves=("pos_weight", "reduction", "self", "target", "weight"))
# In place, PyTorch's leaky_relu_ saves its result (the input is overwritten): another node name
# (and another entry name: a recorder announces an in-place run as the entry's name plus "_").
op("leaky_relu_inplace", "LeakyReluBackward1", ("self",),
   {"self": "leaky_relu_backward(grad, result, negative_slope, True)"},
   lambda self, negative_slope: np.where(self > 0, self, self * negative_slope),
   attrs=("negative_slope",), saves=("negative_slope", "result"))


# --- reductions, more (var, std, prod) ----------------------------------------------------------
# ``dim`` is None for a reduction over everything; ``correction`` None means PyTorch's default (1)
# when no overload named it (``x.var()``), as PyTorch saves it.

op("var", "VarBackward0", ("self",),
   {"self": "var_backward(grad, self, dim, correction, keepdim)"},
   lambda self, dim, correction, keepdim: _var(self, dim, correction, keepdim),
   attrs=("dim", "correction", "keepdim"), saves=("correction", "dim", "keepdim", "self"),
   layout="contiguous")
op("std", "StdBackward0", ("self",),
   {"self": "std_backward(grad, self, result, dim, correction, keepdim)"},
   lambda self, dim, correction, keepdim: np.sqrt(_var(self, dim, correction, keepdim)),
   attrs=("dim", "correction", "keepdim"),
   saves=("correction", "dim", "keepdim", "result", "self"), layout="contiguous")
op("prod", "ProdBackward0", ("self",), {"self": "prod_backward(grad, self, result, None, False)"},
   lambda self, dtype: np.prod(self, dtype=dtype), attrs=("dtype",), saves=("result", "self"))
op("prod_dim", "ProdBackward1", ("self",),
   {"self": "prod_backward(grad, self, result, dim, keepdim)"},
   lambda self, dim, keepdim, dtype: np.prod(self, axis=_axis(self, dim), keepdims=keepdim,
                                             dtype=dtype),
   attrs=("dim", "keepdim", "dtype"), saves=("dim", "keepdim", "result", "self"),
   layout="contiguous")


def _var(x, dim, correction, keepdim):
    axes = formula_more.reduced_axes(dim, x.ndim)
    centred = x - x.mean(axis=axes, keepdims=True) if axes else x - x
    squares = np.add.reduce(centred * centred, axis=axes, keepdims=keepdim)
    divisor = formula_more.reduction_count(x.shape, dim) - (1 if correction is None else correction)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(squares, max(divisor, 0)).astype(x.dtype, copy=False)


# --- scans (cumsum, cumprod, logcumsumexp, cummax, cummin) ---------------------------------------
# ``dim`` is saved as given; a 0-d tensor scans its one element.

op("cumsum", "CumsumBackward0", ("self",), {"self": "reverse_cumsum(grad, dim)"},
   lambda self, dim, dtype: _scan(np.cumsum, self, dim, dtype), attrs=("dim", "dtype"),
   saves=("dim",))
op("cumprod", "CumprodBackward0", ("self",), {"self": "cumprod_backward(grad, self, dim, result)"},
   lambda self, dim, dtype: _scan(np.cumprod, self, dim, dtype), attrs=("dim", "dtype"),
   saves=("dim", "result", "self"))
op("logcumsumexp", "LogcumsumexpBackward0", ("self",),
   {"self": "logcumsumexp_backward(grad, self, result, dim)"},
   lambda self, dim: _scan(np.logaddexp.accumulate, self, dim, None), attrs=("dim",),
   saves=("dim", "result", "self"))
op("cummax", "CummaxBackward0", ("self",),
   {"self": "scatter_add_into_zeros(grad, self.shape, dim, indices)"},
   lambda self, dim: _cumulative_extreme(self, dim, np.maximum, np.greater_equal),
   attrs=("dim",), extra_outputs=("indices",), saves=("dim", "indices", "self"),
   layout="contiguous")
op("cummin", "CumminBackward0", ("self",),
   {"self": "scatter_add_into_zeros(grad, self.shape, dim, indices)"},
   lambda self, dim: _cumulative_extreme(self, dim, np.minimum, np.less_equal),
   attrs=("dim",), extra_outputs=("indices",), saves=("dim", "indices", "self"),
   layout="contiguous")


def _scan(accumulate, x, dim, dtype):
    if dtype is not None:
        x = x.astype(dtype, copy=False)
    if x.ndim == 0:
        return x.copy()
    # PyTorch's scans write a new contiguous tensor, whatever the input's layout (NumPy's keep
    # a transposed input's); without a dtype both widen small integers to int64
    return np.ascontiguousarray(accumulate(x, axis=dim, dtype=dtype))


def _cumulative_extreme(x, dim, ufunc, reaches):
    """Running max (min) and where it was last reached, as PyTorch's cummax (cummin) gives."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    values = ufunc.accumulate(x, axis=dim)
    positions = np.arange(x.shape[dim]).reshape((-1,) + (1,) * (x.ndim - 1 - dim % x.ndim))
    reached = reaches(x, values) | np.isnan(x)
    indices = np.maximum.accumulate(np.where(reached, positions, 0), axis=dim)
    return values, indices.astype(np.int64, copy=False)


# --- reorderings, more (roll, flip, repeat, tril, triu, index_select, masked_select) ------------

op("roll", "RollBackward0", ("self",), {"self": "roll(grad, tuple(-s for s in shifts), dims)"},
   lambda self, shifts, dims: formula_more.roll(self, shifts, dims), attrs=("shifts", "dims"),
   saves=("dims", "shifts"), layout="contiguous")
op("flip", "FlipBackward0", ("self",), {"self": "flip(grad, dims)"},
   formula_more.flip, attrs=("dims",),
   saves=("dims",), layout="like_self")
op("repeat", "RepeatBackward0", ("self",),
   {"self": "repeat_backward(grad, repeats, self_sym_sizes)"},
   np.tile, attrs=("repeats",), saves=("repeats", "self_sym_sizes"))
op("tril", "TrilBackward0", ("self",), {"self": "tril(grad, diagonal)"},
   np.tril, attrs=("diagonal",), saves=("diagonal",), layout="contiguous")
op("triu", "TriuBackward0", ("self",), {"self": "triu(grad, diagonal)"},
   np.triu, attrs=("diagonal",), saves=("diagonal",), layout="contiguous")
op("index_select", "IndexSelectBackward0", ("self",),
   {"self": "index_select_backward(grad, self_sym_sizes, dim, index)"},
   lambda self, dim, index: np.take(self, index.reshape(-1), axis=dim) if self.ndim
   else self.copy(),
   attrs=("dim", "index"), saves=("dim", "index", "self_sym_sizes"))
op("masked_select", "MaskedSelectBackward0", ("self",),
   {"self": "masked_select_backward(grad, self, mask)"},
   lambda self, mask: _masked_select(self, mask), attrs=("mask",), saves=("mask", "self"))


def _masked_select(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


# --- matrix products, more (addmv, addr, baddbmm) ------------------------------------------------
# ``beta`` scales the added tensor, ``alpha`` the product; with beta == 0 the added tensor is
# ignored, nan and inf included, as in PyTorch.

op("addmv", "AddmvBackward0", ("self", "mat", "vec"),
   {"self": "grad if beta == 1 else grad * beta",
    "mat": "outer(grad, vec) if alpha == 1 else outer(grad, vec) * alpha",
    "vec": "matrix_t(mat) @ grad if alpha == 1 else matrix_t(mat) @ grad * alpha"},
   lambda self, mat, vec, beta, alpha: _addmm(self, mat, vec, beta, alpha),
   attrs=("beta", "alpha"), saves=("alpha", "beta", "mat", "vec"), promote=True)
op("addr", "AddrBackward0", ("self", "vec1", "vec2"),
   {"self": "grad if beta == 1 else grad * beta",
    "vec1": "grad @ vec2 if alpha == 1 else grad @ vec2 * alpha",
    "vec2": "matrix_t(grad) @ vec1 if alpha == 1 else matrix_t(grad) @ vec1 * alpha"},
   lambda self, vec1, vec2, beta, alpha: _addmm(self, vec1[:, None], vec2[None, :], beta, alpha),
   attrs=("beta", "alpha"), saves=("alpha", "beta", "vec1", "vec2"), promote=True,
   layout="elementwise", layout_from=("self",))
op("baddbmm", "BaddbmmBackward0", ("self", "batch1", "batch2"),
   {"self": "grad if beta == 1 else grad * beta",
    "batch1": "grad @ swap_last(batch2) if alpha == 1 else grad @ swap_last(batch2) * alpha",
    "batch2": "swap_last(batch1) @ grad if alpha == 1 else swap_last(batch1) @ grad * alpha"},
   lambda self, batch1, batch2, beta, alpha: _addmm(self, batch1, batch2, beta, alpha),
   attrs=("beta", "alpha"), saves=("alpha", "batch1", "batch2", "beta"), promote=True)


# --- several outputs (split, unbind, var_mean, std_mean) -----------------------------------------
# One node whose outputs are all differentiable (``multi_output``): ``grad`` is their list of
# gradients, None for an output that got none (zeros where the formula needs them). split and
# unbind return views of their input, as in PyTorch.

op("split", "SplitBackward0", ("self",),
   {"self": "cat_pieces(grad, dim, self_sym_sizes,"
            " split_lengths(self_sym_sizes, dim, split_size))"},
   lambda self, split_size, dim: _split(self, split_size, dim), attrs=("split_size", "dim"),
   saves=("dim", "self_sym_sizes", "split_size"), view=True, multi_output=True)
op("split_with_sizes", "SplitWithSizesBackward0", ("self",),
   {"self": "cat_pieces(grad, dim, self_sym_sizes, split_sizes)"},
   lambda self, split_sizes, dim: _split_with_sizes(self, split_sizes, dim),
   attrs=("split_sizes", "dim"), saves=("dim", "self_sym_sizes", "split_sizes"), view=True,
   multi_output=True)
op("unbind", "UnbindBackward0", ("self",), {"self": "stack_pieces(grad, dim, self_sym_sizes)"},
   lambda self, dim: [self[(slice(None),) * (dim % self.ndim) + (i, Ellipsis)]
                      for i in range(self.shape[dim])],
   attrs=("dim",), saves=("dim", "self_sym_sizes"), hidden=("self_sym_sizes",), view=True,
   multi_output=True)
op("var_mean", "VarMeanBackward0", ("self",),
   {"self": "(zeros_like(self) if grad[0] is None else"
            " var_backward(grad[0], self, dim, correction, keepdim))"
            " + (0 if grad[1] is None else mean_part(grad[1], self, dim, keepdim))"},
   lambda self, dim, correction, keepdim: [_var(self, dim, correction, keepdim),
                                           _mean_over(self, dim, keepdim)],
   attrs=("dim", "correction", "keepdim"), saves=("correction", "dim", "keepdim", "self"),
   multi_output=True, layout="contiguous")
op("std_mean", "StdMeanBackward0", ("self",),
   {"self": "(zeros_like(self) if grad[0] is None else"
            " std_backward(grad[0], self, result0, dim, correction, keepdim))"
            " + (0 if grad[1] is None else mean_part(grad[1], self, dim, keepdim))"},
   lambda self, dim, correction, keepdim: [np.sqrt(_var(self, dim, correction, keepdim)),
                                           _mean_over(self, dim, keepdim)],
   attrs=("dim", "correction", "keepdim"),
   saves=("correction", "dim", "keepdim", "result0", "self"), multi_output=True,
   layout="contiguous")


def _split(x, split_size, dim):
    size = x.shape[dim]
    starts = list(range(0, size, split_size)) if split_size else []
    return _pieces(x, dim, starts or [0], [min(s + split_size, size) for s in starts] or [size])


def _split_with_sizes(x, split_sizes, dim):
    starts = np.cumsum([0, *split_sizes[:-1]]).tolist()
    return _pieces(x, dim, starts, [s + n for s, n in zip(starts, split_sizes)])


def _pieces(x, dim, starts, ends):
    """Views of ``x`` from each start to each end along ``dim`` (an empty one where PyTorch
    puts it in memory: see storage_geometry.sliced)."""
    dim %= x.ndim
    return [storage_geometry.sliced(x, dim, s, e, 1) for s, e in zip(starts, ends)]


def _mean_over(x, dim, keepdim):
    axes = formula_more.reduced_axes(dim, x.ndim)
    if not axes:
        return x.copy()
    return np.asarray(x.mean(axis=axes, keepdims=keepdim))


# --- values with indices (sort, topk, kthvalue, median, mode) ------------------------------------
# The gradient goes to where each value came from (``indices``, which never requires grad). Ties
# are broken as a stable sort breaks them; PyTorch's choice among equal values may differ.

op("sort", "SortBackward0", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, True)"},
   lambda self, dim, descending: _sorted(self, dim, descending),
   attrs=("dim", "descending"), extra_outputs=("indices",),
   saves=("dim", "indices", "self_sym_sizes"), layout="like_self")
op("sort_stable", "SortBackward1", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, True)"},
   lambda self, dim, descending: _sorted(self, dim, descending),
   attrs=("dim", "descending"), extra_outputs=("indices",),
   saves=("dim", "indices", "self_sym_sizes"), layout="like_self")
op("topk", "TopkBackward0", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, True)"},
   lambda self, k, dim, largest, sorted: _top(self, k, dim, largest),  # noqa: A006
   attrs=("k", "dim", "largest", "sorted"), extra_outputs=("indices",),
   saves=("dim", "indices", "self_sym_sizes"))
op("kthvalue", "KthvalueBackward0", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, keepdim)"},
   lambda self, k, dim, keepdim: _kth(self, k - 1, dim, keepdim), attrs=("k", "dim", "keepdim"),
   extra_outputs=("indices",), saves=("dim", "indices", "keepdim", "self_sym_sizes"))
op("median_dim", "MedianBackward1", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, keepdim)"},
   lambda self, dim, keepdim: _kth(self, (_size(self, dim) - 1) // 2, dim, keepdim),
   attrs=("dim", "keepdim"), extra_outputs=("indices",),
   saves=("dim", "indices", "keepdim", "self_sym_sizes"))
op("median", "MedianBackward0", ("self",), {"self": "evenly_distribute(grad, self, result)"},
   lambda self: _lower_median(self), saves=("result", "self"))
op("mode", "ModeBackward0", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, keepdim)"},
   lambda self, dim, keepdim: _mode(self, dim, keepdim), attrs=("dim", "keepdim"),
   extra_outputs=("indices",), saves=("dim", "indices", "keepdim", "self_sym_sizes"))


def _size(x, dim):
    return x.shape[dim] if x.ndim else 1


def _sorted(x, dim, descending):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    # A stable sort, descending too: equal values keep their order, as in PyTorch.
    indices = np.argsort(-x if descending else x, axis=dim, kind="stable")
    return np.take_along_axis(x, indices, axis=dim), indices.astype(np.int64, copy=False)


def _top(x, k, dim, largest):
    values, indices = _sorted(x, dim, largest)
    if x.ndim == 0:
        return values, indices
    keep = (slice(None),) * (dim % x.ndim) + (slice(0, k),)
    return values[keep].copy(), indices[keep].copy()


def _kth(x, position, dim, keepdim):
    """The value at ``position`` in sorted order along ``dim``, and where it was."""
    values, indices = _sorted(x, dim, False)
    if x.ndim == 0:
        return values, indices
    key = (slice(None),) * (dim % x.ndim) + (slice(position, position + 1),)
    values, indices = values[key], indices[key]
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values.copy(), indices.copy()  # C-contiguous (np.ascontiguousarray makes 0-d 1-d)


def _lower_median(x):
    if x.size == 0:
        return np.asarray(np.nan, x.dtype)
    flat = np.sort(x.reshape(-1))
    return np.asarray(flat[(flat.size - 1) // 2])


def _mode(x, dim, keepdim):
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and the
    last place it occurs."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    moved = np.moveaxis(x, dim, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    values = np.empty(rows.shape[0], x.dtype)
    indices = np.empty(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        uniques, counts = np.unique(row, return_counts=True)
        values[r] = uniques[np.argmax(counts)]
        indices[r] = np.flatnonzero(row == values[r])[-1]
    shape = moved.shape[:-1]
    values, indices = values.reshape(shape), indices.reshape(shape)
    if keepdim:
        values, indices = np.expand_dims(values, dim), np.expand_dims(indices, dim)
    return values, indices


# --- diagonals and single elements (diagonal, diag, diag_embed, trace, take) ----------------------

op("diagonal", "DiagonalBackward0", ("self",),
   {"self": "diagonal_backward(grad, self_sym_sizes, offset, dim1, dim2)"},
   lambda self, offset, dim1, dim2: formula_more.diagonal_view(self, offset, dim1, dim2),
   attrs=("offset", "dim1", "dim2"), saves=("dim1", "dim2", "offset", "self_sym_sizes"),
   view=True)
op("diagonal_copy", "DiagonalBackward0_copy", ("self",),
   {"self": "diagonal_backward(grad, self_sym_sizes, offset, dim1, dim2)"},
   lambda self, offset, dim1, dim2: formula_more.diagonal_view(self, offset, dim1, dim2).copy(),
   attrs=("offset", "dim1", "dim2"), saves=("dim1", "dim2", "offset", "self_sym_sizes"))
op("diag_embed", "DiagEmbedBackward0", ("self",),
   {"self": "diagonal(grad, offset, dim1, dim2)"},
   lambda self, offset, dim1, dim2: formula_more.diag_embed(self, offset, dim1, dim2),
   attrs=("offset", "dim1", "dim2"), saves=("dim1", "dim2", "offset"))
op("trace", "TraceBackward0", ("self",),
   {"self": "diagonal_backward(expand(grad, (min(self_sym_sizes),)), self_sym_sizes, 0, 0, 1)"},
   np.trace, saves=("self_sym_sizes",))
op("take", "TakeBackward0", ("self",), {"self": "take_backward(grad, self, index)"},
   lambda self, index: self.reshape(-1)[index], attrs=("index",), saves=("index", "self"))
# The backward of diagonal as an op of its own, so that create_graph can differentiate it.
op("diagonal_backward", "DiagonalBackwardBackward0", ("grad_output",),
   {"grad_output": "diagonal(grad, offset, dim1, dim2)"},
   lambda grad_output, sizes, offset, dim1, dim2: formula_more.diagonal_backward(
       grad_output, sizes, offset, dim1, dim2),
   attrs=("sizes", "offset", "dim1", "dim2"), saves=("dim1", "dim2", "offset"))


# --- norms, more (any order; dist; cross) --------------------------------------------------------
# Orders other than 1 and 2 (the entry ``linalg_vector_norm`` above): inf, -inf, 0 and any p.

op("linalg_vector_norm_ord", "LinalgVectorNormBackward0", ("self",),
   {"self": "vector_norm_backward(grad, self, ord, result, dim, keepdim)"},
   lambda self, ord, dim, keepdim: formula_more.vector_norm(self, ord, dim, keepdim),  # noqa: A006
   attrs=("ord", "dim", "keepdim"), saves=("dim", "keepdim", "ord", "result", "self"),
   floating=True)
op("dist", "DistBackward0", ("self", "other"),
   {"self": "vector_norm_backward(grad, self - other, p, result, None, False)",
    "other": "-vector_norm_backward(grad, self - other, p, result, None, False)"},
   lambda self, other, p: formula_more.vector_norm(self - other, p, None, False),
   attrs=("p",), saves=("other", "p", "result", "self"), promote=True)
op("linalg_cross", "LinalgCrossBackward0", ("self", "other"),
   {"self": "cross(other, grad, dim)", "other": "cross(grad, self, dim)"},
   lambda self, other, dim: np.cross(self, other, axis=dim), attrs=("dim",),
   saves=("dim", "other", "self"), promote=True, layout="contiguous")


# --- scatters (scatter, scatter_add, index_add, index_fill, index_copy) --------------------------
# ``index`` is kept as an array (no edge); in place (``x.scatter_(...)``) they run the same entry.
# As in PyTorch, a ``src`` larger than ``index`` gets a gradient of index's shape, which backward
# then refuses ("returned an invalid gradient").

op("scatter", "ScatterBackward0", ("self", "src"),
   {"self": "scatter_zero(grad, dim, index)", "src": "gather_at(grad, dim, index)"},
   lambda self, src, dim, index: formula_more.scatter(self, dim, index, src),
   attrs=("dim", "index"), saves=("dim", "index"))
op("scatter_value", "ScatterBackward1", ("self",), {"self": "scatter_zero(grad, dim, index)"},
   lambda self, dim, index, value: formula_more.scatter(self, dim, index, value),
   attrs=("dim", "index", "value"), saves=("dim", "index"))
op("scatter_add", "ScatterAddBackward0", ("self", "src"),
   {"self": "grad", "src": "gather_at(grad, dim, index)"},
   lambda self, src, dim, index: formula_more.scatter(self, dim, index, src, add=True),
   attrs=("dim", "index"), saves=("dim", "index"))
op("index_add", "IndexAddBackward0", ("self", "source"),
   {"self": "grad",
    "source": "index_select_grad(grad, dim, index, source) if alpha == 1 else"
              " index_select_grad(grad, dim, index, source) * alpha"},
   lambda self, source, dim, index, alpha, source_dim: formula_more.index_put(
       self, dim, index, source if alpha == 1 else alpha * source, add=True),
   attrs=("dim", "index", "alpha", "source_dim"),
   saves=("alpha", "dim", "index", "source", "source_dim"))
op("index_fill", "IndexFillBackward0", ("self",), {"self": "index_zero(grad, dim, index)"},
   lambda self, dim, index, value: special_kernels.laid_out_like(
       self, formula_more.index_put(self, dim, index, value)),
   attrs=("dim", "index", "value"), saves=("dim", "index"))
op("index_copy", "IndexCopyBackward0", ("self", "source"),
   {"self": "index_zero(grad, dim, index)",
    "source": "index_select_grad(grad, dim, index, source)"},
   lambda self, source, dim, index, source_dim: formula_more.index_put(self, dim, index, source),
   attrs=("dim", "index", "source_dim"), saves=("dim", "index", "source", "source_dim"))


# --- products and rotations, more (vdot, rot90) ---------------------------------------------------

op("vdot", "VdotBackward0", ("self", "other"),
   {"self": "grad * other", "other": "grad * self"},
   np.dot, saves=("other", "self"), promote=True)
op("rot90", "Rot90Backward0", ("self",), {"self": "rot90(grad, -k, dims)"},
   lambda self, k, dims: formula_more.rot90(self, k, dims), attrs=("k", "dims"),
   saves=("dims", "k"))


# --- block_diag, addbmm ---------------------------------------------------------------------------

op("block_diag", "BlockDiagBackward0", ("tensors",),
   {"tensors": "block_diag_pieces(grad, tensors_sym_sizes)"},
   lambda tensors: formula_more.block_diag(tensors), saves=("tensors_sym_sizes",),
   hidden=("tensors_sym_sizes",), variadic=True, promote=True)
op("addbmm", "AddbmmBackward0", ("self", "batch1", "batch2"),
   {"self": "grad if beta == 1 else grad * beta",
    "batch1": "scaled(expand(unsqueeze(grad, 0), (batch1_sym_argsize_0, batch1_sym_argsize_1,"
              " batch2_sym_argsize_2)) @ swap_last(batch2), alpha)",
    "batch2": "scaled(swap_last(batch1) @ expand(unsqueeze(grad, 0), (batch1_sym_argsize_0,"
              " batch1_sym_argsize_1, batch2_sym_argsize_2)), alpha)"},
   lambda self, batch1, batch2, beta, alpha, *sizes: _addmm(
       self, batch1, batch2, beta, alpha, sum_batches=True),
   attrs=("beta", "alpha", "batch1_sym_argsize_0", "batch1_sym_argsize_1",
          "batch2_sym_argsize_2"),
   saves=("alpha", "batch1", "batch1_sym_argsize_0", "batch1_sym_argsize_1", "batch2",
          "batch2_sym_argsize_2", "beta"), promote=True)


# --- element-wise functions, more (logarithms, trigonometric, hyperbolic, exp2, erfc, erfinv) ---
# Entries run as they are on one tensor: the flags make their public names (see above). PyTorch's
# aliases (torch.arcsin, x.arctan2()) are more names of the same entry.

for _name, _node, _formula, _forward, _saved in (
    ("log2", "Log2Backward0", "grad / (self * 0.6931471805599453)", np.log2, "self"),
    ("log10", "Log10Backward0", "grad / (self * 2.302585092994046)", np.log10, "self"),
    ("asin", "AsinBackward0", "grad * rsqrt(-self * self + 1)", np.arcsin, "self"),
    ("acos", "AcosBackward0", "grad * -rsqrt(-self * self + 1)", np.arccos, "self"),
    ("atan", "AtanBackward0", "grad / (self * self + 1)", np.arctan, "self"),
    ("sinh", "SinhBackward0", "grad * cosh(self)", np.sinh, "self"),
    ("cosh", "CoshBackward0", "grad * sinh(self)", np.cosh, "self"),
    ("asinh", "AsinhBackward0", "grad * rsqrt(self ** 2 + 1)", np.arcsinh, "self"),
    ("acosh", "AcoshBackward0", "grad * rsqrt(self ** 2 - 1)", np.arccosh, "self"),
    ("atanh", "AtanhBackward0", "grad * 1 / (1 - self ** 2)", np.arctanh, "self"),
    ("exp2", "Exp2Backward0", "grad * result * 0.6931471805599453", np.exp2, "result"),
    # 2 / sqrt(pi) and sqrt(pi) / 2
    ("erfc", "ErfcBackward0", "-1.1283791670955126 * exp(-self ** 2) * grad",
     lambda self: formula_math.erfc(self).astype(self.dtype, copy=False), "self"),
    ("erfinv", "ErfinvBackward0", "0.886226925452758 * exp(erfinv(self) ** 2) * grad",
     lambda self: formula_math.erfinv(self).astype(self.dtype, copy=False), "self"),
):
    _alias = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
              "acosh": "arccosh", "atanh": "arctanh"}.get(_name)
    _names = (_name, _alias) if _alias else True
    op(_name, _node, ("self",), {"self": _formula}, _forward, saves=(_saved,), floating=True,
       same_shape=True, function=_names, method=_names,
       # PyTorch has no torch.erfinv_; asinh_, acosh_ and atanh_ are entries of their own
       inplace={"erfinv": "method", "asinh": False, "acosh": False, "atanh": False}.get(
           _name, True), out=True)
# In place, PyTorch records asinh_, acosh_ and atanh_ with nodes whose backward is not
# implemented (AsinhBackward1, ...): they raise when backward reaches them.
for _name, _node, _forward in (("asinh", "AsinhBackward1", np.arcsinh),
                               ("acosh", "AcoshBackward1", np.arccosh),
                               ("atanh", "AtanhBackward1", np.arctanh)):
    op(_name + "_inplace", _node, ("self",),
       {"self": f"not_implemented('inplace version of {_name}')"}, _forward, floating=True)
op("atan2", "Atan2Backward0", ("self", "other"),
   {"self": "grad * other / (self * self + other * other)",
    "other": "grad * -self / (self * self + other * other)"},
   np.arctan2, saves=("other", "self"), promote=True, floating=True,
   layout="elementwise")  # ops/functions: atan2


# --- element-wise functions, more (activations: nn.functional and torch.selu, ...) -------------
# Their functions are hand-written (ops/functions/activations.py, nn/functional.py): they take
# parameters, and check dtypes as PyTorch does. In place, PyTorch's elu, celu and threshold save
# their result or their input under other node names, as leaky_relu does (entries "..._inplace").

op("logsumexp", "LogsumexpBackward0", ("self",),
   {"self": "restore_reduced(grad, self.shape, dim, keepdim) * "
            "exp(self - restore_reduced(result, self.shape, dim, keepdim))"},
   lambda self, dim, keepdim: _logsumexp(self, dim, keepdim), attrs=("dim", "keepdim"),
   saves=("dim", "keepdim", "result", "self"), floating=True, layout="contiguous")
op("softplus", "SoftplusBackward0", ("self",),
   {"self": "softplus_backward(grad, self, beta, threshold)"},
   lambda self, beta, threshold: np.where(
       self * beta > threshold, self, np.logaddexp(0, self * beta) / beta).astype(self.dtype),
   attrs=("beta", "threshold"), saves=("beta", "self", "threshold"), same_shape=True)
op("hardtanh", "HardtanhBackward0", ("self",),
   {"self": "hardtanh_backward(grad, self, min_val, max_val)"},
   lambda self, min_val, max_val: np.clip(self, min_val, max_val).astype(self.dtype, copy=False),
   attrs=("min_val", "max_val"), saves=("max_val", "min_val", "self"), same_shape=True)
op("log_sigmoid", "LogSigmoidBackward0", ("self",),
   {"self": "log_sigmoid_backward(grad, self, buffer)"},
   lambda self: _log_sigmoid(self), extra_outputs=("buffer",), saves=("buffer", "self"),
   layout="contiguous")
op("silu", "SiluBackward0", ("self",),
   {"self": "grad * sigmoid(self) * (1 + self * (1 - sigmoid(self)))"},
   lambda self: self / (1 + np.exp(-self)), saves=("self",), same_shape=True)
op("mish", "MishBackward0", ("self",), {"self": "mish_backward(grad, self)"},
   lambda self: self * np.tanh(np.logaddexp(0, self)), saves=("self",), same_shape=True)
op("hardswish", "HardswishBackward0", ("self",),
   {"self": "hardswish_backward(grad, self)"},
   lambda self: self * np.clip(self + 3, 0, 6) / 6, saves=("self",), same_shape=True)
op("hardsigmoid", "HardsigmoidBackward0", ("self",),
   # PyTorch's kernel multiplies by 1/6 rounded to float32, whatever the dtype
   {"self": "where((self > -3) & (self < 3), grad * 0.1666666716337204, 0 * grad)"},
   lambda self: np.clip(self + 3, 0, 6) / 6, saves=("self",), same_shape=True)
op("elu", "EluBackward0", ("self",),
   {"self": "elu_backward(grad, self, alpha, scale, input_scale, False)"},
   lambda self, alpha, scale, input_scale: _elu(self, alpha, scale, input_scale),
   attrs=("alpha", "scale", "input_scale"), saves=("alpha", "input_scale", "scale", "self"),
   same_shape=True)
op("elu_inplace", "EluBackward1", ("self",),
   {"self": "elu_backward(grad, result, alpha, scale, input_scale, True)"},
   lambda self, alpha, scale, input_scale: _elu(self, alpha, scale, input_scale),
   attrs=("alpha", "scale", "input_scale"), saves=("alpha", "input_scale", "result", "scale"))
op("celu", "CeluBackward0", ("self",),
   {"self": "elu_backward(grad, self, alpha, 1, 1.0 / single(alpha), False)"},
   lambda self, alpha: _elu(self, alpha, 1, 1.0 / alpha), attrs=("alpha",),
   saves=("alpha", "self"), same_shape=True)
op("celu_inplace", "CeluBackward1", ("self",),
   {"self": "elu_backward(grad, result, alpha, 1, 1.0 / single(alpha), True)"},
   lambda self, alpha: _elu(self, alpha, 1, 1.0 / alpha), attrs=("alpha",),
   saves=("alpha", "result"))
op("threshold", "ThresholdBackward0", ("self",),
   {"self": "threshold_backward(grad, self, threshold)"},
   lambda self, threshold, value: _threshold(self, threshold, value),
   attrs=("threshold", "value"), saves=("self", "threshold"), same_shape=True)
op("threshold_inplace", "ThresholdBackward1", ("self",),
   {"self": "threshold_backward(grad, self, threshold)"},
   lambda self, threshold, value: _threshold(self, threshold, value),
   attrs=("threshold", "value"), saves=("self", "threshold"))
op("softshrink", "SoftshrinkBackward0", ("self",),
   {"self": "softshrink_backward(grad, self, lambd)"},
   lambda self, lambd: np.where(self > lambd, self - lambd,
                                np.where(self < -lambd, self + lambd, 0)).astype(self.dtype),
   attrs=("lambd",), saves=("lambd", "self"), same_shape=True)
op("hardshrink", "HardshrinkBackward0", ("self",),
   {"self": "hardshrink_backward(grad, self, lambd)"},
   lambda self, lambd: np.where((self >= -lambd) & (self <= lambd), 0, self).astype(self.dtype),
   attrs=("lambd",), saves=("lambd", "self"), same_shape=True)


def _logsumexp(x, dim, keepdim):
    axis = None if x.ndim == 0 else tuple(d % x.ndim for d in dim)
    if x.size == 0:
        return np.log(np.add.reduce(np.exp(x), axis=axis, keepdims=keepdim))
    top = np.maximum.reduce(x, axis=axis, keepdims=True)
    top = np.where(np.isinf(top), 0, top)  # all -inf (or an inf): no shift
    out = np.log(np.add.reduce(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdim or axis is None else np.squeeze(out, axis)


def _log_sigmoid(x):
    """PyTorch's CPU kernel: the result, and the buffer exp(-|x|) its backward reads."""
    buffer = np.exp(-np.abs(x))
    return np.minimum(x, 0) - np.log1p(buffer), buffer


def _elu(x, alpha, scale, input_scale):
    return np.where(x > 0, x * scale, np.expm1(x * input_scale) * (alpha * scale)).astype(x.dtype)


def _threshold(x, threshold, value):
    return np.where(x <= threshold, np.asarray(value).astype(x.dtype), x)


# --- element-wise functions, more (binary and ternary: xlogy, hypot, lerp, addcmul, ...) -------

op("frac", "FracBackward0", ("self",), {"self": "grad"}, lambda self: _frac(self),
   same_shape=True, function=True, method=True, inplace=True, out=True)
op("deg2rad", "Deg2RadBackward0", ("self",), {"self": "grad * 0.017453292519943295"},
   lambda self: self * 0.017453292519943295, floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("rad2deg", "Rad2DegBackward0", ("self",), {"self": "grad * 57.29577951308232"},
   lambda self: self * 57.29577951308232, floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("sinc", "SincBackward0", ("self",), {"self": "sinc_backward(grad, self)"},
   lambda self: _sinc(self), saves=("self",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("sgn", "SgnBackward0", ("self",), {"self": "sgn_backward(grad, self, result)"}, np.sign,
   saves=("result", "self"), same_shape=True,
   function=True, method=True, inplace="method", out=True)  # PyTorch has no torch.sgn_
op("logit", "LogitBackward0", ("self",), {"self": "logit_backward(grad, self, eps)"},
   lambda self, eps: _logit(self, eps), attrs=("eps",), saves=("eps", "self"), floating=True,
   same_shape=True)
op("nan_to_num", "NanToNumBackward0", ("self",), {"self": "grad * isfinite(self)"},
   lambda self, nan, posinf, neginf: np.nan_to_num(self, nan=nan, posinf=posinf, neginf=neginf),
   attrs=("nan", "posinf", "neginf"), saves=("self",), same_shape=True)
op("xlogy", "XlogyBackward0", ("self", "other"),
   {"self": "masked_zero(xlogy(grad, other), (self == 0) & (other <= 0))",
    "other": "grad * self / other"},
   lambda self, other: _xlogy(self, other), saves=("other", "self"), promote=True, floating=True,
   layout="elementwise")
op("xlogy_scalar_self", "XlogyBackward1", ("other",), {"other": "grad * self / other"},
   lambda other, self: _xlogy(np.asarray(self, other.dtype), other), attrs=("self",),
   saves=("other", "self"), floating=True)
op("xlogy_scalar_other", "XlogyBackward2", ("self",),
   {"self": "masked_zero(xlogy(grad, other), (self == 0) & (other <= 0))"},
   lambda self, other: _xlogy(self, np.asarray(other, self.dtype)), attrs=("other",),
   saves=("other", "self"), floating=True)
op("hypot", "HypotBackward0", ("self", "other"),
   {"self": "grad * self / result", "other": "grad * other / result"},
   np.hypot, saves=("other", "result", "self"), promote=True, floating=True, layout="elementwise")
op("copysign", "CopysignBackward0", ("self", "other"),
   {"self": "copysign_backward(grad, self, result)", "other": "zeros_like(grad)"},
   np.copysign, saves=("result", "self"), promote=True, floating=True, layout="elementwise")
op("copysign_scalar", "CopysignBackward1", ("self",),
   {"self": "copysign_backward(grad, self, result)"},
   lambda self, other: np.copysign(self, np.asarray(other, self.dtype)), attrs=("other",),
   saves=("result", "self"), floating=True)
op("logaddexp", "LogaddexpBackward0", ("self", "other"),
   {"self": "grad / (1 + exp(other - self))", "other": "grad / (1 + exp(self - other))"},
   np.logaddexp, saves=("other", "self"), promote=True, floating=True, layout="elementwise")
op("logaddexp2", "Logaddexp2Backward0", ("self", "other"),
   {"self": "grad / (1 + 2 ** (other - self))", "other": "grad / (1 + 2 ** (self - other))"},
   np.logaddexp2, saves=("other", "self"), promote=True, floating=True, layout="elementwise")
op("lerp", "LerpBackward0", ("self", "end"),
   {"self": "grad * (1 - weight)", "end": "grad * weight"},
   lambda self, end, weight: _lerp(self, end, weight), attrs=("weight",), saves=("weight",),
   promote=True, layout="elementwise")
op("lerp_tensor", "LerpBackward1", ("self", "end", "weight"),
   {"self": "grad * (1 - weight)", "end": "grad * weight", "weight": "grad * (end - self)"},
   lambda self, end, weight: _lerp(self, end, weight), saves=("end", "self", "weight"),
   promote=True, layout="elementwise")
op("addcmul", "AddcmulBackward0", ("self", "tensor1", "tensor2"),
   {"self": "grad", "tensor1": "grad * tensor2 * value", "tensor2": "grad * tensor1 * value"},
   lambda self, tensor1, tensor2, value: self + value * tensor1 * tensor2, attrs=("value",),
   saves=("tensor1", "tensor2", "value"), promote=True, layout="elementwise")
op("addcdiv", "AddcdivBackward0", ("self", "tensor1", "tensor2"),
   {"self": "grad", "tensor1": "grad * value / tensor2",
    "tensor2": "-grad * value * tensor1 / (tensor2 * tensor2)"},
   lambda self, tensor1, tensor2, value: self + value * tensor1 / tensor2, attrs=("value",),
   saves=("tensor1", "tensor2", "value"), promote=True, layout="elementwise")


def _frac(x):
    if not np.issubdtype(x.dtype, np.floating):
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{dtypes.name_of(x.dtype)}'")
    return x - np.trunc(x)


def _sinc(x):
    scaled = x * np.pi
    return np.where(x == 0, np.ones((), x.dtype), np.sin(scaled) / scaled).astype(x.dtype)


def _logit(x, eps):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def _xlogy(x, y):
    out = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), np.zeros((), out.dtype), out)


def _lerp(start, end, weight):
    """PyTorch's formula: from the nearer end, for accuracy."""
    return np.where(
        np.abs(weight) < 0.5, start + weight * (end - start), end - (end - start) * (1 - weight)
    ).astype(np.result_type(start, end), copy=False)


# --- losses, more (smooth L1, Huber, soft margin) ----------------------------------------------
# Reductions are PyTorch's enum, as for the losses above: 0 = "none", 1 = "mean", 2 = "sum".

op("smooth_l1_loss", "SmoothL1LossBackward0", ("self", "target"),
   {"self": "smooth_l1_loss_backward(grad, self, target, reduction, beta)",
    "target": "smooth_l1_loss_backward(grad, target, self, reduction, beta)"},
   lambda self, target, reduction, beta: nn_kernels.reduce_loss(
       _smooth_l1(self - target, beta), reduction),
   attrs=("reduction", "beta"), saves=("beta", "reduction", "self", "target"), promote=True)
op("huber_loss", "HuberLossBackward0", ("self", "target"),
   {"self": "huber_loss_backward(grad, self, target, reduction, delta)",
    "target": "huber_loss_backward(grad, target, self, reduction, delta)"},
   lambda self, target, reduction, delta: nn_kernels.reduce_loss(
       _huber(self - target, delta), reduction),
   attrs=("reduction", "delta"), saves=("delta", "reduction", "self", "target"), promote=True)
op("soft_margin_loss", "SoftMarginLossBackward0", ("self",),
   {"self": "soft_margin_loss_backward(grad, self, target, reduction)"},
   lambda self, target, reduction: nn_kernels.reduce_loss(
       np.log1p(np.exp(-target * self)), reduction),
   attrs=("target", "reduction"), saves=("reduction", "self", "target"))


def _smooth_l1(diff, beta):
    size = np.abs(diff)
    return np.where(size < beta, 0.5 * diff * diff / beta, size - 0.5 * beta).astype(diff.dtype)


def _huber(diff, delta):
    size = np.abs(diff)
    return np.where(size < delta, 0.5 * diff * diff, delta * (size - 0.5 * delta)).astype(
        diff.dtype)
# Adding a number inside a composite loss (poisson_nll_loss's ``input + eps``) is ATen's Scalar
# overload: AddBackward1, which saves nothing.

# The losses' backward functions, ops of their own as in PyTorch (see backward_function): their
# second derivatives are the loss's curvature times both incoming gradients.
backward_function(
    "mse_loss_backward", "MseLossBackwardBackward0", ("grad_output", "self", "target"),
    nn_kernels.mse_loss_backward,
    {"grad_output": "mse_loss_backward(grad, self, target, reduction)",
     "self": "2 * grad * grad_output / mean_scale(reduction, self)",
     "target": "-2 * grad * grad_output / mean_scale(reduction, target)"},
    attrs=("reduction",), saves=("grad_output", "reduction", "self", "target"))
backward_function(
    "smooth_l1_loss_backward", "SmoothL1LossBackwardBackward0",
    ("grad_output", "self", "target"), formula_math.ARRAY_NAMESPACE["smooth_l1_loss_backward"],
    {"grad_output": "smooth_l1_loss_backward(grad, self, target, reduction, beta)",
     "self": "where(abs(self - target) < beta, grad * grad_output / beta, 0 * grad) "
             "/ mean_scale(reduction, self)",
     "target": "where(abs(self - target) < beta, -grad * grad_output / beta, 0 * grad) "
               "/ mean_scale(reduction, self)"},
    attrs=("reduction", "beta"), saves=("beta", "grad_output", "reduction", "self", "target"))
backward_function(
    "huber_loss_backward", "HuberLossBackwardBackward0", ("grad_output", "self", "target"),
    formula_math.ARRAY_NAMESPACE["huber_loss_backward"],
    {"grad_output": "huber_loss_backward(grad, self, target, reduction, delta)",
     "self": "where(abs(self - target) < delta, grad * grad_output, 0 * grad) "
             "/ mean_scale(reduction, self)",
     "target": "where(abs(self - target) < delta, -grad * grad_output, 0 * grad) "
               "/ mean_scale(reduction, self)"},
    attrs=("reduction", "delta"), saves=("delta", "grad_output", "reduction", "self", "target"))
# (buffer, exp(-|x|) kept by the forward, is read but not differentiated: no edge, as in PyTorch)
backward_function(
    "log_sigmoid_backward", "LogSigmoidBackwardBackward0", ("grad_output", "self"),
    formula_math.ARRAY_NAMESPACE["log_sigmoid_backward"],
    {"grad_output": "log_sigmoid_backward(grad, self, buffer)",
     "self": "-grad * grad_output * sigmoid(-self) * (1 - sigmoid(-self))"},
    attrs=("buffer",), saves=("buffer", "grad_output", "self"))

op("add_scalar", "AddBackward1", ("self",), {"self": "grad"},
   lambda self, other: self + other, attrs=("other",))
op("sub_scalar", "SubBackward1", ("self",), {"self": "grad"},
   lambda self, other: self - other, attrs=("other",))
# ATen's at::norm(x, p, dim, keepdim), which pairwise_distance runs (torch.norm from Python is
# linalg_vector_norm): its own node, NormBackward1. 1- and 2-norms.
op("norm_dim", "NormBackward1", ("self",),
   {"self": "norm_backward(grad, self, p, result, dim, keepdim)"},
   lambda self, p, dim, keepdim: nn_kernels.vector_norm(self, p, dim, keepdim),
   attrs=("p", "dim", "keepdim"), saves=("dim", "keepdim", "p", "result", "self"), floating=True,
   layout="contiguous")


# --- activations, more (glu, prelu) -------------------------------------------------------------

backward_function(
    "glu_backward", "GluBackwardBackward0", ("grad_output", "self"),
    formula_math._glu_backward,
    {"grad_output": "glu_double_backward_grad_output(grad, self, dim)",
     "self": "glu_double_backward(grad, grad_output, self, dim)"},
    attrs=("dim",), saves=("dim", "grad_output", "self"))
op("glu", "GluBackward0", ("self",), {"self": "glu_backward(grad, self, dim)"},
   lambda self, dim: _glu(self, dim), attrs=("dim",), saves=("dim", "self"))
# PyTorch computes both gradients with one function, _prelu_kernel_backward, itself an op with
# two outputs (grad[0], grad[1] in its formulas): PreluKernelBackwardBackward0 under create_graph.
op("_prelu_kernel_backward", "PreluKernelBackwardBackward0", ("grad_output", "self", "weight"),
   {name: f"prelu_double_backward_output({k}, grad, grad_output, self, weight)"
    for k, name in enumerate(("grad_output", "self", "weight"))},
   lambda grad_output, self, weight: [
       double_backward_kernels.prelu_backward_output(k, grad_output, self, weight)
       for k in (0, 1)],
   saves=("grad_output", "self", "weight"), multi_output=True, joint=True, promote=True)
op("prelu", "PreluKernelBackward0", ("self", "weight"),
   {"self": "prelu_backward_output(0, grad, self, weight)",
    "weight": "prelu_backward_output(1, grad, self, weight)"},
   # one formula for both inputs in PyTorch (_prelu_kernel_backward): both always saved
   lambda self, weight: np.where(self > 0, self, weight * self), saves=("self", "weight"),
   joint=True, layout="elementwise")


def _glu(x, dim):
    first, second = np.split(x, 2, axis=dim)
    return first * formula_math.sigmoid_array(second)


# --- recurrent layers, pooling, transposed convolution ---------------------------------------
# Kernels in layer_kernels; the names their formulas call are added to formula_math's NumPy
# namespace here (and to the Tensor namespace by formula_tensor, from layer_kernels).

from nbgrad.ops import layer_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(layer_kernels.ARRAY_FUNCTIONS)

op("adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0", ("self",),
   {"self": "adaptive_avg_pool2d_backward(grad, self)"},
   layer_kernels.adaptive_avg_pool2d, attrs=("output_size",), saves=("self",))
# Linear, so its backward is an op too (whose gradient is the pooling again), with PyTorch's
# edge to ``self`` (a zero gradient: only self's shape matters).
op("adaptive_avg_pool2d_backward", "AdaptiveAvgPool2DBackwardBackward0", ("grad_output", "self"),
   {"grad_output": "adaptive_avg_pool2d(grad, (grad_output_sym_argsize_minus_2, "
                   "grad_output_sym_argsize_minus_1))",
    "self": "zeros_like(grad)"},
   lambda grad_output, self, rows, cols: layer_kernels.adaptive_avg_pool2d_backward(
       grad_output, self.shape),
   attrs=("grad_output_sym_argsize_minus_2", "grad_output_sym_argsize_minus_1"),
   saves=("grad_output_sym_argsize_minus_1", "grad_output_sym_argsize_minus_2"))
for _dims in (2, 3):
    backward_function(
        f"adaptive_max_pool{_dims}d_backward", f"AdaptiveMaxPool{_dims}DBackwardBackward0",
        ("grad_output", "self"), f"max_pool{_dims}d_backward(grad_output, self.shape, indices)",
        {"grad_output": f"max_pool_double_backward(grad, indices, {_dims})",
         "self": "zeros_like(grad)"},
        attrs=("indices",), saves=("indices",))
backward_function(
    "max_pool3d_with_indices_backward", "MaxPool3DWithIndicesBackwardBackward0",
    ("grad_output", "self"), "max_pool3d_backward(grad_output, self.shape, indices)",
    {"grad_output": "max_pool_double_backward(grad, indices, 3)", "self": "zeros_like(grad)"},
    attrs=("kernel_size", "stride", "padding", "dilation", "ceil_mode", "indices"),
    saves=("indices",))
op("adaptive_max_pool2d", "AdaptiveMaxPool2DBackward0", ("self",),
   {"self": "adaptive_max_pool2d_backward(grad, self, result1)"},
   layer_kernels.adaptive_max_pool2d, attrs=("output_size",), extra_outputs=("result1",),
   saves=("result1", "self"))
# conv_transpose1d/2d: ATen's convolution with transposed=True, the same node as convolution.
op("convolution_transposed", "ConvolutionBackward0", ("input", "weight", "bias"),
   _CONVOLUTION_GRADS,
   lambda x, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
   bias_sym_sizes_opt: layer_kernels.conv_transpose(x, weight, bias, stride, padding, dilation,
                                                    output_padding, groups),
   attrs=("stride", "padding", "dilation", "transposed", "output_padding", "groups",
          "bias_sym_sizes_opt"),
   saves=("bias_sym_sizes_opt", "dilation", "groups", "input", "output_padding", "padding",
          "stride", "transposed", "weight"),
   joint=True)
# x.transpose_(dim0, dim1) (and swapdims_, swapaxes_): TransposeBackward1, the dims saved as
# given. Tensor.transpose_ gives the tensor itself the transposed layout
# (ops/functions/inplace_views.py). ATen's recurrent layers transpose a batch_first output back
# in place; there the output is a new tensor (the stacked outputs it transposes are internal),
# with PyTorch's node.
op("transpose_inplace", "TransposeBackward1", ("self",), {"self": "transpose(grad, dim0, dim1)"},
   lambda self, dim0, dim1: self[...] if self.ndim == 0 else np.swapaxes(self, dim0, dim1),
   attrs=("dim0", "dim1"), saves=("dim0", "dim1"))

def upsample_backward_entry(name, node, mode, dims, corners):
    """Declare ``<name>_backward``, the backward function of one F.interpolate node: linear in
    the gradient, so its own gradient is the upsampling again. Returns the forward's formula."""
    scales = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}
    scales = scales[dims]
    corner_attrs = ("align_corners",) if corners else ()
    corner_arg = "align_corners" if corners else "False"
    backward_function(
        f"{name}_backward", node.replace("Backward0", "BackwardBackward0"), ("grad_output",),
        lambda grad_output, output_size, input_size, *rest: layer_kernels.upsample_backward(
            grad_output, input_size, output_size, rest[corners:corners + dims], mode,
            rest[0] if corners else False),
        {"grad_output": f"upsample(grad, output_size, ({', '.join(scales)},), {mode!r}, "
                        f"{corner_arg})"},
        attrs=("output_size", "input_size", *corner_attrs, *scales),
        saves=(*corner_attrs, "output_size", *scales))
    return (f"{name}_backward(grad, output_size, self_sym_sizes, "
            f"{', '.join((*corner_attrs, *scales))})")


# F.interpolate: one entry per PyTorch node; scales are None when an output size was given.
for _up_name, _up_node, _up_mode, _up_dims, _up_corners in (
        ("upsample_nearest1d", "UpsampleNearest1DBackward0", "nearest", 1, False),
        ("upsample_nearest2d", "UpsampleNearest2DBackward0", "nearest", 2, False),
        ("upsample_nearest_exact1d", "UpsampleNearestExact1DBackward0", "nearest-exact", 1, False),
        ("upsample_nearest_exact2d", "UpsampleNearestExact2DBackward0", "nearest-exact", 2, False),
        ("upsample_linear1d", "UpsampleLinear1DBackward0", "linear", 1, True),
        ("upsample_bilinear2d", "UpsampleBilinear2DBackward0", "bilinear", 2, True)):
    _up_scales = ("scales",) if _up_dims == 1 else ("scales_h", "scales_w")
    _up_corner_attrs = ("align_corners",) if _up_corners else ()
    op(_up_name, _up_node, ("self",),
       {"self": upsample_backward_entry(_up_name, _up_node, _up_mode, _up_dims, _up_corners)},
       lambda self, output_size, *rest, m=_up_mode, n=_up_dims, c=_up_corners:
       layer_kernels.upsample(self, output_size, rest[c:c + n], m, rest[0] if c else False),
       attrs=("output_size", *_up_corner_attrs, *_up_scales, "self_sym_sizes"),
       saves=(*_up_corner_attrs, "output_size", *_up_scales, "self_sym_sizes"))
# 3-d pooling (the formulas' NumPy and Tensor versions are in layer_kernels).
op("max_pool3d", "MaxPool3DWithIndicesBackward0", ("self",),
   {"self": "max_pool3d_with_indices_backward(grad, self, kernel_size, stride, padding, "
            "dilation, ceil_mode, result1)"},
   layer_kernels.max_pool3d, attrs=("kernel_size", "stride", "padding", "dilation", "ceil_mode"),
   extra_outputs=("result1",),
   saves=("ceil_mode", "dilation", "kernel_size", "padding", "result1", "self", "stride"))
op("avg_pool3d", "AvgPool3DBackward0", ("self",),
   {"self": "avg_pool3d_backward(grad, self, kernel_size, stride, padding, ceil_mode, "
            "count_include_pad, divisor_override)"},
   layer_kernels.avg_pool3d,
   attrs=("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
          "divisor_override"),
   saves=("ceil_mode", "count_include_pad", "divisor_override", "kernel_size", "padding", "self",
          "stride"))
op("adaptive_avg_pool3d", "AdaptiveAvgPool3DBackward0", ("self",),
   {"self": "adaptive_avg_pool3d_backward(grad, self)"},
   layer_kernels.adaptive_avg_pool3d, attrs=("output_size",), saves=("self",))
op("adaptive_max_pool3d", "AdaptiveMaxPool3DBackward0", ("self",),
   {"self": "adaptive_max_pool3d_backward(grad, self, result1)"},
   layer_kernels.adaptive_max_pool3d, attrs=("output_size",), extra_outputs=("result1",),
   saves=("result1", "self"))
# The gates of ATen's LSTM and GRU cells: unsafe_chunk, a split whose pieces are not tracked as
# views (copies here).
op("unsafe_split", "UnsafeSplitBackward0", ("self",),
   {"self": "cat_pieces(grad, dim, self_sym_sizes,"
            " split_lengths(self_sym_sizes, dim, split_size))"},
   # The pieces share the input's memory, as PyTorch's do, without being views (own versions).
   lambda self, split_size, dim: list(_split(self, split_size, dim)),
   attrs=("split_size", "dim"), saves=("dim", "self_sym_sizes", "split_size"), multi_output=True)


# --- linear algebra (torch.linalg) ---------------------------------------------------------------
# Real inputs. The forwards are NumPy's LAPACK routines; det, slogdet and solve also keep the LU
# factorization (``LU``, ``pivots``) PyTorch saves. The helpers (formula_linalg) are written once
# for NumPy and once over nbgrad's own ops, which makes the backward differentiable again.

from nbgrad.ops import formula_linalg  # noqa: E402

op("linalg_det", "LinalgDetBackward0", ("A",),
   {"A": "det_backward(grad, result, A)"},
   formula_linalg.det, extra_outputs=("LU", "pivots"), saves=("A", "LU", "pivots", "result"))
op("linalg_slogdet", "LinalgSlogdetBackward0", ("A",),
   {"A": "slogdet_backward(grad, A)"},
   formula_linalg.slogdet, extra_outputs=("LU", "pivots"), output_names=("sign", "logabsdet"),
   saves=("A", "LU", "pivots", "sign"), multi_output=True)
op("linalg_inv_ex", "LinalgInvExBackward0", ("A",), {"A": "inv_backward(grad, inverse)"},
   formula_linalg.inv, extra_outputs=("info",), output_names=("inverse",), saves=("inverse",))
op("linalg_solve_ex", "LinalgSolveExBackward0", ("A", "B"),
   {"A": "solve_backward(grad, result, A, left, True)",
    "B": "solve_backward(grad, result, A, left, False)"},
   formula_linalg.solve, attrs=("left",), extra_outputs=("LU", "pivots", "info"),
   saves=("A", "LU", "left", "pivots", "result"), promote=True)
op("linalg_cholesky_ex", "LinalgCholeskyExBackward0", ("self",),
   {"self": "cholesky_backward(grad, L, upper)"},
   formula_linalg.cholesky, attrs=("upper",), extra_outputs=("info",), output_names=("L",),
   saves=("L", "upper"))
op("linalg_qr", "LinalgQrBackward0", ("A",), {"A": "qr_backward(grad, Q, R, mode)"},
   formula_linalg.qr, attrs=("mode",), output_names=("Q", "R"), saves=("Q", "R", "mode"),
   multi_output=True)
op("linalg_eigh", "LinalgEighBackward0", ("A",),
   {"A": "eigh_backward(grad, eigenvalues, eigenvectors)"},
   formula_linalg.eigh, attrs=("UPLO",), output_names=("eigenvalues", "eigenvectors"),
   saves=("eigenvalues", "eigenvectors"), multi_output=True)
op("linalg_svd", "LinalgSvdBackward0", ("A",),
   {"A": "svd_backward(grad, U, S, Vh, full_matrices)"},
   formula_linalg.svd, attrs=("full_matrices", "S_sym_argsize_minus_1"),
   output_names=("U", "S", "Vh"),
   saves=("S", "S_sym_argsize_minus_1", "U", "Vh", "full_matrices"), multi_output=True)
op("linalg_pinv", "LinalgPinvBackward0", ("self",), {"self": "pinv_backward(grad, result, self)"},
   formula_linalg.pinv, saves=("result", "self"))
op("linalg_matrix_exp", "LinalgMatrixExpBackward0", ("self",),
   {"self": "matrix_exp_backward(grad, self)"}, formula_linalg.matrix_exp, saves=("self",))
op("cholesky_solve", "CholeskySolveBackward0", ("self", "input2"),
   {"self": "cholesky_solve_self_backward(grad, self, input2, upper)",
    "input2": "cholesky_solve_input2_backward(grad, self, input2, result, upper)"},
   formula_linalg.cholesky_solve, attrs=("upper",),
   saves=("input2", "result", "self", "upper"), promote=True)
op("linalg_solve_triangular", "LinalgSolveTriangularBackward0", ("self", "B"),
   {"self": "solve_triangular_backward(grad, self, result, upper, left, unitriangular, True)",
    "B": "solve_triangular_backward(grad, self, result, upper, left, unitriangular, False)"},
   formula_linalg.solve_triangular, attrs=("upper", "left", "unitriangular"),
   saves=("left", "result", "self", "unitriangular", "upper"), promote=True)
op("cholesky_inverse", "CholeskyInverseBackward0", ("self",),
   {"self": "cholesky_inverse_backward(grad, self, result, upper)"},
   formula_linalg.cholesky_inverse, attrs=("upper",), saves=("result", "self", "upper"))
# --- einsum, normalisation layers, folding ------------------------------------------------------
# einsum and tensordot have no node of their own (PyTorch decomposes them into permute, reshape,
# bmm, mul, sum: ops/functions/einsum.py); instance norm is batch norm on a reshaped input and
# rms norm a chain of element-wise ops (nn/functional.py). Group norm is its own node, with its
# kernel and formula helpers in misc_kernels.

from nbgrad.ops import misc_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(misc_kernels.ARRAY_FUNCTIONS)

# result1 and result2 are the mean and 1/std of each (sample, group), shaped (N, group).
op("native_group_norm", "NativeGroupNormBackward0", ("input", "weight", "bias"),
   {"input": "group_norm_input_grad(grad, input, weight, result1, result2, group, eps)",
    "weight": "group_norm_weight_grad(grad, input, result1, result2, group, eps)",
    "bias": "channel_sum(grad)"},
   misc_kernels.group_norm, attrs=("N", "C", "HxW", "group", "eps"),
   extra_outputs=("result1", "result2"),
   saves=("C", "HxW", "N", "eps", "group", "input", "result1", "result2", "weight"), joint=True,
   layout="contiguous")
# Tensor.unfold is a view (windows of the input's memory); its backward adds each window's
# gradient back, and is linear, so an op too, whose own gradient is unfold again.
op("unfold", "UnfoldBackward0", ("self",),
   {"self": "unfold_backward(grad, self_sym_sizes, dimension, size, step)"},
   lambda self, dimension, size, step: misc_kernels.unfold(self, dimension, size, step),
   attrs=("dimension", "size", "step"), saves=("dimension", "self_sym_sizes", "size", "step"),
   view=True)
op("unfold_backward", "UnfoldBackwardBackward0", ("grad_in",),
   {"grad_in": "unfold(grad, dim, size, step)"},
   misc_kernels.unfold_backward, attrs=("input_sizes", "dim", "size", "step"),
   saves=("dim", "size", "step"))
op("pixel_shuffle", "PixelShuffleBackward0", ("self",),
   {"self": "pixel_unshuffle(grad, upscale_factor)"},
   misc_kernels.pixel_shuffle, attrs=("upscale_factor",), saves=("upscale_factor",))
op("pixel_unshuffle", "PixelUnshuffleBackward0", ("self",),
   {"self": "pixel_shuffle(grad, downscale_factor)"},
   misc_kernels.pixel_unshuffle, attrs=("downscale_factor",), saves=("downscale_factor",))
# The mask is an attr (no edge, but shown as _saved_mask, as PyTorch shows it).
op("masked_scatter", "MaskedScatterBackward0", ("self", "source"),
   {"self": "sum_to(masked_zero_broadcast(grad, mask), self_sym_sizes)",
    "source": "masked_scatter_backward(grad, mask, source_sym_sizes, grad.shape)"},
   lambda self, source, mask: misc_kernels.masked_scatter(self, source, mask),
   attrs=("mask",), saves=("mask", "self_sym_sizes", "source_sym_sizes"),
   hidden=("self_sym_sizes",), layout="contiguous")
# torch.index_put and index_put_(..., accumulate=True): with accumulate the values are added and
# self's gradient passes whole; values broadcast to the indexed region.
op("index_put_values", "IndexPutBackward0", ("self", "values"),
   {"self": "grad if accumulate else zero_at(grad, indices)",
    "values": "sum_to(grad[indices], values_sym_sizes)"},
   lambda self, values, indices, accumulate, values_sym_sizes: misc_kernels.index_put(
       self, indices, values, accumulate),
   attrs=("indices", "accumulate", "values_sym_sizes"),
   saves=("accumulate", "indices", "values_sym_sizes"), hidden=("values_sym_sizes",),
   layout="like_self")
# F.scaled_dot_product_attention on 4-d CPU inputs: PyTorch's fused flash-attention node, which
# keeps the output and each row's logsumexp (the mask as the additive float mask it applied).
op("scaled_dot_product_attention", "ScaledDotProductFlashAttentionForCpuBackward0",
   ("query", "key", "value"),
   {_qkv: f"attention_grad(grad, query, key, value, attn_mask, is_causal, scale, logsumexp, {_i})"
    for _i, _qkv in enumerate(("query", "key", "value"))},
   misc_kernels.attention, attrs=("attn_mask", "dropout_p", "is_causal", "scale"),
   extra_outputs=("logsumexp", "output"),
   saves=("attn_mask", "dropout_p", "is_causal", "key", "logsumexp", "output", "query", "scale",
          "value"), joint=True)


# --- linear algebra, more: the LU family, legacy solvers (branch linalg2) -----------------------
# P of linalg.lu and lu_unpack is not differentiable: PyTorch numbers only L and U as the node's
# outputs (0 and 1), so P is an attr here (computed by the function from the pivots), saved and
# returned but never an output of the node. Pivots are int32 attrs, without an edge.

from nbgrad.ops import formula_linalg_lu  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(formula_linalg_lu.ARRAY_NAMESPACE)

op("linalg_lu_factor_ex", "LinalgLuFactorExBackward0", ("A",),
   {"A": "lu_factor_ex_backward(grad, LU, pivots)"},
   lambda A, pivot: formula_linalg_lu.lu_factor(A), attrs=("pivot",), output_names=("LU",),
   extra_outputs=("pivots", "info"), saves=("LU", "pivot", "pivots"))
op("linalg_lu", "LinalgLuBackward0", ("A",), {"A": "linalg_lu_backward(grad, P, L, U)"},
   lambda A, pivot, P: list(formula_linalg_lu.lu(A)[1:]), attrs=("pivot", "P"),
   output_names=("L", "U"), saves=("L", "P", "U", "pivot"), multi_output=True)
op("lu_unpack", "LuUnpackBackward0", ("LU_data",),
   {"LU_data": "lu_unpack_backward(grad, LU_data_sym_argsize_minus_2, "
               "LU_data_sym_argsize_minus_1)"},
   lambda LU_data, unpack_data, rows, columns: formula_linalg_lu.lu_unpack(LU_data, unpack_data),
   attrs=("unpack_data", "LU_data_sym_argsize_minus_2", "LU_data_sym_argsize_minus_1"),
   output_names=("L", "U"),
   saves=("LU_data_sym_argsize_minus_1", "LU_data_sym_argsize_minus_2"), multi_output=True)
op("linalg_lu_solve", "LinalgLuSolveBackward0", ("LU", "B"),
   {"LU": "lu_solve_LU_backward(grad, LU, pivots, result, left, adjoint)",
    "B": "lu_solve_B_backward(grad, LU, pivots, left, adjoint)"},
   lambda LU, B, pivots, left, adjoint: formula_linalg_lu.lu_solve(LU, pivots, B, left, adjoint),
   attrs=("pivots", "left", "adjoint"), saves=("LU", "adjoint", "left", "pivots", "result"))
# The legacy torch.triangular_solve returns a copy of A too, whose gradient goes to A whole.
op("triangular_solve", "TriangularSolveBackward0", ("self", "A"),
   {"self": "triangular_solve_backward(grad, A, solution, upper, transpose, unitriangular, "
            "False)",
    "A": "triangular_solve_backward(grad, A, solution, upper, transpose, unitriangular, True)"},
   formula_linalg_lu.triangular_solve, attrs=("upper", "transpose", "unitriangular"),
   output_names=("solution", "cloned_coefficient"),
   saves=("A", "self", "solution", "transpose", "unitriangular", "upper"), multi_output=True,
   joint=True)
op("cholesky", "CholeskyBackward0", ("self",), {"self": "cholesky_backward(grad, result, upper)"},
   formula_linalg_lu.cholesky, attrs=("upper",), saves=("result", "upper"))


# --- distances and _trilinear (branch linalg2) ---------------------------------------------------
# cdist's and pdist's backwards are ops whose own derivatives PyTorch leaves not implemented: a
# second derivative raises when it reaches them. cdist with p = 2 over more than 25 rows (or
# compute_mode="use_mm_for_euclid_dist") runs _euclidean_dist instead (ops/functions/distances.py).

from nbgrad.ops import distance_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(distance_kernels.ARRAY_FUNCTIONS)

op("cdist", "CdistBackward0", ("x1", "x2"),
   {"x1": "cdist_backward(grad, x1, x2, p, result)",
    "x2": "cdist_backward(contiguous_mT(grad), x2, x1, p, contiguous_mT(result))"},
   lambda x1, x2, p, compute_mode: distance_kernels.cdist(x1, x2, p),
   attrs=("p", "compute_mode"), saves=("p", "result", "x1", "x2"))
op("cdist_backward", "CdistBackwardBackward0", ("grad", "x1", "x2", "cdist"),
   {name: "not_implemented('_cdist_backward')" for name in ("grad", "x1", "x2", "cdist")},
   distance_kernels.cdist_backward, attrs=("p",))
op("pdist", "PdistBackward0", ("self",), {"self": "pdist_backward(grad, self, p, result)"},
   distance_kernels.pdist, attrs=("p",), saves=("p", "result", "self"))
op("pdist_backward", "PdistBackwardBackward0", ("grad", "self", "pdist"),
   {name: "not_implemented('_pdist_backward')" for name in ("grad", "self", "pdist")},
   distance_kernels.pdist_backward, attrs=("p",))
op("euclidean_dist", "EuclideanDistBackward0", ("x1", "x2"),
   {"x1": "euclidean_dist_backward(grad, x1, x2, result, False)",
    "x2": "euclidean_dist_backward(grad, x1, x2, result, True)"},
   distance_kernels.euclidean_dist, saves=("result", "x1", "x2"))
# Each input's gradient is _trilinear again, of the gradient and the two other inputs.
op("trilinear", "TrilinearBackward0", ("i1", "i2", "i3"),
   {"i1": "trilinear(grad, i2, i3, sumdim, expand2, expand3, expand1)",
    "i2": "trilinear(i1, grad, i3, expand1, sumdim, expand3, expand2)",
    "i3": "trilinear(i1, i2, grad, expand1, expand2, sumdim, expand3)"},
   distance_kernels.trilinear,
   attrs=("expand1", "expand2", "expand3", "sumdim", "unroll_dim"),
   saves=("expand1", "expand2", "expand3", "i1", "i2", "i3", "sumdim"))


# --- Householder reflectors: geqrf, householder_product, ormqr (branch linalg2) -----------------
# geqrf's two outputs (a, tau) are both outputs of its node, whose backward PyTorch does not
# implement: it raises when reached.

from nbgrad.ops import formula_linalg_householder  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(formula_linalg_householder.ARRAY_NAMESPACE)

op("geqrf", "GeqrfBackward0", ("self",), {"self": "not_implemented('geqrf')"},
   formula_linalg_householder.geqrf, output_names=("a", "tau"), multi_output=True)
op("linalg_householder_product", "LinalgHouseholderProductBackward0", ("input", "tau"),
   {"input": "householder_product_backward(grad, input, tau, True)",
    "tau": "householder_product_backward(grad, input, tau, False)"},
   formula_linalg_householder.householder_product, saves=("input", "result", "tau"), joint=True)
op("ormqr", "OrmqrBackward0", ("self", "input2", "input3"),
   {name: f"ormqr_backward(grad, self, input2, input3, left, transpose, {name!r})"
    for name in ("self", "input2", "input3")},
   formula_linalg_householder.ormqr, attrs=("left", "transpose"),
   saves=("input2", "input3", "left", "result", "self", "transpose"), joint=True)


# --- least squares: linalg.lstsq (branch linalg2) -----------------------------------------------
# Two differentiable outputs (solution, residuals); rank and singular values are returned by the
# function and have no edge. rcond and driver only choose the forward; the vector case is an attr.

from nbgrad.ops import formula_linalg_lstsq  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(formula_linalg_lstsq.ARRAY_NAMESPACE)

op("linalg_lstsq", "LinalgLstsqBackward0", ("self", "b"),
   {"self": "lstsq_backward(grad, self, b, solution, False)",
    "b": "lstsq_backward(grad, self, b, solution, True)"},
   formula_linalg_lstsq.lstsq, attrs=("rcond", "driver", "vector"),
   output_names=("solution", "residuals"), saves=("b", "self", "solution"), multi_output=True,
   joint=True)

# --- packed sequences, 3-d convolution, unpooling, channel shuffle, more upsampling (nn14) --------
# Kernels and the formulas' helpers in layer_kernels_more (its Tensor versions join
# formula_tensor's namespace).

from nbgrad.ops import layer_kernels_more  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(layer_kernels_more.ARRAY_FUNCTIONS)

# nn.utils.rnn.pack_padded_sequence: the lengths (sorted longest first) are an attr; result1 is
# batch_sizes, how many sequences run at each step (PyTorch shows it as _saved_result1).
op("pack_padded_sequence", "PackPaddedSequenceBackward0", ("input",),
   {"input": "pack_padded_sequence_backward(grad, input_sym_sizes, result1, batch_first)"},
   layer_kernels_more.pack_padded_sequence, attrs=("lengths", "batch_first"),
   extra_outputs=("result1",), saves=("batch_first", "input_sym_sizes", "result1"),
   layout="contiguous")
op("channel_shuffle", "ChannelShuffleBackward0", ("self",),
   {"self": "channel_shuffle(grad, grad.shape[1] // groups)"},
   layer_kernels_more.channel_shuffle, attrs=("groups",), saves=("groups",))
# The indices are an attr (no edge; shown as _saved_indices); the output size is not saved.
op("max_unpool2d", "MaxUnpool2DBackward0", ("self",),
   {"self": "max_pool_double_backward(grad, indices, 2)"},
   lambda self, indices, output_size: layer_kernels_more.max_unpool(self, indices, output_size),
   attrs=("indices", "output_size"), saves=("indices",))
op("max_unpool3d", "MaxUnpool3DBackward0", ("self",),
   {"self": "max_pool_double_backward(grad, indices, 3)"},
   lambda self, indices, output_size, stride, padding: layer_kernels_more.max_unpool(
       self, indices, output_size),
   attrs=("indices", "output_size", "stride", "padding"), saves=("indices",))
# F.conv3d: ATen's convolution with three spatial dims (the same node as conv1d/conv2d).
op("convolution3d", "ConvolutionBackward0", ("input", "weight", "bias"), _CONVOLUTION_GRADS,
   layer_kernels_more.convolution3d,
   attrs=("stride", "padding", "dilation", "transposed", "output_padding", "groups",
          "bias_sym_sizes_opt"),
   saves=("bias_sym_sizes_opt", "dilation", "groups", "input", "output_padding", "padding",
          "stride", "transposed", "weight"),
   joint=True, layout="contiguous")
# F.interpolate's 3-d modes and bicubic, as the entries of the section above ("recurrent layers,
# pooling, transposed convolution"): separable interpolation matrices, one entry per node.
for _up_name, _up_node, _up_mode, _up_dims, _up_corners in (
        ("upsample_nearest3d", "UpsampleNearest3DBackward0", "nearest", 3, False),
        ("upsample_nearest_exact3d", "UpsampleNearestExact3DBackward0", "nearest-exact", 3, False),
        ("upsample_trilinear3d", "UpsampleTrilinear3DBackward0", "trilinear", 3, True),
        ("upsample_bicubic2d", "UpsampleBicubic2DBackward0", "bicubic", 2, True)):
    _up_scales = ("scales_h", "scales_w") if _up_dims == 2 else ("scales_d", "scales_h", "scales_w")
    _up_corner_attrs = ("align_corners",) if _up_corners else ()
    op(_up_name, _up_node, ("self",),
       {"self": upsample_backward_entry(_up_name, _up_node, _up_mode, _up_dims, _up_corners)},
       lambda self, output_size, *rest, m=_up_mode, n=_up_dims, c=_up_corners:
       layer_kernels.upsample(self, output_size, rest[c:c + n], m, rest[0] if c else False),
       attrs=("output_size", *_up_corner_attrs, *_up_scales, "self_sym_sizes"),
       saves=(*_up_corner_attrs, "output_size", *_up_scales, "self_sym_sizes"))
# F.conv_transpose3d: ATen's convolution with transposed=True (ConvolutionBackward0); its input
# gradient is the convolution it transposes, its weight gradient that convolution's with the
# roles of input and gradient exchanged (norm_conv_double_backward picks them).
op("convolution_transposed3d", "ConvolutionBackward0", ("input", "weight", "bias"),
   _CONVOLUTION_GRADS,
   layer_kernels_more.convolution_transposed3d,
   attrs=("stride", "padding", "dilation", "transposed", "output_padding", "groups",
          "bias_sym_sizes_opt"),
   saves=("bias_sym_sizes_opt", "dilation", "groups", "input", "output_padding", "padding",
          "stride", "transposed", "weight"),
   joint=True)
# F.interpolate(..., antialias=True): PIL-style filters stretched when shrinking.
for _up_name, _up_node, _up_mode in (
        ("_upsample_bilinear2d_aa", "UpsampleBilinear2DAaBackward0", "bilinear-aa"),
        ("_upsample_bicubic2d_aa", "UpsampleBicubic2DAaBackward0", "bicubic-aa")):
    op(_up_name, _up_node, ("self",),
       {"self": upsample_backward_entry(_up_name, _up_node, _up_mode, 2, True)},
       lambda self, output_size, align_corners, scales_h, scales_w, self_sym_sizes, m=_up_mode:
       layer_kernels.upsample(self, output_size, (scales_h, scales_w), m, align_corners),
       attrs=("output_size", "align_corners", "scales_h", "scales_w", "self_sym_sizes"),
       saves=("align_corners", "output_size", "scales_h", "scales_w", "self_sym_sizes"))

# --- nn functions, more (margin losses, rrelu, weight norm, conv_tbc) ---------------------------
# Kernels and formula helpers in nn_extra_kernels (each helper written once for NumPy and for
# differentiable Tensors). Targets, noise and indices never get a gradient: attrs, as above.

from nbgrad.ops import nn_extra_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(nn_extra_kernels.ARRAY_FUNCTIONS)

op("multi_margin_loss", "MultiMarginLossBackward0", ("self",),
   {"self": "multi_margin_loss_backward(grad, self, target, p, margin, weight, reduction)"},
   nn_extra_kernels.multi_margin_loss, attrs=("target", "p", "margin", "weight", "reduction"),
   saves=("margin", "p", "reduction", "self", "target", "weight"))
op("multilabel_margin_loss_forward", "MultilabelMarginLossBackward0", ("self",),
   {"self": "multilabel_margin_loss_backward(grad, self, target, reduction, is_target)"},
   nn_extra_kernels.multilabel_margin_loss, attrs=("target", "reduction"),
   extra_outputs=("is_target",), saves=("is_target", "reduction", "self", "target"))
# rrelu in training multiplies each non-positive element by a random slope, kept in ``noise``
# (an attr the forward fills); in eval it is leaky_relu with the mean slope. In place, the input
# is overwritten and the result is saved instead (another node, as for leaky_relu_).
op("rrelu_with_noise", "RreluWithNoiseBackward0", ("self",),
   {"self": "rrelu_with_noise_backward(grad, self, noise, lower, upper, training, False)"},
   nn_extra_kernels.rrelu_with_noise,
   attrs=("noise", "lower", "upper", "training", "generator"),
   saves=("lower", "noise", "self", "training", "upper"), layout="contiguous")
op("rrelu_with_noise_inplace", "RreluWithNoiseBackward1", ("self",),
   {"self": "rrelu_with_noise_backward(grad, result, noise, lower, upper, training, True)"},
   nn_extra_kernels.rrelu_with_noise,
   attrs=("noise", "lower", "upper", "training", "generator"),
   saves=("lower", "noise", "result", "training", "upper"))
# torch._weight_norm along dim 0 or the last dim: w = g * v / ||v||; result1 is the norms.
op("_weight_norm_interface", "WeightNormInterfaceBackward0", ("v", "g"),
   {"v": "weight_norm_backward(grad, v, g, result1, dim, 0)",
    "g": "weight_norm_backward(grad, v, g, result1, dim, 1)"},
   nn_extra_kernels.weight_norm, attrs=("dim",), extra_outputs=("result1",),
   saves=("dim", "g", "result1", "v"), joint=True, promote=True, layout="contiguous")
op("conv_tbc", "ConvTbcBackward0", ("self", "weight", "bias"),
   {"self": "conv_tbc_backward(grad, self, weight, bias, pad, 0)",
    "weight": "conv_tbc_backward(grad, self, weight, bias, pad, 1)",
    "bias": "conv_tbc_backward(grad, self, weight, bias, pad, 2)"},
   nn_extra_kernels.conv_tbc, attrs=("pad",), saves=("bias", "pad", "self", "weight"),
   joint=True)
# ATen's at::norm(x, p) over every element (norm.Scalar), which weight norm over every dim runs.
op("norm_scalar", "NormBackward0", ("self",),
   {"self": "norm_backward(grad, self, p, result, None, False)"},
   lambda self, p: nn_kernels.vector_norm(self, p, None, False), attrs=("p",),
   saves=("p", "result", "self"), floating=True)
# F.affine_grid: the grid is linear in theta; its backward, linear in grad, is the same helper.
op("affine_grid_generator", "AffineGridGeneratorBackward0", ("theta",),
   {"theta": "affine_grid_generator_backward(grad, size, align_corners)"},
   nn_extra_kernels.affine_grid_generator, attrs=("size", "align_corners"),
   saves=("align_corners", "size"))
# F.embedding_bag (torch.embedding_bag runs _embedding_bag): indices and offsets are attrs; the
# three extra outputs are what the backward reads (see nn_extra_kernels).
op("_embedding_bag", "EmbeddingBagBackward0", ("weight", "per_sample_weights"),
   {"weight": "_embedding_bag_backward(grad, per_sample_weights, indices, offsets, result1, "
              "result2, result3, weight_sym_argsize_0, scale_grad_by_freq, mode, sparse, "
              "padding_idx)",
    "per_sample_weights": "embedding_bag_per_sample_weights_backward(grad, weight, indices, "
                          "offsets, result1, mode, padding_idx)"},
   lambda weight, per_sample_weights, indices, offsets, scale_grad_by_freq, mode, sparse,
   include_last_offset, padding_idx, weight_sym_argsize_0: nn_extra_kernels.embedding_bag(
       weight, per_sample_weights, indices, offsets, scale_grad_by_freq, mode, sparse,
       include_last_offset, padding_idx),
   attrs=("indices", "offsets", "scale_grad_by_freq", "mode", "sparse", "include_last_offset",
          "padding_idx", "weight_sym_argsize_0"),
   extra_outputs=("result1", "result2", "result3"),
   saves=("indices", "mode", "offsets", "padding_idx", "per_sample_weights", "result1",
          "result2", "result3", "scale_grad_by_freq", "sparse", "weight",
          "weight_sym_argsize_0"))
# F.fractional_max_pool2d/3d: max pooling over windows at pseudo-random offsets (the random
# samples are an attr); result1 holds each maximum's position in its plane.
for _k in (2, 3):
    op(f"fractional_max_pool{_k}d", f"FractionalMaxPool{_k}DBackward0", ("self",),
       {"self": f"fractional_max_pool{_k}d_backward(grad, self, kernel_size, output_size, "
                "result1)"},
       lambda self, kernel_size, output_size, random_samples: (
           nn_extra_kernels.fractional_max_pool(self, kernel_size, output_size, random_samples)),
       attrs=("kernel_size", "output_size", "random_samples"), extra_outputs=("result1",),
       saves=("kernel_size", "output_size", "result1", "self"))
# torch.embedding_renorm_ (F.embedding's max_norm runs it under no_grad): in place, with a
# backward PyTorch does not implement either.
op("embedding_renorm", "EmbeddingRenormBackward0", ("self",),
   {"self": "not_implemented('embedding_renorm')"},
   lambda self, indices, max_norm, norm_type: nn_extra_kernels.embedding_renorm(
       self, indices, max_norm, norm_type), attrs=("indices", "max_norm", "norm_type"))
# torch._masked_softmax along the last dim with a mask of the input's shape (True: left out).
op("_masked_softmax", "MaskedSoftmaxBackward0", ("self",),
   {"self": "masked_softmax_backward(grad, result, mask, dim)"},
   lambda self, mask, dim, mask_type: nn_extra_kernels.masked_softmax(
       self, mask, self.ndim - 1 if dim is None else dim, mask_type),
   attrs=("mask", "dim", "mask_type"), saves=("dim", "mask", "result"), layout="like_self")
# torch._ctc_loss (F.ctc_loss runs it, then its reduction as ordinary ops): result0 is each
# sample's loss, result1 its log_alpha (see nn_extra_kernels).
op("_ctc_loss", "CtcLossBackward0", ("log_probs",),
   {"log_probs": "ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, "
                 "result0, result1, blank, zero_infinity)"},
   nn_extra_kernels.ctc_loss,
   attrs=("targets", "input_lengths", "target_lengths", "blank", "zero_infinity"),
   extra_outputs=("result1",),
   saves=("blank", "input_lengths", "log_probs", "result0", "result1", "target_lengths",
          "targets", "zero_infinity"))
# The overload with tensor lengths (torch._ctc_loss called with them; F.ctc_loss converts them).
op("_ctc_loss_tensor", "CtcLossBackward1", ("log_probs",),
   {"log_probs": "ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, "
                 "result0, result1, blank, zero_infinity)"},
   nn_extra_kernels.ctc_loss,
   attrs=("targets", "input_lengths", "target_lengths", "blank", "zero_infinity"),
   extra_outputs=("result1",),
   saves=("blank", "input_lengths", "log_probs", "result0", "result1", "target_lengths",
          "targets", "zero_infinity"))

# --- special functions (branch special: lgamma, digamma, polygamma, Bessel, zeta, igamma, ...) --
# Forwards in float64 from special_kernels (NumPy only: series, recurrences, asymptotic
# expansions), cast back to the input's dtype. torch.special.* names: ops/functions/special.py.

from nbgrad.ops import special_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(special_kernels.ARRAY_FUNCTIONS)


def _array_of(value):
    """A tensor argument passed as an attribute (a formula's ``result`` under create_graph is a
    Tensor) as its array."""
    return value._data if hasattr(value, "_data") else value


def _special(kernel):
    """A kernel run in float64, its result cast back to its (first) input's dtype."""
    def forward(self, *rest):
        return kernel(self, *rest).astype(np.result_type(self, *rest), copy=False)
    return forward


op("lgamma", "LgammaBackward0", ("self",), {"self": "grad * digamma(self)"},
   _special(special_kernels.lgamma), saves=("self",), floating=True, same_shape=True,
   function=True, method=True, inplace="method", out=True)
op("digamma", "DigammaBackward0", ("self",), {"self": "grad * polygamma(1, self)"},
   _special(special_kernels.digamma), saves=("self",), floating=True, same_shape=True,
   function=True, method=True, inplace="method", out=True)
# The Gamma sampler, torch._standard_gamma (what Gamma, Beta and Dirichlet draw with): its
# gradient holds the draw's quantile fixed (ops/gamma_kernels.py), computed by a function of its
# own, _standard_gamma_grad, whose derivative PyTorch does not implement; its ``output`` has no
# formula, so no edge (an attribute here, as PyTorch's node keeps no edge for it).
backward_function(
    "_standard_gamma_grad", "StandardGammaGradBackward0", ("self",),
    lambda self, output: gamma_kernels.standard_gamma_grad(self, _array_of(output)),
    {"self": "not_implemented('_standard_gamma_grad')"}, attrs=("output",), floating=True)
op("_standard_gamma", "StandardGammaBackward0", ("self",),
   {"self": "grad * _standard_gamma_grad(self, result)"},
   lambda self, rng: gamma_kernels.standard_gamma(self, rng), attrs=("generator",),
   saves=("self", "result"), same_shape=True, layout="contiguous")
op("polygamma", "PolygammaBackward0", ("self",), {"self": "grad * polygamma(n + 1, self)"},
   lambda self, n: special_kernels.polygamma(n, self).astype(self.dtype, copy=False),
   attrs=("n",), saves=("n", "self"), floating=True, same_shape=True)
op("polygamma_inplace", "PolygammaBackward1", ("self",),
   {"self": "grad * polygamma(n + 1, self)"},
   lambda self, n: special_kernels.polygamma(n, self).astype(self.dtype, copy=False),
   attrs=("n",), saves=("n", "self"), floating=True, same_shape=True)
op("mvlgamma", "MvlgammaBackward0", ("self",), {"self": "mvlgamma_backward(grad, self, p)"},
   lambda self, p: special_kernels.mvlgamma(self, p).astype(self.dtype, copy=False),
   attrs=("p",), saves=("p", "self"), floating=True, same_shape=True, layout="contiguous")
op("i0", "I0Backward0", ("self",), {"self": "grad * special_i1(self)"},
   lambda self: special_kernels.i0(self, self.dtype).astype(self.dtype), saves=("self",),
   floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("special_i0e", "SpecialI0EBackward0", ("self",),
   {"self": "grad * (special_i1e(self) - sign(self) * result)"},
   _special(special_kernels.i0e), saves=("result", "self"), floating=True, same_shape=True)
op("special_i1", "SpecialI1Backward0", ("self",), {"self": "i1_backward(grad, self, result)"},
   lambda self: special_kernels.i1(self, self.dtype).astype(self.dtype),
   saves=("result", "self"), floating=True, same_shape=True)
op("special_i1e", "SpecialI1EBackward0", ("self",), {"self": "i1e_backward(grad, self, result)"},
   _special(special_kernels.i1e), saves=("result", "self"), floating=True, same_shape=True)
op("special_entr", "SpecialEntrBackward0", ("self",), {"self": "grad * -(1 + log(self))"},
   _special(special_kernels.entr), saves=("self",), floating=True, same_shape=True)
op("special_ndtri", "SpecialNdtriBackward0", ("self",),
   {"self": "grad * 2.5066282746310002 * exp(result * result / 2)"},  # sqrt(2 pi)
   _special(special_kernels.ndtri), saves=("result",), floating=True, same_shape=True)
op("special_log_ndtr", "SpecialLogNdtrBackward0", ("self",),
   {"self": "grad / 2.5066282746310002 * exp(-(result + self ** 2 / 2))"},
   _special(special_kernels.log_ndtr), saves=("result", "self"), floating=True, same_shape=True)
op("special_erfcx", "SpecialErfcxBackward0", ("self",),
   {"self": "(2.0 * self * result - 1.1283791670955126) * grad"},  # 2 / sqrt(pi)
   _special(special_kernels.erfcx), saves=("result", "self"), floating=True, same_shape=True)
op("special_xlog1py", "SpecialXlog1PyBackward0", ("self", "other"),
   {"self": "masked_zero(xlog1py(grad, other), (self == 0) & (other <= -1))",
    "other": "grad * self / (other + 1)"},
   _special(special_kernels.xlog1py), saves=("other", "self"), promote=True, floating=True,
   layout="elementwise")
op("special_xlog1py_scalar_self", "SpecialXlog1PyBackward1", ("other",),
   {"other": "grad * self / (other + 1)"},
   lambda other, self: special_kernels.xlog1py(self, other).astype(other.dtype, copy=False),
   attrs=("self",), saves=("other", "self"), floating=True, layout="elementwise")
op("special_xlog1py_scalar_other", "SpecialXlog1PyBackward2", ("self",),
   {"self": "masked_zero(xlog1py(grad, other), (self == 0) & (other <= -1))"},
   lambda self, other: special_kernels.xlog1py(self, other).astype(self.dtype, copy=False),
   attrs=("other",), saves=("other", "self"), floating=True, layout="elementwise")
# Only the derivative in x is known in closed form: PyTorch's formulas for a (igamma's self,
# zeta's self) raise when backward reaches them.
op("igamma", "IgammaBackward0", ("self", "other"),
   {"self": "not_implemented('igamma: input')",
    "other": "grad * exp((self - 1) * log(other) - other - lgamma(self))"},
   _special(special_kernels.igamma), saves=("other", "self"), promote=True, floating=True,
   layout="elementwise")
op("igammac", "IgammacBackward0", ("self", "other"),
   {"self": "not_implemented('igammac: input')",
    "other": "-grad * exp((self - 1) * log(other) - other - lgamma(self))"},
   _special(special_kernels.igammac), saves=("other", "self"), promote=True, floating=True,
   layout="elementwise")
op("special_zeta", "SpecialZetaBackward0", ("self", "other"),
   {"self": "not_implemented('zeta')", "other": "grad * -self * special_zeta(self + 1.0, other)"},
   _special(special_kernels.zeta), saves=("other", "self"), promote=True, floating=True,
   layout="elementwise")
op("special_zeta_scalar_self", "SpecialZetaBackward1", ("other",),
   {"other": "grad * -self * special_zeta(self + 1.0, other)"},
   lambda other, self: special_kernels.zeta(self, other).astype(other.dtype, copy=False),
   attrs=("self",), saves=("other", "self"), floating=True, layout="elementwise")
op("special_zeta_scalar_other", "SpecialZetaBackward2", ("self",),
   {"self": "not_implemented('zeta')"},
   lambda self, other: special_kernels.zeta(self, other).astype(self.dtype, copy=False),
   attrs=("other",), floating=True, layout="elementwise")


# --- element-wise, more (branch special: fmax, fmin, nextafter, ldexp, frexp, angle, rsub) ------

op("fmax", "FmaxBackward0", ("self", "other"),
   {"self": "masked_zero(grad, ~((self >= other) | isnan(other)))",
    "other": "masked_zero(grad, (self >= other) | isnan(other))"},
   np.fmax, saves=("other", "self"), promote=True, layout="elementwise")
op("fmin", "FminBackward0", ("self", "other"),
   {"self": "masked_zero(grad, ~((self <= other) | isnan(other)))",
    "other": "masked_zero(grad, (self <= other) | isnan(other))"},
   np.fmin, saves=("other", "self"), promote=True, layout="elementwise")
op("nextafter", "NextafterBackward0", ("self", "other"),
   {"self": "masked_zero(grad, self == other)", "other": "zeros_like(grad)"},
   np.nextafter, saves=("other", "self"), promote=True, layout="elementwise")
# x * 2 ** other; ``other`` may be an integer tensor (no gradient) or a float one. PyTorch's
# formula computes 2 ** other in other's dtype: an integer power, 0 for a negative exponent.
op("ldexp", "LdexpBackward0", ("self", "other"),
   {"self": "grad * power_of_two(other)", "other": "grad * result * 0.6931471805599453"},
   lambda self, other: self * np.exp2(other).astype(self.dtype, copy=False),
   saves=("other", "result"), promote=True, floating=True, layout="elementwise")
op("frexp", "FrexpBackward0", ("self",), {"self": "grad / exp2(exponent)"},
   np.frexp, extra_outputs=("exponent",), saves=("exponent",))
# A real number's angle is 0 or pi: flat, so its gradient is zero.
op("angle", "AngleBackward0", ("self",), {"self": "angle_backward(grad, self)"},
   lambda self: np.where(np.isnan(self), self, np.where(self < 0, np.pi, 0.0)).astype(
       self.dtype, copy=False),
   saves=("self",), floating=True, same_shape=True, function=True, method=True, out=True)
op("rsub_tensor", "RsubBackward0", ("self", "other"),
   {"self": "-grad * alpha", "other": "grad"},
   lambda self, other, alpha: other - alpha * self, attrs=("alpha",), saves=("alpha",),
   promote=True)


# --- in place: comparisons, squeeze_, unsqueeze_, t_; fill (branch special) ----------------------
# x.eq_(y) writes 1 or 0 into x in x's dtype: a step, so zero gradients; a tensor ``other`` has an
# edge of its own (EqBackward1, ...).

for _name, _compare in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                        ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)):
    _title = _name.capitalize()
    op(f"{_name}_inplace", f"{_title}Backward0", ("self",), {"self": "zeros_like(grad)"},
       lambda self, other, compare=_compare: compare(self, other).astype(self.dtype),
       attrs=("other",))
    op(f"{_name}_inplace_tensor", f"{_title}Backward1", ("self", "other"),
       {"self": "zeros_like(grad)", "other": "zeros_like(grad)"},
       lambda self, other, compare=_compare: compare(self, other).astype(self.dtype))
# In-place reshapes: the tensor itself takes the new shape (ops/functions/inplace_views.py);
# these entries make its new node.
op("squeeze_inplace", "SqueezeBackward3", ("self",), {"self": "reshape(grad, self_sym_sizes)"},
   np.squeeze, saves=("self_sym_sizes",))
op("squeeze_dim_inplace", "SqueezeBackward4", ("self",),
   {"self": "reshape(grad, self_sym_sizes)"},
   lambda self, dim: np.squeeze(self, dim) if self.ndim and self.shape[dim] == 1 else self[...],
   attrs=("dim",), saves=("dim", "self_sym_sizes"))
op("squeeze_dims_inplace", "SqueezeBackward5", ("self",),
   {"self": "reshape(grad, self_sym_sizes)"},
   lambda self, dim: _squeeze_given(self, dim), attrs=("dim",), saves=("dim", "self_sym_sizes"))
# squeeze with a tuple of dims (squeeze.dims); "squeeze_dims" above is matmul's squeeze_(dim)
op("squeeze_dims_tuple", "SqueezeBackward2", ("self",), {"self": "reshape(grad, self_sym_sizes)"},
   lambda self, dim: _squeeze_given(self, dim), attrs=("dim",), saves=("dim", "self_sym_sizes"),
   view=True)


def _squeeze_given(array, dims):
    """Squeeze the dims given (negative ones counted from the end) that have size 1; PyTorch
    saves the dims as given."""
    dims = {d % array.ndim for d in dims} if array.ndim else set()
    return np.squeeze(array, tuple(d for d in sorted(dims) if array.shape[d] == 1))
op("unsqueeze_inplace", "UnsqueezeBackward1", ("self",), {"self": "squeeze(grad, dim)"},
   np.expand_dims, attrs=("dim",), saves=("dim",))
op("t_inplace", "TBackward1", ("self",), {"self": "matrix_t(grad) if grad.ndim == 2 else grad"},
   lambda self: self.T)
# torch.fill(x, value): a new tensor of x's shape and dtype; a tensor value gets the gradient's sum
op("fill_out_of_place", "FillBackward0", ("self",), {"self": "zeros_like(grad)"},
   lambda self, value: np.full_like(self, value), attrs=("value",))
op("fill_out_of_place_tensor", "FillBackward1", ("self", "value"),
   {"self": "zeros_like(grad)", "value": "grad"},  # summed to value's 0-d shape
   lambda self, value: np.full_like(self, value))


# --- reductions, more (branch special: nansum, nanmedian, aminmax) ------------------------------

op("nansum", "NansumBackward0", ("self",), {"self": "nansum_backward(grad, self, dim, keepdim)"},
   lambda self, dim, keepdim, dtype: np.nansum(
       self, axis=None if dim is None else _axis(self, dim), keepdims=keepdim,
       dtype=dtype).astype(dtype or self.dtype, copy=False),
   attrs=("dim", "keepdim", "dtype"), saves=("dim", "keepdim", "self"), layout="contiguous")
op("nanmedian", "NanmedianBackward0", ("self",), {"self": "evenly_distribute(grad, self, result)"},
   lambda self: _lower_nanmedian(self), saves=("result", "self"))
op("nanmedian_dim", "NanmedianBackward1", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, keepdim)"},
   lambda self, dim, keepdim: _nanmedian_dim(self, dim, keepdim), attrs=("dim", "keepdim"),
   extra_outputs=("indices",), saves=("dim", "indices", "keepdim", "self_sym_sizes"))
# Both outputs are differentiable: ties share each output's gradient, as amax's and amin's.
op("aminmax", "AminmaxBackward0", ("self",),
   {"self": "(zeros_like(self) if grad[0] is None else"
            " amax_backward(grad[0], self, min, aminmax_dims(dim), keepdim))"
            " + (0 if grad[1] is None else"
            " amax_backward(grad[1], self, max, aminmax_dims(dim), keepdim))"},
   lambda self, dim, keepdim: [
       self.min(axis=None if dim is None else dim, keepdims=keepdim),
       self.max(axis=None if dim is None else dim, keepdims=keepdim)],
   attrs=("dim", "keepdim"), output_names=("min", "max"),
   saves=("dim", "keepdim", "max", "min", "self"), multi_output=True)


def _lower_nanmedian(x):
    values = x.reshape(-1)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return np.asarray(np.nan, x.dtype)
    return np.asarray(np.sort(values)[(values.size - 1) // 2])


def _nanmedian_dim(x, dim, keepdim):
    """The lower median of the non-nan values along ``dim`` (nan where there are none), and
    where it was: NumPy's stable sort puts nan last, so position (count - 1) // 2 is it."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    order = np.argsort(x, axis=dim, kind="stable")
    count = np.sum(~np.isnan(x), axis=dim, keepdims=True)
    position = np.maximum(count - 1, 0) // 2
    indices = np.take_along_axis(order, position, axis=dim)
    values = np.take_along_axis(x, indices, axis=dim)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values.copy(), indices.astype(np.int64)


# --- scatters into a view's place, copies of views (branch special) -----------------------------
# torch.slice_scatter(x, src, ...) is x with the slice x[...] replaced by src: gradient to src
# from that slice, to x from everywhere else. ``slice_key`` / ``select_key`` index both arrays
# and Tensors; the scatters are their own formulas' helpers (so double backward works).

op("slice_scatter", "SliceScatterBackward0", ("self", "src"),
   {"self": "slice_scatter(grad, zeros_like(grad[slice_key(grad.ndim, dim, start, end, step)]),"
            " dim, start, end, step)",
    "src": "grad[slice_key(grad.ndim, dim, start, end, step)]"},
   lambda self, src, dim, start, end, step: special_kernels.scatter_into(
       self, src, special_kernels.slice_key(self.ndim, dim, start, end, step)),
   attrs=("dim", "start", "end", "step"), saves=("dim", "end", "start", "step"), promote=True,
   layout="self_strides")
op("select_scatter", "SelectScatterBackward0", ("self", "src"),
   {"self": "select_scatter(grad, zeros_like(grad[select_key(grad.ndim, dim, index)]), dim,"
            " index)",
    "src": "grad[select_key(grad.ndim, dim, index)]"},
   lambda self, src, dim, index: special_kernels.scatter_into(
       self, src, special_kernels.select_key(self.ndim, dim, index)),
   attrs=("dim", "index"), saves=("dim", "index"), promote=True, layout="self_strides")
op("diagonal_scatter", "DiagonalScatterBackward0", ("self", "src"),
   {"self": "diagonal_scatter(grad, zeros_like(grad.diagonal(offset, dim1, dim2)), offset, dim1,"
            " dim2)",
    "src": "grad.diagonal(offset, dim1, dim2)"},
   lambda self, src, offset, dim1, dim2: special_kernels.diagonal_scatter(
       self, src, offset, dim1, dim2),
   attrs=("offset", "dim1", "dim2"), saves=("dim1", "dim2", "offset"), promote=True,
   layout="self_strides")
op("narrow_copy", "NarrowCopyBackward0", ("self",),
   # (start is saved as given: a negative one counts from the end)
   {"self": "slice_backward(grad, self_sym_sizes, dim, start % self_sym_sizes[dim],"
            " start % self_sym_sizes[dim] + length, 1)"},
   lambda self, dim, start, length: self[special_kernels.slice_key(
       self.ndim, dim, start % self.shape[dim], start % self.shape[dim] + length, 1)].copy(),
   attrs=("dim", "start", "length"), saves=("dim", "length", "self_sym_sizes", "start"))
op("unsafe_split_with_sizes", "UnsafeSplitWithSizesBackward0", ("self",),
   {"self": "cat_pieces(grad, dim, self_sym_sizes, split_sizes)"},
   # (pieces sharing the input's memory, as unsafe_split's)
   lambda self, split_sizes, dim: _split_with_sizes(self, split_sizes, dim),
   attrs=("split_sizes", "dim"), saves=("dim", "self_sym_sizes", "split_sizes"),
   multi_output=True)
# softmax that gives 0 (not nan) on a row that is all -inf (attention masks)
op("safe_softmax", "SafeSoftmaxBackward0", ("self",),
   {"self": "result * (grad - sum_dim(grad * result, dim, True))"},
   # (a new contiguous tensor whatever the input's layout, as PyTorch's)
   lambda self, dim: np.ascontiguousarray(np.nan_to_num(_softmax(self, dim), nan=0.0))
   if self.size else self.copy(),
   attrs=("dim",), saves=("dim", "result"), floating=True, same_shape=True, layout="contiguous")
# index_fill with a 0-d tensor value (ATen's int_Tensor overload): the value gets the sum of the
# gradient over the filled places, each counted once.
op("index_fill_tensor", "IndexFillBackward1", ("self", "value"),
   {"self": "index_zero(grad, dim, index)", "value": "index_filled_sum(grad, dim, index)"},
   lambda self, value, dim, index: special_kernels.laid_out_like(
       self, formula_more.index_put(self, dim, index, value.astype(self.dtype))),
   attrs=("dim", "index"), saves=("dim", "index"))
# x.put(index, source): source's values written at flat positions of x (added with accumulate).
op("put", "PutBackward0", ("self", "source"),
   {"self": "grad if accumulate else put_zero(grad, index)",
    "source": "reshape(take_flat(grad, index), source.shape)"},
   lambda self, source, index, accumulate: special_kernels.put(self, index, source, accumulate),
   attrs=("index", "accumulate"), saves=("accumulate", "index", "source"), promote=True)

# --- a float32 LSTM layer as one op (oneDNN's, as PyTorch runs it on the CPU) ---------------
# One node per layer and direction, MkldnnRnnLayerBackward0, whose backward runs through the
# whole sequence at once (nbgrad/ops/rnn_kernels.py). Its outputs are the layer's output and
# final h and c; the fourth, a byte buffer backward reads, is saved and not returned.
# weight2 and weight3 are the biases (zeros, unused, when has_biases is False).

from nbgrad.ops import rnn_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(rnn_kernels.ARRAY_FUNCTIONS)

_MKLDNN_RNN_LAYER_INPUTS = ("input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_")
_MKLDNN_RNN_LAYER_BACKWARD = (
    "mkldnn_rnn_layer_backward(input, weight0, weight1, weight2, weight3, hx_, cx_, result0, "
    "result1, result2, grad[0], grad[1], grad[2], reverse, mode, hidden_size, num_layers, "
    "has_biases, train, bidirectional, batch_sizes, batch_first, result3)"
)
op("mkldnn_rnn_layer", "MkldnnRnnLayerBackward0", _MKLDNN_RNN_LAYER_INPUTS,
   {name: f"{_MKLDNN_RNN_LAYER_BACKWARD}[{k}]" for k, name in enumerate(_MKLDNN_RNN_LAYER_INPUTS)},
   lambda x, w0, w1, w2, w3, hx, cx, reverse, batch_sizes, mode, hidden_size, num_layers,
   has_biases, bidirectional, batch_first, train: rnn_kernels.lstm_layer(
       x, w0, w1, w2, w3, hx, cx, reverse, has_biases),
   attrs=("reverse", "batch_sizes", "mode", "hidden_size", "num_layers", "has_biases",
          "bidirectional", "batch_first", "train"),
   output_names=("result0", "result1", "result2"), extra_outputs=("result3",),
   saves=("input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_", "result0",
          "result1", "result2", "reverse", "mode", "hidden_size", "num_layers", "has_biases",
          "train", "bidirectional", "batch_sizes", "batch_first", "result3"),
   multi_output=True, joint=True)

# --- renorm (branch attention) ----------------------------------------------------------------
# torch.renorm(x, p, dim, maxnorm): slices along dim with a p-norm above maxnorm scaled down to it
from nbgrad.ops import renorm_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(renorm_kernels.ARRAY_NAMESPACE)
op("renorm", "RenormBackward0", ("self",),
   {"self": "renorm_backward(grad, self, p, dim, maxnorm)"},
   renorm_kernels.renorm, attrs=("p", "dim", "maxnorm"), saves=("dim", "maxnorm", "p", "self"),
   floating=True)

# --- grid sampling (F.grid_sample) ------------------------------------------------------------
# The input read at the grid's points (bilinear, nearest or bicubic; zeros, border or reflection
# padding); kernels in grid_sample_kernels. PyTorch's backward is one function for both inputs,
# grid_sampler_2d_backward, itself an op with both outputs (so a gradient of the gradient,
# create_graph=True, records GridSampler2DBackwardBackward0); its formulas read its outputs'
# gradients, grad[0] for grad_input and grad[1] for grad_grid.

from nbgrad.ops import grid_sample_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(grid_sample_kernels.ARRAY_FUNCTIONS)

_GRID_SAMPLER_ARGS = "interpolation_mode, padding_mode, align_corners"
for _dims in (2, 3):
    op(f"grid_sampler_{_dims}d_backward", f"GridSampler{_dims}DBackwardBackward0",
       ("grad_output", "input", "grid"),
       {name: f"grid_sampler_double_backward_output({k}, grad, grad_output, input, grid, "
              f"{_GRID_SAMPLER_ARGS})"
        for k, name in enumerate(("grad_output", "input", "grid"))},
       lambda grad_output, input, grid, mode, padding_mode, align_corners: list(  # noqa: A006
           grid_sample_kernels.grid_sampler_backward(
               grad_output, input, grid, mode, padding_mode, align_corners, (True, True))),
       attrs=("interpolation_mode", "padding_mode", "align_corners"),
       saves=("align_corners", "grad_output", "grid", "input", "interpolation_mode",
              "padding_mode"),
       multi_output=True, joint=True, promote=True)
    op(f"grid_sampler_{_dims}d", f"GridSampler{_dims}DBackward0", ("input", "grid"),
       {name: f"grid_sampler_backward_output({k}, grad, input, grid, {_GRID_SAMPLER_ARGS})"
        for k, name in enumerate(("input", "grid"))},
       grid_sample_kernels.grid_sampler,
       attrs=("interpolation_mode", "padding_mode", "align_corners"),
       saves=("align_corners", "grid", "input", "interpolation_mode", "padding_mode"),
       joint=True, promote=True)

# --- unique values (torch.unique, torch.unique_consecutive) --------------------------------------
# The values are differentiable outputs without a formula: a float input that requires grad gives
# a result with PyTorch's node, and backward through it raises its NotImplementedError. The
# inverse indices and counts are integer outputs that never require grad (empty when not asked
# for, as ATen returns them).

from nbgrad.ops import unique_kernels  # noqa: E402

op("_unique", "UniqueBackward0", ("self",), {"self": "not_implemented('_unique')"},
   unique_kernels.unique_sorted, attrs=("sorted", "return_inverse"), extra_outputs=("result1",))
op("unique_dim", "UniqueDimBackward0", ("self",), {"self": "not_implemented('unique_dim')"},
   unique_kernels.unique_dim, attrs=("dim", "sorted", "return_inverse", "return_counts"),
   extra_outputs=("result1", "result2"))
op("unique_consecutive", "UniqueConsecutiveBackward0", ("self",),
   {"self": "not_implemented('unique_consecutive')"},
   unique_kernels.unique_consecutive, attrs=("return_inverse", "return_counts", "dim"),
   extra_outputs=("result1", "result2"))
op("_unique2", "Unique2Backward0", ("self",), {"self": "not_implemented('_unique2')"},
   unique_kernels.unique2, attrs=("sorted", "return_inverse", "return_counts"),
   extra_outputs=("result1", "result2"))

# --- scatter_reduce and index_reduce ------------------------------------------------------------
# src's (source's) values reduced into self's places along dim: sum, prod, mean, amax or amin,
# with or without self's own values. One gradient for both inputs (scatter_reduce_kernels), so
# both are saved whichever needs a gradient, as PyTorch saves them.

from nbgrad.ops import scatter_reduce_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(scatter_reduce_kernels.ARRAY_FUNCTIONS)

op("scatter_reduce", "ScatterReduceBackward0", ("self", "src"),
   {name: f"scatter_reduce_backward({k}, grad, self, dim, index, src, reduce, include_self, "
          "result)" for k, name in enumerate(("self", "src"))},
   lambda self, src, dim, index, reduce, include_self: scatter_reduce_kernels.scatter_reduce(
       self, dim, index, src, reduce, include_self),
   attrs=("dim", "index", "reduce", "include_self"),
   saves=("dim", "include_self", "index", "reduce", "result", "self", "src"), joint=True)
op("index_reduce", "IndexReduceBackward0", ("self", "source"),
   {name: f"index_reduce_backward({k}, grad, self, dim, index, source, reduce, include_self, "
          "result)" for k, name in enumerate(("self", "source"))},
   lambda self, source, dim, index, reduce, include_self: scatter_reduce_kernels.index_reduce(
       self, dim, index, source, reduce, include_self),
   attrs=("dim", "index", "reduce", "include_self"),
   saves=("dim", "include_self", "index", "reduce", "result", "self", "source"), joint=True)

# --- torch.native_dropout: (output, mask) -----------------------------------------------------
# The mask is drawn by the caller (nbgrad's generator) and given as an attr. PyTorch's formula
# scales the gradient by 1 / (1 - p) only when train is True: with train=None the forward drops
# and scales, the backward does not scale (derivatives.yaml's entry, kept as it is).

op("native_dropout", "NativeDropoutBackward0", ("input",),
   {"input": "grad * dropout_scale(result1, grad, "
             "(0.0 if p == 1 else 1.0 / (1.0 - p)) if train else 1.0)"},
   lambda input, p, train, keep: (  # noqa: A006
       input * keep.astype(input.dtype) * input.dtype.type(
           (0.0 if p == 1 else 1.0 / (1.0 - p)) if train is not False else 1.0),
       keep),
   attrs=("p", "train", "keep"), extra_outputs=("result1",), saves=("p", "result1", "train"),
   hidden=("train",), layout="like_self")

# --- the losses' and embedding's backward functions, as ops (create_graph twice) ---------------
# Their forwards are the functions the loss formulas already call; declared here, a gradient of
# the gradient records PyTorch's node (BinaryCrossEntropyBackwardBackward0, ...) and uses ATen's
# formulas for its own derivatives (double_backward_kernels).

backward_function(
    "binary_cross_entropy_backward", "BinaryCrossEntropyBackwardBackward0",
    ("grad_output", "self", "target"), nn_kernels.binary_cross_entropy_backward,
    {"grad_output": "bce_double_backward_grad_output(grad, self, target, weight, reduction)",
     "self": "bce_double_backward(grad, grad_output, self, target, weight, reduction)",
     "target": "bce_double_backward_target(grad, grad_output, self, target, weight, reduction)"},
    attrs=("weight", "reduction"), saves=("grad_output", "reduction", "self", "target", "weight"))
backward_function(
    "soft_margin_loss_backward", "SoftMarginLossBackwardBackward0", ("grad_output", "self"),
    formula_math.ARRAY_NAMESPACE["soft_margin_loss_backward"],
    {"grad_output": "soft_margin_double_backward_grad_output(grad, grad_output, self, target, "
                    "reduction)",
     "self": "soft_margin_double_backward(grad, grad_output, self, target, reduction)"},
    attrs=("target", "reduction"), saves=("grad_output", "reduction", "self", "target"))

# x.as_strided_(size, stride, offset): the tensor itself takes the geometry (in place, like
# transpose_), AsStridedBackward1 with as_strided's formula.
op("as_strided_inplace", "AsStridedBackward1", ("self",),
   {"self": "as_strided_backward(grad, self_geometry, size, stride, storage_offset)"},
   lambda self, size, stride, storage_offset, self_geometry: storage_geometry.as_strided_view(
       self, self_geometry, size, stride, storage_offset),
   attrs=("size", "stride", "storage_offset", "self_geometry"),
   saves=("self_geometry", "size", "storage_offset", "stride"), hidden=("self_geometry",))

# --- the layers' backward functions, as ops (create_graph twice) --------------------------------
# convolution_backward, native_layer_norm_backward and native_batch_norm_backward give a layer's
# three gradients (input, weight, bias) at once: three differentiable outputs of one node, whose
# formulas read their gradients as grad[0], grad[1], grad[2] (None where none came). Their
# formulas are ATen's double backwards (kernels and helpers in norm_conv_double_backward).
# The mean and 1/std a norm saved have an edge but no derivative (PyTorch's not_implemented); a
# layer norm's bias has an edge and gets no gradient (its formula is "Tensor()" in PyTorch).

from nbgrad.ops import norm_conv_double_backward  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(norm_conv_double_backward.ARRAY_FUNCTIONS)

op("convolution_backward", "ConvolutionBackwardBackward0", ("grad_output", "input", "weight"),
   {name: f"convolution_double_backward({k}, grad, grad_output, input, weight, stride, padding, "
          "dilation, transposed, output_padding, groups)"
    for k, name in enumerate(("grad_output", "input", "weight"))},
   norm_conv_double_backward.convolution_backward,
   attrs=("stride", "padding", "dilation", "transposed", "output_padding", "groups"),
   saves=("dilation", "grad_output", "groups", "input", "output_padding", "padding", "stride",
          "transposed", "weight"),
   multi_output=True, joint=True)
op("native_layer_norm_backward", "NativeLayerNormBackwardBackward0",
   ("grad_out", "input", "mean", "rstd", "weight", "bias"),
   {**{name: f"layer_norm_double_backward({k}, grad, grad_out, input, mean, rstd, weight, "
             "normalized_shape)" for k, name in ((2, "grad_out"), (0, "input"), (1, "weight"))},
    "mean": "not_implemented('native_layer_norm_backward mean')",
    "rstd": "not_implemented('native_layer_norm_backward rstd')",
    "bias": "None"},
   norm_conv_double_backward.native_layer_norm_backward, attrs=("normalized_shape",),
   saves=("grad_out", "input", "mean", "normalized_shape", "rstd", "weight"),
   multi_output=True, joint=True)
op("native_batch_norm_backward", "NativeBatchNormBackwardBackward0",
   ("grad_out", "input", "weight", "save_mean", "save_invstd"),
   {**{name: f"batch_norm_double_backward({k}, grad, grad_out, input, weight, running_mean, "
             "running_var, save_mean, save_invstd, train, eps)"
       for k, name in ((2, "grad_out"), (0, "input"), (1, "weight"))},
    "save_mean": "not_implemented('native_batch_norm_backward save_mean')",
    "save_invstd": "not_implemented('native_batch_norm_backward save_invstd')"},
   norm_conv_double_backward.native_batch_norm_backward,
   attrs=("running_mean", "running_var", "train", "eps"),
   saves=("eps", "grad_out", "input", "running_mean", "running_var", "save_invstd", "save_mean",
          "train", "weight"),
   multi_output=True, joint=True)
# Average pooling in 3-d is linear: its backward is an op too (see the 2-d one), whose gradient
# is the pooling again; ``self`` has PyTorch's edge (a zero gradient: only its shape matters).
op("avg_pool3d_backward", "AvgPool3DBackwardBackward0", ("grad_output", "self"),
   {"grad_output": "avg_pool3d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                   "divisor_override)",
    "self": "zeros_like(grad)"},
   lambda grad_output, self, *options: layer_kernels.avg_pool3d_backward(
       grad_output, self.shape, *options),
   attrs=("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
          "divisor_override"),
   saves=("ceil_mode", "count_include_pad", "divisor_override", "kernel_size", "padding",
          "stride"))
op("adaptive_avg_pool3d_backward", "AdaptiveAvgPool3DBackwardBackward0", ("grad_output", "self"),
   {"grad_output": "adaptive_avg_pool3d(grad, (grad_output_sym_argsize_minus_3, "
                   "grad_output_sym_argsize_minus_2, grad_output_sym_argsize_minus_1))",
    "self": "zeros_like(grad)"},
   lambda grad_output, self, depth, rows, cols: layer_kernels.adaptive_avg_pool3d_backward(
       grad_output, self.shape),
   attrs=("grad_output_sym_argsize_minus_3", "grad_output_sym_argsize_minus_2",
          "grad_output_sym_argsize_minus_1"),
   saves=("grad_output_sym_argsize_minus_1", "grad_output_sym_argsize_minus_2",
          "grad_output_sym_argsize_minus_3"))

# --- batch norm's "legit" entry points, and rrelu's backward as an op ---------------------------
# torch._native_batch_norm_legit (with running statistics, or without: the no_stats overload)
# and torch._native_batch_norm_legit_no_training are batch_norm's kernel under three more node
# names. Their gradients are native_batch_norm_backward's, as batch_norm's are (so a gradient of
# the gradient records NativeBatchNormBackwardBackward0): no_training passes training=False,
# no_stats passes no running statistics (None, saved as None by the double backward's node).
# The public functions (ops/functions/batch_norm_legit.py) save the running statistics as the
# tensors they are, so that changing them in place before backward is caught, as in PyTorch.

_LEGIT_GRADIENTS = ("input", "weight", "bias")
op("_native_batch_norm_legit", "NativeBatchNormLegitBackward0", _LEGIT_GRADIENTS,
   {name: f"batch_norm_backward_output({k}, grad, input, weight, running_mean, running_var, "
          "result1, result2, training, eps)" for k, name in enumerate(_LEGIT_GRADIENTS)},
   nn_kernels.batch_norm, attrs=("running_mean", "running_var", "training", "momentum", "eps"),
   extra_outputs=("result1", "result2"),
   saves=("eps", "input", "result1", "result2", "running_mean", "running_var", "training",
          "weight"), joint=True, layout="contiguous")
op("_native_batch_norm_legit_no_training", "NativeBatchNormLegitNoTrainingBackward0",
   _LEGIT_GRADIENTS,
   {name: f"batch_norm_backward_output({k}, grad, input, weight, running_mean, running_var, "
          "result1, result2, False, eps)" for k, name in enumerate(_LEGIT_GRADIENTS)},
   lambda x, weight, bias, running_mean, running_var, momentum, eps: nn_kernels.batch_norm(
       x, weight, bias, running_mean, running_var, False, momentum, eps),
   attrs=("running_mean", "running_var", "momentum", "eps"),
   extra_outputs=("result1", "result2"),
   saves=("eps", "input", "result1", "result2", "running_mean", "running_var", "weight"),
   joint=True, layout="contiguous")
op("_native_batch_norm_legit_no_stats", "NativeBatchNormLegitBackward1", _LEGIT_GRADIENTS,
   {name: f"batch_norm_backward_output({k}, grad, input, weight, None, None, result1, result2, "
          "training, eps)" for k, name in enumerate(_LEGIT_GRADIENTS)},
   lambda x, weight, bias, training, momentum, eps: nn_kernels.batch_norm(
       x, weight, bias, None, None, training, momentum, eps),
   attrs=("training", "momentum", "eps"), extra_outputs=("result1", "result2"),
   saves=("eps", "input", "result1", "result2", "training", "weight"), joint=True,
   layout="contiguous")

# rrelu's gradient is rrelu_with_noise_backward, an op of its own: under create_graph it records
# RreluWithNoiseBackwardBackward0. In training it scales the gradient by the noise the forward
# drew; otherwise it is leaky_relu's with the mean slope. It is linear in grad_output and flat
# in self (zeros_like, with the edge PyTorch gives it). self_is_result (rrelu_ passes its
# result, whose sign is its input's) changes nothing here, and PyTorch's node does not show it.
backward_function(
    "rrelu_with_noise_backward", "RreluWithNoiseBackwardBackward0", ("grad_output", "self"),
    nn_extra_kernels.rrelu_with_noise_backward,
    {"grad_output": "rrelu_with_noise_backward(grad, self, noise, lower, upper, training, False)",
     "self": "zeros_like(grad)"},
    attrs=("noise", "lower", "upper", "training", "self_is_result"),
    saves=("lower", "noise", "self", "training", "upper"))
# --- double backwards of pooling, embedding_bag and masked_scatter; segment_reduce (ddmore) ------
# Gradients of gradients as PyTorch records them. Fractional max pooling's backward puts each
# gradient at its maximum's index: linear in the gradient, flat in the input, so its own gradient
# reads the incoming one back at the indices. masked_scatter's gradient for source picks the
# masked places of the gradient; its own gradient scatters back into zeros there. PyTorch has no
# derivative for embedding_bag's backward (its node is recorded, backward through it raises) nor
# for segment_reduce's (a NotImplemented grad_fn: ddmore_kernels).

from nbgrad.ops import ddmore_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(ddmore_kernels.ARRAY_FUNCTIONS)

for _k in (2, 3):
    backward_function(
        f"fractional_max_pool{_k}d_backward", f"FractionalMaxPool{_k}DBackwardBackward0",
        ("grad_output", "self"), f"max_pool{_k}d_backward(grad_output, self.shape, indices)",
        {"grad_output": f"max_pool_double_backward(grad, indices, {_k})",
         "self": "zeros_like(grad)"},
        attrs=("kernel_size", "output_size", "indices"), saves=("indices",))
backward_function(
    "masked_scatter_backward", "MaskedScatterBackwardBackward0", ("grad_output",),
    lambda grad_output, mask, sizes, grad_output_sym_sizes: misc_kernels.masked_scatter_backward(
        grad_output, np.asarray(mask), sizes),
    {"grad_output": "masked_scatter(zeros_shaped(grad_output_sym_sizes, grad), grad, mask)"},
    attrs=("mask", "sizes", "grad_output_sym_sizes"), saves=("grad_output_sym_sizes", "mask"),
    hidden=("grad_output_sym_sizes",))
backward_function(
    "_embedding_bag_backward", "EmbeddingBagBackwardBackward0", ("grad", "per_sample_weights"),
    lambda grad, per_sample_weights, indices, offsets, offset2bag, bag_size, maximum_indices,
    num_weights, scale_grad_by_freq, mode, sparse, padding_idx:
    nn_extra_kernels.ARRAY_FUNCTIONS["embedding_bag_backward"](
        grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
        scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx),
    {"grad": "not_implemented('_embedding_bag_backward')",
     "per_sample_weights": "not_implemented('_embedding_bag_backward')"},
    attrs=("indices", "offsets", "offset2bag", "bag_size", "maximum_indices", "num_weights",
           "scale_grad_by_freq", "mode", "sparse", "padding_idx"))
# torch.segment_reduce: lengths and offsets are attrs (integer tensors, saved and shown).
op("segment_reduce", "SegmentReduceBackward0", ("data",),
   {"data": "_segment_reduce_backward(grad, result, data, reduce, lengths, offsets, axis, "
            "initial)"},
   lambda data, reduce, lengths, offsets, axis, unsafe, initial: ddmore_kernels.segment_reduce(
       data, reduce, offsets if offsets is not None else ddmore_kernels.offsets_of(lengths),
       axis + data.ndim if axis < 0 else axis, initial),
   attrs=("reduce", "lengths", "offsets", "axis", "unsafe", "initial"),
   saves=("axis", "data", "initial", "lengths", "offsets", "reduce", "result"),
   layout="contiguous")
# --- private convolutions, the grid sampler's CPU fallback, lanczos, grouped mm (convs) ----------
# torch._convolution, torch.mkldnn_convolution and torch._nnpack_spatial_convolution each record
# a node of their own whose formula is convolution_backward, as ConvolutionBackward0's: the same
# helpers (so a gradient of their gradient records ConvolutionBackwardBackward0) and the forward
# kernels of the convolution entries above (convs_kernels.convolution picks one). What their
# formulas read but PyTorch's node does not keep is hidden: mkldnn's and nnpack's convolutions are
# never transposed, have no output padding, and nnpack's have no dilation or groups either.

from nbgrad.ops import convs_kernels  # noqa: E402

_CONVOLUTION_SAVES = ("bias_sym_sizes_opt", "dilation", "groups", "input", "output_padding",
                      "padding", "stride", "transposed", "weight")
op("_convolution", "ConvolutionBackward1", ("input", "weight", "bias"), _CONVOLUTION_GRADS,
   lambda x, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
   benchmark, deterministic, cudnn_enabled, allow_tf32, bias_sym_sizes_opt:
   convs_kernels.convolution(x, weight, bias, stride, padding, dilation, transposed,
                             output_padding, groups),
   attrs=("stride", "padding", "dilation", "transposed", "output_padding", "groups", "benchmark",
          "deterministic", "cudnn_enabled", "allow_tf32", "bias_sym_sizes_opt"),
   saves=_CONVOLUTION_SAVES, joint=True)
op("mkldnn_convolution", "MkldnnConvolutionBackward0", ("self", "weight", "bias"),
   {name: f"convolution_backward_output({k}, grad, self, weight, stride, padding, dilation, "
          "transposed, output_padding, groups)"
    for k, name in enumerate(("self", "weight", "bias"))},
   lambda x, weight, bias, padding, stride, dilation, groups, bias_sym_sizes_opt, transposed,
   output_padding: convs_kernels.convolution(x, weight, bias, stride, padding, dilation, False,
                                             output_padding, groups),
   attrs=("padding", "stride", "dilation", "groups", "bias_sym_sizes_opt", "transposed",
          "output_padding"),
   saves=("bias_sym_sizes_opt", "dilation", "groups", "output_padding", "padding", "self",
          "stride", "transposed", "weight"),
   hidden=("output_padding", "transposed"), joint=True)
op("_nnpack_spatial_convolution", "NnpackSpatialConvolutionBackward0",
   ("input", "weight", "bias"), _CONVOLUTION_GRADS,
   lambda x, weight, bias, padding, stride, bias_sym_sizes_opt, dilation, transposed,
   output_padding, groups: convs_kernels.convolution(x, weight, bias, stride, padding, dilation,
                                                     False, output_padding, groups),
   attrs=("padding", "stride", "bias_sym_sizes_opt", "dilation", "transposed", "output_padding",
          "groups"),
   saves=_CONVOLUTION_SAVES, hidden=("dilation", "groups", "output_padding", "transposed"),
   joint=True)

# torch._grid_sampler_2d_cpu_fallback (float32 only in PyTorch): grid_sampler_2d's sampling, with
# a backward op of its own, whose own gradients are grid_sampler_2d_backward's.
formula_math.ARRAY_NAMESPACE["grid_sampler_fallback_backward_output"] = (
    grid_sample_kernels.backward_output)
op("_grid_sampler_2d_cpu_fallback_backward", "GridSampler2DCpuFallbackBackwardBackward0",
   ("grad_output", "input", "grid"),
   {name: f"grid_sampler_double_backward_output({k}, grad, grad_output, input, grid, "
          f"{_GRID_SAMPLER_ARGS})"
    for k, name in enumerate(("grad_output", "input", "grid"))},
   lambda grad_output, input, grid, mode, padding_mode, align_corners: list(  # noqa: A006
       grid_sample_kernels.grid_sampler_backward(
           grad_output, input, grid, mode, padding_mode, align_corners, (True, True))),
   attrs=("interpolation_mode", "padding_mode", "align_corners"),
   saves=("align_corners", "grad_output", "grid", "input", "interpolation_mode", "padding_mode"),
   multi_output=True, joint=True)
op("_grid_sampler_2d_cpu_fallback", "GridSampler2DCpuFallbackBackward0", ("input", "grid"),
   {name: f"grid_sampler_fallback_backward_output({k}, grad, input, grid, {_GRID_SAMPLER_ARGS})"
    for k, name in enumerate(("input", "grid"))},
   grid_sample_kernels.grid_sampler,
   attrs=("interpolation_mode", "padding_mode", "align_corners"),
   saves=("align_corners", "grid", "input", "interpolation_mode", "padding_mode"), joint=True)

# F.interpolate(..., mode="lanczos", antialias=True): the antialiased entries' construction with
# the Lanczos-3 filter (layer_kernels' "lanczos-aa" matrices); align_corners is always False.
op("_upsample_lanczos2d_aa", "UpsampleLanczos2DAaBackward0", ("self",),
   {"self": upsample_backward_entry("_upsample_lanczos2d_aa", "UpsampleLanczos2DAaBackward0",
                                    "lanczos-aa", 2, True)},
   lambda self, output_size, align_corners, scales_h, scales_w, self_sym_sizes:
   layer_kernels.upsample(self, output_size, (scales_h, scales_w), "lanczos-aa", align_corners),
   attrs=("output_size", "align_corners", "scales_h", "scales_w", "self_sym_sizes"),
   saves=("align_corners", "output_size", "scales_h", "scales_w", "self_sym_sizes"))

# torch._grouped_mm (float16 and float32 on the CPU): matrix products group by group. Each
# gradient is a grouped product again, of the gradient with the other operand's transpose and
# the same offsets (a gradient of the gradient records GroupedMmBackward0 below
# TransposeBackward0, as PyTorch does). The sizes and strides are kept because PyTorch keeps them.
formula_math.ARRAY_NAMESPACE["grouped_mm"] = convs_kernels.grouped_mm
op("_grouped_mm", "GroupedMmBackward0", ("self", "mat2"),
   {"self": "grouped_mm(grad, swap_last(mat2), offs)",
    "mat2": "grouped_mm(swap_last(self), grad, offs)"},
   lambda self, mat2, offs, *layouts: convs_kernels.grouped_mm(self, mat2, offs),
   attrs=("offs", "self_sym_sizes", "self_sym_strides", "mat2_sym_sizes", "mat2_sym_strides"),
   saves=("mat2", "mat2_sym_sizes", "mat2_sym_strides", "offs", "self", "self_sym_sizes",
          "self_sym_strides"))
# --- PyTorch's private indexing ops, as_strided_scatter, slice_inverse, _lazy_clone, _neg_view --
# torch._unsafe_index and torch._unsafe_index_put are index and index_put without the checks a
# compiler may skip; their formulas call each other (idx_kernels), so a gradient of a gradient
# records PyTorch's nodes. The "masked" pair clamps its indices and masks what they read or add.
# torch._index_put_impl_ is index_put_ as ATen's kernel, in place: index_put's formulas.

from nbgrad.ops import idx_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(idx_kernels.ARRAY_FUNCTIONS)

op("unsafe_index", "UnsafeIndexBackward0", ("self",),
   {"self": "unsafe_index_backward(grad, self_sym_sizes, indices)"},
   lambda self, indices: self[indices], attrs=("indices",),
   saves=("indices", "self_sym_sizes"), layout="advanced_index", layout_from=("self", "indices"))
op("unsafe_index_put", "UnsafeIndexPutBackward0", ("self", "values"),
   {"self": "grad if accumulate else unsafe_index_put_zeros(grad, indices, values_sym_sizes)",
    "values": "sum_to(unsafe_index_at(grad, indices), values_sym_sizes)"},
   lambda self, values, indices, accumulate, values_sym_sizes: misc_kernels.index_put(
       self, indices, values, accumulate),
   attrs=("indices", "accumulate", "values_sym_sizes"),
   saves=("accumulate", "indices", "values_sym_sizes"), hidden=("values_sym_sizes",),
   layout="like_self")
op("index_put_impl", "IndexPutImplBackward0", ("self", "values"),
   {"self": "grad if accumulate else index_put_zeros(grad, indices, values_sym_sizes)",
    "values": "sum_to(grad[indices], values_sym_sizes)"},
   lambda self, values, indices, accumulate, values_sym_sizes: misc_kernels.index_put(
       self, indices, values, accumulate),
   attrs=("indices", "accumulate", "values_sym_sizes"),
   saves=("accumulate", "indices", "values_sym_sizes"), hidden=("values_sym_sizes",))
# The mask is an attr (no edge), shown as _saved_mask; the indices are saved unclamped.
op("unsafe_masked_index", "UnsafeMaskedIndexBackward0", ("self",),
   {"self": "unsafe_masked_index_backward(grad, mask, indices, self_sym_sizes)"},
   idx_kernels.unsafe_masked_index, attrs=("mask", "indices", "fill"),
   saves=("indices", "mask", "self_sym_sizes"))
op("unsafe_masked_index_put_accumulate", "UnsafeMaskedIndexPutAccumulateBackward0",
   ("self", "values"),
   {"self": "grad",
    "values": "sum_to(unsafe_masked_index_at(grad, mask, indices), values_sym_sizes)"},
   lambda self, values, mask, indices, values_sym_sizes: (
       idx_kernels.unsafe_masked_index_put_accumulate(self, values, mask, indices)),
   attrs=("mask", "indices", "values_sym_sizes"),
   saves=("indices", "mask", "values_sym_sizes"), hidden=("values_sym_sizes",),
   layout="like_self")
# self with the places of one as_strided view of it (in a copy of self's storage) replaced by src;
# attrs: where self lies in its storage (size, stride, offset), and how long that storage is.
op("as_strided_scatter", "AsStridedScatterBackward0", ("self", "src"),
   {"self": "as_strided_scatter_backward(grad, size, stride, storage_offset)",
    "src": "as_strided_scatter_source(grad, size, stride, storage_offset)"},
   idx_kernels.as_strided_scatter,
   attrs=("size", "stride", "storage_offset", "self_geometry", "storage_size"),
   saves=("size", "storage_offset", "stride"), layout="self_strides")
# slice_inverse(self, src, ...) undoes ``self = src[slice]``: a view of self's memory with src's
# geometry there (size, stride, offset). Its formulas read it as slice_scatter(src, self, ...).
op("slice_inverse", "SliceInverseBackward0", ("self", "src"),
   {"self": "grad[slice_key(grad.ndim, dim, start, end, step)]",
    "src": "slice_scatter(grad, zeros_like(grad[slice_key(grad.ndim, dim, start, end, step)]),"
           " dim, start, end, step)"},
   lambda self, src, dim, start, end, step, self_geometry, src_geometry: (
       storage_geometry.as_strided_view(self, self_geometry, *src_geometry)),
   attrs=("dim", "start", "end", "step", "self_geometry", "src_geometry"),
   saves=("dim", "end", "start", "step"), view=True)
# torch._lazy_clone: a copy-on-write clone, which PyTorch copies when either side is written;
# nbgrad copies at once (the values, strides and versions a user sees are the same).
op("lazy_clone", "LazyCloneBackward0", ("self",), {"self": "grad"}, np.array, same_shape=True,
   layout="self_strides")  # PyTorch keeps self's strides (its copy is of self's whole storage)
# torch._neg_view: PyTorch's view with the negative bit set; nbgrad's result holds the negated
# values in memory of its own (README, "Differences from PyTorch you can see").
op("neg_view", "NegViewBackward0", ("self",), {"self": "-grad"}, np.negative, same_shape=True,
   layout="self_strides")  # a view's strides: self's
# --- fake quantization (torch.fake_quantize_per_tensor_affine and its family) -------------------
# Values rounded to a grid of quant_max - quant_min + 1 steps and back (fake_quantize_kernels).
# The cachemask entries return the result and the mask of values inside the range, which is all
# their backward reads (grad * mask); scale and zero point are not differentiable there, so they
# are attrs. The learnable entries differentiate scale and zero point too, with one backward
# function for the three gradients that PyTorch cannot differentiate again (NotImplemented).
# The fused observer updates its running statistics and qparams before the entry runs
# (nbgrad/ops/functions/fake_quantize.py) and passes the qparams as attrs.

from nbgrad.ops import fake_quantize_kernels  # noqa: E402

formula_math.ARRAY_NAMESPACE.update(fake_quantize_kernels.ARRAY_FUNCTIONS)

op("fake_quantize_per_tensor_affine_cachemask", "FakeQuantizePerTensorAffineCachemaskBackward0",
   ("self",), {"self": "grad * mask"},
   lambda self, scale, zero_point, quant_min, quant_max: fake_quantize_kernels.per_tensor(
       self, scale, zero_point, quant_min, quant_max),
   attrs=("scale", "zero_point", "quant_min", "quant_max"), extra_outputs=("mask",),
   saves=("mask",), layout="like_self")
op("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
   "FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0", ("self",), {"self": "grad * mask"},
   lambda self, scale, zero_point, enabled, quant_min, quant_max: fake_quantize_kernels.per_tensor(
       self, scale, zero_point, quant_min, quant_max, enabled),
   attrs=("scale", "zero_point", "fake_quant_enabled", "quant_min", "quant_max"),
   extra_outputs=("mask",), saves=("mask",), layout="like_self")
op("fake_quantize_per_channel_affine_cachemask", "FakeQuantizePerChannelAffineCachemaskBackward0",
   ("self",), {"self": "grad * mask"},
   lambda self, scale, zero_point, axis, quant_min, quant_max: fake_quantize_kernels.per_channel(
       self, scale, zero_point, axis, quant_min, quant_max),
   attrs=("scale", "zero_point", "axis", "quant_min", "quant_max"), extra_outputs=("mask",),
   saves=("mask",), layout="like_self")
op("_fake_quantize_learnable_per_tensor_affine", "FakeQuantizeLearnablePerTensorAffineBackward0",
   ("self", "scale", "zero_point"),
   {name: f"fake_quantize_learnable_per_tensor_affine_backward_output({k}, grad, self, scale, "
          "zero_point, quant_min, quant_max, grad_factor)"
    for k, name in enumerate(("self", "scale", "zero_point"))},
   fake_quantize_kernels.learnable_per_tensor,
   attrs=("quant_min", "quant_max", "grad_factor"),
   saves=("grad_factor", "quant_max", "quant_min", "scale", "self", "zero_point"), joint=True,
   layout="like_self")
op("_fake_quantize_learnable_per_channel_affine", "FakeQuantizeLearnablePerChannelAffineBackward0",
   ("self", "scale", "zero_point"),
   {name: f"fake_quantize_learnable_per_channel_affine_backward_output({k}, grad, self, scale, "
          "zero_point, axis, quant_min, quant_max, grad_factor)"
    for k, name in enumerate(("self", "scale", "zero_point"))},
   fake_quantize_kernels.learnable_per_channel,
   attrs=("axis", "quant_min", "quant_max", "grad_factor"),
   saves=("axis", "grad_factor", "quant_max", "quant_min", "scale", "self", "zero_point"),
   joint=True, layout="like_self")
op("_fused_moving_avg_obs_fq_helper", "FusedMovingAvgObsFqHelperBackward0", ("self",),
   {"self": "grad * mask"}, fake_quantize_kernels.fused_fake_quantize,
   attrs=("scale", "zero_point", "fake_quant_on", "quant_min", "quant_max", "ch_axis",
          "per_row_fake_quant"),
   extra_outputs=("mask",), saves=("mask",), layout="like_self")
