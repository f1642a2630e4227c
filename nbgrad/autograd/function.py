"""Custom operations: subclass ``Function``, write ``forward`` and ``backward``, call ``apply``.

As in PyTorch, the ``ctx`` that ``forward`` receives *is* the backward node: an instance of a
class made for each Function subclass and named ``<ClassName>Backward``. The engine calls its
``backward`` like any other node; nothing needs registering.
"""

import functools

import numpy as np

from nbgrad.autograd import errors, grad_mode, observe
from nbgrad.autograd.node import (
    FREED,
    Node,
    PackedSavedTensor,
    RawSavedTensor,
    SavedTensor,
    edge_of,
    save,
    saved_output_tensor,
)
from nbgrad.autograd.tensor import Tensor


class FunctionCtx:
    """What ``forward`` can tell ``backward`` through ``ctx``."""

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(errors.BACKWARD_TWICE)
        tensors = []
        for item in saved:
            if type(item) is SavedTensor:
                item.check_version(self)
                tensors.append(self._tensor_of(item))
            elif type(item) is PackedSavedTensor:
                tensors.append(item.unpack(self))
            else:
                tensors.append(item)
        return tuple(tensors)

    @property
    def _raw_saved_tensors(self):
        """The saved tensors themselves (not read back), each for ``register_hooks``."""
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(errors.BACKWARD_TWICE)
        return tuple(RawSavedTensor(self, position) for position in range(len(saved)))

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self._materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of a custom Function; subclassed once per Function as ``<Name>Backward``."""

    _forward_cls = None

    def __init__(self):
        super().__init__()
        self._to_save = ()
        self._saved = ()
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize_grads = True
        self._arg_count = 0
        self._tensor_positions = ()
        self.num_outputs = 1
        self._output_meta = ()
        self.needs_input_grad = ()
        self.next_functions = ()
        self._input_meta = ()

    def _tensor_of(self, saved):
        if saved.tensor is not None:
            return saved.tensor
        return saved_output_tensor(saved, self)

    def apply(self, grads, create_graph):
        grad_tensors = []
        for i, g in enumerate(grads):
            if g is None and self._materialize_grads:
                shape, dtype = self._output_meta[i]
                g = np.zeros(shape, dtype.numpy)
            grad_tensors.append(g if g is None or isinstance(g, Tensor) else Tensor._make(g))
        with grad_mode.set_grad_enabled(create_graph):
            result = self._forward_cls.backward(self, *grad_tensors)
        if not isinstance(result, tuple):
            result = (result,)
        expected = self._arg_count
        if len(result) != expected:
            if len(result) > expected and all(r is None for r in result[expected:]):
                result = result[:expected]
            else:
                raise RuntimeError(
                    f"function {self.name()} returned an incorrect number of gradients (expected "
                    f"{expected}, got {len(result)})"
                )
        outputs = []
        for position, (edge, _) in zip(self._tensor_positions, self.next_functions):
            g = result[position]
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            if g is None or edge is None:
                outputs.append(None)
            else:
                outputs.append(g if create_graph else g._data)
        return outputs

    def release_saved(self):
        if any(type(s) in (SavedTensor, PackedSavedTensor) for s in self._saved):
            self._saved = FREED


class Function:
    """Base class of custom differentiable operations."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(
            f"{cls.__name__}Backward",
            (BackwardCFunction,),
            # Printed as PyTorch prints it: <torch.autograd.function.MyReLUBackward object ...>
            {"_forward_cls": cls, "__module__": "torch.autograd.function"},
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        ctx._arg_count = len(args)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        recording = grad_mode._enabled and any(ctx.needs_input_grad)
        separate_setup = cls.setup_context is not Function.setup_context
        with grad_mode.no_grad():
            if separate_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if recording:
            outs = _connect(ctx, args, outs)
        elif ctx._dirty:
            for t in ctx._dirty:
                t._version_counter.value += 1
        for listener in observe.op_listeners:
            tensors = tuple(a for a in args if isinstance(a, Tensor))
            outputs_seen = tuple(o for o in outs if isinstance(o, Tensor))
            listener(ctx if recording else None, cls.__name__, tensors, outputs_seen)
        return outs[0] if single else outs


def _connect(ctx, args, outputs):
    """Make ``ctx`` the grad_fn of the outputs and link it to the inputs' nodes."""
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    ctx._tensor_positions = positions
    ctx.next_functions = tuple(edge_of(args[i]) for i in positions)
    ctx._input_meta = tuple((args[i]._data.shape, args[i]._dtype) for i in positions)
    dirty = {id(t) for t in ctx._dirty}
    non_differentiable = {id(t) for t in ctx._non_differentiable}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    connected = []
    for nr, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            connected.append(out)
            continue
        if id(out) in dirty:
            if out._grad_fn is None and out._requires_grad:
                raise RuntimeError(errors.LEAF_INPLACE)
            out._version_counter.value += 1
        elif id(out) in inputs:
            # Returning an input unchanged gives a new tensor on the same memory, as in PyTorch.
            alias = Tensor._make(out._data)
            alias._version_counter = out._version_counter
            out = alias
        if id(out) in non_differentiable or not out._dtype.is_floating_point:
            out._requires_grad = False
        else:
            out._grad_fn = ctx
            out._output_nr = nr
            out._requires_grad = True
        connected.append(out)
    ctx.num_outputs = len(outputs)
    ctx._output_meta = tuple(
        (o._data.shape, o._dtype) if isinstance(o, Tensor) else ((), None) for o in connected
    )
    output_ids = {id(o) for o in connected if isinstance(o, Tensor)}
    ctx._saved = tuple(
        save(t, id(t) in output_ids) if isinstance(t, Tensor) else t for t in ctx._to_save
    )
    ctx._to_save = ()
    return tuple(connected)


def once_differentiable(backward):
    """Mark a ``backward`` that is not itself differentiable: it runs with grad mode off."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with grad_mode.no_grad():
            return backward(ctx, *grads)

    return wrapper
