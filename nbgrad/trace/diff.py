"""What changed between two recordings of a cell: ``nbgrad.diff(trace_a, trace_b)``.

    before = ... a Trace (a %%autograd cell, a record() block, nbgrad's engine or PyTorch's)
    after = ...  another one
    d = nbgrad.diff(before, after, labels=("sigmoid", "relu"))
    d                   # in a notebook: one graph, coloured by what changed, with its legend
    d.removed           # records only in before; d.added: only in after
    d.changed           # records in both whose values or gradients differ, largest first
    d.same              # records in both, equal within the tolerance

Which records are "the same" in both (the matching rule, in this order):

1. **Tensors by name**: ``w`` in one trace is ``w`` in the other (names come from the
   program's variables, so both engines name them alike).
2. **Backward nodes by structure**, twice:
   - from the leaves up: an ``AccumulateGrad`` matches the one of the same-named leaf, and a
     node matches a node of the same class whose inputs (``next_functions``) all match, in
     order. Whatever is unchanged below an edit is found this way.
   - from the losses down: the roots of the i-th backward pass match when their classes are
     equal, as do the grad_fns of two matched tensors; below a matched pair, the nodes on the
     same input slot match when their classes are equal. This finds what is unchanged above an
     edit (the loss above a changed activation) and nodes whose leaves were renamed
     (``torch_model.fc1.weight`` against ``nbgrad_model.fc1.weight``).
   A node of another class on the same slot (``SigmoidBackward0`` where ``ReluBackward0`` was)
   is not the same node: one is only in A, the other only in B.
3. **Tensors by position**, for those whose names did not match: a tensor whose grad_fn (same
   output number) or ``AccumulateGrad`` matched is the same as the other side's tensor there.
4. **Ops** (the forward pass): an op matches the op that made the matching node (also under
   another name: nbgrad records ``x @ w`` as ``mm``, PyTorch as ``matmul``), else the op of the
   same name whose outputs all match. Below two matched ops, input tensors that matched nothing
   else are the same: on the same slot for ops of the same name (``x_torch``, ``x_nbgrad``),
   by shape, when it is unique, for ops named differently (nbgrad's ``addmm(bias, x, t(w))``
   against PyTorch's ``linear(x, w, bias)``).
5. **What one engine did not see**: an op or tensor only in one trace whose node is in both,
   where the other engine made that node inside another call without recording an op for it
   (PyTorch's ``linear`` makes its ``TBackward0`` unseen; nbgrad records the ``t`` op), counts
   as the same: it is a difference in what was recorded, not in the program.

Two matched records **differ** when one of the numbers they carry does (tensors: value and
grad; backward nodes: the gradients each of their steps received and sent, and what they saved
that is not a tensor; ops: their number arguments and outputs' values), beyond a tolerance
like ``torch.testing.assert_close``'s: ``|a - b| > atol + rtol * |b|`` for some element, with
(rtol, atol) by dtype unless given (float32: 1.3e-6, 1e-5; float64: 1e-7, 1e-7; float16:
1e-3, 1e-5; bfloat16: 1.6e-2, 1e-5). NaN equals NaN, an infinity the same infinity; a number
argument is compared only when both recorders kept it (nbgrad's keeps the exponent of ``x ** 2``
out of the op's inputs). An array kept only as statistics (over
``max_elements``) is compared by its min, max, mean and std. The largest difference of a record
is the largest ``|a - b|`` over what it carries.

The widget draws one merged trace (the schema of docs/trace-schema.md, with an optional
``"diff"`` key): A's records, the records only in B added with fresh ids, and per record its
status, what was compared, both sides' values and the edges only in one of them.
"""

import json
import math
from types import SimpleNamespace

import numpy as np

from nbgrad.trace.values import ArraySummary, plain_json, value_json

# assert_close's defaults: (rtol, atol) by dtype; anything else compares as float64
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}
# the values the "diff" key carries for the inspector: arrays up to this many elements written
# out (as in the "inline" and "apart" forms); a larger one kept whole by its recording as its
# statistics, a preview and a buffer id "D3" (fetched from the DiffResult when inspected)
_INLINE_ELEMENTS = {"inline": 100, "apart": 16, "carried": 16}
STATUSES = ("a", "b", "differs", "same")  # only in A, only in B, in both and differing, equal


