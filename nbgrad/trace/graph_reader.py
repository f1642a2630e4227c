"""Reading a finished autograd graph into a Trace, for either engine: ``nbgrad.show(tensor)``.

The recorders (nbgrad.trace.recorder, torch_recorder) record a graph while code runs. This reads
the same kind of Trace after the fact, from what both engines show of a graph through PyTorch's
public API: ``grad_fn``, ``next_functions``, the ``_saved_*`` attributes,
``AccumulateGrad.variable`` and ``.grad``, as torchviz does. It knows no lines of code and no
backward log (nothing was watching), but it draws the same widget.

What differs between the engines (how to get a tensor's values, what identifies its memory, which
objects are tensors) is an ``EngineView``: ``nbgrad_view()`` below, ``torch_bridge.TORCH_VIEW``.
Everything else is written once here, and shared with the recorders: the formula entry of a
node (``formula_of``, ``note_formula``), what a node saved (``describe_saved``), the naming of
tensors found (the caller's variable names, else the node that holds them, numbered ``#2``
when repeated).
"""

from nbgrad.trace.readable import note_backward_source
from nbgrad.trace.trace import NodeRecord, TensorRecord, Trace
from nbgrad.trace.values import (
    DEFAULT_MAX_ELEMENTS,
    PACKED,
    Policy,
    dtype_name,
    keep_plain,
    snapshot,
)

MAX_GRAPH_NODES = 20_000


class EngineView:
    """How the reader sees one engine's objects.

    engine             ("nbgrad" or "torch", its version), for the Trace
    tensor_type        the engine's Tensor class
    array_of           tensor -> its values as a NumPy array (callers copy)
    storage_key        tensor -> what identifies its values across the Python objects that show
                       them (a saved tensor read back from a node is a new object on the same
                       memory)
    custom_node_type   the base class of custom ``autograd.Function`` nodes
    hooked             () -> whether ``saved_tensors_hooks`` are active (saved tensors are then
                       read only through the user's unpack hook: reported as PACKED, unread)
    plain              a saved non-tensor as plain Python (PyTorch's Size, dtype)
    """

    def __init__(
        self, engine, tensor_type, array_of, storage_key, custom_node_type, hooked, plain=None
    ):
        self.engine = engine
        self.tensor_type = tensor_type
        self.array_of = array_of
        self.storage_key = storage_key
        self.custom_node_type = custom_node_type
        self.hooked = hooked
        self.plain = plain or (lambda value: value)


# --- formulas: nbgrad's op table describes both engines' nodes -----------------------------------


def formula_entry(spec):
    """A table entry as a Trace's ``formulas`` holds it (and docs/trace-schema.md describes)."""
    return {
        "node": spec.node,
        "inputs": list(spec.inputs),
        "saves": list(spec.saves),
        "grads": dict(spec.grads),
    }


_ENTRIES_BY_NODE = None


def formula_of(name):
    """nbgrad's table entry for the node class ``name`` (nbgrad mirrors PyTorch's
    derivatives.yaml: same node names, same saved names), as (the op name that keys it, the
    entry as the trace's ``formulas`` holds it); None for a node the table does not have.
    Entries are shared by every trace: read them, never change them."""
    global _ENTRIES_BY_NODE
    if _ENTRIES_BY_NODE is None:
        from nbgrad.ops.derivatives import OPS

        _ENTRIES_BY_NODE = {}
        for spec in OPS.values():
            _ENTRIES_BY_NODE.setdefault(spec.node, (spec.name, formula_entry(spec)))
    return _ENTRIES_BY_NODE.get(name)


def note_formula(trace, record):
    """Give a node record its table entry (op name, inputs, formulas), if the table has one."""
    found = formula_of(record.name)
    if found is None:
        return
    op_name, entry = found
    entry = trace.formulas.setdefault(op_name, entry)
    record.op_name = op_name
    record.inputs = tuple(entry["inputs"])
    record.formulas = entry["grads"]


# --- what a node saved ----------------------------------------------------------------------------

_SAVED_ATTRIBUTES = {}  # node class -> ((name, "_saved_" + name), ...)


