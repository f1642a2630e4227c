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

from nbgrad.ops import formula_math, nn_kernels
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
   np.add, saves=("alpha",), constants={"alpha": 1}, promote=True)
op("add_scaled", "AddBackward0", ("self", "other"), {"self": "grad", "other": "grad * alpha"},
   lambda self, other, alpha: self + alpha * other, attrs=("alpha",), saves=("alpha",),
   promote=True)
op("sub", "SubBackward0", ("self", "other"), {"self": "grad", "other": "-grad"},
   np.subtract, saves=("alpha",), constants={"alpha": 1}, promote=True)
op("sub_scaled", "SubBackward0", ("self", "other"), {"self": "grad", "other": "-grad * alpha"},
   lambda self, other, alpha: self - alpha * other, attrs=("alpha",), saves=("alpha",),
   promote=True)
op("rsub", "RsubBackward1", ("self",), {"self": "-grad * alpha"},
   lambda self, other, alpha: other - alpha * self, attrs=("other", "alpha"), saves=("alpha",),
   promote=True)
op("mul", "MulBackward0", ("self", "other"),
   {"self": "grad * other", "other": "grad * self"},
   np.multiply, saves=("other", "self"), promote=True)
op("div", "DivBackward0", ("self", "other"),
   {"self": "grad / other", "other": "-grad * self / (other * other)"},
   np.true_divide, saves=("other", "self"), promote=True, floating=True)
op("div_rounded", "DivBackward2", ("self", "other"),
   # A step function is flat: zero gradients, shaped as PyTorch's formulas shape them.
   {"self": "zeros_like(grad / other)", "other": "zeros_like(grad * self / other)"},
   lambda self, other, rounding_mode: _rounded_divide(self, other, rounding_mode),
   attrs=("rounding_mode",), saves=("other", "rounding_mode", "self"), promote=True)
# remainder and fmod: the result moves with self at slope 1; a tensor divisor moves it at
# -floor(self / other) (remainder) or -trunc(self / other) (fmod), as derivatives.yaml says.
op("remainder", "RemainderBackward0", ("self",), {"self": "grad"},
   lambda self, other: np.remainder(self, other), attrs=("other",), same_shape=True)
op("remainder_tensor", "RemainderBackward1", ("self", "other"),
   {"self": "grad", "other": "-grad * rounded_divide(self, other, 'floor')"},
   np.remainder, saves=("other", "self"), promote=True)
op("fmod", "FmodBackward0", ("self",), {"self": "grad"},
   lambda self, other: np.fmod(self, other), attrs=("other",), same_shape=True)
op("fmod_tensor", "FmodBackward1", ("self", "other"),
   {"self": "grad", "other": "-grad * rounded_divide(self, other, 'trunc')"},
   np.fmod, saves=("other", "self"), promote=True)
op("neg", "NegBackward0", ("self",), {"self": "-grad"}, np.negative, same_shape=True,
   inplace=True)
op("pow", "PowBackward0", ("self",),
   {"self": "0 * grad if exponent == 0 else grad * exponent * power(self, exponent - 1)"},
   formula_math.power, attrs=("exponent",), saves=("self", "exponent"))
op("pow_tensor", "PowBackward1", ("self", "exponent"),
   {"self": "where(exponent == 0, 0 * grad, grad * exponent * self ** (exponent - 1))",
    "exponent": "grad * where((self == 0) & (exponent >= 0), 0 * result, result * log(self))"},
   np.power, saves=("exponent", "result", "self"), promote=True)
op("rpow", "PowBackward2", ("exponent",),
   {"exponent": "grad * result * scalar_log(self) if self != 0 else "
                "grad * where(exponent >= 0, 0 * result, result * scalar_log(self))"},
   lambda exponent, self: np.power(self, exponent), attrs=("self",),
   saves=("self", "exponent", "result"))
op("maximum", "MaximumBackward0", ("self", "other"),
   {"self": "where(self > other, grad, where(self == other, grad / 2, 0 * grad))",
    "other": "where(other > self, grad, where(self == other, grad / 2, 0 * grad))"},
   np.maximum, saves=("other", "self"), promote=True)