class DiffEntry:
    """One record of either trace, as the diff sees it.

    kind        "tensor", "op" or "node"
    name        what it is called (a tensor's name, an op's name, a node's class name; an
                AccumulateGrad says whose: ``AccumulateGrad(w)``)
    status      "a" (only in A), "b" (only in B), "differs" or "same"
    a, b        its record in each trace (a TensorRecord, OpRecord or NodeRecord), or None
    what        what differs most ("value", "grad", "gradient in", "gradient out 1",
                "saved other", "output", ...), or None
    difference  the largest |a - b| over what it carries (``math.inf`` when a side lacks a
                value or the shapes differ), 0.0 when equal, None when only in one trace
    compared    (what, value in A, value in B, largest |a - b|, differs) for each quantity
    unobserved  for an op or tensor that only one engine recorded because the other ran it
                inside another call (PyTorch's ``linear`` makes its TBackward0 unseen): the
                other side's node; the entry is then "same"
    """

    __slots__ = (
        "kind",
        "name",
        "status",
        "a",
        "b",
        "what",
        "difference",
        "compared",
        "id",
        "unobserved",
    )

    def __init__(self, kind, name, status, a, b):
        self.kind = kind
        self.name = name
        self.status = status
        self.a = a
        self.b = b
        self.what = None
        self.difference = None
        self.compared = []
        self.id = None  # its id in the merged trace the widget draws (A's id, if in A)
        # only in one trace because the other engine made its node inside another call (the
        # node, in both, is that other side's): counted as the same
        self.unobserved = None

    def __repr__(self):
        if self.status in ("a", "b"):
            return f"<DiffEntry {self.kind} {self.name!r}: only in {self.status.upper()}>"
        return (
            f"<DiffEntry {self.kind} {self.name!r}: {self.status}, "
            f"largest difference {_number(self.difference)} in {self.what}>"
        )


