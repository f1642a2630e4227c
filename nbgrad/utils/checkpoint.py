"""``torch.utils.checkpoint``: keep a function's inputs instead of what its operations save, and
run the function again when backward needs those values (activation checkpointing).

Two ways, as in PyTorch 2.13, chosen by ``use_reentrant`` (not passing it warns, and means True):

- ``use_reentrant=False``: the function's graph is recorded as usual, but every tensor its
  operations save goes through ``saved_tensors_hooks`` that keep only a placeholder. The first
  read of a placeholder in a backward pass (or a ``grad_fn._saved_*`` read outside one) runs the
  function again on the saved inputs and hands out what that run saved, detached; each
  placeholder can be read once per pass. The graph a learner sees is the function's own.
- ``use_reentrant=True``: the function runs under ``no_grad`` inside a custom Function, whose one
  node (``CheckpointFunctionBackward``) runs the function again under ``enable_grad`` during
  backward and backpropagates through that new graph with a backward of its own. It cannot
  serve ``autograd.grad`` nor ``backward(inputs=...)``.

Both restore the random generator's state of the forward before running the function again
(``preserve_rng_state``), so dropout draws the same mask.
"""

import contextlib
import os
import sys
import warnings
import weakref

import nbgrad
from nbgrad.autograd import engine
from nbgrad.autograd.function import Function
from nbgrad.autograd.graph import saved_tensors_hooks
from nbgrad.autograd.node import SavedTensor
from nbgrad.autograd.tensor import Tensor

__all__ = ["CheckpointError", "checkpoint", "noop_context_fn"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def noop_context_fn():
    """The default ``context_fn``: no context around the forward nor the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


class CheckpointError(RuntimeError):
    """What went wrong between a checkpointed forward and its recomputation."""


_DEBUG_TIP = (
    "\nTip: To see a more detailed error message, either pass `debug=True` to\n"
    "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
    "with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
    "enable checkpoint‑debug mode globally.\n"
)


def _user_stacklevel():
    """The stacklevel of the first frame outside nbgrad: a warning points at the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def _warn(message):
    warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())


def _metadata(tensor):
    return {"shape": tensor.shape, "dtype": tensor.dtype, "device": tensor.device}


_DETERMINISM_CHECKS = {"default": _metadata, "none": lambda _tensor: None}


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    context_fn=noop_context_fn,
    determinism_check="default",
    debug=False,
    early_stop=True,
    **kwargs,
):
    """``function(*args, **kwargs)``, keeping ``args`` rather than what its operations save;
    backward runs it again. ``debug`` is accepted (PyTorch adds operator logs to its errors)."""
    if use_reentrant is None:
        _warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants."
        )
        use_reentrant = True
    preserve_rng_state = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(
        function, preserve_rng_state, context_fn, determinism_check, early_stop, args, kwargs
    )


# --- use_reentrant=False: saved tensors hooks ------------------------------------------------


class _Holder:
    """What the graph keeps in place of one saved tensor: its position among the tensors the
    forward saved, and the passes that have read it."""

    __slots__ = ("index", "read_in", "__weakref__")

    def __init__(self, index):
        self.index = index
        self.read_in = set()


class _StopRecomputation(Exception):  # noqa: N818 - not an error: every value needed is there
    pass


