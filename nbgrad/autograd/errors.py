"""The error messages a learner can meet, worded as PyTorch words them."""

from nbgrad import dtypes

BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)
NOT_SCALAR = "grad can be implicitly created only for scalar outputs"
PACK_HOOK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook cannot be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook."
)
HOOKS_ALREADY_SET = (
    "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one "
    "pair of hooks is allowed at a time."
)
REGISTER_HOOKS_AFTER_FREE = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values "
    "of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need to "
    "access saved variables after calling backward."
)
ONLY_FLOAT_REQUIRES_GRAD = "only Tensors of floating point and complex dtype can require gradients"
NON_LEAF_REQUIRES_GRAD = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach()."
)
NUMPY_REQUIRES_GRAD = (
    "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
)
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)


def no_grad_fn(index):
    return f"element {index} of tensors does not require grad and does not have a grad_fn"


def unused_input(index):
    return (
        f"The differentiated Tensor at index {index} appears to not have been used in the graph. "
        "Set allow_unused=True if this is the desired behavior."
    )


def type_description(dtype, shape):
    """PyTorch's ``[torch.FloatTensor [2, 3]]`` description of a tensor."""
    return f"[torch.{dtypes.LEGACY_TYPE_NAMES[dtype]} [{', '.join(str(s) for s in shape)}]]"


def _described(array):
    return type_description(dtypes.from_numpy_dtype(array.dtype), array.shape)


def modified_by_inplace(saved, node):
    """The error for a saved tensor that an in-place operation changed after it was saved."""
    if saved.tensor is None:
        from nbgrad.autograd.views import wrapped_by_copy_slices

        # A result saved by an in-place op on a view is the view, whose grad_fn is AsStrided.
        owner = "AsStridedBackward0" if node in wrapped_by_copy_slices else node.name()
    else:
        grad_fn = saved.tensor.grad_fn  # a view's, regenerated if its base was written to
        owner = grad_fn.name() if grad_fn is not None else None
    where = ""
    if owner is not None:
        output_nr = saved.tensor._output_nr if saved.tensor is not None else saved.output_nr
        where = f", which is output {output_nr} of {_forward_name(owner)},"
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {_described(saved.data)}{where} is at version "
        f"{saved.counter.value}; expected version {saved.version} instead. Hint: enable anomaly "
        "detection to find the operation that failed to compute its gradient, with "
        "torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )


def _forward_name(node_name):
    """``MulBackward0`` -> ``Mul``, ``PowBackward1`` -> ``Pow1``, a custom Function's
    ``SinhBackward`` -> ``Sinh``: PyTorch names the forward op in this message (hand-written
    nodes come with their C++ namespace, ``torch::autograd::CopySlices``, and stay whole)."""
    head, sep, tail = node_name.rpartition("Backward")
    if not sep or not (tail == "" or tail.isdigit()):
        return node_name
    return head if tail in ("", "0") else head + tail


# PyTorch names dtypes two ways in one message: C++ type names, then ScalarType names.
_CPP_TYPE_NAMES = {"float16": "c10::Half", "float32": "float", "float64": "double"}
_SCALAR_TYPE_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double"}


def grad_dtype_mismatch(grad_dtype, tensor_dtype):
    cpp_name = _CPP_TYPE_NAMES.get(grad_dtype.name, grad_dtype.name)
    scalar_name = _SCALAR_TYPE_NAMES.get(tensor_dtype.name, tensor_dtype.name)
    return (
        f"attempting to assign a gradient with dtype '{cpp_name}' "
        f"to a tensor with grad_dtype '{scalar_name}'. "
        "The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can "
        "set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. "
        "Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break "
        "downstream systems that assume they match."
    )


INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a clone "
    "to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)
INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
    "to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details."
)

CREATE_GRAPH_CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
    "creating the graph to avoid this. If you have to use this function, make sure to reset the "
    ".grad fields of your parameters to None after use to break the cycle and avoid the leak."
)

# Writing in place from a tensor whose memory overlaps the written one's in part.
PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation."
)