class DiffResult:
    """The differences between two traces (see this module's docstring for the rules).

    removed     DiffEntries only in A (before), in A's order
    added       DiffEntries only in B (after), in B's order
    changed     DiffEntries in both whose values or grads differ, largest difference first
    same        DiffEntries in both, equal within the tolerance
    edges_removed, edges_added   (view, from name, to name, slot) of the edges only in A / B
    labels      what A and B are called ("A", "B" unless given; the engines' names when they
                differ and no names were given)

    In a notebook it shows as the graph widget drawing both (``widget`` is that widget;
    ``save_html(path)`` writes it to a file); ``entry(name)`` finds one record's entry.
    """

    def __init__(self, trace_a, trace_b, labels=None, rtol=None, atol=None):
        for name, trace in (("trace_a", trace_a), ("trace_b", trace_b)):
            if not hasattr(trace, "tensors") or not hasattr(trace, "backward_steps"):
                raise TypeError(
                    f"nbgrad.diff compares two recorded traces (a %%autograd cell's trace, "
                    f"nbgrad.record()'s, nbgrad.last_trace()); {name} is a "
                    f"{type(trace).__name__}"
                )
        if (rtol is None) != (atol is None):
            raise ValueError("give both rtol and atol, or neither (then they follow the dtype)")
        if rtol is not None and (rtol < 0 or atol < 0):
            raise ValueError(f"rtol and atol must be at least 0, got {rtol} and {atol}")
        self.trace_a, self.trace_b = trace_a, trace_b
        self.labels = _labels(trace_a, trace_b, labels)
        self.tolerance = None if rtol is None else (float(rtol), float(atol))
        self._widget = None
        self._buffers = {}  # "D3" -> a whole array the "diff" key refers to
        self._buffer_ids = {}  # id(array) -> its "D" id
        matching = _Matching(trace_a, trace_b)
        self._match = matching
        self.entries = _entries(matching, self._close)
        for entry in self.entries:
            if entry.unobserved is not None and entry.status in ("a", "b"):
                entry.status = "same"
        self.removed = [e for e in self.entries if e.status == "a"]
        self.added = [e for e in self.entries if e.status == "b"]
        self.changed = sorted(
            (e for e in self.entries if e.status == "differs"), key=lambda e: -e.difference
        )
        self.same = [e for e in self.entries if e.status == "same"]
        self._merged_ids = _merged_ids(matching, trace_a, trace_b)
        for entry in self.entries:
            if entry.a is None:
                entry.id = self._merged_ids[entry.b.id]
        self._edges = matching.edges()
        names_a, names_b = _names(trace_a), _names(trace_b)
        self.edges_removed = [_edge_names(e, names_a) for e in self._edges if e[4] == "a"]
        self.edges_added = [_edge_names(e, names_b) for e in self._edges if e[4] == "b"]

    # --- comparing numbers -------------------------------------------------------------------

    def _close(self, dtype):
        """(rtol, atol) for values of this dtype."""
        if self.tolerance is not None:
            return self.tolerance
        return TOLERANCES.get(str(dtype), TOLERANCES["float64"])

    # --- looking things up -------------------------------------------------------------------

    def entry(self, name, kind=None):
        """The entry of the record called ``name`` (a tensor's name, an op's or a node's class
        name, ``AccumulateGrad(w)``) in A, else in B; ``kind`` narrows it to "tensor", "op" or
        "node"."""
        for side in ("a", "b"):
            for e in self.entries:
                record = getattr(e, side)
                if record is None or (kind is not None and e.kind != kind):
                    continue
                if name == _name_of(e.kind, record):
                    return e
        raise KeyError(name)

    @property
    def identical(self):
        """True when nothing is only in one trace and nothing differs."""
        return not (self.removed or self.added or self.changed)

    # --- text --------------------------------------------------------------------------------

    def __repr__(self):
        a, b = self.labels
        return (
            f"<DiffResult {a} vs {b}: {len(self.removed)} only in {a}, {len(self.added)} only "
            f"in {b}, {len(self.changed)} differ, {len(self.same)} same>"
        )

    def summary(self):
        """The differences as text, one line per record that is not the same."""
        a, b = self.labels
        lines = [repr(self)]
        for label, trace in zip(self.labels, (self.trace_a, self.trace_b)):
            if trace.error:
                lines.append(f"  {label} stopped by {trace.error}: compared up to there")
            if trace.truncated:
                lines.append(f"  {label} was recorded in part ({trace.truncated})")
        if self.tolerance is not None:
            lines.append(f"  tolerance: rtol={self.tolerance[0]:g}, atol={self.tolerance[1]:g}")
        else:
            lines.append("  tolerance: by dtype, as torch.testing.assert_close")
        for title, entries in ((f"only in {a}", self.removed), (f"only in {b}", self.added)):
            if entries:
                lines.append(f"  {title}:")
                lines += [f"    {e.kind:6} {e.name}" for e in entries[:30]]
                if len(entries) > 30:
                    lines.append(f"    ... and {len(entries) - 30} more")
        if self.changed:
            lines.append("  differ (largest first):")
            for e in self.changed[:30]:
                lines.append(f"    {e.kind:6} {e.name:28} {_number(e.difference):>10} in {e.what}")
            if len(self.changed) > 30:
                lines.append(f"    ... and {len(self.changed) - 30} more")
        if self.identical:
            lines.append("  the same everywhere")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.summary() if not cycle else repr(self))

    # --- the widget --------------------------------------------------------------------------

    @property
    def widget(self):
        """The graph widget drawing both traces as one (made when first asked for)."""
        if self._widget is None:
            from nbgrad.widget import GraphWidget

            self._widget = GraphWidget(self)
        return self._widget

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def save_html(self, path, title=None):
        """Write the widget of this diff as one self-contained HTML file."""
        return self.widget.save_html(path, title=title or f"{self.labels[0]} vs {self.labels[1]}")

    # --- the merged trace (what GraphWidget reads: to_json, to_dict, buffer) -----------------

    def to_json(self, indent=None, values="inline"):
        """The merged trace as JSON text (docs/trace-schema.md, with the "diff" key)."""
        return json.dumps(self.to_dict(values), indent=indent)

    def to_dict(self, values="inline", carried=None):
        """The merged trace as JSON-ready data: A's records, B's that A has not (with fresh
        ids, their buffers' ids prefixed with "B"), and the "diff" key."""
        carried_b = None if carried is None else (lambda key, array: carried("B" + key, array))
        data = self.trace_a.to_dict(values, carried)
        data_b = _with_buffers_renamed(self.trace_b.to_dict(values, carried_b))
        return _merge(self, data, data_b, values, carried)

    def buffer(self, buffer_id):
        """A whole array of the merged trace by its buffer id (B's start with "B", those of
        the "diff" key's values with "D")."""
        if buffer_id.startswith("Bb"):
            return self.trace_b.buffer(buffer_id[1:])
        if buffer_id.startswith("D"):
            return self._buffers[buffer_id]
        return self.trace_a.buffer(buffer_id)

    def _value_json(self, value, values, carried):
        """One value of the "diff" key in the form ``values``: a small array written out, a
        larger kept one as its statistics, a preview and a "D" buffer id (or only its shape,
        dtype and id when ``carried`` takes its bytes), a summary as it is, anything else as
        plain JSON."""
        if value is None:
            return None
        if not isinstance(value, (np.ndarray, ArraySummary)):
            return plain_json(value, SimpleNamespace(inline_elements=_INLINE_ELEMENTS[values]))
        small = SimpleNamespace(inline_elements=_INLINE_ELEMENTS[values])
        if isinstance(value, ArraySummary) or value.size <= small.inline_elements:
            return value_json(value, small)
        key = self._buffer_ids.get(id(value))
        if key is None:
            key = self._buffer_ids[id(value)] = f"D{len(self._buffers)}"
            self._buffers[key] = value
        if carried is not None and carried(key, value):
            return {"shape": list(value.shape), "dtype": value.dtype.name, "buffer": key}
        return value_json(value, small, key)


def diff(trace_a, trace_b, *, labels=None, rtol=None, atol=None):
    """Compare two recordings of a cell (before and after an edit, or nbgrad's engine against
    PyTorch's): a DiffResult, shown in a notebook as one graph coloured by what changed.

    labels      what to call A and B in the widget and the text ("before", "after")
    rtol, atol  the tolerance (both or neither; by default by dtype, as assert_close)
    """
    if type(trace_a).__module__.split(".")[0] in ("torch", "nbgrad") and hasattr(
        trace_a, "grad_fn"
    ):
        raise TypeError(
            "nbgrad.diff compares two recorded traces (what %%autograd or nbgrad.record() "
            "made), not tensors; PyTorch's torch.diff (differences along a dimension) is not "
            "part of nbgrad"
        )
    return DiffResult(trace_a, trace_b, labels=labels, rtol=rtol, atol=atol)


