"""Kernels of the private convolution, grid-sampling and grouped-matmul entry points.

PyTorch keeps a few older or backend-specific ops beside the public ones, each with its own
backward node but the public op's gradients: ``torch._convolution`` (ConvolutionBackward1),
``torch.mkldnn_convolution`` (MkldnnConvolutionBackward0), ``torch._nnpack_spatial_convolution``
(NnpackSpatialConvolutionBackward0) all differentiate through ``convolution_backward``, and
``torch._grid_sampler_2d_cpu_fallback`` samples as ``grid_sampler_2d`` does. So this module only
routes them to the kernels nbgrad already has (``nn_kernels``, ``layer_kernels``,
``layer_kernels_more``, ``grid_sample_kernels``). ``torch._grouped_mm`` is new: a batch of
matrix products whose groups are either a leading batch dim or row (column) ranges cut by
``offs``.
"""

import numpy as np

from nbgrad.ops import grid_sample_kernels

# --- convolution -------------------------------------------------------------------------------


def convolution_entry_name(transposed, spatial_dims):
    """The table entry whose forward computes this convolution (they differ by kernel only)."""
    if transposed:
        return "convolution_transposed3d" if spatial_dims == 3 else "convolution_transposed"
    return "convolution3d" if spatial_dims == 3 else "convolution"


def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """ATen's ``convolution`` on arrays, any of 1 to 3 spatial dims, plain or transposed."""
    from nbgrad.ops.derivatives import OPS

    spec = OPS[convolution_entry_name(transposed, x.ndim - 2)]
    bias_sizes = None if bias is None else bias.shape
    return spec.forward(
        x, weight, bias, stride, padding, dilation, transposed, output_padding, groups, bias_sizes
    )


# --- grid sampling: the CPU fallback ---------------------------------------------------------
# _grid_sampler_2d_cpu_fallback samples as grid_sampler_2d does; only its backward is another op
# (_grid_sampler_2d_cpu_fallback_backward), so that a gradient of its gradient records
# GridSampler2DCpuFallbackBackwardBackward0. On arrays the backward is grid_sampler_2d's.


def _run_fallback_backward(grad_output, input, grid, mode, padding_mode, align_corners):  # noqa: A002
    from nbgrad.autograd.dispatch import run_op
    from nbgrad.ops.derivatives import OPS

    return run_op(
        OPS["_grid_sampler_2d_cpu_fallback_backward"],
        (grad_output, input, grid),
        (mode, padding_mode, align_corners),
    )


_shared_fallback_backward = grid_sample_kernels.SharedCall(_run_fallback_backward)


def fallback_backward_output_tensor(which, grad_output, input, grid, *options):  # noqa: A002
    wanted = grid_sample_kernels.wanted(input, grid)
    return _shared_fallback_backward(wanted, grad_output, input, grid, *options)[which]


# --- grouped matrix products -------------------------------------------------------------------
# torch._grouped_mm(self, mat2, offs): out = self @ mat2 group by group. With 3-d operands the
# groups are the leading dim (a bmm). With a 2-d operand, ``offs`` (int32, one end per group,
# increasing) cuts one of its dims into ranges:
#   2-d self (M, K), 3-d mat2 (G, K, N): rows of self;          out (M, N)
#   3-d self (G, M, K), 2-d mat2 (K, N): columns of mat2;       out (M, N)
#   2-d self (M, K), 2-d mat2 (K, N):    the shared K dim;      out (G, M, N)
# Rows (or columns) after the last offset are left out (zeros in the result).


def _ranges(offs):
    ends = [int(e) for e in np.asarray(offs).reshape(-1)]
    starts = [0, *ends[:-1]]
    return list(zip(starts, ends))


def grouped_mm(self, mat2, offs):
    if self.ndim == 3 and mat2.ndim == 3:
        return np.matmul(self, mat2)
    ranges = _ranges(offs)
    if self.ndim == 2 and mat2.ndim == 3:
        out = np.zeros((self.shape[0], mat2.shape[2]), self.dtype)
        for g, (start, end) in enumerate(ranges):
            out[start:end] = self[start:end] @ mat2[g]
        return out
    if self.ndim == 3 and mat2.ndim == 2:
        out = np.zeros((self.shape[1], mat2.shape[1]), self.dtype)
        for g, (start, end) in enumerate(ranges):
            out[:, start:end] = self[g] @ mat2[:, start:end]
        return out
    out = np.zeros((len(ranges), self.shape[0], mat2.shape[1]), self.dtype)
    for g, (start, end) in enumerate(ranges):
        out[g] = self[:, start:end] @ mat2[start:end]
    return out


def grouped_mm_tensor(self, mat2, offs):
    """``grouped_mm`` in a formula under create_graph: the table op, so that it records
    GroupedMmBackward0."""
    from nbgrad.ops.functions.convs import run_grouped_mm

    return run_grouped_mm(self, mat2, offs)


def tensor_namespace():
    """The Tensor versions of the formulas' functions declared here (the array versions are in
    derivatives.py, beside the entries)."""
    return {
        "grid_sampler_fallback_backward_output": fallback_backward_output_tensor,
        "grouped_mm": grouped_mm_tensor,
    }
