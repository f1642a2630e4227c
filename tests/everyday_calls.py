"""Everyday PyTorch calls a learner's autograd program uses, as the measure of nbgrad's breadth.

The list is chosen from PyTorch's public API and tutorials (the "Learn the Basics" and autograd
tutorials, the ``torch``, ``Tensor``, ``nn.functional``, ``nn``, ``autograd`` and ``linalg``
reference pages), NOT from what nbgrad has: a call nbgrad lacks stays in the list and counts as a
disagreement (scripts/everyday_agreement.py).

Each entry is ``(text, kinds)`` or ``(text, kinds, "random")``:

- ``text`` is one Python expression with ``{0}`` and ``{1}`` standing for the input tensors. It
  names the library ``T`` and ``F`` (``T.nn.functional``), so that the same text runs on PyTorch
  and on nbgrad, plus the few helpers below (written once for both libraries).
- ``kinds`` names the kind of each input (``KINDS``: a shape and a domain where the call is
  smooth, away from kinks and ties), comma-separated for two inputs.
- ``"random"`` marks a call whose numbers come from a random generator (nbgrad's numbers are its
  own: README): only its shape, dtype and graph are compared, and its result feeds nothing else.
"""

import numpy as np

# --- the kinds of input ---------------------------------------------------------------------------
# name -> (shape, how to draw values from a NumPy Generator, whether an array can stand for it)

_KINKS = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, -2.0, 3.0, -3.0, 6.0])


def _away_from_kinks(a, distance=0.03):
    return bool(np.all(np.min(np.abs(a[..., None] - _KINKS), axis=-1) > distance))


def _real(shape):
    def draw(rng):
        while True:
            a = rng.uniform(-1.9, 1.9, shape)
            if _away_from_kinks(a):
                return a

    def fits(a):
        return a.shape == shape and np.all(np.abs(a) < 4) and _away_from_kinks(a)

    return shape, draw, fits


def _between(shape, low, high):
    def draw(rng):
        while True:
            a = rng.uniform(low, high, shape)
            if _away_from_kinks(a, 0.02):
                return a

    def fits(a):
        return a.shape == shape and np.all((a > low) & (a < high)) and _away_from_kinks(a, 0.02)

    return shape, draw, fits


def _spd(n):
    """A symmetric positive definite matrix, well conditioned."""

    def draw(rng):
        a = rng.uniform(-1, 1, (n, n))
        return a @ a.T + n * np.eye(n)

    def fits(a):
        return (
            a.shape == (n, n)
            and np.allclose(a, a.T, atol=1e-6)
            and np.linalg.eigvalsh(a.astype(np.float64)).min() > 0.5
        )

    return (n, n), draw, fits


KINDS = {
    "x": _real((2, 3)),
    "y": _real((2, 3)),
    "row": _real((3,)),
    "vec": _real((3,)),
    "s": _real(()),
    "pos": _between((2, 3), 0.2, 2.5),
    "unit": _between((2, 3), -0.85, 0.85),
    "prob": _between((2, 3), 0.1, 0.9),
    "gt1": _between((2, 3), 1.1, 3.0),
    "mat": _real((3, 3)),
    "spd": _spd(3),
    "m34": _real((3, 4)),
    "m42": _real((4, 2)),
    "batch": _real((2, 3, 4)),
    "batch2": _real((2, 4, 3)),
    "img": _real((1, 2, 5, 5)),
    "kernel": _real((3, 2, 3, 3)),
    "sig": _real((1, 2, 8)),
    "k1": _real((3, 2, 3)),
    "logits": _real((4, 5)),
    "seq": _real((4, 2, 3)),
}

# --- helpers the texts use (they take the library's tensors, whichever library) -----------------


def fixed(module):
    """The module with its parameters set to fixed numbers (so both libraries start alike)."""
    for k, parameter in enumerate(module.parameters()):
        values = np.linspace(-0.6, 0.7, parameter.numel()).reshape(tuple(parameter.shape)) / (k + 1)
        with _library(parameter).no_grad():
            parameter.copy_(_library(parameter).tensor(values, dtype=parameter.dtype))
    return module


def _library(t):
    """The module ``nbgrad`` or ``torch`` that made the tensor ``t``."""
    return __import__(type(t).__module__.split(".")[0])


def with_hook(t, fn):
    t.register_hook(fn)
    return t


def retained(t):
    t.retain_grad()
    return t


def set_item(t, key, value):
    t[key] = value
    return t


def add_item(t, key, value):
    t[key] += value
    return t


def iadd(t, u):
    t += u
    return t


def imul(t, u):
    t *= u
    return t


def no_grad_do(T, compute):
    with T.no_grad():
        return compute()


def enable_grad_inside_no_grad(T, compute):
    with T.no_grad(), T.enable_grad():
        return compute()


def grad_mode_off(T, compute):
    with T.set_grad_enabled(False):
        return compute()


def inference(T, compute):
    with T.inference_mode():
        return compute()


def seeded(T, compute):
    T.manual_seed(0)
    return compute()


def backward_then_grad(x, y):
    """``y.backward()`` then ``x.grad``, as the autograd tutorial reads it."""
    y.backward(retain_graph=True)
    return x.grad.clone() if x.grad is not None else None


_CUSTOM = {}


def custom(T, name):
    """A custom ``autograd.Function`` from PyTorch's tutorials, made for the library ``T``."""
    key = (T.__name__, name)
    if key not in _CUSTOM:
        _CUSTOM[key] = _make_custom(T, name)
    return _CUSTOM[key].apply


