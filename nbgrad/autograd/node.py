"""Backward nodes: what ``tensor.grad_fn`` is, and what ``next_functions`` links together.

A node is created by each operation that records a graph. It knows the edges to the nodes of
its inputs (``next_functions``), holds what its backward reads (saved tensors, checked against
in-place changes), and runs hooks. The classes for table operations (``MulBackward0``, ...) are
made from the op table, one per entry, so their names and ``_saved_*`` attributes come from there.
"""

import itertools
import types
import weakref

import numpy as np

from nbgrad.autograd import errors
from nbgrad.autograd.tensor import VersionCounter
from nbgrad.flags import FAST_PATHS

_sequence = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "_key")
    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self._key = next(RemovableHandle._ids)

    def remove(self):
        self._hooks.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks, fn):
    handle = RemovableHandle(hooks)
    hooks[handle._key] = fn
    return handle


class NodeExtras:
    """What only some nodes have: hooks, retained grads, metadata. Made on first use, so that
    the many nodes without any cost one attribute and the engine one test."""

    __slots__ = ("tensor_pre_hooks", "retains_grad", "pre_hooks", "post_hooks", "metadata")

    def __init__(self):
        # One shared empty mapping until something is added: a recorder retains the grad of
        # every node, and should not pay for five dicts each.
        self.tensor_pre_hooks = _NONE  # handle key -> (output_nr, fn(grad))
        self.retains_grad = _NONE  # output_nr -> weakref to the tensor
        self.pre_hooks = _NONE  # handle key -> fn(grad_outputs)
        self.post_hooks = _NONE  # handle key -> fn(grad_inputs, grad_outputs)
        self.metadata = None

    def own(self, name):
        """The dict called ``name``, made on first use."""
        value = getattr(self, name)
        if value is _NONE:
            value = {}
            setattr(self, name, value)
        return value


_NONE = types.MappingProxyType({})


class Node:
    """Base of every grad_fn. Subclasses implement ``apply(grads, create_graph)``."""

    __slots__ = ("next_functions", "_input_meta", "_sequence_nr", "_extras", "__weakref__")
    num_outputs = 1

    def __init__(self):
        self._sequence_nr = next(_sequence)
        self._extras = None

    def name(self):
        return type(self).__name__

    @property
    def extras(self):
        if self._extras is None:
            self._extras = NodeExtras()
        return self._extras

    @property
    def metadata(self):
        extras = self.extras
        if extras.metadata is None:
            extras.metadata = {}
        return extras.metadata

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node ran; may return new grad_inputs."""
        return add_hook(self.extras.own("post_hooks"), fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before this node runs; may return new grad_outputs."""
        return add_hook(self.extras.own("pre_hooks"), fn)

    def _register_tensor_hook(self, output_nr, fn):
        return add_hook(self.extras.own("tensor_pre_hooks"), (output_nr, fn))

    def _retain_grad_of(self, tensor):
        self.extras.own("retains_grad")[tensor._output_nr] = weakref.ref(tensor)

    def release_saved(self):
        """Free what backward needed; called after a backward without ``retain_graph``."""

    def __call__(self, *grads):
        from nbgrad.autograd.engine import call_node

        return call_node(self, grads)


class SavedTensor:
    """A tensor kept for backward, with the version it had, to catch in-place changes later.

    An operation's saver (compiled in ``dispatch._make_saver``) fills these fields without
    calling the constructor, with the code of ``saved_tensor_code`` below."""

    __slots__ = ("data", "tensor", "counter", "version", "requires_grad", "output_nr")

    def __init__(self, tensor, is_output):
        self.data = tensor._data
        counter = tensor._counter
        if counter is None:
            counter = tensor._counter = VersionCounter()
        self.counter = counter
        self.version = counter.value
        self.requires_grad = tensor._requires_grad
        # Which output of the node it is read back from (a Function may save its second output).
        self.output_nr = tensor._output_nr
        # An output is not kept as a Tensor: it would point back at its own grad_fn (a cycle).
        self.tensor = None if is_output else tensor

    def check_version(self, node):
        if self.counter.value != self.version:
            raise errors.modified_by_inplace(self, node)


