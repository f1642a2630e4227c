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

from nbgrad.trace.readable import note_backward_source
from nbgrad.trace.trace import NodeRecord, TensorRecord, Trace
from nbgrad.trace.values import PACKED, Policy, dtype_name, keep_plain, snapshot

SUPPORTED_VERSIONS = "2.3 or later (tested: 2.13.0)"
ENGINE = ("torch", torch.__version__)
MAX_GRAPH_NODES = 20_000

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
    """Other tensors: on another device, bfloat16, quantized, sparse."""
    data = tensor.detach()
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


# --- what a node saved ----------------------------------------------------------------------------

_SAVED_NAMES = {}  # node class -> its saved names, without the "_saved_" prefix


def saved_names(node):
    """The names of what a node class saves (``self``, ``other``, ``result``...), in the order
    nbgrad's table (and PyTorch's derivatives.yaml) lists them where the node is known, else
    alphabetical as ``dir`` gives them."""
    kind = type(node)
    names = _SAVED_NAMES.get(kind)
    if names is None:
        prefix = "_saved_"
        names = [
            attribute[len(prefix) :] for attribute in dir(kind) if attribute.startswith(prefix)
        ]
        found = formula_of(kind.__name__)
        if found is not None:
            order = {name: i for i, name in enumerate(found[1]["saves"])}
            names.sort(key=lambda name: order.get(name, len(order)))
        names = _SAVED_NAMES[kind] = tuple(names)
    return names


_SAVED_ATTRIBUTES = {}  # node class -> ((name, "_saved_" + name), ...)


def _saved_attributes(node):
    found = _SAVED_ATTRIBUTES.get(type(node))
    if found is None:
        found = _SAVED_ATTRIBUTES[type(node)] = tuple(
            (name, "_saved_" + name) for name in saved_names(node)
        )
    return found


def read_saved(node):
    """(name, value) for what ``node`` saved for backward: ``_saved_self`` ... as PyTorch shows
    them, and a custom Function's ``ctx.save_for_backward`` tensors as ``tensors[i]``. Returns
    None once backward has freed them.

    Under ``saved_tensors_hooks`` a saved tensor is read only through the user's unpack hook,
    whose side effects (a print, a file deleted) recording must not add to: such tensors are
    reported as PACKED, unread."""
    hooked = _top_saved_tensors_hooks(False) is not None
    try:
        if is_custom_function_node(node):
            if hooked:
                return [(f"tensors[{i}]", PACKED) for i in range(len(node._raw_saved_tensors))]
            return [(f"tensors[{i}]", t) for i, t in enumerate(node.saved_tensors)]
        return [
            (name, PACKED)
            if hooked and getattr(node, "_raw" + attribute, None) is not None
            else (name, getattr(node, attribute))
            for name, attribute in _saved_attributes(node)
        ]
    except RuntimeError:  # "Trying to backward through the graph a second time..."
        return None


_top_saved_tensors_hooks = torch._C._autograd._top_saved_tensors_default_hooks


def describe_saved(record, node, tensor_record_for, policy):
    """Fill ``record.saved`` (and ``saved_tensors``) from what ``node`` saved.

    tensor_record_for(tensor)  the record of a saved tensor the trace knows, or None
    Returns None when the node's saved values were already freed, else whether it saved a
    tensor (which backward frees).
    """
    saved = read_saved(node)
    if saved is None:
        return None
    saved_a_tensor = False
    for name, value in saved:
        if value is None:  # not saved: the input it is for needs no gradient
            continue
        if value is PACKED:
            saved_a_tensor = True
            record.saved[name] = PACKED
            continue
        kind = type(value)
        if kind in _PLAIN_NUMBERS or (kind is tuple and all(type(v) is int for v in value)):
            record.saved[name] = value  # a number, a size or strides: kept as they are
        elif isinstance(value, torch.Tensor):
            saved_a_tensor = True
            tensor_record = tensor_record_for(value)
            if tensor_record is not None and tensor_record.value is not None:
                record.saved_tensors[name] = tensor_record
                record.saved[name] = tensor_record.value
            else:
                record.saved[name] = snapshot(array_of(value), policy)
        elif isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value):
            record.saved[name] = tuple(
                snapshot(array_of(v), policy)
                if isinstance(v, torch.Tensor)
                else keep_plain(v, policy)
                for v in value
            )
        else:
            record.saved[name] = keep_plain(_plain(value), policy)
    return saved_a_tensor


_PLAIN_NUMBERS = (int, float, bool)


def _plain(value):
    """PyTorch's saved non-tensors as plain Python: a Size is a tuple, a dtype its name."""
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    return value


# --- formulas: nbgrad's op table describes PyTorch's nodes ---------------------------------------

_FORMULAS_BY_NODE = None


def formula_of(name):
    """nbgrad's table entry for the node class ``name`` (nbgrad mirrors PyTorch's
    derivatives.yaml: same node names, same saved names), as (the op name that keys it, the
    entry as the trace's ``formulas`` holds it); None for a node nbgrad does not have. Entries
    are shared by every trace: read them, never change them."""
    global _FORMULAS_BY_NODE
    if _FORMULAS_BY_NODE is None:
        from nbgrad.ops.derivatives import OPS

        _FORMULAS_BY_NODE = {}
        for spec in OPS.values():
            if spec.node not in _FORMULAS_BY_NODE:
                entry = {
                    "node": spec.node,
                    "inputs": list(spec.inputs),
                    "saves": list(spec.saves),
                    "grads": dict(spec.grads),
                }
                _FORMULAS_BY_NODE[spec.node] = (spec.name, entry)
    return _FORMULAS_BY_NODE.get(name)


