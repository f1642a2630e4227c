"""PyTorch's private convolution entry points, the grid sampler's CPU fallback and grouped matrix
products: ``torch._convolution``, ``torch.mkldnn_convolution``,
``torch._nnpack_spatial_convolution``, ``torch._grid_sampler_2d_cpu_fallback`` and
``torch._grouped_mm``. Each checks its arguments with ATen's messages and runs its own table
entry (kernels in ``nbgrad/ops/convs_kernels.py``), so that the graph shows PyTorch's node for it.
"""

import numpy as np

from nbgrad import dtypes
from nbgrad.autograd.dispatch import run_op
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.derivatives import OPS
from nbgrad.ops.functions.grid_sample import _check_common
from nbgrad.ops.grid_sample_kernels import BICUBIC
from nbgrad.ops.public import public


def _sizes(shape):
    return f"[{', '.join(str(s) for s in shape)}]"


def _legacy(tensor):
    return "torch." + dtypes.LEGACY_TYPE_NAMES[tensor._dtype]


def _scalar_type(tensor):
    return dtypes.SCALAR_TYPE_NAMES[tensor._dtype]


def _check_tensors(name, **tensors):
    for position, (argument, value) in enumerate(tensors.items(), start=1):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                f"{type(value).__name__}"
            )


def _int_list(value, length, name):
    """An int or a list of ints as ``length`` ints: one value stands for every dim (ATen's
    expand_param_if_needed); another count is refused with ATen's message."""
    values = [int(value)] if isinstance(value, int) else [int(v) for v in value]
    if len(values) == 1:
        return tuple(values * length)
    if len(values) != length:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {length} values to match "
            f"the convolution dimensions, but got {name}={_sizes(values)}"
        )
    return tuple(values)


# --- convolutions ------------------------------------------------------------------------------


def _check_geometry(stride, padding, dilation, output_padding=None):
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if output_padding is not None and any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")


def check_output_padding(output_padding, stride, dilation):
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        labels = {2: ("height", "width"), 3: ("depth", "height", "width")}.get(len(stride))
        if labels is None:
            parts = [f"output_padding: {output_padding[0]}", f"stride: {stride[0]}",
                     f"dilation: {dilation[0]}"]  # fmt: skip
        else:
            parts = [
                *(f"output_padding_{w}: {v}" for w, v in zip(labels, output_padding)),
                *(f"stride_{w}: {v}" for w, v in zip(labels, stride)),
                *(f"dilation_{w}: {v}" for w, v in zip(labels, dilation)),
            ]
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            + " ".join(parts)
        )


def check_shapes(input, weight, bias, padding, dilation, transposed, groups):  # noqa: A002
    """ATen's check_shape_forward: input dims, channels, groups, bias size, kernel size."""
    dims = weight.dim()
    if input.dim() != dims:
        raise RuntimeError(
            f"Expected {dims}-dimensional input for {dims}-dimensional weight "
            f"{_sizes(weight.shape)}, but got {input.dim()}-dimensional input of size "
            f"{_sizes(input.shape)} instead"
        )
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{_sizes(weight.shape)}] instead"  # (ATen's doubled brackets)
        )
    channels = input.shape[1]
    if transposed:
        if channels != weight.shape[0]:
            raise RuntimeError(
                f"Given transposed=1, weight of size {_sizes(weight.shape)}, expected "
                f"input{_sizes(input.shape)} to have {weight.shape[0]} channels, but got "
                f"{channels} channels instead"
            )
        out_channels = weight.shape[1] * groups
        if bias is not None and tuple(bias.shape) != (out_channels,):
            raise RuntimeError(
                f"Given transposed=1, weight of size {_sizes(weight.shape)}, expected bias to be "
                f"1-dimensional with {out_channels} elements, but got bias of size "
                f"{_sizes(bias.shape)} instead"
            )
        return
    if channels != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {_sizes(weight.shape)}, expected "
            f"input{_sizes(input.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{channels} channels instead"
        )
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(
            f"Given weight of size {_sizes(weight.shape)}, expected bias to be 1-dimensional "
            f"with {weight.shape[0]} elements, but got bias of size {_sizes(bias.shape)} instead"
        )
    padded = [s + 2 * p for s, p in zip(input.shape[2:], padding)]
    kernel = [d * (k - 1) + 1 for d, k in zip(dilation, weight.shape[2:])]
    if any(k > s for k, s in zip(kernel, padded)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than "
            "actual input size"
        )


def _check_same_dtype(input, weight, bias):  # noqa: A002
    for name, other in (("weight", weight), ("bias", bias)):
        if other is not None and other._dtype is not input._dtype:
            raise RuntimeError(
                f"Input type ({_legacy(input)}) and {name} type ({_legacy(other)}) should be the "
                f"same or input should be a MKLDNN tensor and {name} is a dense tensor"
            )


