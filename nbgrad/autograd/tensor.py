"""The Tensor: a NumPy array plus what autograd needs to know about it.

Arithmetic and methods are thin: each calls a function of ``nbgrad.ops.functions``, which runs
an entry of the op table. What lives here is the tensor's autograd state: ``requires_grad``,
``grad_fn`` (None for leaves), ``.grad``, hooks, and the version counter that catches in-place
changes to tensors saved for backward.
"""

import warnings

from nbgrad import dtypes
from nbgrad.autograd import errors, grad_mode
from nbgrad.warn_once import warn_once


class VersionCounter:
    """Shared by a tensor and its views; bumped by every in-place change."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class Size(tuple):
    """A shape, printed as PyTorch prints it: ``torch.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self):
        return f"torch.Size([{', '.join(str(s) for s in self)}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


_BY_NUMPY = {d.numpy: d for d in dtypes.ALL}


class TensorExtras:
    """The rarely set part of a tensor: its base and what autograd follows of it (for views),
    the memory it was detached from (``detach()``, ``.data``), its AccumulateGrad (a weakref,
    for leaves that require grad), hooks, and whether it retains its grad."""

    __slots__ = (
        "base",
        "view",
        "detached_memory",
        "accumulator",
        "backward_hooks",
        "post_accumulate_hooks",
        "retains_grad",
        "inference",
    )

    def __init__(self):
        self.base = None
        self.view = None  # a views.ViewInfo, for a view whose history autograd follows
        # detach() and .data share a tensor's memory without being views of it (no base):
        # (the array at the start of that memory, whether the source had fresh strides), for
        # storage_offset and stride. An array, not the source: that would keep its graph alive.
        self.detached_memory = None
        self.accumulator = None
        self.backward_hooks = None
        self.post_accumulate_hooks = None
        self.retains_grad = False
        self.inference = False  # made in inference mode (see grad_mode.inference_mode)


def _inference_extras():
    extras = TensorExtras()
    extras.inference = True
    return extras


# Whether inference mode is on: set by grad_mode.inference_mode, read by every new tensor.
_inference_mode = False

_NO_EXTRAS = TensorExtras()  # read in place of a tensor's extras while it has none


def _extra(name):
    """``tensor._<name>``: read from the tensor's extras, made when first written."""

    def get(tensor):
        extras = tensor._extras
        return getattr(_NO_EXTRAS if extras is None else extras, name)

    def put(tensor, value):
        extras = tensor._extras
        if extras is None:
            extras = tensor._extras = TensorExtras()
        setattr(extras, name, value)

    return property(get, put)


