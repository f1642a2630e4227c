"""The same expressions run through nbgrad and PyTorch give the same graph, values and grads."""

import numpy as np
import pytest
from graph_compare import saved_names, structure, to_numpy

import nbgrad

# Each expression sees x, y (2x3), v (3), m (3x4), b3 (5x2x3), c3 (5x3x4), s (0-d), all requiring
# grad, and T, the library under test. Values are kept away from kinks and branch points.
EXPRESSIONS = [
    "x + 2",
    "2 + x",
    "x + y",
    "x - y",
    "x - 2",
    "2 - x",
    "x * 2",
    "2 * x",
    "x * y",
    "x / y",
    "x / 2",
    "2 / x",
    "x ** 2",
    "x ** y",
    "2 ** x",
    "-x",
    "x @ m",
    "x.mm(m)",
    "v @ v",
    "v.dot(v)",
    "m.t() @ v",
    "x.mv(v)",
    "v @ m",
    "b3 @ c3",
    "b3 @ m",
    "b3 @ v",
    "T.bmm(b3, c3)",
    "x.sum()",
    "x.sum(0)",
    "x.sum(dim=1, keepdim=True)",
    "x.sum((0, 1))",
    "x.sum(-1)",
    "x.mean()",
    "x.mean(0)",
    "x.mean(dim=1, keepdim=True)",
    "x.max()",
    "x.max(0)[0]",
    "x.max(1).values",
    "x.min()",
    "x.min(1)[0]",
    "x.amax(0)",
    "x.amax()",
    "x.amin(1)",
    "x.exp()",
    "x.log()",
    "x.sin()",
    "x.cos()",
    "x.tan()",
    "x.tanh()",
    "x.sigmoid()",
    "x.relu()",
    "T.relu(x - 3)",
    "x.sqrt()",
    "x.rsqrt()",
    "x.reciprocal()",
    "(x - 3).abs()",
    "x.log1p()",
    "x.expm1()",
    "x.erf()",
    "T.erf(x - 3)",
    "(x * 1).erf_()",
    "x.clamp(2, 5)",
    "x.clamp(min=2)",
    "x.clamp(max=4)",
    "T.where(x > 3, x, y)",
    "T.where(x > 3, x, 0.)",
    "x.view(3, 2)",
    "x.reshape(3, 2)",
    "x.reshape(-1)",
    "x.flatten()",
    "x.t()",
    "x.T",
    "x.transpose(0, 1)",
    "x.permute(1, 0)",
    "x.unsqueeze(1)",
    "x.unsqueeze(0).squeeze()",
    "x.unsqueeze(0).squeeze(0)",
    "x[:, :1].expand(2, 3)",
    "x.expand(2, 2, 3)",
    "x[0]",
    "x[0, 1]",
    "x[:, 1:]",
    "x[0][1:]",
    "x[[0, 1]]",
    "x[x > 3]",
    "x[:, [0, 2]]",
    "x[None]",
    "x[..., 0]",
    "x[1:, ::2]",
    "T.cat([x, y])",
    "T.cat([x, y], 1)",
    "T.stack([x, y])",
    "T.stack([x, y], 2)",
    "x.clone()",
    "x.pow(3)",
    "T.pow(x, 3)",
    "x.square()",
    "x.neg()",
    "x.log_softmax(1)",
    "x.softmax(1)",
    "x.softmax(0)",
    "x.maximum(y + 0.5)",
    "x.minimum(y + 0.5)",
    "x.masked_fill(x > 3, 0.)",
    "x.narrow(0, 0, 1)",
    "x.select(0, 1)",
    "x.gather(1, T.tensor([[0], [2]]))",
    "x.double()",
    "x.to(T.float64)",
    "x.exp().exp()",
    "x.sign()",
    "x.t().reshape(6)",
    "x.sum_to_size(1, 3)",
    "(x * y).sum() / x.numel()",
    "T.addmm(v, x, m[:, :3])",
    "x.view_as(y)",
    "x.expand_as(x)",
    "((x * 2).tanh() + y.sigmoid() * x).sum()",
    "x.clamp(min=y)",
    "x.clamp(min=y - 1, max=y[0] + 1)",
    "x.masked_fill(x > 3, s)",
    "T.div(x, y, rounding_mode='floor')",
    "T.div(x, 2, rounding_mode='trunc')",
    "((x.t() * 1) + y.t().contiguous()).contiguous()",
    "(b3.permute(2, 0, 1) * b3.permute(2, 0, 1).contiguous()).contiguous()",
    "x.clamp_min(0.9)",
    "x.clamp_max(2.)",
    "x.clamp_min(y)",
    "T.clamp_max(x, v)",
    "(x * 1).clamp_min_(1.)",
    "(x * 1).clamp_max_(v)",
    "(x * 1).fill_(1.5)",
    "(x * 1).fill_(s)",
    "T.nn.functional.nll_loss(v.log_softmax(0), T.tensor(1), reduction='none')",
    "T.nn.functional.nll_loss(v.log_softmax(0), T.tensor(2), v.detach(), reduction='none')",
    "x * 0.5",
    "x * 2",
    "T.nn.functional.max_pool2d(b3.unsqueeze(0), 2)",
    "T.nn.functional.avg_pool2d(b3.unsqueeze(0), 2)",
    "T.nn.functional.max_pool2d(b3.unsqueeze(0), 2, 1)",
    "x % 0.3",
    "T.remainder(x, y - 2.1)",
    "x % (y * 0.31)",
    "T.fmod(x - 2.1, 0.7)",
    "(x - 2.1).fmod(y * 0.29)",
    "(x * 1).remainder_(0.3)",
    "(x * 1).fmod_(v * 0.3)",
    "s.sum(0)",
    "s.mean(-1)",
    "s.max(0)[0]",
    "s.amax(0)",
    "s.squeeze(0)",
    "s.transpose(0, -1)",
    "s.softmax(0)",
    "s.log_softmax(-1)",
    "x.norm()",
    "s.norm(dim=0)",
    "s.norm(1, dim=-1, keepdim=True)",
    "x.norm(dim=1)",
    "x.norm(p=2, dim=0, keepdim=True)",
    "T.linalg.vector_norm(x)",
    "x.norm(1)",
    "T.norm(x, dim=(0, 1))",
    # element-wise functions, more
    "x.log2()",
    "T.log10(x)",
    "(x * 1).log2_()",
    "(x / 3).asin()",
    "T.arcsin(x / 3)",
    "T.acos(x / 3)",
    "x.atan()",
    "(x * 1).atan_()",
    "T.atan2(x, y)",
    "x.arctan2(y - 1)",
    "T.atan2(x, v)",
    "(x * 1).atan2_(y)",
    "x.sinh()",
    "x.cosh()",
    "x.asinh()",
    "(x + 1).acosh()",
    "(x / 3).atanh()",
    "x.exp2()",
    "x.erfc()",
    "(x / 3).erfinv()",
    "(x / 3).erfinv_()",
    "T.logsumexp(x, 1)",
    "x.logsumexp(-1, keepdim=True)",
    "x.logsumexp((0, 1))",
    "s.logsumexp(0)",
    "T.selu(x - 1)",
    "T.celu(x - 1, 2.)",
    "T.threshold(x, 1., 0.)",
    "T.hardshrink(x, 1.)",
    "x.hardshrink()",
    "T.relu_(x - 1)",
    "T.selu_(x - 1)",
    "T.celu_(x - 1)",
    "T.threshold_(x * 1, 1., 0.)",
    "T.nn.functional.softplus(x - 1)",
    "T.nn.functional.softplus(x, 2, 3)",
    "T.nn.functional.hardtanh(x - 1.4)",
    "T.nn.functional.relu6(x * 3)",
    "T.nn.functional.hardtanh(x - 1.4, inplace=True)",
    "T.nn.functional.hardtanh_(x - 1.4, -0.5, 0.5)",
    "T.nn.functional.relu6(x * 3, inplace=True)",
    "T.nn.functional.logsigmoid(x - 1.5)",
    "T.nn.functional.silu(x - 1)",
    "T.nn.functional.silu(x - 1, inplace=True)",
    "T.nn.functional.mish(x - 1)",
    "T.nn.functional.mish(x - 1, inplace=True)",
    "T.nn.functional.hardswish(x * 3 - 3)",
    "T.nn.functional.hardswish(x * 3 - 3, inplace=True)",
    "T.nn.functional.hardsigmoid(x * 3 - 3)",
    "T.nn.functional.hardsigmoid(x * 3 - 3, inplace=True)",
    "T.nn.functional.elu(x - 1)",
    "T.nn.functional.elu(x - 1, 0.5, inplace=True)",
    "T.nn.functional.elu_(x - 1)",
    "T.nn.functional.selu(x - 1, inplace=True)",
    "T.nn.functional.celu(x - 1, 0.5)",
    "T.nn.functional.celu(x - 1, inplace=True)",
    "T.nn.functional.threshold(x * 1, 1., 5., inplace=True)",
    "T.nn.functional.softshrink(x - 1.5, 0.3)",
    "T.nn.functional.hardshrink(x - 1.5, 0.3)",
    "T.nn.functional.softsign(x - 1.5)",
    "T.nn.functional.tanhshrink(x - 1)",
    "(x * 1).log1p_()",
    "T.expm1_(x * 1)",
    "(x * 3 - 4).frac()",
    "T.deg2rad(x)",
    "(x * 1).rad2deg_()",
    "T.sinc(x - 1)",
    "(x - 1.5).sgn() * x",
    "(x * 1).sgn_() * x",
    "T.logit(x / 3)",
    "(x / 3).logit(0.3)",
    "T.logit_(x / 3)",
    "T.nan_to_num(x)",
    "T.nan_to_num(x.log() - x, 1.0, 2.0, 3.0)",
    "(x * 1).nan_to_num_()",
    "T.xlogy(x, y)",
    "x.xlogy(2.0)",
    "T.xlogy(2, y)",
    "(x * 1).xlogy_(y)",
    "T.hypot(x, y - 1)",
    "(x * 1).hypot_(v)",
    "T.copysign(x, y - 1)",
    "x.copysign(-1.0)",
    "(x * 1).copysign_(y - 1.5)",
    "T.logaddexp(x, y)",
    "x.logaddexp2(v)",
    "T.lerp(x, y, 0.3)",
    "x.lerp(v, 0.7)",
    "T.lerp(x, y, v / 3)",
    "(x * 1).lerp_(y, s)",
    "T.addcmul(x, y, v)",
    "x.addcmul(y, v, value=-2)",
    "(x * 1).addcmul_(y, v)",
    "T.addcdiv(x, y, v, value=2)",
    "(x * 1).addcdiv_(y, v)",
    "(x * 1).pow_(2)",
    "(x * 1).pow_(0.5)",
    "(x * 1).pow_(y)",
    "(x * 1).square_()",
    "T.square_(x * 1)",
    "(x / 3).arcsin_()",
    "T.nn.functional.softmin(x, 1)",
    "T.nn.functional.glu(T.cat([x, y], 1))",
    "T.nn.functional.glu(x, 0)",
    "T.nn.functional.prelu(x - 1.5, v)",
    "T.nn.functional.prelu(x - 1.5, s)",
    "T.nn.functional.relu_(x - 1.5)",
    "T.nn.functional.leaky_relu_(x - 1.5, 0.2)",
    "T.nn.functional.multilabel_soft_margin_loss(x, (y > 1).double())",
    "T.float_power(x, 2)",
    "x.float().float_power(y)",
    "T.float_power(x.float(), 2.5)",
    "(x * 1).float_power_(2)",
]