# --- matching -----------------------------------------------------------------------------------


class _Matching:
    """The pairs of records that are the same in A and B (rules in the module's docstring):
    ``pair`` maps an id of A to an id of B and ``back`` the other way, for tensors, ops and
    nodes alike (their ids never collide: "t", "o", "n")."""

    def __init__(self, a, b):
        self.a, self.b = a, b
        self.pair, self.back = {}, {}
        self._tensors_by_name()
        self._nodes_from_leaves()
        self._nodes_from_roots()
        self._tensors_by_position()
        self._ops()

    def _join(self, record_a, record_b):
        if record_a.id in self.pair or record_b.id in self.back:
            return False
        self.pair[record_a.id] = record_b.id
        self.back[record_b.id] = record_a.id
        return True

    def partner(self, record):
        return self.pair.get(record.id)

    def _tensors_by_name(self):
        for name, tensor in self.a.tensors.items():
            other = self.b.tensors.get(name)
            if other is not None:
                self._join(tensor, other)

    def _nodes_from_leaves(self):
        # each node's structural key: its class and its inputs' keys, in order; the same key
        # in both traces is the same subgraph (repeated subgraphs pair up in order)
        numbers = {}  # one table for both traces: equal structures get equal numbers
        keys_a = _structural_keys(self.a, numbers)
        keys_b = _structural_keys(self.b, numbers)
        waiting = {}
        for node in self.b.nodes:
            waiting.setdefault(keys_b[node.id], []).append(node)
        for node in self.a.nodes:
            candidates = waiting.get(keys_a[node.id])
            if candidates:
                self._join(node, candidates.pop(0))

    def _nodes_from_roots(self):
        starts = []
        for pass_a, pass_b in zip(self.a.passes, self.b.passes):
            starts += [(ra[0], rb[0]) for ra, rb in zip(pass_a.roots, pass_b.roots)]
        tensors_b = {t.id: t for t in self.b.tensors.values()}
        for tensor in self.a.tensors.values():
            other_id = self.pair.get(tensor.id)
            if other_id is not None and tensor.grad_fn is not None:
                starts.append((tensor.grad_fn, tensors_b[other_id].grad_fn))
        todo = [(x, y) for x, y in starts if x is not None and y is not None]
        seen = set()
        while todo:
            node_a, node_b = todo.pop()
            if (node_a.id, node_b.id) in seen or node_a.name != node_b.name:
                continue
            seen.add((node_a.id, node_b.id))
            paired_a, paired_b = self.pair.get(node_a.id), self.back.get(node_b.id)
            if paired_a is None and paired_b is None:
                self._join(node_a, node_b)
            elif paired_a != node_b.id:
                continue  # one of them is matched to another node already
            for (child_a, _), (child_b, _) in zip(node_a.next, node_b.next):
                if child_a is not None and child_b is not None:
                    todo.append((child_a, child_b))

    def _tensors_by_position(self):
        nodes_b = {n.id: n for n in self.b.nodes}
        made_by = {}  # (B node id, output_nr) -> B tensor; B's AccumulateGrad id -> its leaf
        for tensor in self.b.tensors.values():
            if tensor.grad_fn is not None:
                made_by.setdefault((tensor.grad_fn.id, tensor.output_nr), tensor)
        for node in nodes_b.values():
            if node.variable is not None:
                made_by.setdefault((node.id, "leaf"), node.variable)
        for node in self.a.nodes:
            other = self.pair.get(node.id)
            if other is not None and node.variable is not None:
                leaf_b = made_by.get((other, "leaf"))
                if leaf_b is not None:
                    self._join(node.variable, leaf_b)
        for tensor in self.a.tensors.values():
            if tensor.grad_fn is not None and tensor.id not in self.pair:
                other = self.pair.get(tensor.grad_fn.id)
                if other is not None and (other, tensor.output_nr) in made_by:
                    self._join(tensor, made_by[(other, tensor.output_nr)])

    def _ops(self):
        ops_b_by_node = {op.node.id: op for op in self.b.ops if op.node is not None}
        ops_b_by_outputs = {}
        for op in self.b.ops:
            ops_b_by_outputs.setdefault((op.op, tuple(o.id for o in op.outputs)), op)
        for op in self.a.ops:
            other = None
            if op.node is not None and op.node.id in self.pair:
                other = ops_b_by_node.get(self.pair[op.node.id])
            by_node = other is not None
            if other is None and op.outputs and all(o.id in self.pair for o in op.outputs):
                key = (op.op, tuple(self.pair[o.id] for o in op.outputs))
                other = ops_b_by_outputs.get(key)
            by_outputs = other is not None and other.op == op.op
            # the op that made the matching node is the same op, also when the engines call it
            # differently (nbgrad records ``x @ w`` as mm, PyTorch as matmul)
            if other is not None and (by_node or by_outputs) and self._join(op, other):
                self._inputs(op, other)

    def _inputs(self, op_a, op_b):
        tensors_a = [i for i in op_a.inputs if hasattr(i, "shape")]
        tensors_b = [i for i in op_b.inputs if hasattr(i, "shape")]
        if op_a.op == op_b.op:  # the same call: the same argument slots
            for input_a, input_b in zip(op_a.inputs, op_b.inputs):
                if hasattr(input_a, "shape") and hasattr(input_b, "shape"):
                    self._join(input_a, input_b)
            return
        # the same node, recorded as different calls (nbgrad's addmm(bias, x, t(w)), PyTorch's
        # linear(x, w, bias)): inputs still unmatched pair up when their shape is unique
        left_a = [t for t in tensors_a if t.id not in self.pair]
        left_b = [t for t in tensors_b if t.id not in self.back]
        for tensor in left_a:
            alike = [t for t in left_b if tuple(t.shape) == tuple(tensor.shape)]
            if len(alike) == 1 and sum(tuple(t.shape) == tuple(tensor.shape) for t in left_a) == 1:
                self._join(tensor, alike[0])

    # --- edges ----------------------------------------------------------------------------------

    def edges(self):
        """(view, from id, to id, slot, "a" or "b") for every edge only in A or only in B, with
        A's ids for A's edges and B's for B's."""
        found = []
        for side, trace, here in (
            ("a", self.a, self.pair),
            ("b", self.b, self.back),
        ):
            other_trace = self.b if side == "a" else self.a
            other_edges = set(_edges_of(other_trace))
            for view, source, target, slot in _edges_of(trace):
                mapped = (view, here.get(source), here.get(target), slot)
                if None in mapped[1:3] or mapped not in other_edges:
                    found.append((view, source, target, slot, side))
        return found