def saved_tensor_code(name, is_output):
    """Lines of Python that make ``name`` the SavedTensor of ``tensor``, as ``__init__`` would
    (names they need: SavedTensor, VersionCounter, ``new`` = object.__new__). An op's compiled
    saver runs them for every node: a constructor call costs more than the fields."""
    return [
        "counter = tensor._counter",
        "if counter is None:",
        "    counter = tensor._counter = VersionCounter()",
        f"{name} = new(SavedTensor)",
        f"{name}.data = tensor._data",
        f"{name}.counter = counter",
        f"{name}.version = counter.value",
        f"{name}.requires_grad = tensor._requires_grad",
        f"{name}.output_nr = tensor._output_nr",
        # An output is not kept as a Tensor: it would point back at its own grad_fn (a cycle).
        f"{name}.tensor = {'None' if is_output else 'tensor'}",
    ]


# ``torch.autograd.graph.saved_tensors_hooks`` in force: (pack_hook, unpack_hook) pairs, the
# innermost last. Empty unless a user asks for hooks; the code that saves tensors tests it.
saved_tensors_hook_stack = []


def save(tensor, is_output):
    """What a node keeps of ``tensor``: a SavedTensor, or, under ``saved_tensors_hooks``, what
    the innermost pack hook makes of it."""
    if not saved_tensors_hook_stack:
        return SavedTensor(tensor, is_output)
    return PackedSavedTensor(tensor, is_output, *saved_tensors_hook_stack[-1])


class PackedSavedTensor:
    """A saved tensor that a pack hook turned into an object of its choice: each read gives it to
    the unpack hook, which must give back a tensor. As in PyTorch, no in-place check is made
    (the hooks own the value), and what is read back is a new tensor that shares the unpacked
    data and stands where the saved one stood in the graph (same grad_fn, or the same leaf)."""

    __slots__ = (
        "packed",
        "unpack_hook",
        "requires_grad",
        "is_output",
        "grad_fn",
        "output_nr",
        "accumulator",
    )

    def __init__(self, tensor, is_output, pack_hook, unpack_hook, pack_argument=None):
        given = tensor if pack_argument is None else pack_argument
        version = given._version
        self.packed = pack_hook(given)
        if given._version != version:
            raise RuntimeError(errors.PACK_HOOK_INPLACE)
        self.unpack_hook = unpack_hook
        self.requires_grad = tensor._requires_grad
        self.is_output = is_output  # its grad_fn is the node that saved it, not known yet
        self.grad_fn = None if is_output else tensor._grad_fn
        self.output_nr = tensor._output_nr
        is_leaf = not is_output and tensor._grad_fn is None and tensor._requires_grad
        self.accumulator = accumulator_of(tensor) if is_leaf else None

    def unpack(self, node):
        """The tensor the unpack hook gives, attached to the graph as the saved one was."""
        from nbgrad.autograd.tensor import Tensor

        value = self.unpack_hook(self.packed)
        if not isinstance(value, Tensor):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                f"type {type(value).__name__}"
            )
        grad_fn = (node if self.is_output else self.grad_fn) if self.requires_grad else None
        tensor = Tensor._make(value._data, self.requires_grad, grad_fn)
        tensor._output_nr = self.output_nr
        if self.accumulator is not None:  # a leaf: gradients through it reach the same .grad
            tensor._accumulator = weakref.ref(self.accumulator)
        return tensor


class RawSavedTensor:
    """``grad_fn._raw_saved_<name>``: the saved tensor itself, to give it its own hooks."""

    __slots__ = ("_node", "_position")

    def __init__(self, node, position):
        self._node = node
        self._position = position

    def register_hooks(self, pack_hook, unpack_hook):
        """Pack the saved tensor now with ``pack_hook``; every later read goes through
        ``unpack_hook``. PyTorch gives the pack hook the saved data without its history."""
        from nbgrad.autograd.tensor import Tensor

        if not (callable(pack_hook) and callable(unpack_hook)):
            raise TypeError("register_hooks() takes two callables: pack_hook and unpack_hook")
        saved = self._node._saved
        value = saved[self._position] if type(saved) in (list, tuple) else FREED
        if value is FREED:
            raise RuntimeError(errors.REGISTER_HOOKS_AFTER_FREE)
        if type(value) is PackedSavedTensor:
            raise RuntimeError(errors.HOOKS_ALREADY_SET)
        original = value.tensor
        if original is None:  # a saved output: a tensor standing for it, attached to this node
            original = self._node._tensor_of(value)
        data_only = Tensor._make(value.data)
        data_only._version_counter = value.counter  # a write to it is a write to the saved one
        is_output = value.tensor is None
        saved[self._position] = PackedSavedTensor(
            original, is_output, pack_hook, unpack_hook, data_only
        )