# Reductions, scans, reorderings and products, more.
EXPRESSIONS_REDUCTIONS_MORE = [
    "x.var()",
    "x.var(0)",
    "x.var(1, keepdim=True)",
    "x.var(unbiased=False)",
    "T.var(x, (0, 1), correction=2)",
    "x.var(keepdim=True)",
    "x.std()",
    "x.std(-1)",
    "T.std(x, 0, True, True)",
    "s.var(0, correction=0)",
    "x.prod()",
    "x.prod(1)",
    "x.prod(-1, keepdim=True)",
    "T.prod(x * T.tensor([1.0, 0.0, 1.0]), 1)",
    "x.cumsum(1)",
    "T.cumsum(x, -1)",
    "s.cumsum(0)",
    "x.cumprod(1)",
    "b3.cumprod(-2)",
    "x.logcumsumexp(1)",
    "x.cummax(1)[0]",
    "x.cummin(0).values",
    "T.cummax(b3, -1).values",
    "x.roll(1)",
    "x.roll((1, 2), (0, -1))",
    "x.flip(-1)",
    "T.flip(b3, [0, 2])",
    "x.fliplr()",
    "x.flipud()",
    "x.repeat(2, 1, 3)",
    "T.tile(v, (2, 2))",
    "x.tril()",
    "x.triu(1)",
    "T.tril(b3, -1)",
    "x.index_select(1, T.tensor([0, 2, 0]))",
    "T.index_select(x, -1, T.tensor([1]))",
    "x.masked_select(x > 1)",
    "T.masked_select(x, v > 1)",
    "T.outer(v, v)",
    "T.ger(v, x[0])",
    "T.addmv(x[:, 0], x, v)",
    "x[:, 0].addmv(x, v, beta=2, alpha=0.5)",
    "T.addr(x, x[:, 0], v)",
    "T.addr(x, x[:, 0], v, beta=0, alpha=2)",
    "T.baddbmm(m[:2, :], b3, c3, alpha=2)",
    "m[:, :3].addmm(x.t(), x)",
    "x.movedim(0, 1)",
    "T.moveaxis(b3, (0, 1), (2, 0))",
    "T.swapdims(x, 0, 1)",
    "T.swapaxes(x, 0, 1)",
    "x.unflatten(1, (3, 1))",
    "x.split(1)[1]",
    "x.split([1, 1])[0]",
    "T.split(x, 2, 1)[1]",
    "x.chunk(3, -1)[2]",
    "x.unbind()[1]",
    "T.unbind(x, -1)[0]",
    "T.stack(x.unbind(1)[::2], 0)",
    "T.var_mean(x, 0)[1]",
    "T.var_mean(x, unbiased=False)[0]",
    "T.std_mean(x, 1, keepdim=True)[0]",
    "T.stack(T.std_mean(x, 1), 0)",
    "x.sort()[0]",
    "x.sort(0, descending=True).values",
    "T.sort(x, stable=True)[0]",
    "x.msort()",
    "x.topk(2)[0]",
    "x.topk(1, 0, largest=False)[0]",
    "x.kthvalue(2)[0]",
    "x.kthvalue(1, 0, True)[0]",
    "x.median()",
    "x.median(1)[0]",
    "x.mode(1)[0]",
    "x.diagonal()",
    "x.diagonal(-1, 1, 0)",
    "T.diagonal(b3, 1, 0, 2)",
    "T.diag(v, 1)",
    "T.diag(x, -1)",
    "T.diag_embed(x, 1, 0, 2)",
    "x.trace()",
    "T.take(x, T.tensor([[0, 5], [-1, 0]]))",
    "T.take_along_dim(x, T.tensor([[0], [1]]), 1)",
    "T.take_along_dim(x, T.tensor([0, 5]))",
    "x.norm(float('inf'))",
    "x.norm(p=-float('inf'), dim=1)",
    "x.norm(0)",
    "x.norm(3)",
    "T.linalg.vector_norm(x, 0.5, 1, True)",
    "T.linalg.matrix_norm(x)",
    "T.linalg.norm(x)",
    "T.linalg.norm(x, 'fro')",
    "T.linalg.norm(x, dim=1)",
    "T.linalg.norm(v, 3)",
    "s.norm(float('inf'))",
    "T.dist(x, y * 2)",
    "T.dist(x, v, 1)",
    "T.dist(x, y, float('inf'))",
    "T.dist(x, y, 3)",
    "T.linalg.cross(x, y)",
    "T.cross(x, y, dim=1)",
    "x.cross(y, 1)",
    "T.atleast_1d(s)",
    "T.atleast_2d(v)",
    "T.hstack([s, s])",
    "T.hstack([x, y])",
    "T.vstack([v, v])",
    "T.row_stack([x, v])",
    "T.dstack([x, y])",
    "T.column_stack([v, x.t()])",
    "x.scatter(0, T.tensor([[0, 1, 0], [1, 0, 1]]), y)",
    "x.scatter(1, T.tensor([[2], [0]]), 2.0)",
    "T.scatter(x, 1, T.tensor([[2, 0]]), value=-1.0)",
    "x.scatter_add(0, T.tensor([[0, 0, 0], [1, 1, 0]]), y)",
    "x.index_add(0, T.tensor([1, 1]), y)",
    "x.index_add(1, T.tensor([0, 2]), y[:, :2], alpha=2)",
    "x.index_fill(1, T.tensor([0, 2]), -1.0)",
    "x.index_copy(0, T.tensor([1, 0]), y)",
    "(x * 1).scatter_(0, T.tensor([[0, 1, 0], [0, 0, 1]]), y)",
    "(x * 1).scatter_(1, T.tensor([[1], [0]]), 1.0)",
    "(x * 1).scatter_add_(0, T.tensor([[0, 1, 1], [0, 0, 0]]), y)",
    "(x * 1).index_add_(0, T.tensor([1, 0]), y)",
    "(x * 1).index_fill_(1, T.tensor([0]), 3.0)",
    "(x * 1).index_copy_(1, T.tensor([2, 0]), y[:, :2])",
    "T.vdot(v, x[0])",
    "x.rot90()",
    "x.rot90(-1)",
    "T.rot90(b3, 1, (2, 0))",
    "x.rot90().reshape(6)",
    "x.repeat_interleave(2)",
    "x.repeat_interleave(2, -2)",
    "x.repeat_interleave(T.tensor([1, 2, 0]), 1)",
    "v.repeat_interleave(T.tensor(3))",
    "T.kron(x, y)",
    "T.kron(v, x)",
    "T.meshgrid(v, x[0], indexing='ij')[1]",
    "T.meshgrid(v, x[:, 0], indexing='xy')[0]",
    "T.cartesian_prod(v, x[0])",
    "T.block_diag(x, v)",
    "T.block_diag(s, x.t(), m)",
    "T.addbmm(m[:2, :], b3, c3)",
    "T.addbmm(m[:2, :], b3, c3, beta=0.5, alpha=2)",
    "(x * 1).renorm_(2, 0, 3.)",
]
EXPRESSIONS += EXPRESSIONS_REDUCTIONS_MORE

