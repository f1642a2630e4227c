"""F.grid_sample's kernels: ATen's grid_sampler_2d / grid_sampler_3d, their backward, and the
backward's own backward, for NumPy arrays (``ARRAY_FUNCTIONS``) and for differentiable Tensors
(``tensor_namespace()``).

Sampling reads the input at points given by the grid in [-1, 1] (x along the last input dim, y
the one before, z the one before that). Each point is a weighted sum of input elements, its
*taps*: 2 per dim for bilinear, 4 for bicubic, 1 for nearest, combined over the dims. So

    out[n, c, p]   = sum_k W_k[n, p] * input[n, c, index_k[n, p]]

and everything else is a variant of that sum. With W_k^d the derivative of a tap's weight with
respect to the grid's coordinate d, and W_k^de the second derivative:

    grad_input     = sum_k W_k * grad_output scattered back to index_k
    grad_grid[d]   = sum_c grad_output * (sum_k W_k^d input[index_k])

and, for the backward's own backward with incoming gradients gg_input and gg_grid:

    d grad_output  = sample(gg_input) + sum_d gg_grid[d] * (sum_k W_k^d input[index_k])
    d input        = sum_k (sum_d gg_grid[d] W_k^d) * grad_output scattered back to index_k
    d grid[d]      = sum_c grad_output * (sum_k W_k^d gg_input[index_k]
                                          + sum_e gg_grid[e] sum_k W_k^de input[index_k])

Which input elements a point reads (index_k), and whether they lie inside the input, depend on
the grid only through floor and rounding: constants. A weight is a polynomial in the fractional
part t of the point's coordinate, and t is linear in the grid value (padding by border or
reflection moves the coordinate by a constant and flips or stops it): ``t = slope * g + shift``.
So the weights are written once, for arrays and Tensors alike, and the Tensor versions are
differentiable in the grid to any order.
"""

import itertools

import numpy as np

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
CUBIC_A = -0.75  # the bicubic convolution's A, as ATen's


# --- where a point falls, along one dim -----------------------------------------------------------


def _unnormalize(g, size, align_corners):
    """The grid value in [-1, 1] as a coordinate in [0, size - 1] (align_corners: -1 and 1 are
    the corner elements' centres) or [-0.5, size - 0.5] (their outer edges); and its slope."""
    if align_corners:
        return (g + 1) / 2 * (size - 1), (size - 1) / 2
    return ((g + 1) * size - 1) / 2, size / 2


def _clip(coord, size):
    """Border padding: the coordinate held inside [0, size - 1]; slope 0 where it was held."""
    inside = (coord > 0) & (coord < size - 1)
    return np.clip(coord, 0, size - 1), inside.astype(coord.dtype)


def _reflect(coord, twice_low, twice_high):
    """The coordinate reflected at the bounds twice_low / 2 and twice_high / 2 until it falls
    between them; the slope is +1 or -1 with the number of reflections."""
    if twice_low == twice_high:
        return np.zeros_like(coord), np.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    shifted = coord - low
    sign = np.where(shifted < 0, -1.0, 1.0)
    shifted = np.abs(shifted)
    extra = np.fmod(shifted, span)
    flips = np.floor(shifted / span)
    even = np.fmod(flips, 2) == 0
    return np.where(even, extra + low, span - extra + low), np.where(even, sign, -sign)


def _padded(coord, size, padding_mode, align_corners):
    """The coordinate after padding, and its slope with respect to the coordinate before."""
    if padding_mode == BORDER:
        return _clip(coord, size)
    if padding_mode == REFLECTION:
        if align_corners:
            reflected, sign = _reflect(coord, 0, 2 * (size - 1))
        else:
            reflected, sign = _reflect(coord, -1, 2 * size - 1)
        clipped, inside = _clip(reflected, size)
        return clipped, sign * inside
    return coord, np.ones_like(coord)