op("minimum", "MinimumBackward0", ("self", "other"),
   {"self": "where(self < other, grad, where(self == other, grad / 2, 0 * grad))",
    "other": "where(other < self, grad, where(self == other, grad / 2, 0 * grad))"},
   np.minimum, saves=("other", "self"), promote=True)

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
op("tanh", "TanhBackward0", ("self",), {"self": "grad * (1 - result * result)"}, np.tanh,
   saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("sigmoid", "SigmoidBackward0", ("self",), {"self": "grad * result * (1 - result)"},
   lambda self: 0.5 * np.tanh(0.5 * self) + 0.5, saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("relu", "ReluBackward0", ("self",), {"self": "grad * (result > 0)"},
   lambda self: np.maximum(self, 0), saves=("result",), same_shape=True,
   # torch.relu takes no out=; torch.relu_ exists but nbgrad has only exported x.relu_() so far
   function=True, method=True, inplace="method")
op("sqrt", "SqrtBackward0", ("self",), {"self": "grad / (2 * result)"}, np.sqrt,
   saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("rsqrt", "RsqrtBackward0", ("self",), {"self": "-0.5 * grad * result * result * result"},
   lambda self: 1 / np.sqrt(self), saves=("result",), floating=True, same_shape=True,
   function=True, method=True, inplace=True, out=True)
op("reciprocal", "ReciprocalBackward0", ("self",), {"self": "-grad * result * result"},
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
   lambda self, decimals: np.round(self, decimals), attrs=("decimals",), saves=("decimals",))
op("log1p", "Log1PBackward0", ("self",), {"self": "grad / (1 + self)"}, np.log1p,
   saves=("self",), floating=True, same_shape=True, function=True, method=True, out=True)
op("expm1", "Expm1Backward0", ("self",), {"self": "grad * (result + 1)"}, np.expm1,
   saves=("result",), floating=True, same_shape=True, function=True, method=True, out=True)
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
   np.maximum, saves=("min", "self"), promote=True)
op("clamp_max_tensor", "ClampMaxBackward1", ("self", "max"),
   {"self": "clamp_backward(grad, self, None, max)", "max": "where(self > max, grad, 0 * grad)"},
   np.minimum, saves=("max", "self"), promote=True)
op("clamp_tensor", "ClampBackward0", ("self", "min", "max"),
   {"self": "clamp_backward(grad, self, min, max)",
    "min": "where(self < min, grad, 0 * grad)", "max": "where(self > max, grad, 0 * grad)"},
   lambda self, min, max: np.clip(self, min, max),  # noqa: A006
   saves=("max", "min", "self"), promote=True)
op("where", "WhereBackward0", ("self", "other"),
   {"self": "where(condition, grad, 0)", "other": "where(condition, 0, grad)"},
   lambda self, other, condition: np.where(condition, self, other), attrs=("condition",),
   saves=("condition",), promote=True)
op("masked_fill", "MaskedFillBackward0", ("self",), {"self": "masked_zero(grad, mask)"},
   lambda self, mask, value: np.where(mask, np.asarray(value, self.dtype), self),
   attrs=("mask", "value"), saves=("mask",))
op("masked_fill_tensor", "MaskedFillBackward1", ("self", "value"),
   {"self": "masked_zero(grad, mask)", "value": "where(mask, grad, 0 * grad)"},
   lambda self, value, mask: np.where(mask, value.astype(self.dtype), self),
   attrs=("mask",), saves=("mask",))
op("softmax", "SoftmaxBackward0", ("self",),
   {"self": "result * (grad - sum_dim(grad * result, dim, True))"},
   lambda self, dim: _softmax(self, dim), attrs=("dim",), saves=("dim", "result"),
   floating=True, same_shape=True)
op("log_softmax", "LogSoftmaxBackward0", ("self",),
   {"self": "grad - exp(result) * sum_dim(grad, dim, True)"},
   lambda self, dim: _log_softmax(self, dim), attrs=("dim",), saves=("dim", "result"),
   floating=True, same_shape=True)


def _rounded_divide(a, b, rounding_mode):
    quotient = np.true_divide(a, b)
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


def _addmm(bias, mat1, mat2, beta, alpha):
    product = mat1 @ mat2
    if alpha != 1:
        product *= alpha
    if beta != 0:  # with beta=0 PyTorch ignores the bias, nan and inf included
        product += bias if beta == 1 else beta * bias
    return product


# --- reductions ---------------------------------------------------------------------------------

op("sum", "SumBackward0", ("self",), {"self": "expand(grad, self_sym_sizes)"},
   lambda self: self.sum(), saves=("self_sym_sizes",))
op("sum_dim", "SumBackward1", ("self",),
   {"self": "expand(restore_reduced(grad, self_sym_sizes, dim, keepdim), self_sym_sizes)"},
   lambda self, dim, keepdim: self.sum(axis=_axis(self, dim), keepdims=keepdim),
   attrs=("dim", "keepdim"), saves=("dim", "keepdim", "self_sym_sizes"))
op("mean", "MeanBackward0", ("self",),
   {"self": "expand(grad / self_sym_numel, self_sym_sizes)"},
   lambda self: _mean(self), saves=("self_sym_numel", "self_sym_sizes"),
   floating=True)
op("mean_dim", "MeanBackward1", ("self",),
   {"self": "expand(restore_reduced(grad, self_sym_sizes, dim, keepdim), self_sym_sizes)"
            " / reduced_count(self_sym_sizes, dim)"},
   lambda self, dim, keepdim: self.mean(axis=_axis(self, dim), keepdims=keepdim),
   attrs=("dim", "keepdim"), saves=("dim", "keepdim", "self_sym_numel", "self_sym_sizes"),
   floating=True)
op("max", "MaxBackward1", ("self",), {"self": "evenly_distribute(grad, self, result)"},
   lambda self: self.max(), saves=("result", "self"))
op("min", "MinBackward1", ("self",), {"self": "evenly_distribute(grad, self, result)"},
   lambda self: self.min(), saves=("result", "self"))
op("max_dim", "MaxBackward0", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, keepdim)"},
   lambda self, dim, keepdim: _select_extreme(self, dim, keepdim, np.argmax),
   attrs=("dim", "keepdim"), extra_outputs=("indices",),
   saves=("dim", "indices", "keepdim", "self_sym_sizes"))
op("min_dim", "MinBackward0", ("self",),
   {"self": "value_selecting_backward(grad, self_sym_sizes, dim, indices, keepdim)"},
   lambda self, dim, keepdim: _select_extreme(self, dim, keepdim, np.argmin),
   attrs=("dim", "keepdim"), extra_outputs=("indices",),
   saves=("dim", "indices", "keepdim", "self_sym_sizes"))
op("amax", "AmaxBackward0", ("self",), {"self": "amax_backward(grad, self, result, dim, keepdim)"},
   lambda self, dim, keepdim: self.max(axis=_axis(self, dim), keepdims=keepdim),
   attrs=("dim", "keepdim"), saves=("dim", "keepdim", "result", "self"))
op("amin", "AminBackward0", ("self",), {"self": "amax_backward(grad, self, result, dim, keepdim)"},
   lambda self, dim, keepdim: self.min(axis=_axis(self, dim), keepdims=keepdim),
   attrs=("dim", "keepdim"), saves=("dim", "keepdim", "result", "self"))


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
   lambda self, dim, start, end, step: self[(slice(None),) * dim + (slice(start, end, step),)],
   attrs=("dim", "start", "end", "step"),
   saves=("dim", "end", "self_sym_sizes", "start", "step"), view=True)