def _is_buffer(value):
    """Saved tensors and arrays (alone or in a tuple of indices) are freed after backward."""
    kind = type(value)
    if kind is SavedTensor or kind is np.ndarray or kind is PackedSavedTensor:
        return True
    if kind is tuple:  # a loop, not any(): most tuples here are a reduction's dims
        for v in value:
            if type(v) is np.ndarray:
                return True
    return False


class FreedBuffer:
    """Stands where a saved tensor was, after backward freed it."""

    __slots__ = ()


FREED = FreedBuffer()


class TableNode(Node):
    """A node of an operation declared in the op table; ``spec`` is set on each subclass."""

    __slots__ = ("_saved",)
    spec = None
    takes_missing_grads = False

    def unpacked(self, as_tensors):
        values = []
        packed = False
        for saved in self._saved:
            if type(saved) is SavedTensor:
                if saved.counter.value != saved.version:
                    raise errors.modified_by_inplace(saved, self)
                values.append(self._tensor_of(saved) if as_tensors else saved.data)
            elif saved is FREED:
                raise RuntimeError(errors.BACKWARD_TWICE)
            else:
                packed = packed or type(saved) is PackedSavedTensor
                values.append(saved)
        if packed:
            self._unpack_hooked(values, as_tensors)
        return values

    def _unpack_hooked(self, values, as_tensors):
        """Read the saved tensors that pack hooks hold through their unpack hooks: inputs
        first, then outputs, the order in which PyTorch unpacks (and packed) them."""
        hooked = [i for i, v in enumerate(values) if type(v) is PackedSavedTensor]
        for i in sorted(hooked, key=lambda i: values[i].is_output):
            tensor = values[i].unpack(self)
            values[i] = tensor if as_tensors else tensor._data

    def _tensor_of(self, saved):
        if saved.tensor is not None:
            return saved.tensor
        # A saved output comes back attached to this node, so that a differentiable backward
        # that reads it (exp's ``grad * result``) is differentiated through it too.
        return saved_output_tensor(saved, self)

    def apply_formulas(self, grads, create_graph):
        """Run the table's formulas for the inputs that have an edge. Most node classes replace
        ``apply`` by their op's formulas written out (see plain_backward), which come here
        for what they do not handle."""
        spec = self.spec
        saved = self.unpacked(create_graph) if spec.saves_tensors else self._saved
        vjps = spec.tensor_vjps if create_graph else spec.array_vjps
        # Several outputs (split): the list of their gradients, None for those that got none.
        grad = grads if spec.multi_output else grads[0]
        if spec.variadic:
            pieces = vjps[0](grad, *saved)
            return [
                p if edge[0] is not None else None for p, edge in zip(pieces, self.next_functions)
            ]
        if len(vjps) == 1:  # one input, so it has an edge: it is why this node exists
            return [vjps[0](grad, *saved)]
        if create_graph and spec.create_graph_order is not None:
            return self._apply_in_order(spec.create_graph_order, vjps, grad, saved)
        if len(vjps) == 2:  # binary ops, the most common: the loop below, unrolled
            (first, _), (second, _) = self.next_functions
            first_vjp, second_vjp = vjps
            return [
                None if first is None or first_vjp is None else first_vjp(grad, *saved),
                None if second is None or second_vjp is None else second_vjp(grad, *saved),
            ]
        # Only inputs with an edge (inputs that need a gradient) get their formula run.
        return [
            None if edge[0] is None or vjp is None else vjp(grad, *saved)
            for vjp, edge in zip(vjps, self.next_functions)
        ]

    apply = apply_formulas

    def _apply_in_order(self, order, vjps, grad, saved):
        """The gradients of the inputs, computed in ``order`` (PyTorch's, by input name)."""
        outputs = [None] * len(vjps)
        for i in order:
            if self.next_functions[i][0] is not None and vjps[i] is not None:
                outputs[i] = vjps[i](grad, *saved)
        return outputs

    def release_saved(self):
        saved = self._saved
        spec = self.spec
        for p in spec.buffer_positions:
            value = saved[p]
            # A saved tensor is by far the most common buffer: tested here, without a call.
            # A Python number saved as an operand is freed too.
            if (
                type(value) is SavedTensor
                or _is_buffer(value)
                or (value is not None and p in spec.operand_positions)
            ):
                saved[p] = FREED

    def _read_saved(self, position):
        value = self._saved[position]
        if value is FREED:
            raise RuntimeError(errors.BACKWARD_TWICE)
        if type(value) is SavedTensor:
            value.check_version(self)
            return self._tensor_of(value)
        if type(value) is PackedSavedTensor:
            return value.unpack(self)
        name = self.spec.saves[position]
        if name in self.spec.inputs and isinstance(value, (int, float, bool)):
            # A Python number used as an operand is shown as the 0-dim tensor PyTorch wraps it
            # in: float64 for a float, int64 for an int, whatever the default dtype.
            from nbgrad.autograd.tensor import Tensor

            return Tensor._make(np.asarray(value, np.float64 if type(value) is float else None))
        return _as_shown(value)


