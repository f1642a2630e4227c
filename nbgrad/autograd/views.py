"""In-place writes through views, recorded as PyTorch records them.

A view (``b[0]``, ``b.t()``, ``b.view(12)``) shares its base's memory, so writing into it changes
the base too. When a graph is being built, PyTorch keeps both histories right:

- the base's grad_fn becomes ``CopySlices``, which wraps the write's own node (``MulBackward0``
  for ``v.mul_(3)``) and applies it to the part of the base's gradient that the view covers;
- the view's grad_fn becomes ``AsStridedBackward0`` over the base's new history: the view is
  then described by where its elements sit in the base (size, stride, storage offset);
- every other view of the same base, made before the write, is out of date too. PyTorch notices
  it lazily, by the version counter they share: a view whose version moved since its grad_fn
  was set gets a fresh ``AsStridedBackward0`` when its history is next needed (``refresh``).

A differentiable view carries a ``ViewInfo`` in its extras; tensors that are not views, and
views whose base was never written to, pay nothing here.
"""

import re
import weakref

import numpy as np

from nbgrad.autograd import errors
from nbgrad.autograd.node import Node, _namespaced_name, edge_of, set_history
from nbgrad.autograd.tensor import Tensor
from nbgrad.ops.storage_geometry import (
    as_strided_key,
    geometry_in,
    lowest_address,
    storage_size_of,
)

NO_GRAD_MODE_MESSAGE = (
    "is being modified inplace with grad mode enabled. Given that this use case is ambiguous "
    "and error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) "
    "or both outside (if you want the inplace to be tracked)."
)


# The nodes of in-place ops that wrote into a view, now wrapped in a CopySlices. A result they
# saved is the view itself: the in-place error names it as PyTorch does, by the view's grad_fn.
wrapped_by_copy_slices = weakref.WeakSet()


class ViewInfo:
    """What autograd knows of a view: the tensor it is a view of (never itself a view), the
    version its grad_fn was set at, and whether it was made in no_grad mode (``made_in_no_grad``
    names the op whose result inherited that, for PyTorch's "view of a view" message).

    ``gradient_goes_nowhere``: a view made in no_grad (or inference) mode of a base that requires
    grad. PyTorch says it requires grad (a view requires grad when its base does) yet it has no
    grad_fn, and no AccumulateGrad either, since its own flag is off: ops on it in grad mode
    record nodes whose edge to it is ``(None, 0)``, and backward through them stops there. Setting
    its own flag (``requires_grad_(True)``) gives it an AccumulateGrad like any leaf."""

    __slots__ = (
        "base",
        "version",
        "made_in_no_grad",
        "inherited_from",
        "multi_output",
        "gradient_goes_nowhere",
    )

    def __init__(self, base, version, made_in_no_grad, inherited_from=None):
        self.base = base
        self.version = version
        self.made_in_no_grad = made_in_no_grad
        self.inherited_from = inherited_from  # the node name of a view of a no_grad view
        self.multi_output = None  # (node name, output_nr) of one of several views (split)
        self.gradient_goes_nowhere = False


def note_view(result, source, node_name, grad_enabled):
    """Mark ``result`` (made from ``source`` by a view op) as a differentiable view."""
    source_view = source._extras.view if source._extras is not None else None
    if source_view is None:
        base, made_in_no_grad, inherited = source, not grad_enabled, None
    else:
        base = source_view.base
        made_in_no_grad = not grad_enabled or source_view.made_in_no_grad
        inherited = node_name if grad_enabled and source_view.made_in_no_grad else None
    info = result._extras.view = ViewInfo(base, result._counter.value, made_in_no_grad, inherited)
    if not grad_enabled and base._requires_grad and result._dtype.is_floating_point:
        result._requires_grad = True
        info.gradient_goes_nowhere = True
    if source_view is not None and source_view.multi_output is not None:
        info.multi_output = (node_name, 0)  # a view of one of several views: no writes either


