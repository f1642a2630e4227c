"""A Trace of the graph behind one tensor, for ``nbgrad.show(tensor)``.

The recorder (nbgrad.trace) records a graph while code runs. This builds the same kind of Trace
after the fact from what PyTorch's public API shows of a graph: ``grad_fn``,
``next_functions``, the ``_saved_*`` attributes, ``AccumulateGrad.variable`` and ``.grad``. It
knows no lines of code and no backward log (nothing was watching), but it draws the same
widget. Names come from the namespace that asked (``a``, ``e``), else from the node that holds
the tensor (``saved self of MulBackward0``).
"""

import numpy as np

from nbgrad.trace import NodeRecord, Policy, TensorRecord, Trace
from nbgrad.trace.readable import note_backward_source
from nbgrad.trace.values import keep_plain, snapshot

MAX_NODES = 20_000


def _array(tensor):
    return np.asarray(tensor.detach().numpy())


class _Builder:
    def __init__(self, names, policy):
        self.names = names  # id(tensor) -> variable name
        self.policy = policy
        self.trace = Trace(name=None, policy=policy, source_kind="graph")
        self.records = {}  # id(tensor) -> TensorRecord
        self.nodes = {}  # id(node) -> NodeRecord
        self._keep = []  # the tensors recorded, so their ids stay unique while building

    def tensor(self, tensor, fallback):
        record = self.records.get(id(tensor))
        if record is not None:
            return record
        data = _array(tensor)
        record = TensorRecord(
            f"t{len(self.records)}",
            tuple(data.shape),
            data.dtype.name,
            bool(tensor.requires_grad),
            bool(tensor.is_leaf),
            0,
            snapshot(data, self.policy),
        )
        name = self.names.get(id(tensor))
        record.named_by = "variable" if name else "anonymous"
        record.name = self._unique(name or fallback)
        grad = tensor.grad if tensor.is_leaf or getattr(tensor, "retains_grad", False) else None
        record.grad = snapshot(_array(grad), self.policy) if grad is not None else None
        if tensor.grad_fn is None:
            record.role = "leaf" if tensor.requires_grad else "constant"
        else:
            record.role = "intermediate"
        self.records[id(tensor)] = record
        self.trace.tensors[record.name] = record
        self._keep.append(tensor)
        return record

    def _unique(self, name):
        taken = self.trace.tensors
        if name not in taken:
            return name
        n = 2
        while f"{name} ({n})" in taken:
            n += 1
        return f"{name} ({n})"

    def node(self, node):
        record = self.nodes.get(id(node))
        if record is None:
            record = NodeRecord(f"n{len(self.nodes)}", type(node).__name__)
            self.nodes[id(node)] = record
            self.trace.nodes.append(record)
            pending = [(node, record)]
            while pending and len(self.nodes) <= MAX_NODES:
                current, current_record = pending.pop()
                edges = []
                for child, nr in current.next_functions:
                    if child is None:
                        edges.append((None, nr))
                        continue
                    child_record = self.nodes.get(id(child))
                    if child_record is None:
                        child_record = NodeRecord(f"n{len(self.nodes)}", type(child).__name__)
                        self.nodes[id(child)] = child_record
                        self.trace.nodes.append(child_record)
                        pending.append((child, child_record))
                    edges.append((child_record, nr))
                current_record.next = tuple(edges)
                self._describe(current, current_record)
        return record

    def _describe(self, node, record):
        note_backward_source(self.trace, node)
        variable = getattr(node, "variable", None)
        if record.name == "AccumulateGrad" and variable is not None:
            record.variable = self.tensor(variable, "leaf")
            return
        spec = getattr(type(node), "spec", None)
        if spec is None:  # a custom Function's node: no table entry
            return
        record.op_name = spec.name
        record.inputs = tuple(spec.inputs)
        entry = self.trace.formulas.setdefault(
            spec.name,
            {
                "node": spec.node,
                "inputs": list(spec.inputs),
                "saves": list(spec.saves),
                "grads": dict(spec.grads),
            },
        )
        record.formulas = entry["grads"]
        for _, name in spec.shown_saves:
            try:
                value = getattr(node, f"_saved_{name}")
            except RuntimeError:  # freed by a backward without retain_graph
                record.freed_at = -1
                continue
            if value is None:
                continue
            if hasattr(value, "grad_fn") and hasattr(value, "detach"):
                saved = self.tensor(value, f"saved {name} of {record.name}")
                record.saved_tensors[name] = saved
                record.saved[name] = saved.value
            else:
                record.saved[name] = keep_plain(value, self.policy)


def trace_of_tensor(tensor, names=None, max_elements=100):
    """A Trace of ``tensor``'s graph: its grad_fn and everything below it.

    names  variable name -> object, to name the tensors found (the caller's namespace)
    """
    policy = Policy(max_elements=max_elements, full=True)
    named = {}
    for name, value in (names or {}).items():
        if hasattr(value, "grad_fn") and hasattr(value, "detach") and not name.startswith("_"):
            named.setdefault(id(value), name)
    builder = _Builder(named, policy)
    root = builder.tensor(tensor, "output")
    if tensor.grad_fn is not None:
        root.role = "output"
        root.grad_fn = builder.node(tensor.grad_fn)
    # saved tensors that are results of nodes of this graph get that node as their grad_fn
    for record_id, record in list(builder.records.items()):
        source = next((t for t in builder._keep if id(t) == record_id), None)
        if source is not None and source.grad_fn is not None and record.grad_fn is None:
            record.grad_fn = builder.nodes.get(id(source.grad_fn))
    trace = builder.trace
    trace.complete = True
    if len(builder.nodes) > MAX_NODES:
        trace.truncated = f"the graph has more than {MAX_NODES} nodes"
    return trace