def _cubic_weights():
    """The four bicubic weights of the taps at floor - 1 ... floor + 2, as polynomials in t
    (each a list of coefficients, constant first), and their first and second derivatives."""
    a = CUBIC_A
    near = [1.0, 0.0, -(a + 3), a + 2]  # for |x| <= 1: (a + 2)|x|^3 - (a + 3)|x|^2 + 1
    far = [-4 * a, 8 * a, -5 * a, a]  # for 1 < |x| < 2: a|x|^3 - 5a|x|^2 + 8a|x| - 4a
    # The taps sit at distances 1 + t, t, 1 - t, 2 - t from the point.
    return [
        _shifted(far, 1.0, 1.0),
        _shifted(near, 0.0, 1.0),
        _shifted(near, 1.0, -1.0),
        _shifted(far, 2.0, -1.0),
    ]


def _shifted(poly, offset, scale):
    """The coefficients in t of poly(offset + scale * t)."""
    out = [0.0] * len(poly)
    for power, coefficient in enumerate(poly):
        # (offset + scale t)^power, expanded
        for j in range(power + 1):
            out[j] += coefficient * _binomial(power, j) * offset ** (power - j) * scale**j
    return out


def _binomial(n, k):
    return int(np.prod(range(n - k + 1, n + 1))) // int(np.prod(range(1, k + 1)))


def _derivative(poly):
    return [power * c for power, c in enumerate(poly)][1:] or [0.0]


class AxisTaps:
    """The taps of every point along one dim: their indices (clamped inside the input), whether
    they lie inside it, and their weights as polynomials in t = slope * g + shift."""

    def __init__(self, g, size, mode, padding_mode, align_corners):
        coord, scale = _unnormalize(g, size, align_corners)
        finite = np.isfinite(coord)
        coord = np.where(finite, coord, -2.0)  # a point at nan or inf reads nothing
        if mode == BICUBIC:  # padding moves each tap, not the point
            base = np.floor(coord)
            self.slope = np.full_like(coord, scale)
            self.shift = coord - base - scale * np.where(finite, g, 0)
            positions = [base + k for k in (-1, 0, 1, 2)]
            if padding_mode != ZEROS:
                positions = [_padded(p, size, padding_mode, align_corners)[0] for p in positions]
            self.polys = _cubic_weights()
        else:
            padded, slope = _padded(coord, size, padding_mode, align_corners)
            if mode == NEAREST:
                positions, self.polys = [np.rint(padded)], [[1.0]]
                base = padded
            else:
                base = np.floor(padded)
                positions, self.polys = [base, base + 1], [[1.0, -1.0], [0.0, 1.0]]
            self.slope = slope * scale
            # t = padded - base, with padded = slope * (scale * g + offset) + const
            self.shift = padded - base - self.slope * np.where(finite, g, 0)
        self.valid = [finite & (p >= 0) & (p <= size - 1) for p in positions]
        self.index = [np.where(v, p, 0).astype(np.int64) for p, v in zip(positions, self.valid)]


def _poly(coefficients, t):
    """The polynomial at t, by Horner's rule: only + and *, for arrays and Tensors alike."""
    out = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = out * t + c
    return out


class Taps:
    """The taps of every point, over all dims: flat indices into the input's spatial elements,
    and, for a given grid (array or Tensor), their weights and derivatives."""

    def __init__(self, grid, input_shape, mode, padding_mode, align_corners):
        grid = np.asarray(grid)
        sizes = input_shape[2:]
        dims = len(sizes)
        points = grid.shape[:-1]
        self.lead = (grid.shape[0], int(np.prod(points[1:], dtype=np.int64)))
        # axis d of the grid's last dim reads input dim -1 - d
        self.axes = [
            AxisTaps(
                grid[..., d].reshape(self.lead), sizes[-1 - d], mode, padding_mode, align_corners
            )
            for d in range(dims)
        ]
        strides = [int(np.prod(sizes[len(sizes) - d :], dtype=np.int64)) for d in range(dims)]
        self.combos = list(itertools.product(*[range(len(a.polys)) for a in self.axes]))
        self.index, self.valid = [], []
        for combo in self.combos:
            flat = sum(a.index[k] * s for a, k, s in zip(self.axes, combo, strides))
            valid = np.logical_and.reduce([a.valid[k] for a, k in zip(self.axes, combo)])
            self.index.append(flat)
            self.valid.append(valid)

    def weights(self, grid_axes, order=(), constant=np.asarray):
        """Per tap: the weight (order ()), its derivative in grid axis d (order (d,)), or its
        second derivative in d and e (order (d, e)); ``grid_axes[d]`` is the grid's axis d as
        (N, P), an array or a Tensor (then ``constant`` makes Tensors of the arrays here)."""
        out = []
        for combo, valid in zip(self.combos, self.valid):
            weight = constant(valid.astype(np.float64))
            for d, (axis, k) in enumerate(zip(self.axes, combo)):
                poly = axis.polys[k]
                for _ in range(order.count(d)):
                    poly = _derivative(poly)
                t = grid_axes[d] * constant(axis.slope) + constant(axis.shift)
                weight = weight * _poly(poly, t) * constant(axis.slope ** order.count(d))
            out.append(weight)
        return out