def check_view_write(target, view):
    """PyTorch's errors for an in-place write, recorded in a graph, into a view."""
    if view.made_in_no_grad:
        if view.inherited_from is not None:
            name = view.inherited_from
            op = name[: name.rindex("Backward")] if "Backward" in name else name
            raise RuntimeError(
                f"Output 0 of {op} is a view of a view which was created in no_grad mode and "
                + NO_GRAD_MODE_MESSAGE
            )
        raise RuntimeError("A view was created in no_grad mode and " + NO_GRAD_MODE_MESSAGE)
    if view.multi_output is not None:
        name, output_nr = view.multi_output
        raise RuntimeError(
            f"Output {output_nr} of {name[: name.rindex('Backward')]} is a view and is being "
            "modified inplace. This view is the output of a function that returns multiple views. "
            "Such functions do not allow the output views to be modified inplace. You should "
            "replace the inplace operation by an out-of-place one."
        )
    base = view.base
    if base._grad_fn is None and base._requires_grad:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )


def refresh(tensor):
    """Give a view whose base was written to since its grad_fn was set (through the base or any
    view of it) its new history: AsStridedBackward0 over the base's grad_fn, as PyTorch does."""
    view = tensor._extras.view if tensor._extras is not None else None
    if view is None:
        return tensor._grad_fn
    version = tensor._counter.value
    if view.version != version:
        if tensor._grad_fn is not None or view.base._requires_grad:
            if view.made_in_no_grad:
                raise RuntimeError(
                    "A view was created in no_grad mode and its base or another view of its base "
                    "has been modified inplace with grad mode enabled. Given that this use case "
                    "is ambiguous and error-prone, it is forbidden. You can clarify your code by "
                    "moving both the view and the inplace either both inside the no_grad block "
                    "(if you don't want the inplace to be tracked) or both outside (if you want "
                    "the inplace to be tracked)."
                )
            if view.multi_output is not None:
                name, output_nr = view.multi_output
                raise RuntimeError(
                    f"Output {output_nr} of {name[: name.rindex('Backward')]} is a view and its "
                    "base or another view of its base has been modified inplace. This view is the "
                    "output of a function that returns multiple views. Such functions do not "
                    "allow the output views to be modified inplace. You should replace the "
                    "inplace operation by an out-of-place one."
                )
            _point_at_base(tensor, view.base)
        view.version = version
    return tensor._grad_fn


def _point_at_base(view_tensor, base):
    from nbgrad.autograd import dispatch
    from nbgrad.ops.derivatives import OPS

    base_geometry, view_geometry = storage_geometries(base, view_tensor)
    edges = (edge_of(base),)
    metas = [(base._data.shape, base._dtype)]
    attrs = (*view_geometry, base_geometry)  # size, stride, storage offset, the input's geometry
    node = dispatch._record(OPS["as_strided"], (base,), view_tensor, attrs, (), edges, metas, 1)
    set_history(view_tensor, node)


def rebase_history(view_tensor, view, op_node, metas):
    """After an in-place op wrote into a view: the base's grad_fn becomes CopySlices around the
    op's node, and the view's grad_fn AsStridedBackward0 over it."""
    base = view.base
    base_geometry, view_geometry = storage_geometries(base, view_tensor)
    copy_slices = CopySlices(base, base_geometry, view_geometry, op_node, metas)
    wrapped_by_copy_slices.add(op_node)
    set_history(base, copy_slices)
    _point_at_base(view_tensor, base)
    view.version = view_tensor._counter.value