# Batch norm's legit entry points (b3's dim 1 is the channels) and rrelu with a fixed slope
# (lower == upper: the noise is that slope, drawn alike by both libraries).
EXPRESSIONS_BNLEGIT = [
    "T._native_batch_norm_legit(b3, x[:, 0], y[:, 1], T.zeros(2, dtype=T.float64), "
    "T.ones(2, dtype=T.float64), True, 0.1, 1e-5)[0]",
    "T._native_batch_norm_legit(b3, x[:, 0], None, T.tensor([0.5, -0.2], dtype=T.float64), "
    "T.tensor([1.5, 0.7], dtype=T.float64), False, 0.1, 1e-5)[0]",
    "T._native_batch_norm_legit(b3, None, y[:, 2], True, 0.1, 1e-5)[0]",
    "T._native_batch_norm_legit(b3 * 1, x[:, 0], y[:, 1], training=True, momentum=0.1, "
    "eps=1e-3)[0]",
    "T._native_batch_norm_legit_no_training(b3, x[:, 0], y[:, 1], "
    "T.tensor([0.5, -0.2], dtype=T.float64), T.tensor([1.5, 0.7], dtype=T.float64), 0.1, 1e-5)[0]",
    "T.nn.functional.rrelu(x - 2, 0.2, 0.2, training=True)",
]
EXPRESSIONS += EXPRESSIONS_BNLEGIT
# torch.segment_reduce (branch ddmore): lengths, offsets, an empty segment, axis, initial.
EXPRESSIONS_DDMORE = [
    "T.segment_reduce(x.t(), 'sum', lengths=T.tensor([2, 1]))",
    "T.segment_reduce(m, 'max', lengths=T.tensor([1, 0, 2]))",
    "T.segment_reduce(m, 'mean', offsets=T.tensor([0, 2, 3]))",
    "T.segment_reduce(x, 'amin', lengths=T.tensor([[2, 1], [1, 2]]), axis=-1)",
    "T.segment_reduce(b3, 'prod', lengths=T.tensor([[1, 1], [2, 0], [0, 2], [1, 1], [1, 1]]),"
    " axis=1, initial=2.0)",
    "x.masked_scatter(T.tensor([True, False, True]), m)",
]
EXPRESSIONS += EXPRESSIONS_DDMORE
# torch._convolution (ConvolutionBackward1) and F.interpolate's lanczos mode; the float32-only
# private convolutions, the grid sampler's fallback and _grouped_mm are compared in
# tests/test_convs_vs_torch.py.
EXPRESSIONS_CONVS = [
    "T._convolution(b3, y.reshape(1, 2, 3), v[:1], [1], [1], [1], False, [0], 1, False, False,"
    " True, True)",
    "T._convolution(b3, x.reshape(2, 3, 1), None, [2], [0], [1], True, [1], 1, False, False, True,"
    " True)",
    "T._convolution(c3.reshape(1, 5, 3, 4), c3[:, :2, :3].reshape(2, 5, 1, 3), v[:2], [1, 2],"
    " [1, 1], [2, 1], False, [0, 0], 1, False, False, True)",
    "T.nn.functional.interpolate(c3.reshape(1, 5, 3, 4), size=(2, 6), mode='lanczos',"
    " antialias=True)",
    "T.nn.functional.interpolate(c3.reshape(1, 5, 3, 4), scale_factor=0.6, mode='lanczos',"
    " antialias=True)",
]
EXPRESSIONS += EXPRESSIONS_CONVS
# PyTorch's private indexing ops, as_strided_scatter, slice_inverse, _lazy_clone, _neg_view.
EXPRESSIONS_IDX = [
    "T._unsafe_index(m, [T.tensor([0, 2, 2])])",
    "T._unsafe_index(m * 2, (T.tensor([1, 0]), T.tensor([3, -1])))",
    "T._unsafe_index_put(m, [T.tensor([2, 0])], x[:, :1] * 1)",
    "T._unsafe_index_put(x, (T.tensor([1, 1]), T.tensor([0, 2])), v[:2], True)",
    "T._index_put_impl_(m * 1, [T.tensor([1])], v[:1].expand(4) * 2)",
    "T._index_put_impl_(x * 1, [T.tensor([0, 0])], y, True, True)",
    "T._unsafe_masked_index(m, T.tensor([[True], [False]]), [T.tensor([2, 5])], -1.5)",
    "T._unsafe_masked_index_put_accumulate(m, T.tensor([[True], [False]]), [T.tensor([0, 7])],"
    " x[:, :1].expand(2, 4) * 1)",
    "T.as_strided_scatter(m.detach(), x, (2, 3), (4, 1), 1)",  # (PyTorch's self grad: README)
    "m.detach().as_strided_scatter(v, (3,), (5,))",
    "T.slice_inverse(m[1:], m, 0, 1)",
    "(m * 1)[:, ::2].slice_inverse(m, 1, None, None, 2)",
    "T._lazy_clone(x)",
    "x.t()._lazy_clone()",
    "T._neg_view(x).clone()",
    "(x * 2).t()._neg_view().clone()",
]
EXPRESSIONS += EXPRESSIONS_IDX
# Fake quantization (the values here, 0.5 to 4.7, are partly inside and partly clamped). The
# learnable variants' backward takes float32 only, as PyTorch's; the fused observer's input too.
EXPRESSIONS_FAKE_QUANTIZE = [
    "T.fake_quantize_per_tensor_affine(x, 0.1, 3, -10, 10)",
    "T.fake_quantize_per_tensor_affine(x * y, 0.25, -1, -8, 7)",
    "T.fake_quantize_per_tensor_affine(x, T.tensor([0.25]), T.tensor([1], dtype=T.int32), -8, 7)",
    "T._fake_quantize_per_tensor_affine_cachemask_tensor_qparams("
    "x.t(), T.tensor(0.3), T.tensor(-2), T.tensor([1]), -4, 4)[0]",
    "T.fake_quantize_per_channel_affine("
    "x, T.tensor([0.1, 0.3]), T.tensor([0, -2], dtype=T.int32), 0, -10, 10)",
    "T.fake_quantize_per_channel_affine("
    "x.t(), T.tensor([0.1, 0.3]), T.tensor([0.4, -2.6]), 1, -10, 10)",
    "T._fake_quantize_learnable_per_tensor_affine("
    "x.float(), (s * 0.1).float().reshape(1), (v[:1] - 1).float(), -10, 10, 0.5).double()",
    "T._fake_quantize_learnable_per_tensor_affine("
    "x.t().float(), (s * 0.1).float().reshape(1), (v[:1] - 1).float(), -10, 10).double()",
    "T._fake_quantize_learnable_per_channel_affine("
    "x.float(), (v[:2] * 0.1).float(), (v[1:] * 2).float(), 0, -10, 10, 2.0).double()",
    "T._fake_quantize_learnable_per_channel_affine("
    "x.t().float(), (v * 0.1).float(), (v - 2.1).float(), 0, -10, 10).double()",
    "T.fused_moving_avg_obs_fake_quant(x.float(), T.tensor([1]), T.tensor([1]), "
    "T.tensor([float('inf')]), T.tensor([float('-inf')]), T.tensor([1.0]), "
    "T.tensor([0], dtype=T.int32), 0.01, 0, 15, 0).double()",
    "T._fused_moving_avg_obs_fq_helper(x.float(), T.tensor([1]), T.tensor([1]), "
    "T.tensor([0.0, -1.0]), T.tensor([1.0, 2.0]), T.ones(2), T.zeros(2, dtype=T.int32), "
    "0.5, -8, 7, 0, True, True)[0].double()",
    "T._fused_moving_avg_obs_fq_helper(x, T.tensor([0]), T.tensor([0]), T.tensor([0.0]), "
    "T.tensor([1.0]), T.ones(1), T.zeros(1, dtype=T.int32), 0.5, 0, 255, 0)[0]",
]
EXPRESSIONS += EXPRESSIONS_FAKE_QUANTIZE