# --- the sums, for arrays ---------------------------------------------------------------------


def _flat(x):
    """(N, C, *spatial) as (N, C, L): the spatial elements in a row."""
    return x.reshape(x.shape[0], x.shape[1], int(np.prod(x.shape[2:], dtype=np.int64)))


def _gather(flat_input, index):
    return np.take_along_axis(flat_input, index[:, None, :], axis=2)


def _sample(flat_input, taps, weights):
    """sum_k weights_k * input[index_k], shape (N, C, P)."""
    out = np.zeros((*flat_input.shape[:2], taps.lead[1]), flat_input.dtype)
    for index, weight in zip(taps.index, weights):
        out += _gather(flat_input, index) * weight[:, None, :].astype(flat_input.dtype)
    return out


def _scatter(values, taps, weights, input_shape):
    """sum_k weights_k * values scattered back to index_k, shape input_shape."""
    n, c = values.shape[:2]
    length = int(np.prod(input_shape[2:], dtype=np.int64))
    rows = (np.arange(n)[:, None, None] * c + np.arange(c)[None, :, None]) * length
    out = np.zeros(n * c * length, np.float64)
    for index, weight in zip(taps.index, weights):
        contribution = values * weight[:, None, :]
        out += np.bincount(
            (rows + index[:, None, :]).ravel(), contribution.ravel(), minlength=out.size
        )
    return out.reshape(input_shape).astype(values.dtype)


def _grid_axes(grid, taps):
    return [grid[..., d].reshape(taps.lead) for d in range(grid.shape[-1])]


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    taps = Taps(grid, input.shape, interpolation_mode, padding_mode, align_corners)
    out = _sample(_flat(input), taps, taps.weights(_grid_axes(grid, taps)))
    return out.reshape(*input.shape[:2], *grid.shape[1:-1])


def grid_sampler_backward(
    grad_output,
    input,
    grid,
    interpolation_mode,
    padding_mode,
    align_corners,
    output_mask,  # noqa: A002
):
    """(grad_input, grad_grid); an output the mask does not ask for is zeros."""
    taps = Taps(grid, input.shape, interpolation_mode, padding_mode, align_corners)
    axes = _grid_axes(grid, taps)
    grad = _flat(grad_output)
    grad_input = np.zeros_like(input)
    if output_mask[0]:
        grad_input = _scatter(grad, taps, taps.weights(axes), input.shape)
    grad_grid = np.zeros_like(grid)
    if output_mask[1] and interpolation_mode != NEAREST:
        flat_input = _flat(input)
        for d in range(grid.shape[-1]):
            slope = _sample(flat_input, taps, taps.weights(axes, (d,)))
            grad_grid[..., d] = (grad * slope).sum(axis=1).reshape(grid.shape[:-1])
    return grad_input, grad_grid