class _Frame:
    """One checkpointed call: its saved inputs, placeholders and recomputations."""

    def __init__(self, recompute, early_stop, metadata_fn):
        self.recompute = recompute
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.saved_inputs = []
        self.holders = []  # weak references, in the order the forward saved
        self.metadata = []
        self.recomputed = {}  # pass -> {index: the tensor the recomputation saved}
        self.counts = {}  # pass -> how many tensors the recomputation has saved

    def save_inputs(self, args):
        # kept as a node keeps what it saves: an input written in place since is an error
        self.saved_inputs = [SavedTensor(a, False) if isinstance(a, Tensor) else a for a in args]

    def inputs(self):
        values = []
        for saved in self.saved_inputs:
            if isinstance(saved, SavedTensor):
                saved.check_version(None)
                values.append(saved.tensor)
            else:
                values.append(saved)
        return values

    def pack(self, tensor):
        holder = _Holder(len(self.holders))
        self.holders.append(weakref.ref(holder))
        if self.metadata_fn is not None:
            self.metadata.append(self.metadata_fn(tensor))
        return holder

    def unpack(self, holder):
        running = engine.current_pass()
        # a read outside backward recomputes each time, as PyTorch's (a new id per read)
        key = running[0] if running is not None else object()
        if key not in self.recomputed:
            self.recomputed[key], self.counts[key] = {}, 0
            try:
                with (
                    saved_tensors_hooks(lambda t: self._keep_recomputed(key, t), lambda t: t),
                    nbgrad.enable_grad(),
                ):
                    self.recompute(*self.inputs())
            except _StopRecomputation:
                pass
            self._check_recomputed(key)
        if key in holder.read_in:
            raise CheckpointError(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                "unpacked once. If you are calling ctx.saved_tensors in backward, make sure to do "
                "so only once. Otherwise please open an issue with details on your use case."
            )
        holder.read_in.add(key)
        return self.recomputed[key].pop(holder.index)

    def _keep_recomputed(self, key, tensor):
        tensor = tensor.detach() if tensor.requires_grad else tensor
        index = self.counts[key]
        self.counts[key] = index + 1
        if index >= len(self.holders):
            raise CheckpointError(
                "torch.utils.checkpoint: trying to save more tensors during recomputation than "
                "during the original forward pass."
            )
        if self.holders[index]() is not None:  # else backward no longer needs it
            self.recomputed[key][index] = tensor
        if self.early_stop and index + 1 == len(self.holders):
            raise _StopRecomputation
        return tensor

    def _check_recomputed(self, key):
        if self.counts[key] != len(self.holders):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.holders)}\n"
                f"Number of tensors saved during recomputation: {self.counts[key]}.\n"
                f"{_DEBUG_TIP}"
            )
        different = ""
        for index, recomputed in sorted(self.recomputed[key].items()):
            then, now = self.metadata[index], self.metadata_fn(recomputed)
            if then != now:
                different += (
                    f"tensor at position {index}:\nsaved metadata: {then}\n"
                    f"recomputed metadata: {now}\n"
                )
        if different:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{different}.\n{_DEBUG_TIP}"
            )


def _checkpoint_without_reentrant(
    function, preserve_rng_state, context_fn, determinism_check, early_stop, args, kwargs
):
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(
            f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, "
            f"but got {determinism_check}"
        )
    metadata_fn = _DETERMINISM_CHECKS[determinism_check]
    forward_context, recompute_context = context_fn()
    forward_rng_state = nbgrad.get_rng_state() if preserve_rng_state else None

    def recompute(*inputs):
        with nbgrad.random.fork_rng(enabled=preserve_rng_state):
            if preserve_rng_state:
                nbgrad.set_rng_state(forward_rng_state)
            with recompute_context:
                function(*inputs, **kwargs)

    if not nbgrad.is_grad_enabled():  # nothing is saved: just the call
        return function(*args, **kwargs)
    frame = _Frame(recompute, early_stop, metadata_fn)
    frame.save_inputs(args)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


# --- use_reentrant=True: a custom Function -----------------------------------------------------


def _check_backward_validity(inputs):
    if not any(a.requires_grad for a in inputs if isinstance(a, Tensor)):
        _warn("None of the inputs have requires_grad=True. Gradients will be None")


def _detach_variable(inputs):
    detached = []
    for value in inputs:
        if not isinstance(value, Tensor):
            detached.append(value)
            continue
        copy = value.detach()
        copy.requires_grad = value.requires_grad
        detached.append(copy)
    return tuple(detached)


class CheckpointFunction(Function):
    """The reentrant checkpoint: its node runs the function again, and a backward through it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        _check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.forward_rng_state = nbgrad.get_rng_state()
        # tensors are saved for backward; anything else is kept as it is
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        with nbgrad.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        running = engine.current_pass()
        if running is not None and running[1]:
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument."
            )
        inputs = list(ctx.inputs)
        for index, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[index] = tensor
        with nbgrad.random.fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                nbgrad.set_rng_state(ctx.forward_rng_state)
            detached = _detach_variable(inputs)
            with nbgrad.enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [
            (out, grad)
            for out, grad in zip(outputs, grads)
            if isinstance(out, Tensor) and out.requires_grad
        ]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        nbgrad.autograd.backward([out for out, _ in pairs], [grad for _, grad in pairs])
        return (None, None) + tuple(
            value.grad if isinstance(value, Tensor) else None for value in detached
        )