def inputs(T, dtype):
    rng = np.random.default_rng(7)
    shapes = {
        "x": (2, 3),
        "y": (2, 3),
        "v": (3,),
        "m": (3, 4),
        "b3": (5, 2, 3),
        "c3": (5, 3, 4),
        "s": (),
    }
    values = {}
    for name, shape in shapes.items():
        # Positive, distinct values: away from log/sqrt domains and from ties in max/min.
        data = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.37 + 0.5
        values[name] = T.tensor(data, dtype=dtype, requires_grad=True)
    return values


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_graph_values_and_grads_match_pytorch(torch, expression):
    ours_in, theirs_in = inputs(nbgrad, nbgrad.float64), inputs(torch, torch.float64)
    ours = eval(expression, {"T": nbgrad, **ours_in})  # noqa: S307 - our own test table
    theirs = eval(expression, {"T": torch, **theirs_in})  # noqa: S307

    assert structure(ours.grad_fn) == structure(theirs.grad_fn)
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-12, atol=1e-12)

    torch_saved = saved_names(theirs.grad_fn)
    assert torch_saved <= saved_names(ours.grad_fn)
    for name in torch_saved:
        assert_same_saved(getattr(ours.grad_fn, name), getattr(theirs.grad_fn, name), torch, name)

    seed = np.random.default_rng(3).standard_normal(tuple(theirs.shape))
    ours.backward(nbgrad.tensor(seed))
    theirs.backward(torch.tensor(seed))
    for name in ours_in:
        mine, real = ours_in[name].grad, theirs_in[name].grad
        assert (mine is None) == (real is None), name
        if real is not None:
            np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-10, atol=1e-12)