def saved_output_tensor(saved, node):
    """A saved output read back: a tensor on its data, output ``output_nr`` of ``node``."""
    from nbgrad.autograd.tensor import Tensor

    tensor = Tensor._make(saved.data, saved.requires_grad, node if saved.requires_grad else None)
    tensor._output_nr = saved.output_nr
    return tensor


def _as_shown(value):
    """Saved index arrays read back as tensors, and full slices as None, as PyTorch shows them."""
    from nbgrad.autograd.tensor import Tensor

    if isinstance(value, np.ndarray):
        return Tensor._make(value)
    if isinstance(value, tuple) and any(isinstance(v, (np.ndarray, slice)) for v in value):
        return tuple(
            None if isinstance(v, slice) and v == slice(None) else _as_shown(v) for v in value
        )
    return value


def _saved_property(position, name):
    def get(node):
        if node._saved is None:
            return None
        return node._read_saved(position)

    get.__name__ = f"_saved_{name}"
    return property(get, doc=f"What backward saved as ``{name}`` (None if it was not needed).")


# Nodes PyTorch writes by hand in C++: their ``name()`` carries the C++ namespace, as in
# PyTorch, though their class name (and repr) does not.
HAND_WRITTEN_NODES = {"CopySlices", "CopyBackwards", "AccumulateGrad"}


def _namespaced_name(node):
    return f"torch::autograd::{type(node).__name__}"


def node_class_for(spec):
    """The grad_fn class of a table op: named as PyTorch names it, with its ``_saved_*``."""
    # Module "builtins" makes the default repr read ``<MulBackward0 object at 0x...>``, as
    # PyTorch's C++ nodes do.
    attributes = {"__slots__": (), "spec": spec, "__module__": "builtins"}
    if spec.multi_output:  # how many outputs, and their shapes and dtypes, vary per node
        attributes["__slots__"] = ("num_outputs", "_output_meta")
        # As PyTorch's formulas do, these see an output's missing gradient as None.
        attributes["takes_missing_grads"] = True
    if spec.node in HAND_WRITTEN_NODES:
        attributes["name"] = _namespaced_name
    from nbgrad.autograd.plain_backward import compile_apply

    apply = compile_apply(spec) if FAST_PATHS else None
    if apply is not None:
        attributes["apply"] = apply
    for position, name in spec.shown_saves:
        attributes[f"_saved_{name}"] = _saved_property(position, name)
        if spec.save_sources[position][0] in ("input", "result"):
            attributes[f"_raw_saved_{name}"] = _raw_saved_property(position, name)
    return type(spec.node, (TableNode,), attributes)


def _raw_saved_property(position, name):
    def get(node):
        value = node._saved[position] if type(node._saved) in (list, tuple) else FREED
        # Only tensors have a raw form: a Python number saved as an operand, or nothing saved
        # because no formula needed it, reads as None.
        if value is None or (value is not FREED and not _is_saved_tensor(value)):
            return None
        return RawSavedTensor(node, position)

    get.__name__ = f"_raw_saved_{name}"
    return property(get, doc=f"The saved ``{name}`` itself, for ``register_hooks``.")


