"""``torch.quantile`` and ``torch.nanquantile`` (functions and methods), composed as ATen composes
them (aten/src/ATen/native/Sorting.cpp), so the graph has its nodes: sort (after flattening, or
moving ``dim`` last), a view to (..., n), gather at the ranks below (and above) each quantile,
``lerp_`` between the two for the linear and midpoint modes, then ``squeeze_`` (or, for a 1-d q,
``unsqueeze_(0).transpose_(0, -1).squeeze_(-1)``, which puts the quantiles first)."""

from nbgrad import dtypes
from nbgrad.autograd import grad_mode
from nbgrad.autograd.tensor import Tensor, wrap_dim
from nbgrad.ops import creation
from nbgrad.ops.functions._common import _check_tensor
from nbgrad.ops.functions.everyday import broadcast_tensors
from nbgrad.ops.public import public

MODES = ("linear", "lower", "higher", "midpoint", "nearest")


@public(function=True, method=True)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


@public(function=True, method=True)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(x, q, dim, keepdim, interpolation, ignore_nan):
    _check_tensor(x)
    name = "quantile"  # nanquantile's messages say quantile() too
    if not isinstance(q, Tensor):
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        q = creation.tensor(float(q), dtype=x.dtype)
    if x.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if q.dim() > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if q.dtype is not x.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if interpolation not in MODES:
        raise RuntimeError(
            f"{name}() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest, but got {interpolation}"
        )
    axis = wrap_dim(0 if dim is None else dim, x.dim())
    if not bool(((q._data >= 0) & (q._data <= 1)).all()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")

    out_shape = _output_shape(x, q, dim, axis, keepdim)
    if dim is None:
        ordered = x.flatten().sort()[0]
    elif axis == x.dim() - 1:
        ordered = x.sort()[0]
    else:
        ordered = x.unsqueeze(-1).transpose(axis, -1).sort()[0]
    if q.dim() == 0:
        out_shape.insert(0, q.numel())
    # one row of n sorted values for each output position
    in_shape = [*out_shape[1:], ordered.size(-1)] if len(out_shape) > 1 else [ordered.size(-1)]
    ordered = ordered.view(in_shape)

    below, above, weights = _ranks(ordered, q, interpolation, ignore_nan)
    values = ordered.gather(-1, below)
    if weights is not None:
        values.lerp_(ordered.gather(-1, above), weights)
    if q.dim() == 0:
        return values.squeeze_(-1)
    return values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)


def _output_shape(x, q, dim, axis, keepdim):
    if dim is not None and x.dim() > 0:
        shape = list(x.shape)
        if keepdim:
            shape[axis] = 1
        else:
            del shape[axis]
    else:
        shape = [1] * x.dim() if keepdim else []
    if q.dim() > 0:
        shape.insert(0, q.numel())
    return shape


def _ranks(ordered, q, interpolation, ignore_nan):
    """(rank below, rank above, interpolation weight) of each quantile, as int64 positions in
    the sorted rows; weights is None for the modes that pick one value. No graph: q and the
    ranks are constants."""
    with grad_mode.no_grad():
        if ignore_nan:
            # ranks among the non-nan values (sorted first); all nan: rank 0, whose value is nan
            counted = ordered.isnan().logical_not().sum(-1, True)
            ranks = q * (counted - 1)
            ranks = ranks.masked_fill(ranks < 0, 0)
        else:
            # a row with a nan: the last rank, which holds the nan (sort puts nan last)
            last = ordered.size(-1) - 1
            scaled, has_nan = broadcast_tensors(q * last, ordered.isnan().any(-1, True))
            ranks = scaled.masked_fill(has_nan, last)
        if interpolation == "lower":
            ranks = ranks.floor()
        elif interpolation == "higher":
            ranks = ranks.ceil()
        elif interpolation == "nearest":
            ranks = ranks.round()
        below = ranks.long()
        if interpolation not in ("linear", "midpoint"):
            return below, None, None
        if interpolation == "midpoint":
            # 0.5 even where the rank is whole: then both gathered values are the same one
            weights = creation.full_like(ranks, 0.5)
        else:
            weights = ranks - below
        return below, ranks.ceil().long(), weights
