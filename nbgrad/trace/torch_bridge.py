"""Reading real PyTorch graphs into nbgrad's engine-neutral records.

PyTorch is an optional extra (``pip install "nbgrad[torch]"``): this module imports it, so it
is imported only when the user's code already uses PyTorch (a ``%%autograd`` cell on torch
tensors, ``nbgrad.show(torch_tensor)``). Supported: torch 2.3 and later (``torch.compiler.
is_compiling``, ``always_call`` module hooks); tested with 2.13.0, the version nbgrad pins. It
reads only PyTorch's public graph API (``grad_fn``, ``next_functions``, ``_saved_*``,
``AccumulateGrad.variable``, node hooks) and ``torch.overrides.TorchFunctionMode``.

What is here is shared by the recorder (nbgrad.trace.torch_recorder) and by
``trace_of_torch_tensor``, which draws the graph behind any tensor after the fact, as torchviz
does, for ``nbgrad.show``:

    trace = trace_of_torch_tensor(loss, names={"loss": loss, "w": w})
"""

import torch

from nbgrad.trace import graph_reader
from nbgrad.trace.values import DEFAULT_MAX_ELEMENTS

SUPPORTED_VERSIONS = "2.3 or later (tested: 2.13.0)"
ENGINE = ("torch", torch.__version__)

# The autograd.Function subclasses' node class (``SquareBackward``): PyTorch's own base class.
_CUSTOM_FUNCTION_NODE = torch.autograd.function.BackwardCFunction


# --- tensors ------------------------------------------------------------------------------------


def array_of(tensor):
    """A tensor's values as a NumPy array (shared memory when PyTorch allows: callers copy)."""
    try:  # a dense CPU tensor of a dtype NumPy has: nearly always, and fast
        # (Gradients need no grad: read without making a detached tensor first.)
        return tensor.detach().numpy() if tensor.requires_grad else tensor.numpy()
    except (TypeError, RuntimeError):
        return _converted_array_of(tensor)


def _converted_array_of(tensor):
    """Other tensors: on another device, bfloat16, quantized, sparse, or a view with the
    negative bit set (``torch._neg_view``), which NumPy reads only once resolved."""
    data = tensor.detach()
    if data.is_neg():
        data = data.resolve_neg()
    if data.device.type != "cpu":
        data = data.cpu()
    if data.dtype in (torch.bfloat16, torch.complex32) or data.is_quantized:
        data = data.float() if not data.is_quantized else data.dequantize()
    if data.layout != torch.strided:
        data = data.to_dense()
    return data.numpy()


def storage_key(tensor):
    """What identifies a tensor's values across the Python objects that show them: a saved
    tensor read back from a node (``_saved_result``) is a new object on the same memory."""
    return (tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)


def is_custom_function_node(node):
    return isinstance(node, _CUSTOM_FUNCTION_NODE)


def node_name(node):
    """The node's class name: ``MulBackward0``, ``AccumulateGrad`` (whose ``name()`` is
    ``torch::autograd::AccumulateGrad``), ``SquareBackward`` for a custom Function."""
    return type(node).__name__


# --- what the shared graph reader needs (nbgrad.trace.graph_reader) ----------------------------


def _plain(value):
    """PyTorch's saved non-tensors as plain Python: a Size is a tuple, a dtype its name."""
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    return value


_top_saved_tensors_hooks = torch._C._autograd._top_saved_tensors_default_hooks

TORCH_VIEW = graph_reader.EngineView(
    ENGINE,
    torch.Tensor,
    array_of,
    storage_key,
    _CUSTOM_FUNCTION_NODE,
    lambda: _top_saved_tensors_hooks(False) is not None,
    _plain,
)


def describe_saved(record, node, tensor_record_for, policy):
    """``graph_reader.describe_saved`` for a PyTorch node."""
    return graph_reader.describe_saved(record, node, tensor_record_for, policy, TORCH_VIEW)


# --- the graph behind a tensor, after the fact ---------------------------------------------------


def trace_of_torch_tensor(tensor, names=None, max_elements=DEFAULT_MAX_ELEMENTS):
    """A Trace of the graph behind a PyTorch tensor (``graph_reader.read_graph``)."""
    # Reading the graph runs torch functions (detach, numpy): no mode of the user's may see them.
    with torch._C.DisableTorchFunction():
        return graph_reader.read_graph(tensor, TORCH_VIEW, names, max_elements)