def _edges_of(trace):
    """(view, from id, to id, slot) of the edges the widget draws: backward node -> next node,
    forward input tensor -> op and op -> output tensor."""
    edges = []
    for node in trace.nodes:
        for slot, (child, _) in enumerate(node.next):
            if child is not None:
                edges.append(("backward", node.id, child.id, slot))
    for op in trace.ops:
        for slot, tensor in enumerate(op.inputs):
            if hasattr(tensor, "shape") and hasattr(tensor, "id"):
                edges.append(("forward", tensor.id, op.id, slot))
        for tensor in op.outputs:
            edges.append(("forward", op.id, tensor.id, 0))
    return edges


def _structural_keys(trace, numbers):
    """node id -> a number standing for its structure: its class and its inputs' numbers (an
    AccumulateGrad: its leaf's name), computed children first without recursion (graphs can be
    thousands deep). ``numbers`` maps each (class, inputs) to its number: nested keys would be
    hashed as trees, exponentially in depth where a value is used twice (``h.sin() + h``)."""
    keys = {}
    for root in trace.nodes:
        if root.id in keys:
            continue
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node.id in keys:
                continue
            children = [c for c, _ in node.next if c is not None and c.id not in keys]
            if not ready and children:
                stack.append((node, True))
                stack += [(c, False) for c in children]
                continue
            if node.variable is not None:
                key = (node.name, node.variable.name)
            else:
                key = (
                    node.name,
                    tuple(keys.get(c.id) if c is not None else None for c, _ in node.next),
                )
            keys[node.id] = numbers.setdefault(key, len(numbers))
    return keys


# --- comparing ----------------------------------------------------------------------------------


def _entries(matching, close):
    """One DiffEntry per record of A, then per record only in B."""
    a, b = matching.a, matching.b
    records_a, records_b = _records(a), _records(b)
    entries = []
    for kind, record in records_a.values():
        other_id = matching.pair.get(record.id)
        if other_id is None:
            entry = DiffEntry(kind, _name_of(kind, record), "a", record, None)
            entry.compared = _quantities(kind, record, None, close)
            entry.unobserved = _unobserved_in_other(record, kind, matching.pair, records_b)
        else:
            other = records_b[other_id][1]
            entry = DiffEntry(kind, _name_of(kind, record), "same", record, other)
            entry.compared = _quantities(kind, record, other, close)
            differing = [c for c in entry.compared if c[4]]
            entry.status = "differs" if differing else "same"
            entry.difference = max((c[3] for c in entry.compared), default=0.0)
            largest = max(entry.compared, key=lambda c: (c[4], c[3]), default=None)
            entry.what = largest[0] if largest is not None and largest[3] > 0 else None
        entry.id = record.id
        entries.append(entry)
    for kind, record in records_b.values():
        if record.id not in matching.back:
            entry = DiffEntry(kind, _name_of(kind, record), "b", None, record)
            entry.compared = _quantities(kind, None, record, close)
            entry.unobserved = _unobserved_in_other(record, kind, matching.back, records_a)
            entries.append(entry)
    return entries