def _bias_sizes(bias):
    """``_saved_bias_sym_sizes_opt``: None without a bias (these entry points pass none)."""
    return None if bias is None else tuple(bias.shape)


@public(function=True)
def _convolution(
    input,  # noqa: A002
    weight,
    bias,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    benchmark,
    deterministic,
    cudnn_enabled,
    allow_tf32=True,
):
    """ATen's convolution with the flags of the old TorchScript signature (a backend's choice:
    they change nothing here); ConvolutionBackward1."""
    _check_tensors("_convolution", input=input, weight=weight, bias=bias)
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    dims = weight.dim() - 2
    stride = _int_list(stride, dims, "stride")
    padding = _int_list(padding, dims, "padding")
    dilation = _int_list(dilation, dims, "dilation")
    output_padding = _int_list(output_padding, dims, "output_padding")
    _check_geometry(stride, padding, dilation, output_padding)
    if transposed:
        check_output_padding(output_padding, stride, dilation)
    check_shapes(input, weight, bias, padding, dilation, bool(transposed), int(groups))
    _check_same_dtype(input, weight, bias)
    attrs = (
        stride,
        padding,
        dilation,
        bool(transposed),
        output_padding,
        int(groups),
        bool(benchmark),
        bool(deterministic),
        bool(cudnn_enabled),
        bool(allow_tf32),
        _bias_sizes(bias),
    )
    return run_op(OPS["_convolution"], (input, weight, bias), attrs)


def _check_mkldnn_dtype(tensor):
    if tensor._dtype is dtypes.float16:
        # (PyTorch's half path needs AVX512-FP16 or AVX-NE-CONVERT; most CPUs have neither)
        raise RuntimeError(
            "mkldnn_convolution: fp16 path needs the cpu support avx_ne_convert or avx512_fp16"
        )
    if tensor._dtype is dtypes.int8:
        raise NotImplementedError(
            "nbgrad's mkldnn_convolution takes float32 tensors (PyTorch's oneDNN kernel also "
            "takes int8)"
        )
    if tensor._dtype is not dtypes.float32:
        raise RuntimeError(
            "itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor input"
            f"{_scalar_type(tensor)}"
        )


@public(function=True)
def mkldnn_convolution(self, weight, bias, padding, stride, dilation, groups):
    """oneDNN's convolution of float32 tensors (never transposed); MkldnnConvolutionBackward0."""
    _check_tensors("mkldnn_convolution", self=self, weight=weight, bias=bias)
    dims = self.dim() - 2
    padding = _int_list(padding, dims, "padding")
    stride = _int_list(stride, dims, "stride")
    dilation = _int_list(dilation, dims, "dilation")
    _check_geometry(stride, padding, dilation)
    for tensor in (self, weight):
        _check_mkldnn_dtype(tensor)
    check_shapes(self, weight, bias, padding, dilation, False, int(groups))
    attrs = (padding, stride, dilation, int(groups), _bias_sizes(bias), False, (0,) * dims)
    return run_op(OPS["mkldnn_convolution"], (self, weight, bias), attrs)


@public(function=True)
def _nnpack_spatial_convolution(input, weight, bias, padding, stride=1):  # noqa: A002
    """NNPACK's 2-d convolution of float32 (N, C, H, W) tensors; NnpackSpatialConvolutionBackward0.
    (PyTorch raises "NNPACK SpatialConvolution_updateOutput failed" until NNPACK has been
    initialised, by any convolution or torch._nnpack_available(); nbgrad has nothing to set up.)"""
    _check_tensors("_nnpack_spatial_convolution", input=input, weight=weight, bias=bias)
    if input.dim() != 4:
        raise RuntimeError("NNPack convolutionOutput expects 4D input Tensor N,C,H,W")
    if weight.dim() != 4:
        raise RuntimeError("NNPack convolutionOutput expects 4D weight Tensor oC,iC,kH,kW")
    if any(t is not None and t._dtype is not dtypes.float32 for t in (input, weight, bias)):
        raise RuntimeError("Mismatched Tensor types in NNPack convolutionOutput")
    if input.shape[1] != weight.shape[1]:
        raise RuntimeError(
            f"Mismatch between number of input channels in input Tensor ({input.shape[1]}) and "
            f"weight Tensor ({weight.shape[1]}) in NNPack convolutionOutput"
        )
    padding = _int_list(padding, 2, "padding")
    stride = _int_list(stride, 2, "stride")
    _check_geometry(stride, padding, (1, 1))
    check_shapes(input, weight, bias, padding, (1, 1), False, 1)
    attrs = (padding, stride, _bias_sizes(bias), (1, 1), False, (0, 0), 1)
    return run_op(OPS["_nnpack_spatial_convolution"], (input, weight, bias), attrs)