def _saved_attributes(node):
    """(name, "_saved_" + name) for what a node class saves (``self``, ``other``...), in the
    order nbgrad's table (and PyTorch's derivatives.yaml) lists them where the node is known,
    else alphabetical as ``dir`` gives them."""
    kind = type(node)
    found = _SAVED_ATTRIBUTES.get(kind)
    if found is None:
        prefix = "_saved_"
        names = [
            attribute[len(prefix) :] for attribute in dir(kind) if attribute.startswith(prefix)
        ]
        entry = formula_of(kind.__name__)
        if entry is not None:
            order = {name: i for i, name in enumerate(entry[1]["saves"])}
            names.sort(key=lambda name: order.get(name, len(order)))
        found = _SAVED_ATTRIBUTES[kind] = tuple((name, prefix + name) for name in names)
    return found


def read_saved(node, view):
    """(name, value) for what ``node`` saved for backward: ``_saved_self`` ... as both engines
    show them, and a custom Function's ``ctx.save_for_backward`` tensors as ``tensors[i]``.
    Returns None once backward has freed them. Under ``saved_tensors_hooks`` a saved tensor
    is reported as PACKED, unread (its unpack hook's side effects are the user's)."""
    hooked = view.hooked()
    try:
        if isinstance(node, view.custom_node_type):
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


_PLAIN_NUMBERS = (int, float, bool)


def describe_saved(record, node, tensor_record_for, policy, view):
    """Fill ``record.saved`` (and ``saved_tensors``) from what ``node`` saved.

    tensor_record_for(tensor)  the record of a saved tensor the trace knows, or None
    Returns None when the node's saved values were already freed, else whether it saved a
    tensor (which backward frees).
    """
    saved = read_saved(node, view)
    if saved is None:
        return None
    tensor_type = view.tensor_type
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
        elif isinstance(value, tensor_type):
            saved_a_tensor = True
            tensor_record = tensor_record_for(value)
            if tensor_record is not None and tensor_record.value is not None:
                record.saved_tensors[name] = tensor_record
                record.saved[name] = tensor_record.value
            else:
                record.saved[name] = snapshot(view.array_of(value), policy)
        elif isinstance(value, (tuple, list)) and any(isinstance(v, tensor_type) for v in value):
            record.saved[name] = tuple(
                snapshot(view.array_of(v), policy)
                if isinstance(v, tensor_type)
                else keep_plain(v, policy)
                for v in value
            )
        else:
            record.saved[name] = keep_plain(view.plain(value), policy)
    return saved_a_tensor


# --- walking a graph --------------------------------------------------------------------------

CUT = object()  # what known_record says of a node left out (a limit): its edge reads (None, nr)


def link_new_nodes(node, record, known_record, new_record):
    """Give ``record`` (of ``node``) its edges, following ``next_functions`` down to every node
    not yet recorded, iteratively (a graph can be deeper than Python's stack); the one walk of
    both the recorders and the reader.

    known_record(node)  its record, None when it is new, or CUT to leave it out
    new_record(node)    a record for a node met below another
    """
    pending = [(node, record)]
    while pending:
        current, current_record = pending.pop()
        edges = []
        for child, nr in current.next_functions:
            child_record = None if child is None else known_record(child)
            if child_record is CUT:
                child_record = child = None
            if child is None:
                edges.append((None, nr))
                continue
            if child_record is None:
                child_record = new_record(child)
                pending.append((child, child_record))
            edges.append((child_record, nr))
        current_record.next = tuple(edges)
    return record


# --- the graph behind a tensor ----------------------------------------------------------------


