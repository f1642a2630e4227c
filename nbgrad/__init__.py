"""nbgrad: PyTorch's autograd on NumPy, made to be looked at.

``import nbgrad as torch`` runs the autograd parts of PyTorch code unchanged.
"""

import warnings

from nbgrad import autograd, dtypes
from nbgrad.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from nbgrad.autograd.tensor import Size, Tensor
from nbgrad.dtypes import (
    bool,  # noqa: A004 - PyTorch's names
    double,
    dtype,
    float,  # noqa: A004
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int,  # noqa: A004
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    set_default_dtype,
    short,
    uint8,
)
from nbgrad.ops import creation, methods, out
from nbgrad.ops.creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from nbgrad.ops.functions import (  # noqa: E402 - PyTorch's in-place module functions
    abs,  # noqa: A004
    abs_,
    add,
    addmm,
    all,  # noqa: A004
    allclose,
    amax,
    amin,
    any,  # noqa: A004
    argmax,
    argmin,
    as_strided,
    bmm,
    cat,
    ceil,
    ceil_,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    clone,
    concat,
    cos,
    cos_,
    detach,
    div,
    dot,
    eq,
    equal,
    exp,
    exp_,
    expand,
    expm1,
    flatten,
    floor,
    floor_,
    floor_divide,
    fmod,
    gather,
    ge,
    gt,
    isclose,
    isfinite,
    isnan,
    le,
    log,
    log1p,
    log_,
    log_softmax,
    logical_and,
    logical_not,
    logical_or,
    lt,
    masked_fill,
    matmul,
    max,  # noqa: A004
    maximum,
    mean,
    min,  # noqa: A004
    minimum,
    mm,
    mul,
    mv,
    narrow,
    ne,
    neg,
    neg_,
    norm,
    permute,
    pow,  # noqa: A004
    reciprocal,
    reciprocal_,
    relu,
    remainder,
    reshape,
    round,  # noqa: A004
    round_,
    rsqrt,
    rsqrt_,
    rsub,
    select,
    sigmoid,
    sigmoid_,
    sign,
    sin,
    sin_,
    softmax,
    sqrt,
    sqrt_,
    square,
    squeeze,
    stack,
    sub,
    sum,  # noqa: A004
    t,
    tan,
    tan_,
    tanh,
    tanh_,
    transpose,
    trunc,
    trunc_,
    unsqueeze,
    where,
)

methods.install()

# The ``out=`` form of the module functions tutorials use it with (torch.matmul(a, b, out=c)).
for _name in (
    "add",
    "sub",
    "mul",
    "div",
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
    "pow",
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "sqrt",
    "abs",
    "neg",
    "clamp",
    "maximum",
    "minimum",
    "sum",
    "mean",
    "cat",
    "stack",
    "where",
    "addmm",
    "square",
    "reciprocal",
):
    globals()[_name] = out.with_out(globals()[_name])
del _name
creation.install()

# PyTorch computes log(0) = -inf or 0/0 = nan silently; NumPy would warn from inside nbgrad.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"nbgrad\.")

__version__ = "0.1.0"

multiply, subtract, divide, negative = mul, sub, div, neg


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):  # noqa: A002
    return input.numel()


def is_floating_point(input):  # noqa: A002
    return input.is_floating_point()


def device(name="cpu"):
    return name


# --- recording (nbgrad.trace) and the %%autograd magic (nbgrad.magic) ---------------------------

from nbgrad.trace.api import last_trace, record  # noqa: E402


def load_ipython_extension(shell):
    """``%load_ext nbgrad`` registers the ``%%autograd`` cell magic and ``%autograd`` line magic."""
    from nbgrad.magic import load_ipython_extension as register_magics

    register_magics(shell)


def show(obj):
    """Show the graph widget for a tensor (its grad_fn and everything below it) or a Trace.

    Tensors are named after the variables that hold them where ``show`` is called.
    """
    import sys

    from nbgrad.widget import show as show_widget

    caller = sys._getframe(1)
    return show_widget(obj, names={**caller.f_globals, **caller.f_locals})


# --- neural networks and optimizers (nbgrad.nn, nbgrad.optim) -----------------------------------
from nbgrad import datasets, linalg, nn, optim, utils  # noqa: E402
from nbgrad.serialization import load, save  # noqa: E402