def _make_custom(T, name):
    if name == "Exp":  # saves its output (the autograd tutorial's Exp)

        class Exp(T.autograd.Function):
            @staticmethod
            def forward(ctx, i):
                result = i.exp()
                ctx.save_for_backward(result)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                (result,) = ctx.saved_tensors
                return grad_output * result

        return Exp
    if name == "Square":  # saves its input, differentiable twice

        class Square(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x**2

            @staticmethod
            def backward(ctx, grad_out):
                (x,) = ctx.saved_tensors
                return grad_out * 2 * x

        return Square
    if name == "MulConstant":  # a non-tensor argument kept on ctx

        class MulConstant(T.autograd.Function):
            @staticmethod
            def forward(ctx, tensor, constant):
                ctx.constant = constant
                return tensor * constant

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.constant, None

        return MulConstant
    if name == "Sinh":  # the double-backward tutorial: saves input and outputs

        class Sinh(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                expx = T.exp(x)
                expnegx = T.exp(-x)
                ctx.save_for_backward(expx, expnegx)
                return (expx - expnegx) / 2, expx, expnegx

            @staticmethod
            def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
                expx, expnegx = ctx.saved_tensors
                grad_input = grad_out * (expx + expnegx) / 2
                grad_input += _grad_out_exp * expx
                grad_input -= _grad_out_negexp * expnegx
                return grad_input

        return Sinh
    raise KeyError(name)


HELPERS = {
    name: globals()[name]
    for name in (
        "fixed",
        "with_hook",
        "retained",
        "set_item",
        "add_item",
        "iadd",
        "imul",
        "no_grad_do",
        "enable_grad_inside_no_grad",
        "grad_mode_off",
        "inference",
        "seeded",
        "backward_then_grad",
        "custom",
    )
}
HELPERS["np"] = np
HELPERS["inf"] = float("inf")

# --- the calls ---------------------------------------------------------------------------------

# element-wise math, as torch.* functions
MATH = [
    ("T.abs({0})", "x"),
    ("T.neg({0})", "x"),
    ("T.exp({0})", "x"),
    ("T.exp2({0})", "x"),
    ("T.expm1({0})", "x"),
    ("T.log({0})", "pos"),
    ("T.log2({0})", "pos"),
    ("T.log10({0})", "pos"),
    ("T.log1p({0})", "pos"),
    ("T.sqrt({0})", "pos"),
    ("T.rsqrt({0})", "pos"),
    ("T.sin({0})", "x"),
    ("T.cos({0})", "x"),
    ("T.tan({0})", "unit"),
    ("T.asin({0})", "unit"),
    ("T.acos({0})", "unit"),
    ("T.atan({0})", "x"),
    ("T.arctan({0})", "x"),
    ("T.sinh({0})", "x"),
    ("T.cosh({0})", "x"),
    ("T.tanh({0})", "x"),
    ("T.asinh({0})", "x"),
    ("T.acosh({0})", "gt1"),
    ("T.atanh({0})", "unit"),
    ("T.sigmoid({0})", "x"),
    ("T.erf({0})", "x"),
    ("T.erfc({0})", "x"),
    ("T.erfinv({0})", "unit"),
    ("T.square({0})", "x"),
    ("T.reciprocal({0})", "x"),
    ("T.sign({0})", "x"),
    ("T.sgn({0})", "x"),
    ("T.floor({0})", "x"),
    ("T.ceil({0})", "x"),
    ("T.round({0})", "x"),
    ("T.round({0}, decimals=1)", "x"),
    ("T.trunc({0})", "x"),
    ("T.frac({0})", "x"),
    ("T.relu({0})", "x"),
    ("T.clamp({0}, -1, 1)", "x"),
    ("T.clamp({0}, min=0)", "x"),
    ("T.clip({0}, -0.5, 0.5)", "x"),
    ("T.logit({0})", "prob"),
    ("T.nan_to_num({0})", "x"),
    ("T.deg2rad({0})", "x"),
    ("T.sinc({0})", "x"),
    ("T.lgamma({0})", "pos"),
    ("T.digamma({0})", "pos"),
    ("T.special.expit({0})", "x"),
    ("T.special.erf({0})", "x"),
    ("T.pow({0}, 2)", "x"),
    ("T.pow({0}, 0.5)", "pos"),
    ("T.pow(2, {0})", "x"),
    ("T.float_power({0}, 2)", "x"),
    ("T.softmax({0}, dim=1)", "x"),
    ("T.log_softmax({0}, 1)", "x"),
    ("T.logsumexp({0}, dim=1)", "x"),
    ("T.xlogy({0}, {1})", "x,pos"),
]

# element-wise and matrix methods of Tensor, and operators
METHODS = [
    ("{0}.exp()", "x"),
    ("{0}.log()", "pos"),
    ("{0}.sqrt()", "pos"),
    ("{0}.pow(2)", "x"),
    ("{0}.pow(3)", "x"),
    ("{0} ** 2", "x"),
    ("{0} ** 3", "x"),
    ("{0} ** 0.5", "pos"),
    ("2 ** {0}", "x"),
    ("{0} ** {1}", "pos,x"),
    ("{0}.abs()", "x"),
    ("{0}.neg()", "x"),
    ("-{0}", "x"),
    ("{0}.sigmoid()", "x"),
    ("{0}.tanh()", "x"),
    ("{0}.relu()", "x"),
    ("{0}.sin()", "x"),
    ("{0}.cos()", "x"),
    ("{0}.square()", "x"),
    ("{0}.reciprocal()", "x"),
    ("{0}.sign()", "x"),
    ("{0}.clamp(-1, 1)", "x"),
    ("{0}.clamp(min=0)", "x"),
    ("{0}.clamp_min(0.5)", "x"),
    ("{0}.clamp_max(0.5)", "x"),
    ("{0}.log_softmax(-1)", "x"),
    ("{0}.softmax(0)", "x"),
    ("{0}.float()", "x"),
    ("{0}.double()", "x"),
    ("{0}.to(T.float64)", "x"),
    ("{0}.type(T.float64)", "x"),
    ("{0}.abs().sqrt()", "x"),
    ("{0}.atan2({1})", "x,y"),
    ("{0} + {1}", "x,y"),
    ("{0} - {1}", "x,y"),
    ("{0} * {1}", "x,y"),
    ("{0} / {1}", "x,pos"),
    ("{0} + {1}", "x,row"),
    ("{0} * {1}", "x,row"),
    ("{0} / 3", "x"),
    ("1 / {0}", "pos"),
    ("{0} - 1", "x"),
    ("{0} // 2", "x"),
    ("{0} % 1.5", "x"),
    ("{0} @ {1}", "mat,mat"),
    ("{0} @ {1}", "mat,vec"),
    ("{0} @ {1}", "batch,batch2"),
    ("{0}.matmul({1})", "m34,m42"),
    ("{0}.mm({1})", "m34,m42"),
    ("{0}.dot({1})", "vec,row"),
    ("{0}.addmm({1}, {1})", "mat,mat"),
    ("{0}.lerp({1}, 0.25)", "x,y"),
    ("{0}.maximum({1})", "x,y"),
    ("{0}.where({0} > 0, {1})", "x,y"),
    ("{0} > {1}", "x,y"),
    ("{0}.eq({1})", "x,y"),
    ("({0} > 0).float() * {0}", "x"),
    ("{0}.masked_fill({0} < 0, 0.0)", "x"),
]

# two-tensor torch.* functions
BINARY = [
    ("T.add({0}, {1}, alpha=2)", "x,y"),
    ("T.sub({0}, {1}, alpha=0.5)", "x,y"),
    ("T.mul({0}, {1})", "x,y"),
    ("T.div({0}, {1})", "x,pos"),
    ("T.div({0}, 2, rounding_mode='floor')", "x"),
    ("T.true_divide({0}, {1})", "x,pos"),
    ("T.maximum({0}, {1})", "x,y"),
    ("T.minimum({0}, {1})", "x,y"),
    ("T.fmax({0}, {1})", "x,y"),
    ("T.fmin({0}, {1})", "x,y"),
    ("T.pow({0}, {1})", "pos,y"),
    ("T.atan2({0}, {1})", "x,y"),
    ("T.hypot({0}, {1})", "x,y"),
    ("T.remainder({0}, 1.5)", "x"),
    ("T.fmod({0}, 1.5)", "x"),
    ("T.lerp({0}, {1}, 0.3)", "x,y"),
    ("T.addcmul({0}, {1}, {1}, value=0.5)", "x,y"),
    ("T.addcdiv({0}, {0}, {1})", "x,pos"),
    ("T.copysign({0}, {1})", "x,y"),
    ("T.logaddexp({0}, {1})", "x,y"),
    ("T.dist({0}, {1})", "x,y"),
    ("T.where({0} > 0, {0}, {1})", "x,y"),
    ("T.where({0} > 0, {0}, 0.0)", "x"),
    ("T.dot({0}, {1})", "vec,row"),
    ("T.inner({0}, {1})", "vec,row"),
    ("T.outer({0}, {1})", "vec,row"),
    ("T.cross({0}, {1}, dim=1)", "x,y"),
    ("T.linalg.cross({0}, {1})", "vec,row"),
    ("T.cdist({0}, {1})", "m34,m34"),
    ("T.mm({0}, {1})", "m34,m42"),
    ("T.mv({0}, {1})", "mat,vec"),
    ("T.bmm({0}, {1})", "batch,batch2"),
    ("T.matmul({0}, {1})", "batch,m42"),
    ("T.addmm({0}, {1}, {1})", "mat,mat"),
    ("T.addmv({0}, {1}, {0})", "vec,mat"),
    ("T.addr({0}, {1}, {1})", "mat,vec"),
    ("T.baddbmm({0} @ {1}, {0}, {1})", "batch,batch2"),
    ("T.kron({0}, {1})", "vec,row"),
    ("T.tensordot({0}, {1}, dims=1)", "mat,mat"),
    ("T.einsum('ij,jk->ik', {0}, {1})", "mat,mat"),
    ("T.einsum('bij,bjk->bik', {0}, {1})", "batch,batch2"),
    ("T.einsum('ii->', {0})", "mat"),
    ("T.einsum('i,j->ij', {0}, {1})", "vec,row"),
    ("T.einsum('ij->j', {0})", "x"),
    ("T.isclose({0}, {1})", "x,y"),
    ("T.allclose({0}, {1})", "x,y"),
    ("T.equal({0}, {0})", "x"),
]

# reductions, scans, sorting
REDUCTIONS = [
    ("{0}.sum()", "x"),
    ("{0}.sum(0)", "x"),
    ("{0}.sum(dim=1, keepdim=True)", "x"),
    ("T.sum({0}, (0, 1))", "batch"),
    ("{0}.mean()", "x"),
    ("{0}.mean(1)", "x"),
    ("T.mean({0}, dim=0, keepdim=True)", "x"),
    ("{0}.prod()", "x"),
    ("{0}.prod(1)", "x"),
    ("{0}.var()", "x"),
    ("{0}.var(1, unbiased=False)", "x"),
    ("{0}.std()", "x"),
    ("T.std({0}, 1)", "x"),
    ("T.var({0}, dim=0, correction=0)", "x"),
    ("T.var_mean({0}, 1)[0]", "x"),
    ("T.std_mean({0})[1]", "x"),
    ("{0}.norm()", "x"),
    ("{0}.norm(dim=1)", "x"),
    ("{0}.norm(p=1)", "x"),
    ("{0}.norm(p=float('inf'))", "x"),
    ("T.norm({0}, p='fro')", "x"),
    ("{0}.logsumexp(1)", "x"),
    ("{0}.cumsum(1)", "x"),
    ("T.cumsum({0}, dim=0)", "x"),
    ("{0}.cumprod(1)", "x"),
    ("T.cummax({0}, 1).values", "x"),
    ("{0}.max()", "x"),
    ("{0}.min()", "x"),
    ("{0}.max(dim=1).values", "x"),
    ("T.max({0}, 1)[1]", "x"),
    ("{0}.min(0)[0]", "x"),
    ("T.max({0}, {1})", "x,y"),
    ("{0}.amax(1)", "x"),
    ("T.amin({0}, 0)", "x"),
    ("{0}.argmax()", "x"),
    ("{0}.argmax(dim=1)", "x"),
    ("T.argmin({0}, 0)", "x"),
    ("{0}.argsort(dim=1)", "x"),
    ("T.sort({0}, 1).values", "x"),
    ("T.sort({0}, descending=True)[0]", "x"),
    ("T.topk({0}, 2).values", "x"),
    ("{0}.topk(1, dim=0)[0]", "x"),
    ("T.kthvalue({0}, 2, 1).values", "x"),
    ("T.median({0})", "x"),
    ("{0}.median(1).values", "x"),
    ("T.quantile({0}, 0.3)", "x"),
    ("T.aminmax({0})[0]", "x"),
    ("T.count_nonzero({0} > 0)", "x"),
    ("({0} > 0).all()", "x"),
    ("({0} > 0).any(1)", "x"),
    ("T.nansum({0})", "x"),
    ("T.nanmean({0})", "x"),
    ("T.trace({0})", "mat"),
    ("T.diag({0})", "mat"),
    ("T.diag({0})", "vec"),
    ("T.diagonal({0})", "mat"),
    ("T.diag_embed({0})", "x"),
    ("T.tril({0})", "mat"),
    ("T.triu({0}, 1)", "mat"),
    ("T.cumsum({0}, 0).flip(0)", "vec"),
    ("T.renorm({0}, 2, 0, 1.0)", "x"),
]

# shapes, views, joins
SHAPES = [
    ("{0}.view(3, 2)", "x"),
    ("{0}.view(-1)", "x"),
    ("{0}.reshape(3, 2)", "x"),
    ("T.reshape({0}, (-1,))", "x"),
    ("{0}.flatten()", "x"),
    ("{0}.flatten(1)", "batch"),
    ("T.flatten({0}, 0, 1)", "batch"),
    ("{0}.unflatten(1, (3, 1))", "x"),
    ("{0}.T", "x"),
    ("{0}.t()", "x"),
    ("{0}.mT", "batch"),
    ("{0}.transpose(0, 1)", "x"),
    ("T.transpose({0}, 1, 2)", "batch"),
    ("{0}.permute(2, 0, 1)", "batch"),
    ("{0}.unsqueeze(0)", "x"),
    ("{0}.unsqueeze(-1)", "x"),
    ("{0}[None]", "x"),
    ("{0}.unsqueeze(1).squeeze()", "x"),
    ("T.squeeze({0}.unsqueeze(1), 1)", "x"),
    ("{0}.expand(4, 2, 3)", "x"),
    ("{0}.expand(2, 3)", "row"),
    ("{0}.expand_as({1})", "row,x"),
    ("T.broadcast_to({0}, (2, 3))", "row"),
    ("T.broadcast_tensors({0}, {1})[1]", "x,row"),
    ("{0}.repeat(2, 1)", "x"),
    ("{0}.repeat_interleave(2, dim=0)", "x"),
    ("T.tile({0}, (2,))", "row"),
    ("{0}.flip(0)", "x"),
    ("T.flip({0}, [0, 1])", "x"),
    ("T.fliplr({0})", "x"),
    ("T.roll({0}, 1, 1)", "x"),
    ("T.rot90({0})", "x"),
    ("{0}.narrow(1, 0, 2)", "x"),
    ("{0}.select(1, 0)", "x"),
    ("{0}.unbind(0)[1]", "x"),
    ("T.unbind({0}, 1)[0]", "x"),
    ("{0}.split(1, dim=1)[0]", "x"),
    ("T.split({0}, [1, 2], dim=1)[1]", "x"),
    ("{0}.chunk(3, 1)[2]", "x"),
    ("T.chunk({0}, 2)[0]", "x"),
    ("{0}.unfold(1, 2, 1)", "x"),
    ("{0}.contiguous()", "x"),
    ("{0}.t().contiguous()", "x"),
    ("{0}.clone()", "x"),
    ("{0}.detach()", "x"),
    ("{0}.detach().requires_grad_()", "x"),
    ("{0}.data", "x"),
    ("T.cat([{0}, {1}], 0)", "x,y"),
    ("T.cat([{0}, {1}], dim=1)", "x,y"),
    ("T.cat(({0}, {0}))", "x"),
    ("T.stack([{0}, {1}])", "x,y"),
    ("T.stack([{0}, {1}], dim=-1)", "x,y"),
    ("T.hstack([{0}, {1}])", "x,y"),
    ("T.vstack([{0}, {1}])", "x,y"),
    ("T.column_stack([{0}, {1}])", "vec,row"),
    ("T.movedim({0}, 0, -1)", "batch"),
    ("T.swapaxes({0}, 0, 1)", "x"),
    ("{0}.view_as({1})", "x,y"),
    ("{0}.reshape_as({1})", "x,y"),
    ("T.atleast_2d({0})", "vec"),
    ("{0}.new_zeros(2)", "x"),
    ("{0}.new_ones((2, 2)) * {0}.sum()", "x"),
    ("{0}.new_tensor([1.0, 2.0])", "x"),
    ("T.zeros_like({0})", "x"),
    ("T.ones_like({0}) * {0}", "x"),
    ("T.full_like({0}, 2.0)", "x"),
    ("T.empty_like({0}).fill_(1.0)", "x"),
    ("T.zeros(2, 3) + {0}", "x"),
    ("T.ones(3) @ {0}", "mat"),
    ("T.eye(3) * {0}", "mat"),
    ("T.arange(6.0).view(2, 3) * {0}", "x"),
    ("T.linspace(0, 1, 3) * {0}", "row"),
    ("T.tensor([1.0, 2.0, 3.0]) * {0}", "row"),
    ("T.tensor(2.0, requires_grad=True) * {0}", "x"),
    ("T.full((2, 3), 0.5) * {0}", "x"),
    ("T.as_tensor(np.ones(3), dtype=T.float32) + {0}", "row"),
    ("T.from_numpy(np.ones((2, 3), dtype=np.float32)) * {0}", "x"),
    ("{0}.numel() * {0}", "x"),
    ("{0}.item() * {1}", "s,x"),
    ("{0}.tolist()", "x"),
    ("{0}.size(1) * {0}", "x"),
    ("{0}.dim() * {0}", "x"),
]

# indexing and scatter/gather
INDEXING = [
    ("{0}[0]", "x"),
    ("{0}[:, 1]", "x"),
    ("{0}[..., -1]", "x"),
    ("{0}[1:]", "x"),
    ("{0}[:, ::2]", "x"),
    ("{0}[[1, 0]]", "x"),
    ("{0}[{0} > 0]", "x"),
    ("{0}[T.tensor([0, 1]), T.tensor([2, 0])]", "x"),
    ("{0}[None, :, 1]", "x"),
    ("{0}[:, 1:, ::2]", "batch"),
    ("{0}[0, 0]", "x"),
    ("{0}[0][1]", "x"),
    ("{0}[T.arange(2), T.tensor([1, 2])]", "x"),
    ("{0}.masked_select({0} > 0)", "x"),
    ("T.masked_select({0}, {1} > 0)", "x,y"),
    ("{0}.take(T.tensor([0, 5]))", "x"),
    ("T.gather({0}, 1, T.tensor([[0, 2], [1, 1]]))", "x"),
    ("{0}.gather(0, T.tensor([[1, 0, 1]]))", "x"),
    ("T.take_along_dim({0}, {0}.argsort(1), 1)", "x"),
    ("{0}.index_select(1, T.tensor([2, 0]))", "x"),
    ("T.index_select({0}, 0, T.tensor([1]))", "x"),
    ("{0}.scatter(1, T.tensor([[0], [2]]), 0.0)", "x"),
    ("{0}.scatter(1, T.tensor([[0, 1], [2, 0]]), {1})", "x,y"),
    ("{0}.scatter_add(0, T.tensor([[1, 0, 1]]), {1}[:1])", "x,y"),
    ("T.zeros(3).scatter_add(0, T.tensor([0, 2, 0]), {0})", "row"),
    ("{0}.index_add(1, T.tensor([0, 0, 2]), {1})", "x,y"),
    ("{0}.index_fill(1, T.tensor([0]), 0.0)", "x"),
    ("{0}.index_put((T.tensor([0, 1]), T.tensor([1, 1])), T.tensor([5.0, 6.0]))", "x"),
    ("T.nonzero({0} > 0)", "x"),
    ("T.argwhere({0} > 0)", "x"),
    ("T.searchsorted(T.tensor([-1.0, 0.0, 1.0]), {0})", "x"),
    ("T.bucketize({0}, T.tensor([-1.0, 0.0, 1.0]))", "x"),
    ("F.one_hot(T.tensor([0, 2, 1]), 3).float() * {0}", "mat"),
]

# in-place, written to a value computed so far (on a leaf that requires grad: PyTorch's error)
INPLACE = [
    ("{0}.add_({1})", "x,y"),
    ("{0}.add_(1)", "x"),
    ("{0}.sub_({1}, alpha=2)", "x,y"),
    ("{0}.mul_(2)", "x"),
    ("{0}.mul_({1})", "x,y"),
    ("{0}.div_(2)", "x"),
    ("{0}.pow_(2)", "x"),
    ("{0}.exp_()", "x"),
    ("{0}.log_()", "pos"),
    ("{0}.sqrt_()", "pos"),
    ("{0}.neg_()", "x"),
    ("{0}.abs_()", "x"),
    ("{0}.clamp_(-1, 1)", "x"),
    ("{0}.clamp_(min=0)", "x"),
    ("{0}.relu_()", "x"),
    ("{0}.sigmoid_()", "x"),
    ("{0}.tanh_()", "x"),
    ("{0}.sin_()", "x"),
    ("{0}.zero_()", "x"),
    ("{0}.fill_(1.5)", "x"),
    ("{0}.copy_({1})", "x,y"),
    ("{0}.masked_fill_({0} < 0, 0.0)", "x"),
    ("{0}.addcmul_({1}, {1})", "x,y"),
    ("{0}.lerp_({1}, 0.5)", "x,y"),
    ("{0}.floor_()", "x"),
    ("{0}.t_()", "x"),
    ("{0}.unsqueeze_(0)", "x"),
    ("{0}.transpose_(0, 1)", "x"),
    ("{0}.requires_grad_()", "x"),
    ("{0}.requires_grad_(False)", "x"),
    ("{0}.detach_()", "x"),
    ("T.relu_({0})", "x"),
    ("T.sigmoid_({0})", "x"),
    ("F.relu({0}, inplace=True)", "x"),
    ("F.leaky_relu_({0}, 0.1)", "x"),
    ("set_item({0}, 0, 1.0)", "x"),
    ("set_item({0}, (slice(None), 1), {1}[:, 0])", "x,y"),
    ("add_item({0}, (slice(None), 1), 1.0)", "x"),
    ("iadd({0}, {1})", "x,y"),
    ("imul({0}, 2)", "x"),
    ("({0} * 1).add_({1})", "x,y"),
    ("({0} + 0).exp_()", "x"),
    ("{0}.clone().mul_(2)", "x"),
    ("{0}[0].mul_(2)", "x"),
    ("{0}.view(-1).add_(1)", "x"),
    ("{0}.scatter_(1, T.tensor([[0], [2]]), 0.5)", "x"),
    ("{0}.index_fill_(1, T.tensor([1]), 0.0)", "x"),
    ("{0}.clamp_min_(0.5)", "x"),
    ("{0}.uniform_()", "x", "random"),
    ("{0}.normal_()", "x", "random"),
]

# nn.functional
FUNCTIONAL = [
    ("F.relu({0})", "x"),
    ("F.relu6({0})", "x"),
    ("F.leaky_relu({0}, 0.1)", "x"),
    ("F.leaky_relu({0})", "x"),
    ("F.elu({0})", "x"),
    ("F.selu({0})", "x"),
    ("F.celu({0}, 0.5)", "x"),
    ("F.gelu({0})", "x"),
    ("F.gelu({0}, approximate='tanh')", "x"),
    ("F.silu({0})", "x"),
    ("F.mish({0})", "x"),
    ("F.softplus({0})", "x"),
    ("F.softplus({0}, beta=2)", "x"),
    ("F.softsign({0})", "x"),
    ("F.hardtanh({0})", "x"),
    ("F.hardswish({0})", "x"),
    ("F.hardsigmoid({0})", "x"),
    ("F.logsigmoid({0})", "x"),
    ("F.tanhshrink({0})", "x"),
    ("F.softshrink({0}, 0.5)", "x"),
    ("F.hardshrink({0}, 0.5)", "x"),
    ("F.threshold({0}, 0.5, 0.0)", "x"),
    ("F.prelu({0}, T.tensor([0.25]))", "x"),
    ("F.rrelu({0}, training=False)", "x"),
    ("F.sigmoid({0})", "x"),
    ("F.tanh({0})", "x"),
    ("F.softmax({0}, dim=1)", "x"),
    ("F.softmax({0}, dim=-1, dtype=T.float64)", "x"),
    ("F.log_softmax({0}, dim=1)", "logits"),
    ("F.softmin({0}, dim=0)", "x"),
    ("F.glu({0})", "batch"),
    ("F.normalize({0}, dim=1)", "x"),
    ("F.normalize({0}, p=1, dim=0)", "x"),
    ("F.dropout({0}, 0.5, training=False)", "x"),
    ("F.dropout({0}, 0.5)", "x", "random"),
    ("seeded(T, lambda: F.dropout({0}, p=0.2, training=True))", "x", "random"),
    ("F.alpha_dropout({0}, 0.5, training=False)", "x"),
    ("F.dropout2d({0}, 0.5, training=False)", "img"),
    ("F.pad({0}, (1, 1))", "x"),
    ("F.pad({0}, (1, 2), value=0.5)", "x"),
    ("F.pad({0}, (1, 1, 1, 1), mode='reflect')", "img"),
    ("F.pad({0}, (1, 1, 1, 1), mode='replicate')", "img"),
    ("F.interpolate({0}, scale_factor=2)", "img"),
    ("F.interpolate({0}, size=(7, 7), mode='bilinear', align_corners=False)", "img"),
    ("F.linear({0}, {1})", "x,mat"),
    ("F.linear({0}, {1}, {1}[0])", "x,mat"),
    ("F.bilinear({0}, {0}, {1}.unsqueeze(0))", "x,mat"),
    ("F.embedding(T.tensor([[0, 2], [1, 0]]), {0})", "mat"),
    ("F.cosine_similarity({0}, {1})", "x,y"),
    ("F.cosine_similarity({0}, {1}, dim=0)", "x,y"),
    ("F.pairwise_distance({0}, {1})", "x,y"),
    ("F.pdist({0})", "mat"),
    ("F.layer_norm({0}, (3,))", "x"),
    ("F.layer_norm({0}, (3,), {1}, {1})", "x,row"),
    ("F.group_norm({0}, 1)", "img"),
    ("F.batch_norm({0}, None, None, training=True)", "x"),
    ("F.batch_norm({0}, T.zeros(3), T.ones(3))", "x"),
    ("F.instance_norm({0})", "img"),
    ("F.conv1d({0}, {1})", "sig,k1"),
    ("F.conv1d({0}, {1}, padding=1, stride=2)", "sig,k1"),
    ("F.conv2d({0}, {1})", "img,kernel"),
    ("F.conv2d({0}, {1}, padding=1)", "img,kernel"),
    ("F.conv2d({0}, {1}, stride=2, padding='valid')", "img,kernel"),
    ("F.conv2d({0}, {1}, padding='same')", "img,kernel"),
    ("F.conv_transpose2d({0}, {1}.transpose(0, 1))", "img,kernel"),
    ("F.max_pool2d({0}, 2)", "img"),
    ("F.max_pool2d({0}, 3, stride=1, padding=1)", "img"),
    ("F.avg_pool2d({0}, 2)", "img"),
    ("F.max_pool1d({0}, 2)", "sig"),
    ("F.avg_pool1d({0}, 3, stride=2)", "sig"),
    ("F.adaptive_avg_pool2d({0}, 1)", "img"),
    ("F.adaptive_avg_pool2d({0}, (2, 2))", "img"),
    ("F.adaptive_max_pool2d({0}, 1)", "img"),
    ("F.adaptive_avg_pool1d({0}, 4)", "sig"),
    ("F.unfold({0}, 2)", "img"),
    ("F.pixel_shuffle({0}, 1)", "img"),
    ("F.scaled_dot_product_attention({0}, {0}, {1})", "batch,batch"),
]

LOSSES = [
    ("F.mse_loss({0}, {1})", "x,y"),
    ("F.mse_loss({0}, {1}, reduction='sum')", "x,y"),
    ("F.l1_loss({0}, {1})", "x,y"),
    ("F.l1_loss({0}, {1}, reduction='none')", "x,y"),
    ("F.smooth_l1_loss({0}, {1})", "x,y"),
    ("F.smooth_l1_loss({0}, {1}, beta=0.5)", "x,y"),
    ("F.huber_loss({0}, {1}, delta=0.5)", "x,y"),
    ("F.cross_entropy({0}, T.tensor([0, 4, 2, 1]))", "logits"),
    ("F.cross_entropy({0}, T.tensor([0, 4, 2, 1]), label_smoothing=0.1)", "logits"),
    ("F.cross_entropy({0}, {0}.detach().softmax(1))", "logits"),
    ("F.cross_entropy({0}, T.tensor([0, 4, 2, 1]), reduction='none')", "logits"),
    ("F.nll_loss(F.log_softmax({0}, 1), T.tensor([1, 0, 3, 2]))", "logits"),
    ("F.nll_loss({0}, T.tensor([1, 0, 3, 2]), ignore_index=0)", "logits"),
    ("F.binary_cross_entropy({0}, {1})", "prob,prob"),
    ("F.binary_cross_entropy(T.sigmoid({0}), (({1}) > 0).float())", "x,y"),
    ("F.binary_cross_entropy_with_logits({0}, {1})", "x,prob"),
    ("F.binary_cross_entropy_with_logits({0}, {1}, pos_weight=T.ones(3) * 2)", "x,prob"),
    ("F.kl_div(F.log_softmax({0}, 1), F.softmax({1}, 1), reduction='batchmean')", "x,y"),
    ("F.poisson_nll_loss({0}, {1})", "x,pos"),
    ("F.gaussian_nll_loss({0}, {1}, T.ones(2, 3))", "x,y"),
    ("F.hinge_embedding_loss({0}, {1}.sign())", "x,y"),
    ("F.margin_ranking_loss({0}, {1}, T.ones(2, 3))", "x,y"),
    ("F.soft_margin_loss({0}, {1}.detach().sign())", "x,y"),
    ("F.multilabel_soft_margin_loss({0}, ({1} > 0).float())", "x,y"),
    ("F.cosine_embedding_loss({0}, {1}, T.tensor([1, -1]))", "x,y"),
    ("F.triplet_margin_loss({0}, {1}, {1}.flip(0))", "x,y"),
    ("F.multi_margin_loss({0}, T.tensor([0, 4, 2, 1]))", "logits"),
    ("F.multilabel_margin_loss({0}, T.tensor([[0, 2, -1], [1, -1, 0]]))", "x"),
]

# nn layers, small, with fixed parameters
LAYERS = [
    ("fixed(T.nn.Linear(3, 4))({0})", "x"),
    ("fixed(T.nn.Linear(3, 1, bias=False))({0})", "x"),
    ("fixed(T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(), T.nn.Linear(4, 2)))({0})", "x"),
    ("fixed(T.nn.Conv2d(2, 3, 3))({0})", "img"),
    ("fixed(T.nn.Conv2d(2, 2, 3, padding=1, bias=False))({0})", "img"),
    ("fixed(T.nn.Conv1d(2, 3, 3))({0})", "sig"),
    ("fixed(T.nn.ConvTranspose2d(2, 1, 2, stride=2))({0})", "img"),
    ("fixed(T.nn.BatchNorm1d(3))({0})", "x"),
    ("fixed(T.nn.BatchNorm2d(2))({0})", "img"),
    ("fixed(T.nn.BatchNorm1d(3)).eval()({0})", "x"),
    ("fixed(T.nn.LayerNorm(3))({0})", "x"),
    ("fixed(T.nn.GroupNorm(1, 2))({0})", "img"),
    ("fixed(T.nn.Embedding(5, 3))(T.tensor([1, 4])) * {0}", "x"),
    ("T.nn.ReLU()({0})", "x"),
    ("T.nn.Tanh()({0})", "x"),
    ("T.nn.Sigmoid()({0})", "x"),
    ("T.nn.Softmax(dim=1)({0})", "x"),
    ("T.nn.LogSoftmax(dim=1)({0})", "x"),
    ("T.nn.GELU()({0})", "x"),
    ("T.nn.LeakyReLU(0.2)({0})", "x"),
    ("T.nn.ELU()({0})", "x"),
    ("T.nn.SiLU()({0})", "x"),
    ("T.nn.Softplus()({0})", "x"),
    ("fixed(T.nn.PReLU())({0})", "x"),
    ("T.nn.Dropout(0.5).eval()({0})", "x"),
    ("T.nn.Dropout(0.5)({0})", "x", "random"),
    ("T.nn.Flatten()({0})", "batch"),
    ("T.nn.Unflatten(1, (3, 1))({0})", "x"),
    ("T.nn.Identity()({0})", "x"),
    ("T.nn.MaxPool2d(2)({0})", "img"),
    ("T.nn.AvgPool2d(2)({0})", "img"),
    ("T.nn.AdaptiveAvgPool2d((1, 1))({0})", "img"),
    ("T.nn.MSELoss()({0}, {1})", "x,y"),
    ("T.nn.L1Loss()({0}, {1})", "x,y"),
    ("T.nn.CrossEntropyLoss()({0}, T.tensor([0, 4, 2, 1]))", "logits"),
    ("T.nn.NLLLoss()({0}, T.tensor([0, 4, 2, 1]))", "logits"),
    ("T.nn.BCELoss()({0}, {1})", "prob,prob"),
    ("T.nn.BCEWithLogitsLoss()({0}, {1})", "x,prob"),
    ("T.nn.SmoothL1Loss()({0}, {1})", "x,y"),
    ("T.nn.HuberLoss()({0}, {1})", "x,y"),
    ("T.nn.KLDivLoss(reduction='batchmean')(F.log_softmax({0}, 1), F.softmax({1}, 1))", "x,y"),
    ("fixed(T.nn.RNN(3, 4))({0})[0]", "seq"),
    ("fixed(T.nn.RNN(3, 2, batch_first=True))({0})[1]", "seq"),
    ("fixed(T.nn.LSTM(3, 4))({0})[0]", "seq"),
    ("fixed(T.nn.LSTM(3, 2))({0})[1][1]", "seq"),
    ("fixed(T.nn.GRU(3, 4))({0})[0]", "seq"),
    ("fixed(T.nn.RNNCell(3, 4))({0})", "x"),
    ("fixed(T.nn.LSTMCell(3, 4))({0})[0]", "x"),
    ("fixed(T.nn.GRUCell(3, 4))({0})", "x"),
    ("fixed(T.nn.MultiheadAttention(4, 2))({0}, {0}, {0})[0]", "batch"),
    ("fixed(T.nn.Bilinear(3, 3, 2))({0}, {1})", "x,y"),
    ("T.nn.CosineSimilarity()({0}, {1})", "x,y"),
    ("T.nn.PairwiseDistance()({0}, {1})", "x,y"),
    ("fixed(T.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0))({0})", "batch"),
]

# autograd as the tutorials use it
AUTOGRAD = [
    ("T.autograd.grad(({0} ** 3).sum(), {0}, create_graph=True)[0]", "x"),
    ("T.autograd.grad({0}.exp().sum(), {0}, retain_graph=True)[0]", "x"),
    ("T.autograd.grad(({0} * {1}).sum(), [{0}, {1}], allow_unused=True)[1]", "x,y"),
    ("T.autograd.grad(({0} * {1}).sum(), {0}, create_graph=True)[0] * {1}", "x,y"),
    ("T.autograd.grad({0}.sin(), {0}, T.ones_like({0}), create_graph=True)[0]", "x"),
    ("T.autograd.grad({0}.tanh().sum(), {0}, create_graph=True)[0].sum()", "x"),
    ("backward_then_grad({0}, ({0} ** 2).sum())", "x"),
    ("backward_then_grad({0}, ({0} * {1}).mean())", "x,y"),
    ("with_hook({0} * 2, lambda g: g * 3)", "x"),
    ("with_hook({0}.exp(), lambda g: None)", "x"),
    ("with_hook({0}, lambda g: g.clamp(-1, 1))", "x"),
    ("retained({0} * {1})", "x,y"),
    ("retained({0}.tanh())", "x"),
    ("no_grad_do(T, lambda: {0} * 2)", "x"),
    ("no_grad_do(T, lambda: {0} * 2) + {0}", "x"),
    ("enable_grad_inside_no_grad(T, lambda: {0}.exp())", "x"),
    ("grad_mode_off(T, lambda: {0}.sin())", "x"),
    ("inference(T, lambda: {0} + 1)", "x"),
    ("T.is_grad_enabled()", "x"),
    ("{0}.requires_grad", "x"),
    ("{0}.is_leaf", "x"),
    ("{0}.grad_fn is None", "x"),
    ("{0}.detach().numpy().sum()", "x"),
    ("custom(T, 'Exp')({0})", "x"),
    ("custom(T, 'Square')({0})", "x"),
    ("custom(T, 'MulConstant')({0}, 3.0)", "x"),
    ("custom(T, 'Sinh')({0})[0]", "x"),
    ("T.autograd.grad(custom(T, 'Sinh')({0})[0].sum(), {0}, create_graph=True)[0]", "x"),
    ("T.autograd.functional.jacobian(lambda v: v.exp(), {0})", "vec"),
    ("T.autograd.functional.hessian(lambda v: (v ** 3).sum(), {0})", "vec"),
    ("T.autograd.functional.vjp(lambda v: v.sin(), {0}, T.ones(3))[1]", "vec"),
    ("T.utils.checkpoint.checkpoint(lambda v: v.exp() * 2, {0}, use_reentrant=False)", "x"),
    ("T.autograd.functional.hvp(lambda v: (v ** 3).sum(), {0}, T.ones(3))[1]", "vec"),
    ("T.func.grad(lambda v: (v.sin() * v).sum())({0})", "x"),
    ("T.func.grad_and_value(lambda v: (v ** 2).sum())({0})[0]", "x"),
    ("T.func.jacrev(lambda v: v.exp())({0})", "vec"),
    ("T.func.jacfwd(lambda v: v.sin())({0})", "vec"),
    ("T.func.hessian(lambda v: (v ** 3).sum())({0})", "vec"),
    ("T.func.vmap(lambda v: v * v.sum())({0})", "x"),
    ("T.func.vmap(T.func.grad(lambda v: (v ** 2).sum()))({0})", "x"),
    ("T.func.jvp(lambda v: v.exp(), ({0},), (T.ones_like({0}),))[1]", "x"),
    ("T.func.vjp(lambda v: v.sin(), {0})[1](T.ones_like({0}))[0]", "x"),
]

LINALG = [
    ("T.linalg.inv({0})", "spd"),
    ("T.inverse({0})", "spd"),
    ("T.linalg.det({0})", "mat"),
    ("T.det({0})", "spd"),
    ("T.logdet({0})", "spd"),
    ("T.linalg.slogdet({0})[1]", "spd"),
    ("T.linalg.solve({0}, {1})", "spd,mat"),
    ("T.linalg.solve({0}, {1})", "spd,vec"),
    ("T.linalg.cholesky({0})", "spd"),
    ("T.cholesky_solve({1}, T.linalg.cholesky({0}))", "spd,mat"),
    ("T.linalg.qr({0})[1]", "mat"),
    ("T.linalg.eigh({0})[0]", "spd"),
    ("T.linalg.eigvalsh({0})", "spd"),
    ("T.linalg.svdvals({0})", "mat"),
    ("T.linalg.norm({0})", "x"),
    ("T.linalg.norm({0}, dim=1)", "x"),
    ("T.linalg.vector_norm({0}, ord=3)", "x"),
    ("T.linalg.matrix_norm({0})", "mat"),
    ("T.linalg.matrix_norm({0}, ord='nuc')", "spd"),
    ("T.linalg.pinv({0})", "m34"),
    ("T.linalg.matrix_power({0}, 3)", "mat"),
    ("T.linalg.matrix_exp({0} * 0.3)", "mat"),
    ("T.matrix_exp({0} * 0.3)", "mat"),
    ("T.linalg.multi_dot([{0}, {1}, {0}])", "mat,mat"),
    ("T.linalg.solve_triangular(T.tril({0}), {1}, upper=False)", "spd,mat"),
    ("T.linalg.vecdot({0}, {1})", "x,y"),
    ("T.linalg.lstsq({0}, {1}).solution", "spd,mat"),
    ("T.linalg.lu_factor({0})[0]", "spd"),
    ("T.linalg.eigvals({0}).real", "spd"),
    ("T.linalg.cond({0})", "spd"),
    ("T.linalg.matrix_rank({0})", "mat"),
]

RANDOM = [
    ("seeded(T, lambda: T.randn(2, 3)) * {0}", "x", "random"),
    ("seeded(T, lambda: T.rand(3)) + {0}", "row", "random"),
    ("T.randn(2, 3, generator=T.Generator().manual_seed(0)) * {0}", "x", "random"),
    ("T.rand_like({0}) * {0}", "x", "random"),
    ("T.randn_like({0}) + {0}", "x", "random"),
    ("T.randint(0, 5, (2, 3)) * {0}", "x", "random"),
    ("T.randperm(3)", "x", "random"),
    ("T.multinomial({0}.softmax(1), 2)", "x", "random"),
    ("T.bernoulli({0})", "prob", "random"),
    ("T.normal({0}, 1.0)", "x", "random"),
    ("T.empty(2, 3).normal_(0, 1) * {0}", "x", "random"),
    ("T.empty(2, 3).uniform_(-1, 1) + {0}", "x", "random"),
]

CALLS = MATH + METHODS + BINARY + REDUCTIONS + SHAPES + INDEXING + INPLACE
CALLS += FUNCTIONAL + LOSSES + LAYERS + AUTOGRAD + LINALG + RANDOM