class GraphReader:
    """Builds tensor and node records from a graph an engine has already made."""

    def __init__(self, view, names, policy):
        self.view = view
        self.names = names  # id(tensor) -> variable name
        self.policy = policy
        self.trace = Trace(policy=policy, source_kind="graph", engine=view.engine)
        self.records = {}  # id(tensor) -> TensorRecord
        self.by_storage = {}  # storage_key -> TensorRecord
        self.nodes = {}  # id(node) -> NodeRecord
        self.keep = []  # the objects read, so that their ids stay theirs while building

    def tensor(self, tensor, fallback):
        record = self.records.get(id(tensor))
        if record is not None:
            return record
        data = self.view.array_of(tensor)
        record = TensorRecord(
            f"t{len(self.records)}",
            tuple(data.shape),
            dtype_name(data.dtype),
            bool(tensor.requires_grad),
            tensor.grad_fn is None,
            0 if tensor.is_inference() else tensor._version,  # inference tensors have none
            snapshot(data, self.policy),
        )
        name = self.names.get(id(tensor))
        record.name = name or fallback
        record.named_by = "variable" if name else "anonymous"
        grad = tensor.grad if tensor.is_leaf or tensor.retains_grad else None
        if grad is not None:
            record.grad = snapshot(self.view.array_of(grad), self.policy)
        if tensor.grad_fn is not None:
            record.role = "intermediate"
        else:
            record.role = "leaf" if tensor.requires_grad else "constant"
        self.records[id(tensor)] = record
        self.by_storage.setdefault(self.view.storage_key(tensor), record)
        self.trace.tensors[record.id] = record
        self.keep.append(tensor)
        if tensor.grad_fn is not None:
            record.grad_fn = self.node(tensor.grad_fn)
            record.output_nr = tensor.output_nr
        return record

    def saved_tensor(self, tensor, fallback):
        known = self.records.get(id(tensor)) or self.by_storage.get(self.view.storage_key(tensor))
        return known if known is not None else self.tensor(tensor, fallback)

    def node(self, node):
        record = self.nodes.get(id(node))
        if record is not None:
            return record
        return link_new_nodes(node, self._new_node(node), self._known_child, self._new_node)

    def _known_child(self, node):
        record = self.nodes.get(id(node))
        if record is None and len(self.nodes) >= MAX_GRAPH_NODES:
            self.trace.truncated = f"the graph has more than {MAX_GRAPH_NODES} nodes"
            return CUT
        return record

    def _new_node(self, node):
        record = NodeRecord(f"n{len(self.nodes)}", type(node).__name__)
        self.nodes[id(node)] = record
        self.keep.append(node)
        self.trace.nodes.append(record)
        note_backward_source(self.trace, node)
        variable = getattr(node, "variable", None)
        if isinstance(variable, self.view.tensor_type):
            record.variable = self.tensor(variable, "leaf")
            return record
        record.observed = False  # nothing watched it being made: no op, no line
        note_formula(self.trace, record)
        saved_a_tensor = describe_saved(
            record,
            node,
            lambda t: self.saved_tensor(t, f"saved by {record.name}"),
            self.policy,
            self.view,
        )
        if saved_a_tensor is None:  # freed by a backward without retain_graph
            record.freed_at = -1
        return record


def read_graph(tensor, view, names=None, max_elements=DEFAULT_MAX_ELEMENTS):
    """A Trace of the graph behind ``tensor``: its ``grad_fn`` and every node below it, with what
    each node saved, each leaf's value and ``.grad``, and nbgrad's formula for each node the
    table has.

    names         variable name -> object (the caller's namespace), to name the tensors found
    max_elements  arrays with more elements are kept as statistics and a preview
    """
    named = {}
    for name, value in (names or {}).items():
        if isinstance(value, view.tensor_type) and not name.startswith("_"):
            named.setdefault(id(value), name)
    reader = GraphReader(view, named, Policy(max_elements=max_elements))
    root = reader.tensor(tensor, "output")
    if tensor.grad_fn is not None:
        root.role = "output"
    trace = reader.trace
    _unique_names(trace)
    trace.complete = True
    return trace


def _unique_names(trace):
    """Key the tensors by name, numbering repeated names (``saved by MulBackward0#2``), as the
    recorders number them (nbgrad.trace.naming)."""
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


# --- nbgrad's engine -------------------------------------------------------------------------


def nbgrad_view():
    import nbgrad
    from nbgrad.autograd import function, node

    def array_of(tensor):
        return tensor.detach().numpy()

    def storage_key(tensor):
        array = array_of(tensor)
        return (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype)

    return EngineView(
        ("nbgrad", nbgrad.__version__),
        nbgrad.Tensor,
        array_of,
        storage_key,
        function.BackwardCFunction,
        lambda: bool(node.saved_tensors_hook_stack),
    )


def trace_of_tensor(tensor, names=None, max_elements=DEFAULT_MAX_ELEMENTS):
    """A Trace of the graph behind an nbgrad tensor (see ``read_graph``)."""
    return read_graph(tensor, nbgrad_view(), names, max_elements)