def note_formula(trace, record):
    found = formula_of(record.name)
    if found is None:
        return
    op_name, entry = found
    entry = trace.formulas.setdefault(op_name, entry)
    record.op_name = op_name
    record.inputs = tuple(entry["inputs"])
    record.formulas = entry["grads"]


# --- the graph behind a tensor, after the fact ---------------------------------------------------


class _GraphReader:
    """Builds tensor and node records from a graph PyTorch has already made."""

    def __init__(self, names, policy):
        self.names = names  # id(tensor) -> variable name
        self.policy = policy
        self.trace = Trace(policy=policy, source_kind="graph", engine=ENGINE)
        self.records = {}  # id(tensor) -> TensorRecord
        self.by_storage = {}  # storage_key -> TensorRecord
        self.nodes = {}  # id(node) -> NodeRecord
        self.keep = []  # the objects read, so that their ids stay theirs while building

    def tensor(self, tensor, fallback):
        record = self.records.get(id(tensor))
        if record is not None:
            return record
        data = array_of(tensor)
        record = TensorRecord(
            f"t{len(self.records)}",
            tuple(data.shape),
            dtype_name(data.dtype),
            bool(tensor.requires_grad),
            tensor.grad_fn is None,
            tensor._version,
            snapshot(data, self.policy),
        )
        name = self.names.get(id(tensor))
        record.name = name or fallback
        record.named_by = "variable" if name else "anonymous"
        grad = tensor.grad if tensor.is_leaf or tensor.retains_grad else None
        if grad is not None:
            record.grad = snapshot(array_of(grad), self.policy)
        record.role = (
            "intermediate"
            if tensor.grad_fn is not None
            else ("leaf" if tensor.requires_grad else "constant")
        )
        self.records[id(tensor)] = record
        self.by_storage.setdefault(storage_key(tensor), record)
        self.trace.tensors[record.id] = record
        self.keep.append(tensor)
        if tensor.grad_fn is not None:
            record.grad_fn = self.node(tensor.grad_fn)
            record.output_nr = tensor.output_nr
        return record

    def saved_tensor(self, tensor, fallback):
        known = self.records.get(id(tensor)) or self.by_storage.get(storage_key(tensor))
        return known if known is not None else self.tensor(tensor, fallback)

    def node(self, node):
        record = self.nodes.get(id(node))
        if record is not None:
            return record
        record = self._new_node(node)
        pending = [(node, record)]
        while pending:
            current, current_record = pending.pop()
            edges = []
            for child, nr in current.next_functions:
                if child is None:
                    edges.append((None, nr))
                    continue
                child_record = self.nodes.get(id(child))
                if child_record is None:
                    if len(self.nodes) >= MAX_GRAPH_NODES:
                        self.trace.truncated = f"the graph has more than {MAX_GRAPH_NODES} nodes"
                        edges.append((None, nr))
                        continue
                    child_record = self._new_node(child)
                    pending.append((child, child_record))
                edges.append((child_record, nr))
            current_record.next = tuple(edges)
        return record

    def _new_node(self, node):
        record = NodeRecord(f"n{len(self.nodes)}", node_name(node))
        self.nodes[id(node)] = record
        self.keep.append(node)
        self.trace.nodes.append(record)
        note_backward_source(self.trace, node)
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            record.variable = self.tensor(variable, "leaf")
            return record
        record.observed = False  # nothing watched it being made: no op, no line
        note_formula(self.trace, record)
        saved_a_tensor = describe_saved(
            record,
            node,
            lambda t: self.saved_tensor(t, f"saved by {record.name}"),
            self.policy,
        )
        if saved_a_tensor is None:  # freed by a backward without retain_graph
            record.freed_at = -1
        return record


def trace_of_torch_tensor(tensor, names=None, max_elements=1024):
    """A Trace of the graph behind a PyTorch tensor: its ``grad_fn`` and every node below it,
    with what each node saved, each leaf's value and ``.grad``, and nbgrad's formula for each
    node PyTorch and nbgrad share.

    names         variable name -> object (the caller's namespace), to name the tensors found
    max_elements  arrays with more elements are kept as statistics and a preview
    """
    named = {}
    for name, value in (names or {}).items():
        if isinstance(value, torch.Tensor) and not name.startswith("_"):
            named.setdefault(id(value), name)
    reader = _GraphReader(named, Policy(max_elements=max_elements))
    # Reading the graph runs torch functions (detach, numpy): no mode of the user's may see them.
    with torch._C.DisableTorchFunction():
        root = reader.tensor(tensor, "output")
    if tensor.grad_fn is not None:
        root.role = "output"
    trace = reader.trace
    _unique_names(trace)
    trace.complete = True
    return trace


def _unique_names(trace):
    """Key the tensors by name, numbering repeated names (``saved by MulBackward0#2``)."""
    counts = {}
    for record in trace.tensors.values():
        counts[record.name] = counts.get(record.name, 0) + 1
    seen = {}
    named = {}
    for record in trace.tensors.values():
        base = record.name
        if counts[base] > 1:
            seen[base] = seen.get(base, 0) + 1
            record.name = f"{base}#{seen[base]}"
        named[record.name] = record
    trace.tensors = named