def assert_same_saved(mine, real, torch, name):
    if isinstance(real, torch.Tensor):
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-12, err_msg=name)
        assert str(mine.dtype) == str(real.dtype), name
    elif isinstance(real, tuple) and any(isinstance(r, torch.Tensor) for r in real):
        assert len(mine) == len(real), name
        for m, r in zip(mine, real):
            assert_same_saved(m, r, torch, name)
    else:
        assert mine == _signed(real), name


def _signed(value):
    """PyTorch shows a saved negative dim as its unsigned 64-bit wrap-around (2**64 - 1 for -1)."""
    if isinstance(value, int) and value >= 2**63:
        return value - 2**64
    if isinstance(value, tuple):
        return tuple(_signed(v) for v in value)
    return value


# Element-wise functions of several tensors lay their result out as their first operand, when
# that one is transposed (PyTorch's TensorIterator), so that a later view or reshape behaves alike.
LAYOUT_EXPRESSIONS = [
    "T.atan2(a, b)",
    "T.xlogy(a, b.abs())",
    "T.hypot(a, b)",
    "T.copysign(a, b)",
    "T.logaddexp(a, b)",
    "T.logaddexp2(a, b)",
    "T.lerp(a, b, 0.3)",
    "T.lerp(a, b, b.sigmoid())",
    "T.addcmul(a, b, b)",
    "T.addcdiv(a, b, b + 3)",
    "T.float_power(a.abs(), b)",
    "T.nn.functional.prelu(a, T.ones(3, dtype=T.float64))",
]


@pytest.mark.parametrize("expression", LAYOUT_EXPRESSIONS)
def test_results_are_laid_out_as_pytorch_lays_them_out(torch, expression):
    layouts = []
    for T in (nbgrad, torch):
        data = np.arange(12.0).reshape(4, 3) / 7 - 0.5
        a = T.tensor(data.T.copy()).t()  # a (4, 3) tensor laid out column-major
        b = T.tensor(data * 0.5 + 0.1)
        result = eval(expression, {"T": T, "a": a, "b": b})  # noqa: S307
        layouts.append((result.is_contiguous(), result.t().is_contiguous()))
    assert layouts[0] == layouts[1]