# --- grid sampling: the CPU fallback -------------------------------------------------------------


@public(function=True)
def _grid_sampler_2d_cpu_fallback(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    """grid_sampler_2d's sampling through ATen's scalar CPU code (float32 only);
    GridSampler2DCpuFallbackBackward0."""
    _check_tensors("_grid_sampler_2d_cpu_fallback", input=input, grid=grid)
    _check_common(input, grid)
    if input.dim() != 4 or grid.dim() != 4:
        raise RuntimeError(
            "grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
            f"input with sizes {_sizes(input.shape)} and grid with sizes {_sizes(grid.shape)}"
        )
    for tensor in (input, grid):
        if tensor._dtype is not dtypes.float32:
            raise RuntimeError(f"expected scalar type Float but found {_scalar_type(tensor)}")
    if int(interpolation_mode) not in (0, 1, BICUBIC):
        raise RuntimeError(f"Unsupported interpolation mode: {int(interpolation_mode)}")
    attrs = (int(interpolation_mode), int(padding_mode), bool(align_corners))
    return run_op(OPS["_grid_sampler_2d_cpu_fallback"], (input, grid), attrs)


# --- grouped matrix products -----------------------------------------------------------------


def _check_grouped_operand(tensor, name):
    """ATen's CPU checks of one operand: its dtype, its dims, and a layout the grouped GEMM
    reads (one of the last two dims contiguous, the other's stride a multiple of 16 bytes)."""
    if tensor._dtype not in (dtypes.float32, dtypes.float16):
        raise RuntimeError(
            f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got {_scalar_type(tensor)}"
        )
    if tensor.dim() not in (2, 3):
        raise RuntimeError(f"{name} has to be 2 or 3d")
    rows, columns = tensor.shape[-2:]
    row_stride, column_stride = tensor.stride()[-2:]
    alignment = 16 // tensor.element_size()
    if column_stride == 1 and row_stride >= max(1, columns):
        leading = row_stride
    elif row_stride == 1 and column_stride >= max(1, rows):
        leading = column_stride
    else:
        raise RuntimeError(
            f"Invalid strides/sizes, got {_sizes(tensor.stride())} for strides and "
            f"{_sizes(tensor.shape)} for sizes"
        )
    if leading % alignment:
        raise RuntimeError("strides should be multiple of 16 bytes")


def _offsets(offs):
    return None if offs is None else np.asarray(getattr(offs, "_data", offs)).copy()


def run_grouped_mm(self, mat2, offs):
    """The table entry on checked operands (also what its own formulas call under
    create_graph)."""
    attrs = (
        _offsets(offs),
        tuple(self.shape),
        tuple(self.stride()),
        tuple(mat2.shape),
        tuple(mat2.stride()),
    )
    return run_op(OPS["_grouped_mm"], (self, mat2), attrs)


@public(function=True)
def _grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None):
    """Matrix products group by group: over the leading dim of two 3-d operands, or over ranges
    that ``offs`` (int32 ends) cuts from a 2-d operand's rows, columns or shared dim."""
    _check_tensors("_grouped_mm", self=self, mat2=mat2, offs=offs, bias=bias)
    if out_dtype is not None and dtypes.to_dtype(out_dtype) is not self._dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if mat2._dtype is not self._dtype and mat2._dtype in (dtypes.float32, dtypes.float16):
        raise RuntimeError(
            f"Expected out tensor to have dtype {dtypes.CPP_TYPE_NAMES[mat2._dtype]}, but got "
            f"{dtypes.CPP_TYPE_NAMES[self._dtype]} instead"
        )
    _check_grouped_operand(self, "mat_a")
    _check_grouped_operand(mat2, "mat_b")
    if self.shape[-1] != mat2.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    grouped = self.dim() == 2 or mat2.dim() == 2
    if grouped != (offs is not None):
        raise RuntimeError(
            "Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d"
        )
    if offs is not None:
        if offs.dim() != 1:
            raise RuntimeError("offs has to be 1D")
        if offs._dtype is not dtypes.int32:
            raise RuntimeError("Offsets have to be int32")
        groups = [t.shape[0] for t in (self, mat2) if t.dim() == 3]
        if groups and groups[0] != offs.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
    elif self.shape[0] != mat2.shape[0]:
        raise RuntimeError("batched dimension has to match")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    return run_grouped_mm(self, mat2, offs)
