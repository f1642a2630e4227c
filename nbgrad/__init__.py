"""nbgrad: PyTorch's autograd on NumPy, made to be looked at.

``import nbgrad as torch`` runs the autograd parts of PyTorch code unchanged.
"""

from nbgrad import autograd, dtypes
from nbgrad import float_warnings as _float_warnings
from nbgrad.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from nbgrad.autograd.tensor import Size, Tensor
from nbgrad.devices import device, get_default_device, set_default_device
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
from nbgrad.ops import public as _public
from nbgrad.ops.creation import (
    arange,
    as_tensor,
    default_generator,
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
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from nbgrad.ops.functions import finite_difference as _finite_difference

# nbgrad.exp, nbgrad.matmul, ...: each declared public beside its code (see nbgrad/ops/public.py);
# importing ``methods`` above imported them all.
globals().update(_public.exports())
methods.install()

creation.install()

from nbgrad import legacy as _legacy  # noqa: E402
from nbgrad import random  # noqa: E402
from nbgrad.random import (  # noqa: E402
    Generator,
    fork_rng,
    get_rng_state,
    initial_seed,
    set_rng_state,
)

_legacy.install()
globals().update(_legacy.LEGACY_TYPES)  # nbgrad.FloatTensor, ...
autograd.Variable = _legacy.Variable

# PyTorch computes log(0) = -inf or 0/0 = nan silently; NumPy would warn from inside nbgrad.
# Only NumPy's floating-point notices: any other warning from nbgrad's code is a bug (the test
# suite, which repeats this filter in pyproject.toml, turns those into errors). The engine keeps
# the filter in front of any the user sets later (see float_warnings).
_float_warnings.put_first()

__version__ = "0.1.0"


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):  # noqa: A002
    return input.numel()


def is_floating_point(input):  # noqa: A002
    return input.is_floating_point()


# --- recording (nbgrad.trace) and the %%autograd magic (nbgrad.magic) ---------------------------


def __getattr__(name):
    # The recorder (nbgrad.trace: 13 modules) is imported when first used, so that a program
    # that only uses the engine does not pay for it (see benchmarks/README.md, import time).
    if name in ("record", "last_trace"):
        from nbgrad.trace import api

        return getattr(api, name)
    raise AttributeError(f"module 'nbgrad' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), "record", "last_trace"})


def diff(input, *args, **kwargs):  # noqa: A002
    """``torch.diff`` on a tensor (nbgrad/ops/functions/finite_difference.py); on two Traces,
    ``nbgrad.diff(trace_a, trace_b, labels=None, rtol=None, atol=None)``: what changed between
    two recordings, as one graph (nbgrad/trace/diff.py)."""
    if isinstance(input, Tensor):
        return _finite_difference.diff(input, *args, **kwargs)
    from nbgrad.trace.diff import diff as traces_diff

    return traces_diff(input, *args, **kwargs)


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
from nbgrad import (  # noqa: E402
    accelerator,
    backends,
    cuda,
    datasets,
    distributions,
    func,
    linalg,
    nn,
    optim,
    profiler,
    special,
    utils,
)
from nbgrad.serialization import load, save  # noqa: E402