def _unobserved_in_other(record, kind, pair, other_records):
    """The other side's node when this op or tensor belongs to a node that both traces have but
    only this one saw being made (PyTorch runs the transpose of ``nn.Linear`` inside
    ``linear``: its TBackward0 has no op there, while nbgrad's engine records the ``t`` op);
    else None. Such a record is no difference in the program, only in what was recorded."""
    node = (
        record.node
        if kind == "op"
        else getattr(record, "grad_fn", None)
        if kind == "tensor"
        else None
    )
    if node is None or node.id not in pair:
        return None
    partner = other_records[pair[node.id]][1]
    return partner if not partner.observed else None


def _records(trace):
    """id -> (kind, record), tensors, then ops, then nodes."""
    found = {t.id: ("tensor", t) for t in trace.tensors.values()}
    found.update((op.id, ("op", op)) for op in trace.ops)
    found.update((n.id, ("node", n)) for n in trace.nodes)
    return found


def _name_of(kind, record):
    if kind == "tensor":
        return record.name
    if kind == "op":
        made = ", ".join(t.name for t in record.outputs)
        return f"{record.op} → {made}" if made else record.op
    if record.variable is not None:
        return f"AccumulateGrad({record.variable.name})"
    made = ", ".join(t.name for t in record.outputs)
    return f"{record.name} ({made})" if made else record.name


def _quantities(kind, a, b, close):
    """(what, A's value, B's value, largest |a - b|, differs) for what the record carries."""
    pairs = []  # (what, A's, B's, dtype)
    if kind == "tensor":
        dtype = (a or b).dtype
        pairs += [("value", _get(a, "value"), _get(b, "value"), dtype)]
        pairs += [("grad", _get(a, "grad"), _get(b, "grad"), dtype)]
    elif kind == "op":
        inputs_a, inputs_b = _get(a, "inputs", ()), _get(b, "inputs", ())
        for k in range(max(len(inputs_a), len(inputs_b))):
            x, y = _item(inputs_a, k), _item(inputs_b, k)
            # a number argument, when both recorded it (nbgrad's recorder keeps the exponent
            # of ``x ** 2`` out of the inputs, PyTorch's keeps it in)
            if k < min(len(inputs_a), len(inputs_b)) and not (
                hasattr(x, "shape") or hasattr(y, "shape")
            ):
                pairs.append((f"argument {k}", x, y, "float64"))
        outputs_a, outputs_b = _get(a, "outputs", ()), _get(b, "outputs", ())
        for k in range(max(len(outputs_a), len(outputs_b))):
            x, y = _item(outputs_a, k), _item(outputs_b, k)
            dtype = (x or y).dtype
            label = "output" if max(len(outputs_a), len(outputs_b)) == 1 else f"output {k}"
            pairs.append((label, _get(x, "value"), _get(y, "value"), dtype))
    else:
        steps_a, steps_b = _get(a, "steps", ()), _get(b, "steps", ())
        many = max(len(steps_a), len(steps_b)) > 1
        dtype = _node_dtype(a or b)
        for k in range(max(len(steps_a), len(steps_b))):
            x, y = _item(steps_a, k), _item(steps_b, k)
            when = f" (run {k + 1})" if many else ""
            ins_a, ins_b = _get(x, "grads_in", ()), _get(y, "grads_in", ())
            for i in range(max(len(ins_a), len(ins_b))):
                which = f" {i}" if max(len(ins_a), len(ins_b)) > 1 else ""
                pairs.append((f"gradient in{which}{when}", _item(ins_a, i), _item(ins_b, i), dtype))
            outs_a, outs_b = _get(x, "grads_out", ()), _get(y, "grads_out", ())
            for i in range(max(len(outs_a), len(outs_b))):
                ga, gb = _item(outs_a, i), _item(outs_b, i)
                ga, gb = ga[2] if ga else None, gb[2] if gb else None
                pairs.append((f"gradient out {i}{when}", ga, gb, dtype))
        saved_a, saved_b = _get(a, "saved", {}), _get(b, "saved", {})
        tensors_a, tensors_b = _get(a, "saved_tensors", {}), _get(b, "saved_tensors", {})
        for name in dict.fromkeys([*saved_a, *saved_b]):
            if name in tensors_a or name in tensors_b:
                continue  # a saved tensor is a tensor record of its own, compared there
            pairs.append((f"saved {name}", saved_a.get(name), saved_b.get(name), dtype))
    out = []
    for what, x, y, dtype in pairs:
        if x is None and y is None:
            continue
        if a is None or b is None:
            out.append((what, x, y, None, False))
            continue
        difference, differs = _compare(x, y, close(dtype))
        out.append((what, x, y, difference, differs))
    return out