# The view any view is, once an in-place write went through it or one of its siblings: PyTorch
# then describes it by its geometry in the base's storage (size, stride, offset, in elements).
# Backward also reads where the input itself lies there, which PyTorch keeps but does not show.
op("as_strided", "AsStridedBackward0", ("self",),
   {"self": "as_strided_backward(grad, self_geometry, size, stride, storage_offset)"},
   lambda self, size, stride, storage_offset, self_geometry: formula_math.as_strided_view(
       self, self_geometry, size, stride, storage_offset),
   attrs=("size", "stride", "storage_offset", "self_geometry"),
   saves=("self_geometry", "size", "storage_offset", "stride"), hidden=("self_geometry",),
   view=True)
op("index", "IndexBackward0", ("self",),
   {"self": "index_backward(grad, self_sym_sizes, indices)"},
   lambda self, indices: self[indices], attrs=("indices",),
   saves=("indices", "self_sym_sizes"))
op("gather", "GatherBackward0", ("self",),
   {"self": "gather_backward(grad, self.shape, dim, index)"},
   lambda self, dim, index, sparse_grad: np.take_along_axis(self, index, axis=dim),
   attrs=("dim", "index", "sparse_grad"), saves=("dim", "index", "self", "sparse_grad"))
op("cat", "CatBackward0", ("tensors",), {"tensors": "split_along(grad, dim, tensors_sym_sizes)"},
   lambda tensors, dim: np.concatenate(tensors, axis=dim), attrs=("dim",),
   saves=("dim", "tensors_sym_sizes"), hidden=("tensors_sym_sizes",), variadic=True)
