"""``torch.grid_sampler`` and its 2-d and 3-d ops (``F.grid_sample`` calls them): ATen's argument
checks and messages, then one table entry (``nbgrad/ops/grid_sample_kernels.py``)."""

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.grid_sample_kernels import BICUBIC
from nbgrad.ops.public import public


def _sizes(tensor):
    return str(list(tensor.shape))


def _check_common(input, grid):  # noqa: A002
    for name, value in (("input", input), ("grid", grid)):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"grid_sampler(): argument '{name}' (position {1 if name == 'input' else 2}) "
                f"must be Tensor, not {type(value).__name__}"
            )
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {_sizes(input)} and grid with sizes {_sizes(grid)}"
        )
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, "
            f"but got grid with sizes {_sizes(grid)}"
        )
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input "
                f"has sizes {_sizes(input)} with dimension {i} being empty"
            )


def _run(dims, input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    _check_common(input, grid)
    if input.dim() != dims + 2 or grid.dim() != dims + 2:
        raise RuntimeError(
            f"grid_sampler(): expected {dims + 2}D input and grid with same number of "
            f"dimensions, but got input with sizes {_sizes(input)} and grid with sizes "
            f"{_sizes(grid)}"
        )
    if dims == 3 and interpolation_mode == BICUBIC:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if grid._dtype is not input._dtype:
        raise RuntimeError(
            f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[input._dtype]} but found "
            f"{dtypes.SCALAR_TYPE_NAMES[grid._dtype]}"
        )
    if not input.is_floating_point():
        kernel = "grid_sampler_2d_cpu_kernel_impl" if dims == 2 else "grid_sampler3d_cpu"
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[input._dtype]}'"
        )
    attrs = (int(interpolation_mode), int(padding_mode), bool(align_corners))
    return run_op(OPS[f"grid_sampler_{dims}d"], (input, grid), attrs)


@public(function=True)
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    return _run(2, input, grid, interpolation_mode, padding_mode, align_corners)


@public(function=True)
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    return _run(3, input, grid, interpolation_mode, padding_mode, align_corners)


@public(function=True)
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    """The 2-d op for a 4-d input, else the 3-d one (which then names what it expected)."""
    _check_common(input, grid)
    dims = 2 if input.dim() == 4 else 3
    return _run(dims, input, grid, interpolation_mode, padding_mode, align_corners)