def _get(record, attribute, default=None):
    return getattr(record, attribute, default) if record is not None else default


def _item(sequence, k):
    return sequence[k] if k < len(sequence) else None


def _node_dtype(node):
    for tensor in node.outputs:
        return tensor.dtype
    if node.variable is not None:
        return node.variable.dtype
    return "float64"


def _compare(x, y, tolerance):
    """(largest |x - y|, whether they differ beyond the tolerance) for two values of a trace:
    arrays, statistics of large arrays, numbers, or other saved values (tuples, strings)."""
    rtol, atol = tolerance
    if x is None or y is None:
        return math.inf, True
    if isinstance(x, ArraySummary) or isinstance(y, ArraySummary):
        x, y = _stats(x), _stats(y)
        if x is None or y is None:
            return math.inf, True
    elif not (_numeric(x) and _numeric(y)):
        return (0.0, False) if _plain(x) == _plain(y) else (math.inf, True)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        return math.inf, True
    if x.size == 0:
        return 0.0, False
    both_nan = np.isnan(x) & np.isnan(y)
    same_infinity = np.isinf(x) & (x == y)
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.abs(x - y)
    gap = np.where(both_nan | same_infinity, 0.0, gap)
    gap = np.where(np.isnan(gap), math.inf, gap)  # NaN on one side only
    allowed = atol + rtol * np.where(np.isfinite(y), np.abs(y), 0.0)
    return float(gap.max()), bool((gap > allowed).any())


def _numeric(value):
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biuf"
    return False