def grid_sampler_double_backward(
    grad_grad_input,
    grad_grad_grid,
    grad_output,
    input,
    grid,  # noqa: A002
    interpolation_mode,
    padding_mode,
    align_corners,
):
    """(d grad_output, d input, d grid) of <grad_grad_input, grad_input> +
    <grad_grad_grid, grad_grid>: see the module's docstring."""
    taps = Taps(grid, input.shape, interpolation_mode, padding_mode, align_corners)
    axes = _grid_axes(grid, taps)
    dims = grid.shape[-1]
    grad, flat_input = _flat(grad_output), _flat(input)
    gg_input = _flat(grad_grad_input)
    gg_grid = [grad_grad_grid[..., d].reshape(taps.lead) for d in range(dims)]
    d_grad_output = _sample(gg_input, taps, taps.weights(axes))
    d_input = np.zeros_like(input)
    d_grid = np.zeros_like(grid)
    if interpolation_mode != NEAREST:
        slopes = [taps.weights(axes, (d,)) for d in range(dims)]
        for d in range(dims):
            d_grad_output += gg_grid[d][:, None, :] * _sample(flat_input, taps, slopes[d])
        along = [
            sum(gg_grid[d] * slopes[d][k] for d in range(dims)) for k in range(len(taps.combos))
        ]
        d_input = _scatter(grad, taps, along, input.shape)
        for d in range(dims):
            total = _sample(gg_input, taps, slopes[d])
            for e in range(dims):
                curvature = _sample(flat_input, taps, taps.weights(axes, (d, e)))
                total += gg_grid[e][:, None, :] * curvature
            d_grid[..., d] = (grad * total).sum(axis=1).reshape(grid.shape[:-1])
    return (
        d_grad_output.reshape(grad_output.shape).astype(grad_output.dtype),
        d_input,
        d_grid,
    )


# --- the formulas' functions ------------------------------------------------------------------
# PyTorch computes both gradients of grid_sampler_2d with one call, grid_sampler_2d_backward,
# which is one node under create_graph (and the backward's backward likewise). nbgrad's table
# runs one formula per input, so the formulas call through ``shared``: the inputs' formulas of
# one node, run one after another on the same gradient and saved values, share one call.


class SharedCall:
    """The last call of ``function``, kept for the formulas of the same node that read another
    of its outputs; dropped once each output that is wanted has been read."""

    def __init__(self, function):
        self.function = function
        self.arguments = None
        self.result = None
        self.unread = 0

    def __call__(self, wanted, *arguments):
        """``wanted``: how many outputs the node's formulas will read from this call."""
        same = (
            self.arguments is not None
            and len(arguments) == len(self.arguments)
            and all(a is b for a, b in zip(arguments, self.arguments))
        )
        if not same:
            self.arguments, self.result = arguments, self.function(*arguments)
            self.unread = wanted
        result = self.result
        self.unread -= 1
        if self.unread <= 0:
            self.arguments = self.result = None
        return result


def wanted(*tensors):
    """How many of a node's inputs get a gradient: arrays (a plain backward) cannot tell, so
    there each formula computes its own."""
    flags = [getattr(t, "requires_grad", None) for t in tensors]
    return 1 if None in flags else max(sum(flags), 1)


def backward_output(which, grad_output, input, grid, mode, padding_mode, align_corners):  # noqa: A002
    mask = (which == 0, which == 1)
    return grid_sampler_backward(grad_output, input, grid, mode, padding_mode, align_corners, mask)[
        which
    ]


def double_backward_output(
    which,
    grads,
    grad_output,
    input,
    grid,
    mode,
    padding_mode,  # noqa: A002
    align_corners,
):
    # (an output of the backward that got no gradient: None here, zeros for the sums)
    gg_input = np.zeros_like(input) if grads[0] is None else grads[0]
    gg_grid = np.zeros_like(grid) if grads[1] is None else grads[1]
    return grid_sampler_double_backward(
        gg_input, gg_grid, grad_output, input, grid, mode, padding_mode, align_corners
    )[which]


ARRAY_FUNCTIONS = {
    "grid_sampler_backward_output": backward_output,
    "grid_sampler_double_backward_output": double_backward_output,
}


# --- Tensor versions (backward with create_graph=True) -----------------------------------------
# The same sums over Tensors, from differentiable operations (gather, scatter_add, products), so
# that the backward's backward can be differentiated again.


def _constant_maker(like):
    import nbgrad as nb

    return lambda array: nb.as_tensor(np.asarray(array, dtype=like.dtype.numpy))