class Tensor:
    __slots__ = (
        "_data",
        "_dtype",
        "_requires_grad",
        "_grad_fn",
        "_output_nr",
        "_grad",
        "_counter",
        "_extras",
        "__weakref__",
    )

    # Let NumPy defer to our operators in ``array * tensor``.
    __array_priority__ = 1000

    def __init__(self, *args, **kwargs):
        """``Tensor(...)`` is PyTorch's legacy constructor; ``__new__`` (nbgrad/legacy.py) made
        the tensor."""

    @classmethod
    def _make(cls, data, requires_grad=False, grad_fn=None):
        """Wrap an ndarray (not copied). The one constructor every operation uses."""
        t = object.__new__(cls)
        t._data = data
        t._dtype = _BY_NUMPY[data.dtype]
        t._requires_grad = requires_grad
        t._grad_fn = grad_fn
        t._output_nr = 0
        t._grad = None
        t._counter = None  # made on first need: most tensors are never saved nor changed
        t._extras = _inference_extras() if _inference_mode else None  # see TensorExtras
        return t

    # What only some tensors have, kept in ``_extras`` (made on first write) so that the many
    # tensors an operation makes cost one attribute instead of five; read as plain attributes.
    _base = _extra("base")
    _detached_memory = _extra("detached_memory")
    _accumulator = _extra("accumulator")
    _backward_hooks = _extra("backward_hooks")
    _post_accumulate_hooks = _extra("post_accumulate_hooks")
    _retains_grad = _extra("retains_grad")
    _inference = _extra("inference")

    # --- what a tensor is ---------------------------------------------------------------------

    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[wrap_dim(dim, self._data.ndim)]

    def dim(self):
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        from nbgrad.devices import CPU

        return CPU

    is_cuda = False
    is_cpu = True

    def get_device(self):
        return -1

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_contiguous(self):
        return self._data.flags.c_contiguous

    def stride(self, dim=None):
        """Steps in elements between neighbours along each dim, as PyTorch counts them."""
        strides = strides_of(self._data, self._has_fresh_strides())
        return strides if dim is None else strides[wrap_dim(dim, self._data.ndim)]

    def storage_offset(self):
        """Where the first element sits in the memory this tensor shares with its base, in
        elements (0 for a tensor that is not a view)."""
        from nbgrad.ops.storage_geometry import geometry_in, lowest_address

        return geometry_in(self._data, lowest_address(self._memory()))[2]

    def _memory(self):
        """The array at the start of the memory this tensor lies in (PyTorch's storage): its
        own, its base's, or, for a detached tensor and views of it, its source's."""
        owner = self._base if self._base is not None else self
        detached = owner._detached_memory
        return owner._data if detached is None else detached[0]

    def _has_fresh_strides(self):
        """Whether the tensor is no view, nor detached from one: its strides are then PyTorch's
        contiguous ones where NumPy's may differ (see strides_of)."""
        detached = self._detached_memory
        return self._base is None and (detached is None or detached[1])

    def _is_view(self):
        return self._base is not None

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def numpy(self, *, force=False):
        """The tensor's memory as a NumPy array (``force=True``: also of a tensor that requires
        grad; on the CPU PyTorch shares the memory then too)."""
        if self._requires_grad and not force:
            raise RuntimeError(errors.NUMPY_REQUIRES_GRAD)
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError(errors.NUMPY_REQUIRES_GRAD)
        return self._data if dtype is None else self._data.astype(dtype)

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        # as PyTorch's Tensor.__iter__: the rows share one UnbindBackward0 node
        return iter(self.unbind(0))

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
                if self._data.size > 1
                else "Boolean value of Tensor with no values is ambiguous"
            )
        return bool(self._data)

    def __float__(self):
        if self._requires_grad and grad_mode._enabled:
            warn_once(
                "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                "behavior.\nConsider using tensor.detach() first."
            )
        return float(self._scalar())

    def __int__(self):
        return int(self._scalar())

    def _scalar(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self):
        if self._dtype._category == 2 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __repr__(self):
        from nbgrad.printing import tensor_repr

        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    # --- autograd state -----------------------------------------------------------------------

    @property
    def requires_grad(self):
        view = self._extras.view if self._extras is not None else None
        if view is not None and not view.made_in_no_grad:
            _refresh_view(self)  # a write into its base may have brought it a history
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self._set_requires_grad(flag, errors.ONLY_FLOAT_REQUIRES_GRAD)

    def requires_grad_(self, requires_grad=True):
        # PyTorch words this one message differently from the setter's.
        return self._set_requires_grad(
            requires_grad, "only Tensors of floating point dtype can require gradients"
        )

    def is_inference(self):
        return self._extras is not None and self._extras.inference

    def _set_requires_grad(self, requires_grad, not_float_message):
        if requires_grad and not _inference_mode and self.is_inference():
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed."
            )
        if self._grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(errors.NON_LEAF_REQUIRES_GRAD)
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError(not_float_message)
        view = self._extras.view if self._extras is not None else None
        if view is not None and view.made_in_no_grad and view.base._requires_grad:
            # Its own flag only (views.ViewInfo): it still requires grad through its base.
            view.gradient_goes_nowhere = not requires_grad
            self._requires_grad = True
            return self
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        if self._extras is not None and self._extras.view is not None:
            return _refresh_view(self)  # a view whose base was written to has a new history
        return self._grad_fn

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def retains_grad(self):
        return self._retains_grad

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def _version_counter(self):
        counter = self._counter
        if counter is None:
            counter = self._counter = VersionCounter()
        return counter

    @_version_counter.setter
    def _version_counter(self, counter):
        self._counter = counter

    @property
    def _version(self):
        if self._extras is not None and self._extras.inference:
            # PyTorch keeps no version counter for inference tensors (nothing can save them)
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._version_counter.value

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad:
            warnings.warn(errors.NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}"
                )
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._data.shape)}' to a "
                    f"tensor of size '{list(self._data.shape)}'. Please ensure that the gradient "
                    "and the tensor are the same size"
                )
            if value._dtype is not self._dtype:
                raise RuntimeError(errors.grad_dtype_mismatch(value._dtype, self._dtype))
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def data(self):
        """The same memory without autograd history (and, as in PyTorch, no version tracking)."""
        out = Tensor._make(self._data)
        out._detached_memory = (self._memory(), self._has_fresh_strides())
        return out

    @data.setter
    def data(self, value):
        self._data = value._data
        self._dtype = value._dtype

    def retain_grad(self):
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._grad_fn._retain_grad_of(self)
        self._retains_grad = True

    def register_hook(self, hook):
        """``hook(grad)`` runs when the gradient for this tensor is computed; it may return a
        replacement. Returns a handle whose ``remove()`` unregisters it."""
        from nbgrad.autograd.node import add_hook

        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self._grad_fn._register_tensor_hook(self._output_nr, hook)
        if self._backward_hooks is None:
            self._backward_hooks = {}
        return add_hook(self._backward_hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        from nbgrad.autograd.node import add_hook

        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = {}
        return add_hook(self._post_accumulate_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        _api.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self):
        """The same memory and version counter without history. As in PyTorch it is not a
        view (``_base`` is None, so ``detach_()`` works on it), though writing into it bumps
        this tensor's version, which backward checks."""
        out = Tensor._make(self._data)
        out._version_counter = self._version_counter
        out._detached_memory = (self._memory(), self._has_fresh_strides())
        out._extras.inference = self.is_inference()
        return out

    def detach_(self):
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be called "
                "on these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                "function in torch/optim/optimizer.py as the solution."
            )
        self._grad_fn = None
        self._requires_grad = False
        return self

    def cpu(self, memory_format=None):
        return self

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        from nbgrad import devices

        devices.check("cuda" if device is None else device)

    def pin_memory(self, device=None):
        from nbgrad.devices import NO_ACCELERATOR

        raise RuntimeError(NO_ACCELERATOR)

    def is_pinned(self, device=None):
        return False

    def __reduce_ex__(self, protocol):
        from nbgrad.ops.creation import rebuild_tensor

        return (rebuild_tensor, (self._data, self._requires_grad))


def _refresh_view(tensor):
    from nbgrad.autograd.views import refresh  # views builds on this module's nodes

    return refresh(tensor)


def wrap_dim(dim, ndim):
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-size}, {size - 1}], "
            f"but got {dim})"
        )
    return dim % size


# Imported last: the api module builds on Tensor (and is what ``Tensor.backward`` calls).
from nbgrad.autograd import api as _api  # noqa: E402


def strides_of(array, fresh=True):
    """An array's strides in elements, as PyTorch counts them. A ``fresh`` (not a view)
    contiguous array has PyTorch's contiguous strides: NumPy may leave any stride on a dim of
    size 1 or of an empty array, where a view keeps the steps of its base in both libraries."""
    if fresh and array.flags.c_contiguous:
        strides, step = [], 1
        for size in reversed(array.shape):
            strides.append(step)
            step *= max(size, 1)
        return tuple(reversed(strides))
    return tuple(step // array.itemsize for step in array.strides)