def _plain(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def _stats(value):
    """min, max, mean, std of an array or its summary, as an array (None: not a number)."""
    if isinstance(value, ArraySummary):
        return np.array([value.min, value.max, value.mean, value.std], dtype=np.float64)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return _stats(ArraySummary(value))
    return None


# --- the merged trace -----------------------------------------------------------------------------


def _with_buffers_renamed(data):
    """B's JSON with every buffer id "b12" made "Bb12": the merged trace holds both sides'."""
    if isinstance(data, dict):
        return {
            key: (
                "B" + value
                if key == "buffer" and isinstance(value, str)
                else _with_buffers_renamed(value)
            )
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [_with_buffers_renamed(item) for item in data]
    return data


def _merged_ids(matching, a, b):
    """B's record id -> its id in the merged trace: its partner's in A, else a fresh id after
    A's largest of its kind ("t", "o", "n")."""
    ids = dict(matching.back)
    following = {"t": 0, "o": 0, "n": 0}
    for key in _records(a):
        if key[1:].isdigit():
            following[key[0]] = max(following[key[0]], int(key[1:]) + 1)
    taken = set(_records(a))
    for key in _records(b):
        if key not in ids:
            while f"{key[0]}{following[key[0]]}" in taken:
                following[key[0]] += 1
            ids[key] = f"{key[0]}{following[key[0]]}"
            following[key[0]] += 1
    return ids


def _merge(result, data, data_b, values, carried):
    """A's JSON with B's records that A has not (fresh ids) and the "diff" key."""
    matching = result._match
    label_a, label_b = result.labels
    rename = result._merged_ids.get
    readable_keys = {json.dumps(v, sort_keys=True): k for k, v in data.get("readable", {}).items()}
    for table in ("tensors", "ops", "nodes"):
        for record in data_b[table]:
            if record["id"] in matching.back:
                continue
            record = dict(record, id=rename(record["id"]))
            if table == "tensors":
                for key in ("grad_fn", "op"):
                    if record.get(key):
                        record[key] = rename(record[key])
            elif table == "ops":
                record["inputs"] = [
                    rename(i) if isinstance(i, str) else i for i in record["inputs"]
                ]
                record["outputs"] = [rename(o) for o in record["outputs"]]
                for key in ("node", "function"):
                    if record.get(key):
                        record[key] = rename(record[key])
                # its line is B's: A's text of that line would be wrong (the diff key has B's)
                record.pop("line", None)
                record.pop("span", None)
            else:
                record["next"] = [[rename(e[0]), e[1]] if e else None for e in record["next"]]
                record["saved"] = {
                    k: {"tensor": rename(v["tensor"])} if "tensor" in v else v
                    for k, v in record["saved"].items()
                }
                for key in ("op", "variable"):
                    if record.get(key):
                        record[key] = rename(record[key])
                _merge_formula(record, data, data_b, label_b)
                _merge_readable(record, data, data_b, readable_keys)
            data[table].append(record)
    modules = data.setdefault("modules", {})
    for path, cls in data_b.get("modules", {}).items():
        # a module that changed class (Sigmoid where ReLU is now) says both in its group title
        modules[path] = cls if modules.get(path, cls) == cls else f"{modules[path]} → {cls}"
    for name, source in data_b.get("backward_sources", {}).items():
        data.setdefault("backward_sources", {}).setdefault(name, source)
    if result.trace_a.name or result.trace_b.name or result.labels != ("A", "B"):
        data["name"] = f"{label_a} vs {label_b}"
    # the banner's facts, for both sides: which recording stopped early, and why
    for key in ("error", "truncated"):
        said = [
            f"{label}: {trace_data['status'][key]}"
            for label, trace_data in zip(result.labels, (data, data_b))
            if trace_data["status"].get(key)
        ]
        data["status"][key] = "; ".join(said) or None
    data["diff"] = _diff_json(result, rename, data_b, values, carried)
    return data


def _merge_formula(record, data, data_b, label_b):
    key = record.get("formula")
    if not key:
        return
    formula = data_b["formulas"].get(key)
    formulas = data.setdefault("formulas", {})
    if key in formulas and formulas[key] != formula:
        key = f"{key} ({label_b})"
        record["formula"] = key
    formulas.setdefault(key, formula)


def _merge_readable(record, data, data_b, readable_keys):
    key = record.get("readable")
    if not key:
        return
    tree = data_b.get("readable", {}).get(key)
    text = json.dumps(tree, sort_keys=True)
    if text not in readable_keys:
        readable_keys[text] = f"r{len(data.setdefault('readable', {}))}"
        data["readable"][readable_keys[text]] = tree
    record["readable"] = readable_keys[text]


def _diff_json(result, rename, data_b, values, carried):
    records = {}
    lines_b = data_b.get("source", {}).get("lines", {})
    for entry in result.entries:
        merged_id = entry.id
        item = {"status": entry.status, "kind": entry.kind, "name": entry.name}
        if entry.unobserved is not None:
            side = result.labels[1] if entry.a is not None else result.labels[0]
            item["note"] = (
                f"{side} ran this inside another call: it has the node "
                f"({entry.unobserved.name}) but did not record this {entry.kind}"
            )
        if entry.a is not None and entry.b is not None:
            item["other"] = entry.b.id
            item["difference"] = _number_json(entry.difference)
            if entry.what:
                item["what"] = entry.what
        if entry.compared:
            item["compared"] = [
                {
                    "what": what,
                    "a": result._value_json(x, values, carried),
                    "b": result._value_json(y, values, carried),
                    "difference": _number_json(gap),
                    "differs": differs,
                }
                for what, x, y, gap, differs in entry.compared
            ]
            if entry.status == "same":
                # B's values equal A's within the tolerance: written once (half the JSON)
                for quantity in item["compared"]:
                    del quantity["b"]
            dtype = _dtype_of(entry)
            if dtype:
                item["dtype"] = dtype
        line_b = getattr(_op_of(entry.b), "line", None)
        if entry.b is not None and line_b is not None and str(line_b) in lines_b:
            item["line_b"] = [line_b, lines_b[str(line_b)]]
        records[merged_id] = item
    edges = [
        {
            "view": view,
            "from": source if side == "a" else rename(source),
            "to": target if side == "a" else rename(target),
            "slot": slot,
            "in": side,
        }
        for view, source, target, slot, side in result._edges
    ]
    counts = {status: 0 for status in STATUSES}
    for entry in result.entries:
        counts[entry.status] += 1
    out = {
        "labels": list(result.labels),
        "engines": [_engine(result.trace_a), _engine(result.trace_b)],
        "counts": counts,
        "records": records,
        "edges": edges,
    }
    if result.tolerance is not None:
        out["tolerance"] = {"rtol": result.tolerance[0], "atol": result.tolerance[1]}
    return out


def _op_of(record):
    if record is None:
        return None
    return (
        record
        if hasattr(record, "op") and isinstance(record.op, str)
        else getattr(record, "op", None)
    )


def _dtype_of(entry):
    record = entry.a or entry.b
    if entry.kind == "tensor":
        return record.dtype
    if entry.kind == "node":
        return _node_dtype(record)
    outputs = record.outputs
    return outputs[0].dtype if outputs else None


def _number_json(x):
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.6g}")


def _number(x):
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}"


def _engine(trace):
    return (trace.engine or ("nbgrad",))[0]


def _labels(a, b, labels):
    if labels is not None:
        labels = tuple(str(x) for x in labels)
        if len(labels) != 2:
            raise ValueError(f"labels are two names (for A and B), got {len(labels)}")
        return labels
    if _engine(a) != _engine(b):
        return (_engine(a), _engine(b))
    if a.name and b.name and a.name != b.name:
        return (a.name, b.name)
    return ("A", "B")


def _names(trace):
    """record id -> the name a DiffEntry gives it."""
    return {key: _name_of(kind, record) for key, (kind, record) in _records(trace).items()}


def _edge_names(edge, names):
    view, source, target, slot, _ = edge
    return (view, names.get(source, source), names.get(target, target), slot)


__all__ = ["DiffEntry", "DiffResult", "diff"]