def _tensor_sample(flat_input, taps, weights):
    import nbgrad as nb

    out = None
    for index, weight in zip(taps.index, weights):
        expanded = nb.as_tensor(
            np.broadcast_to(index[:, None, :], (*flat_input.shape[:2], index.shape[1])).copy()
        )
        term = flat_input.gather(2, expanded) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _tensor_scatter(values, taps, weights, input_shape):
    import nbgrad as nb

    n, c = values.shape[:2]
    length = int(np.prod(input_shape[2:], dtype=np.int64))
    out = values.new_zeros((n, c, length))
    for index, weight in zip(taps.index, weights):
        expanded = nb.as_tensor(np.broadcast_to(index[:, None, :], values.shape).copy())
        out = out.scatter_add(2, expanded, values * weight.unsqueeze(1))
    return out.reshape(tuple(input_shape))


def _tensor_flat(x):
    return x.reshape(x.shape[0], x.shape[1], int(np.prod(tuple(x.shape[2:]), dtype=np.int64)))


def grid_sampler_double_backward_tensor(
    grad_grad_input,
    grad_grad_grid,
    grad_output,
    input,
    grid,  # noqa: A002
    interpolation_mode,
    padding_mode,
    align_corners,
):
    """grid_sampler_double_backward over Tensors: the same sums, differentiable in all five."""
    taps = Taps(
        grid.detach().numpy(), tuple(input.shape), interpolation_mode, padding_mode, align_corners
    )
    constant = _constant_maker(grid)
    dims = grid.shape[-1]
    axes = [grid.select(-1, d).reshape(taps.lead) for d in range(dims)]
    grad, flat_input = _tensor_flat(grad_output), _tensor_flat(input)
    gg_input = _tensor_flat(grad_grad_input)
    gg_grid = [grad_grad_grid.select(-1, d).reshape(taps.lead) for d in range(dims)]
    d_grad_output = _tensor_sample(gg_input, taps, taps.weights(axes, (), constant))
    if interpolation_mode == NEAREST:
        return (
            d_grad_output.reshape(tuple(grad_output.shape)),
            input.new_zeros(input.shape),
            grid.new_zeros(grid.shape),
        )
    slopes = [taps.weights(axes, (d,), constant) for d in range(dims)]
    for d in range(dims):
        d_grad_output = d_grad_output + gg_grid[d].unsqueeze(1) * _tensor_sample(
            flat_input, taps, slopes[d]
        )
    along = [sum(gg_grid[d] * slopes[d][k] for d in range(dims)) for k in range(len(taps.combos))]
    d_input = _tensor_scatter(grad, taps, along, tuple(input.shape))
    d_grid = []
    for d in range(dims):
        total = _tensor_sample(gg_input, taps, slopes[d])
        for e in range(dims):
            curvature = _tensor_sample(flat_input, taps, taps.weights(axes, (d, e), constant))
            total = total + gg_grid[e].unsqueeze(1) * curvature
        d_grid.append((grad * total).sum(1).reshape(tuple(grid.shape[:-1])))
    import nbgrad as nb

    return d_grad_output.reshape(tuple(grad_output.shape)), d_input, nb.stack(d_grid, -1)


def _run_backward(grad_output, input, grid, mode, padding_mode, align_corners):  # noqa: A002
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    spec = OPS[f"grid_sampler_{input.dim() - 2}d_backward"]
    return run_op(spec, (grad_output, input, grid), (mode, padding_mode, align_corners))


# One call of the backward op (and of the backward's backward) serves the node's formulas.
_shared_backward = SharedCall(_run_backward)
_shared_double_backward = SharedCall(grid_sampler_double_backward_tensor)


def backward_output_tensor(which, grad_output, input, grid, *options):  # noqa: A002
    outputs = _shared_backward(wanted(input, grid), grad_output, input, grid, *options)
    return outputs[which]


def double_backward_output_tensor(which, grads, grad_output, input, grid, *options):  # noqa: A002
    gg_input = input.new_zeros(input.shape) if grads[0] is None else grads[0]
    gg_grid = grid.new_zeros(grid.shape) if grads[1] is None else grads[1]
    outputs = _shared_double_backward(
        wanted(grad_output, input, grid), gg_input, gg_grid, grad_output, input, grid, *options
    )
    return outputs[which]


def tensor_namespace():
    """The formulas' functions over Tensors: the backward runs its table op (one node for both
    outputs, through SharedCall), the backward's backward the differentiable sums above."""
    return {
        "grid_sampler_backward_output": backward_output_tensor,
        "grid_sampler_double_backward_output": double_backward_output_tensor,
    }