class CopySlices(Node):
    """The base's grad_fn after an in-place op on one of its views.

    Its first edge is the base's history before the write; the others are the wrapped op's
    edges for its other inputs (``v.add_(w)``: w's). Backward takes the base's gradient, runs the
    wrapped op's backward on the region the view covers, writes the op's gradient for the
    view's old value back into that region and passes the rest on unchanged."""

    __slots__ = ("base_geometry", "view_geometry", "fn")
    __module__ = "builtins"  # its repr reads <CopySlices object at 0x...>, as PyTorch's

    def __init__(self, base, base_geometry, view_geometry, fn, fn_metas):
        super().__init__()
        # Both as (size, stride, offset) in the base's storage, in elements.
        self.base_geometry, self.view_geometry = base_geometry, view_geometry
        self.fn = fn
        self.next_functions = (edge_of(base), *fn.next_functions[1:])
        self._input_meta = [(base._data.shape, base._dtype), *fn_metas[1:]]

    def name(self):
        return _namespaced_name(self)

    def apply(self, grads, create_graph):
        if create_graph:
            return self._apply_differentiably(grads[0])
        from nbgrad.autograd.engine import _run_node

        grad = grads[0]
        region = as_strided_key(self.base_geometry, *self.view_geometry)
        # The wrapped node runs as the engine runs any node: its gradients for inputs that were
        # broadcast to the view's shape are summed back to their own shapes.
        op_grads = _run_node(self._wrapped(), [grad[region]], False)
        base_grad = np.array(grad)
        base_grad[region] = 0.0 if op_grads[0] is None else op_grads[0]
        return [base_grad, *op_grads[1:]]

    def _apply_differentiably(self, grad):
        """The same with nbgrad operations, recorded as PyTorch records them: a copy of the
        gradient, the view's region of it (as_strided), the wrapped backward on a clone of that
        region, and its result copied back into the region (itself an in-place write into a
        view: a CopySlices of the gradient's graph)."""
        from nbgrad.autograd.engine import _run_node

        base_grad = _laid_out_as(self.base_geometry, grad._data.dtype)
        base_grad.copy_(grad)
        region = base_grad.as_strided(*self.view_geometry)
        op_grads = _run_node(self._wrapped(), [region.clone()], True)
        if op_grads[0] is None:
            region.zero_()
        else:
            region.copy_(op_grads[0])
        return [base_grad, *op_grads[1:]]

    def formulas(self):
        """Its local gradients as text, from the wrapped op's table entry: ``(entry name,
        input names, input name -> formula)``, or None once backward let the op go. The wrapped
        formulas read ``grad[view]``, the part of the base's gradient that the view covers."""
        spec = getattr(self.fn, "spec", None)
        if spec is None:
            return None

        def on_view(text):
            return re.sub(r"\bgrad\b", "grad[view]", text)

        own = spec.grads.get(spec.inputs[0])
        grads = {"self": f"grad, with grad[view] = {on_view(own) if own else '0'}"}
        for name in spec.inputs[1:]:
            if name in spec.grads:
                grads[name] = on_view(spec.grads[name])
        return f"{spec.name}_ into a view", ("self", *spec.inputs[1:]), grads

    def release_saved(self):
        # As PyTorch: the wrapped node is let go, not emptied. A graph built by a differentiable
        # backward may still reach it directly (exp_'s saved result is attached to it).
        self.fn = None

    def _wrapped(self):
        if self.fn is None:
            raise RuntimeError(errors.BACKWARD_TWICE)
        return self.fn


def storage_geometries(base, view_tensor):
    """Where the base and the view lie in the base's storage, as ``(size, stride, offset)``."""
    start = lowest_address(base._data)
    return geometry_in(base._data, start), geometry_in(view_tensor._data, start)


def _laid_out_as(geometry, dtype):
    """A new tensor of zeros laid out in its memory as ``geometry`` says (as PyTorch's
    ``empty_strided``), so that a view's geometry in the base picks the same elements in it."""
    size, stride, offset = geometry
    storage = np.zeros(storage_size_of(geometry), dtype=dtype)
    itemsize = storage.itemsize
    array = np.lib.stride_tricks.as_strided(
        storage[offset:], size, tuple(step * itemsize for step in stride)
    )
    return Tensor._make(array)