op("stack", "StackBackward0", ("tensors",),
   {"tensors": "unstack(grad, dim, len(tensors_sym_sizes))"},
   lambda tensors, dim: np.stack(tensors, axis=dim), attrs=("dim",),
   saves=("dim", "tensors_sym_sizes"), hidden=("tensors_sym_sizes",), variadic=True)
op("clone", "CloneBackward0", ("self",), {"self": "grad"}, np.array, same_shape=True)
op("to_dtype", "ToCopyBackward0", ("self",), {"self": "astype(grad, self_dtype)"},
   lambda self, dtype: self.astype(dtype.numpy), attrs=("dtype",), saves=("self_dtype",))

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
   attrs=("indices", "accumulate"), saves=("accumulate", "indices"))
op("fill_whole", "FillBackward3", ("self", "value"),
   {"self": "zeros_like(grad)", "value": "grad.sum()"},
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

op("convolution", "ConvolutionBackward0", ("input", "weight", "bias"),
   {"input": "convolution_input_grad(grad, input.shape, weight, stride, padding, dilation, "
             "groups)",
    "weight": "convolution_weight_grad(grad, input, weight.shape, stride, padding, dilation, "
              "groups)",
    "bias": "channel_sum(grad)"},
   lambda x, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
   bias_sym_sizes_opt: nn_kernels.convolution(x, weight, bias, stride, padding, dilation, groups),
   attrs=("stride", "padding", "dilation", "transposed", "output_padding", "groups",
          "bias_sym_sizes_opt"),
   saves=("bias_sym_sizes_opt", "dilation", "groups", "input", "output_padding", "padding",
          "stride", "transposed", "weight"))
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
op("max_pool2d", "MaxPool2DWithIndicesBackward0", ("self",),
   {"self": "max_pool2d_backward(grad, self.shape, result1)"},
   nn_kernels.max_pool2d, attrs=("kernel_size", "stride", "padding", "dilation", "ceil_mode"),
   extra_outputs=("result1",),
   saves=("ceil_mode", "dilation", "kernel_size", "padding", "result1", "self", "stride"))
op("avg_pool2d", "AvgPool2DBackward0", ("self",),
   {"self": "avg_pool2d_backward(grad, self.shape, kernel_size, stride, padding, ceil_mode, "
            "count_include_pad, divisor_override)"},
   nn_kernels.avg_pool2d,
   attrs=("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
          "divisor_override"),
   saves=("ceil_mode", "count_include_pad", "divisor_override", "kernel_size", "padding", "self",
          "stride"))
# Average pooling is linear: its backward is an op too, whose own backward is average pooling
# again, so that backward(create_graph=True) through a pooling layer can be differentiated.
op("avg_pool2d_backward", "AvgPool2DBackwardBackward0", ("grad_output",),
   {"grad_output": "avg_pool2d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                   "divisor_override)"},
   nn_kernels.avg_pool2d_backward,
   attrs=("input_shape", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
          "divisor_override"),
   saves=("ceil_mode", "count_include_pad", "divisor_override", "kernel_size", "padding",
          "stride"))
op("constant_pad_nd", "ConstantPadNdBackward0", ("self",),
   {"self": "constant_pad_nd(grad, [-p for p in pad])"},
   nn_kernels.constant_pad_nd, attrs=("pad", "value"), saves=("pad",))
for _dims in (1, 2, 3):
    for _mode, _name in (("reflect", "Reflection"), ("replicate", "Replication")):
        op(f"{_mode}_pad{_dims}d", f"{_name}Pad{_dims}DBackward0", ("self",),
           {"self": f"index_pad_backward(grad, self.shape, padding, {_mode!r})"},
           lambda self, padding, _mode=_mode: nn_kernels.index_pad(self, padding, _mode),
           attrs=("padding",), saves=("padding", "self"))
op("embedding", "EmbeddingBackward0", ("weight",),
   {"weight": "embedding_backward(grad, indices, weight_sym_argsize_0, padding_idx, "
              "scale_grad_by_freq, sparse)"},
   lambda weight, indices, padding_idx, scale_grad_by_freq, sparse, weight_sym_argsize_0:
   weight[indices],
   attrs=("indices", "padding_idx", "scale_grad_by_freq", "sparse", "weight_sym_argsize_0"),
   saves=("indices", "padding_idx", "scale_grad_by_freq", "sparse", "weight_sym_argsize_0"))
# result1 and result2 are the mean and 1/std the forward normalised with (per row for layer
# norm, per channel for batch norm); eps is kept so that a differentiable backward can recompute
# them from the input.
op("layer_norm", "NativeLayerNormBackward0", ("input", "weight", "bias"),
   {"input": "layer_norm_input_grad(grad, input, normalized_shape, result1, result2, weight, eps)",
    "weight": "layer_norm_weight_grad(grad, input, normalized_shape, result1, result2, eps)",
    "bias": "sum_to(grad, normalized_shape)"},
   lambda x, weight, bias, normalized_shape, eps: nn_kernels.layer_norm(
       x, normalized_shape, weight, bias, eps),
   attrs=("normalized_shape", "eps"), extra_outputs=("result1", "result2"),
   saves=("bias", "eps", "input", "normalized_shape", "result1", "result2", "weight"),
   hidden=("eps",), joint=True)
op("batch_norm", "NativeBatchNormBackward0", ("input", "weight", "bias"),
   {"input": "batch_norm_input_grad(grad, input, weight, running_mean, running_var, result1, "
             "result2, training, eps)",
    "weight": "batch_norm_weight_grad(grad, input, running_mean, running_var, result1, result2, "
              "training, eps)",
    "bias": "channel_sum(grad)"},
   nn_kernels.batch_norm, attrs=("running_mean", "running_var", "training", "momentum", "eps"),
   extra_outputs=("result1", "result2"),
   saves=("eps", "input", "result1", "result2", "running_mean", "running_var", "training",
          "weight"), joint=True)
op("gelu", "GeluBackward0", ("self",), {"self": "gelu_backward(grad, self, approximate)"},
   nn_kernels.gelu, attrs=("approximate",), saves=("approximate", "self"), floating=True)
op("leaky_relu", "LeakyReluBackward0", ("self",),
   {"self": "where(self > 0, grad, grad * negative_slope)"},
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
for _name, _node in (("nll_loss", "NllLossBackward0"), ("nll_loss2d", "NllLoss2DBackward0")):
    op(_name, _node, ("self",),
       {"self": "nll_loss_backward(grad, self, target, weight, reduction, ignore_index, "
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
   {"self": "where(result > 0, grad, grad * negative_slope)"},
   lambda self, negative_slope: np.where(self > 0, self, self * negative_slope),
   attrs=("negative_slope",), saves=("negative_slope", "result"))


# --- recurrent layers, pooling, transposed convolution ---------------------------------------
# Kernels in layer_kernels; the names their formulas call are added to formula_math's NumPy
# namespace here (and to its Tensor namespace by formula_math, from layer_kernels).

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
op("adaptive_max_pool2d", "AdaptiveMaxPool2DBackward0", ("self",),
   {"self": "max_pool2d_backward(grad, self.shape, result1)"},
   layer_kernels.adaptive_max_pool2d, attrs=("output_size",), extra_outputs=("result1",),
   saves=("result1", "self"))
# conv_transpose1d/2d: ATen's convolution with transposed=True, the same node as convolution.
op("convolution_transposed", "ConvolutionBackward0", ("input", "weight", "bias"),
   {"input": "conv_transpose_input_grad(grad, weight, stride, padding, dilation, "
             "output_padding, groups)",
    "weight": "conv_transpose_weight_grad(grad, input, weight.shape, stride, padding, "
              "dilation, output_padding, groups)",
    "bias": "channel_sum(grad)"},
   lambda x, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
   bias_sym_sizes_opt: layer_kernels.conv_transpose(x, weight, bias, stride, padding, dilation,
                                                    output_padding, groups),
   attrs=("stride", "padding", "dilation", "transposed", "output_padding", "groups",
          "bias_sym_sizes_opt"),
   saves=("bias_sym_sizes_opt", "dilation", "groups", "input", "output_padding", "padding",
          "stride", "transposed", "weight"))
# ATen's recurrent layers transpose a batch_first output back in place (``output.transpose_``),
# which records TransposeBackward1; the output is a new tensor here (the stacked outputs it
# transposes are internal), with PyTorch's node.
op("transpose_inplace", "TransposeBackward1", ("self",), {"self": "transpose(grad, dim0, dim1)"},
   lambda self, dim0, dim1: np.swapaxes(self, dim0, dim1),
   attrs=("dim0", "dim1"), saves=("dim0", "dim1"))
# F.interpolate: one entry per PyTorch node; scales are None when an output size was given.
for _name, _node, _mode, _dims, _corners in (
        ("upsample_nearest1d", "UpsampleNearest1DBackward0", "nearest", 1, False),
        ("upsample_nearest2d", "UpsampleNearest2DBackward0", "nearest", 2, False),
        ("upsample_nearest_exact1d", "UpsampleNearestExact1DBackward0", "nearest-exact", 1, False),
        ("upsample_nearest_exact2d", "UpsampleNearestExact2DBackward0", "nearest-exact", 2, False),
        ("upsample_linear1d", "UpsampleLinear1DBackward0", "linear", 1, True),
        ("upsample_bilinear2d", "UpsampleBilinear2DBackward0", "bilinear", 2, True)):
    _scales = ("scales",) if _dims == 1 else ("scales_h", "scales_w")
    _corner_attrs = ("align_corners",) if _corners else ()
    _corner_arg = "align_corners" if _corners else "False"
    op(_name, _node, ("self",),
       {"self": f"upsample_backward(grad, self_sym_sizes, output_size, ({', '.join(_scales)},), "
                f"{_mode!r}, {_corner_arg})"},
       lambda self, output_size, *rest, _mode=_mode, _dims=_dims, _corners=_corners:
       layer_kernels.upsample(self, output_size, rest[_corners:_corners + _dims], _mode,
                              rest[0] if _corners else False),
       attrs=("output_size", *_corner_attrs, *_scales, "self_sym_sizes"),
       saves=(*_corner_attrs, "output_size", *_scales, "self_sym_sizes"))
# 3-d pooling (the formulas' NumPy and Tensor versions are in layer_kernels).
op("max_pool3d", "MaxPool3DWithIndicesBackward0", ("self",),
   {"self": "max_pool3d_backward(grad, self.shape, result1)"},
   layer_kernels.max_pool3d, attrs=("kernel_size", "stride", "padding", "dilation", "ceil_mode"),
   extra_outputs=("result1",),
   saves=("ceil_mode", "dilation", "kernel_size", "padding", "result1", "self", "stride"))
op("avg_pool3d", "AvgPool3DBackward0", ("self",),
   {"self": "avg_pool3d_backward(grad, self.shape, kernel_size, stride, padding, ceil_mode, "
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
   {"self": "max_pool3d_backward(grad, self.shape, result1)"},
   layer_kernels.adaptive_max_pool3d, attrs=("output_size",), extra_outputs=("result1",),
   saves=("result1", "self"))