def _is_saved_tensor(value):
    return type(value) is SavedTensor or type(value) is PackedSavedTensor


LEAF_SEQUENCE_NR = 2**64 - 1


class AccumulateGrad(Node):
    """The node that adds an incoming gradient into a leaf's ``.grad``."""

    __slots__ = ("variable",)
    __module__ = "builtins"

    def name(self):
        return _namespaced_name(self)

    def __init__(self, variable):
        # PyTorch gives AccumulateGrad the largest sequence number: a ready leaf is served
        # before any other ready node.
        self._sequence_nr = LEAF_SEQUENCE_NR
        self._extras = None
        self.variable = variable
        self.next_functions = ()
        self._input_meta = ((variable._data.shape, variable._dtype),)

    def apply(self, grads, create_graph):
        # The engine adds the gradient into ``variable.grad`` itself: see accumulate_into_leaf.
        return []


class NotImplementedNode(Node):
    """PyTorch's grad_fn of a result whose op has no derivative (``x // 2``, ``2 % x``): the
    result requires grad, and a backward that reaches this node raises."""

    __slots__ = ("_op",)
    __module__ = "builtins"

    def __init__(self, op, inputs):
        # PyTorch's error nodes take no sequence number: they have AccumulateGrad's, the
        # largest, so a backward that reaches one raises before other ready nodes run
        self._sequence_nr = LEAF_SEQUENCE_NR
        self._extras = None
        self._op = op
        needing = [t for t in inputs if t._requires_grad]
        self.next_functions = tuple(edge_of(t) for t in needing)
        self._input_meta = tuple((t._data.shape, t._dtype) for t in needing)

    def name(self):
        return _namespaced_name(self)

    def apply(self, grads, create_graph):
        raise RuntimeError(f"derivative for aten::{self._op} is not implemented")


NotImplementedNode.__name__ = NotImplementedNode.__qualname__ = "NotImplemented"


def not_implemented_history(result, op, inputs):
    """Give ``result`` a NotImplemented grad_fn if any tensor of ``inputs`` needs grad."""
    from nbgrad.autograd import grad_mode
    from nbgrad.autograd.tensor import Tensor

    inputs = [t for t in inputs if isinstance(t, Tensor)]
    if grad_mode._enabled and any(t._requires_grad for t in inputs):
        result._grad_fn = NotImplementedNode(op, inputs)
        result._output_nr = 0
        result._requires_grad = True
    return result


def set_history(tensor, node):
    """``node`` becomes ``tensor``'s grad_fn (its output 0), as after an in-place write; a grad
    the tensor retains moves with it to the new node."""
    retains_grad = tensor._retains_grad
    if retains_grad:
        old = tensor._grad_fn
        if old is not None and old._extras is not None:
            old._extras.own("retains_grad").pop(tensor._output_nr, None)
    tensor._grad_fn = node
    tensor._output_nr = 0
    tensor._requires_grad = True
    if retains_grad:
        node._retain_grad_of(tensor)


def accumulator_of(tensor):
    """The leaf's AccumulateGrad, made on first use; kept alive only by the graphs that use it."""
    extras = tensor._extras  # read directly: this runs for every leaf input of a recorded op
    if extras is not None and extras.view is not None and extras.view.gradient_goes_nowhere:
        return None  # a view made in no_grad mode: its gradient has nowhere to go (views.py)
    ref = extras.accumulator if extras is not None else None
    node = ref() if ref is not None else None
    if node is None:
        # Made anew at every training step (the last step's graph, which kept it, is gone).
        node = AccumulateGrad(tensor)
        if extras is None:
            tensor._accumulator = weakref.ref(node)
        else:
            extras.accumulator = weakref.ref(node)
    return node


def edge_of(tensor):
    """The ``(node, input_nr)`` edge that a gradient for ``tensor`` travels along."""
    grad_fn = tensor.grad_fn  # the property: a view's history may be due for a refresh
    if grad_fn is not None:
        return (grad_fn, tensor._output_nr)
    if tensor._requires_grad:
        return (accumulator_of(tensor), 0)
    return (None, 0)
