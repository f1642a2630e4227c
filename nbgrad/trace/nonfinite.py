"""Debugging gradients from a finished trace: where the first NaN or Inf appeared, and how large
the gradient through every node and parameter was.

Everything here is computed from what both recorders write (tensor values, the backward steps'
``grads_in`` / ``grads_out``, leaves' ``.grad``), so it reads nbgrad's traces and real PyTorch's
alike. A value may be a whole array or, when large, an ``ArraySummary``: a summary counts its
non-finite elements (``nonfinite``) and has the mean and standard deviation of the finite ones,
from which the norm of the finite part follows (``sqrt(n * (mean² + std²))``).

    trace.first_nonfinite      # a NonfiniteRecord, or None when every value is finite
    trace.grad_table()         # per parameter: |grad|, |param| and |grad| / |param|
"""

import math

import numpy as np

from nbgrad.trace.values import ArraySummary, number_json

# --- non-finite values ---------------------------------------------------------------------------


def nonfinite_kinds(value):
    """Which non-finite numbers ``value`` holds, as a tuple drawn from "nan", "inf", "-inf" (an
    ArraySummary tells only that it holds some: ("nan or inf",)). Empty when all are finite or
    the value is not numbers (None, a bool or integer array)."""
    if value is None:
        return ()
    if isinstance(value, ArraySummary):
        return ("nan or inf",) if value.nonfinite else ()
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
        return ()
    finite = np.isfinite(value)
    if finite.all():
        return ()
    kinds = []
    if np.isnan(value).any():
        kinds.append("nan")
    if np.isposinf(value).any():
        kinds.append("inf")
    if np.isneginf(value).any():
        kinds.append("-inf")
    return tuple(kinds)


class NonfiniteRecord:
    """Where the trace's first NaN or Inf appeared (``trace.first_nonfinite``).

    phase       "forward" (an op's result) or "backward" (a gradient a backward step sent)
    kinds       what was found: ("nan",), ("-inf",), ("nan", "inf"), ...
    op          forward: the OpRecord whose output was first non-finite; backward: the op that
                made the step's node (or None)
    step        backward: the BackwardStep that first sent a non-finite gradient; else None
    node        the NodeRecord to look at: the step's node, or the grad_fn the op made (None
                for an op that made no node)
    tensor      forward: the non-finite output's TensorRecord; else None
    line, code  the line of the cell that ran the op (or, for a node no recorded op made, the
                line of the backward call), and its text
    already_bad the inputs (forward: input tensor names) or incoming gradients (backward:
                "gradient of output 0") that were non-finite already; empty when this op or
                step made the first non-finite value itself (log(0), 0 * inf)
    spread      the backward nodes whose gradients were non-finite, in engine order, starting
                with ``node`` when it ran: the path the bad value spread along
    spread_edges  (from node, to node) pairs along which a non-finite gradient was sent
    spread_ops  the forward ops after ``op`` whose results were non-finite, in order
    """

    __slots__ = (
        "phase",
        "kinds",
        "op",
        "step",
        "node",
        "tensor",
        "line",
        "code",
        "already_bad",
        "spread",
        "spread_edges",
        "spread_ops",
    )

    def __init__(self, phase, kinds, op=None, step=None, node=None, tensor=None, already_bad=()):
        self.phase = phase
        self.kinds = kinds
        self.op = op
        self.step = step
        self.node = node
        self.tensor = tensor
        self.already_bad = tuple(already_bad)
        self.line = op.line if op is not None else None
        self.code = op.code if op is not None else None
        self.spread = ()
        self.spread_edges = ()
        self.spread_ops = ()

    @property
    def made_here(self):
        """True when nothing that came in was bad: this op or step made the value."""
        return not self.already_bad

    def where(self):
        """The op or step, in words: "log (LogBackward0)" or "backward step 3: MulBackward0"."""
        if self.phase == "forward":
            node = f" ({self.node.name})" if self.node is not None else ""
            return f"forward op {self.op.op}{node} -> {self.tensor.name}"
        return f"backward step {self.step.index + 1}: {self.node.name}"

    def describe(self):
        """One line: what, where, on which line, and why."""
        what = " and ".join(self.kinds)
        line = f" at line {self.line}: {self.code}" if self.line is not None else ""
        if self.code is None and self.line is not None:
            line = f" at line {self.line}"
        if self.made_here:
            why = "made here (every input was finite)"
            if self.phase == "backward":
                why = "made here (the gradient it received was finite)"
        else:
            why = "already bad: " + ", ".join(self.already_bad)
        return f"first {what} in {self.where()}{line}; {why}"

    def to_json(self):
        """The trace JSON's ``nonfinite`` entry (docs/trace-schema.md)."""
        out = {
            "phase": self.phase,
            "kinds": list(self.kinds),
            "node": self.node.id if self.node is not None else None,
            "op": self.op.id if self.op is not None else None,
            "tensor": self.tensor.id if self.tensor is not None else None,
            "step": self.step.index if self.step is not None else None,
            "line": self.line,
            "already_bad": list(self.already_bad),
            "text": self.describe(),
            "spread": [node.id for node in self.spread],
            "spread_edges": [[a.id, b.id] for a, b in self.spread_edges],
            "spread_ops": [op.id for op in self.spread_ops],
        }
        return {key: value for key, value in out.items() if value is not None}

    def __repr__(self):
        return f"<NonfiniteRecord: {self.describe()}>"


def first_nonfinite(trace):
    """Where the trace's first NaN or Inf appeared, as a NonfiniteRecord; None if none did.

    The forward pass runs before any backward step, so its ops are searched first, in the order
    they ran; then the backward steps, in the engine's order. A step "makes" a non-finite
    value when a gradient it sent is non-finite; the gradients it received say whether it was
    already bad when it came."""
    found = _first_in_forward(trace) or _first_in_backward(trace)
    if found is not None:
        _trace_spread(trace, found)
    return found


def _first_in_forward(trace):
    return _first_in_ops(trace.ops)


def _first_in_ops(ops):
    for op in ops:
        for output in op.outputs:
            kinds = nonfinite_kinds(output.value)
            if not kinds:
                continue
            bad_inputs = [
                tensor.name
                for tensor in op.inputs
                if hasattr(tensor, "value") and nonfinite_kinds(tensor.value)
            ]
            return NonfiniteRecord(
                "forward", kinds, op=op, node=op.node, tensor=output, already_bad=bad_inputs
            )
    return None


def _first_in_backward(trace):
    return _first_in_steps(trace, trace.backward_steps)


def _first_in_steps(trace, steps):
    for step in steps:
        kinds = ()
        for _, _, grad in step.grads_out:
            for kind in nonfinite_kinds(grad):
                if kind not in kinds:
                    kinds += (kind,)
        if step.node.variable is not None:  # AccumulateGrad sends nothing: what it received
            for grad in step.grads_in:
                for kind in nonfinite_kinds(grad):
                    if kind not in kinds:
                        kinds += (kind,)
        if not kinds:
            continue
        bad_in = [
            f"gradient of output {k}"
            for k, grad in enumerate(step.grads_in)
            if nonfinite_kinds(grad)
        ]
        found = NonfiniteRecord("backward", kinds, op=step.node.op, step=step, node=step.node)
        found.already_bad = tuple(bad_in)
        if found.line is None:  # a node no recorded op made: the backward call's line
            backward_pass = trace.passes[step.pass_index]
            found.line, found.code = backward_pass.line, backward_pass.code
        return found
    return None


def _trace_spread(trace, found):
    """The forward ops after the first one whose results were non-finite, and the backward
    nodes and edges that carried non-finite gradients (from the first bad step on)."""
    if found.phase == "forward":
        start = trace.ops.index(found.op)
        found.spread_ops = tuple(
            op
            for op in trace.ops[start + 1 :]
            if any(nonfinite_kinds(output.value) for output in op.outputs)
        )
        first_step = 0
    else:
        first_step = found.step.index
    nodes, edges = [], []
    for step in trace.backward_steps[first_step:]:
        bad = any(nonfinite_kinds(g) for g in step.grads_in)
        for child, _, grad in step.grads_out:
            if child is not None and nonfinite_kinds(grad):
                bad = True
                edges.append((step.node, child))
        if bad and step.node not in nodes:
            nodes.append(step.node)
    if found.phase == "backward" and found.node in nodes:  # the origin first
        nodes.remove(found.node)
        nodes.insert(0, found.node)
    found.spread = tuple(nodes)
    found.spread_edges = tuple(dict.fromkeys(edges))


# --- gradient magnitude --------------------------------------------------------------------------


def norm(value):
    """The L2 norm of a value (None for None). A non-finite element makes it nan or inf, as
    NumPy's norm would; an ArraySummary's norm comes from its mean and standard deviation (which
    are over its finite elements: nan when it has others)."""
    if value is None:
        return None
    if isinstance(value, ArraySummary):
        if value.nonfinite:
            return math.nan
        if value.size == 0:
            return 0.0
        return math.sqrt(value.size * (value.mean**2 + value.std**2))
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fciub":
        return None
    flat = value.ravel()
    if flat.dtype != np.float64:  # squares in float32 overflow from about 1e19
        flat = flat.astype(np.float64)
    return math.sqrt(float(np.dot(flat, flat)))


def _combined(norms):
    """The norm of several arrays taken as one: sqrt of the sum of their squared norms."""
    norms = [n for n in norms if n is not None]
    if not norms:
        return None
    return math.sqrt(sum(n * n for n in norms))


def grad_norms(trace):
    """The size of the gradient through each part of the graph, from its last backward step:

    nodes    node id -> norm of the gradients the node received (an AccumulateGrad: the one
             it summed into its leaf)
    edges    "from>to" node ids -> norm of the gradient sent along that edge (an input used
             twice, ``x * x``, is one drawn edge carrying two gradients: their combined norm)
    tensors  tensor id -> norm of its ``.grad`` when recording stopped

    Empty dicts when nothing ran backward and no tensor has a grad."""
    nodes, edges = {}, {}
    for step in trace.backward_steps:  # a later pass overwrites an earlier one
        through = _combined(norm(g) for g in step.grads_in)
        if through is not None:
            nodes[step.node.id] = through
        sent_by_edge = {}
        for child, _, grad in step.grads_out:
            sent = norm(grad)
            if child is not None and sent is not None:
                sent_by_edge.setdefault(f"{step.node.id}>{child.id}", []).append(sent)
        for key, sizes in sent_by_edge.items():
            edges[key] = _combined(sizes)
    tensors = {}
    for tensor in trace.tensors.values():
        size = norm(tensor.grad)
        if size is not None:
            tensors[tensor.id] = size
    return {"nodes": nodes, "edges": edges, "tensors": tensors}


class GradRow:
    """One parameter (a leaf) of ``trace.grad_table()``: its name and shape, the norms of its
    ``.grad`` and of its value, and ``ratio = grad_norm / param_norm`` (None when either is
    missing; inf when the parameter is all zeros and its grad is not)."""

    __slots__ = ("name", "shape", "grad_norm", "param_norm", "ratio")

    def __init__(self, name, shape, grad_norm, param_norm):
        self.name = name
        self.shape = tuple(shape)
        self.grad_norm = grad_norm
        self.param_norm = param_norm
        if grad_norm is None or param_norm is None:
            self.ratio = None
        elif param_norm == 0:
            self.ratio = 0.0 if grad_norm == 0 else math.inf
        else:
            self.ratio = grad_norm / param_norm

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return (
            f"GradRow({self.name!r}, |grad|={_g(self.grad_norm)}, |param|={_g(self.param_norm)}, "
            f"ratio={_g(self.ratio)})"
        )


def _g(x):
    return "-" if x is None else f"{x:.3g}"


class GradTable(list):
    """``trace.grad_table()``: a list of GradRows that prints as a table (and shows as one in a
    notebook); ``to_pandas()`` makes it a pandas DataFrame."""

    COLUMNS = ("name", "shape", "grad_norm", "param_norm", "ratio")
    HEADERS = ("parameter", "shape", "|grad|", "|param|", "|grad| / |param|")

    def _cells(self):
        for row in self:
            shape = "x".join(str(n) for n in row.shape) or "scalar"
            yield (row.name, shape, _g(row.grad_norm), _g(row.param_norm), _g(row.ratio))

    def __repr__(self):
        if not self:
            return "GradTable(no parameter has a grad)"
        rows = [self.HEADERS, *self._cells()]
        widths = [max(len(r[k]) for r in rows) for k in range(len(self.HEADERS))]
        lines = []
        for r in rows:
            left = r[0].ljust(widths[0]) + "  " + r[1].ljust(widths[1])
            rest = "  ".join(r[k].rjust(widths[k]) for k in range(2, len(r)))
            lines.append(f"{left}  {rest}".rstrip())
        return "\n".join(lines)

    def _repr_html_(self):
        import html

        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.HEADERS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
            for cells in self._cells()
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def to_pandas(self):
        """The table as a pandas DataFrame (pandas must be installed)."""
        try:
            import pandas
        except ImportError:
            raise ImportError(
                "GradTable.to_pandas() needs pandas, which is not installed "
                "(pip install pandas); the table itself is a list of GradRow"
            ) from None
        return pandas.DataFrame([row.as_dict() for row in self], columns=list(self.COLUMNS))


def _parameters(trace):
    """The leaves that have a grad, each at its newest value (``w#1`` before an optimizer step,
    ``w`` after it: the table shows ``w``), in the order they were first recorded."""
    return [
        t
        for t in trace.tensors.values()
        if t.role == "leaf" and t.named_by != "version" and t.grad is not None
    ]


SORT_KEYS = ("ratio", "grad_norm", "param_norm", "name")


def grad_table(trace, sort_by=None, descending=False):
    """Per parameter (each leaf that requires grad, newest value), the norm of its ``.grad``,
    of its value, and their ratio, as a GradTable in the order the leaves were recorded (for a
    model, layer by layer), or sorted by ``sort_by`` ("ratio", "grad_norm", "param_norm",
    "name"; rows without a value last)."""
    if sort_by is not None and sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {', '.join(SORT_KEYS)} or None, got {sort_by!r}")
    rows = [GradRow(t.name, t.shape, norm(t.grad), norm(t.value)) for t in _parameters(trace)]
    if sort_by is not None:
        missing = [r for r in rows if getattr(r, sort_by) is None]
        present = [r for r in rows if getattr(r, sort_by) is not None]
        present.sort(key=lambda r: getattr(r, sort_by), reverse=descending)
        rows = present + missing
    return GradTable(rows)


def magnitude_json(trace):
    """The trace JSON's ``grad_norms`` entry (docs/trace-schema.md), or None when no gradient
    was recorded. Compact, since it rides along with every trace: per backward step (aligned
    with ``steps``) the norm of what the node received followed by the norm sent along each of
    its ``next`` edges, ``[in, out_0, out_1, ...]``; per parameter ``[tensor id, |grad|,
    |param|]``. The widget derives the nodes', edges' and tensors' sizes from them."""
    known = {}  # id(array) -> its norm: a gradient sent along an edge is the next one received

    def norm_of(value):
        size = known.get(id(value), known)
        if size is known:
            size = known[id(value)] = norm(value)
        return size

    steps = []  # sizes that only colour the drawing by decade: 2 digits are plenty
    for step in trace.backward_steps:
        entry = [_short(_combined(norm_of(g) for g in step.grads_in), 2)]
        entry += [_short(norm_of(grad), 2) for _, _, grad in step.grads_out]
        steps.append(entry)
    parameters = [  # the table shows 3 digits
        [tensor.id, _short(norm(tensor.grad), 3), _short(norm(tensor.value), 3)]
        for tensor in _parameters(trace)
    ]
    if not any(v is not None for entry in steps for v in entry) and not parameters:
        return None
    return {"steps": steps, "parameters": parameters}


def _short(x, digits):
    """A norm for the JSON: ``digits`` significant digits, a whole number without ".0",
    non-finite as the schema's strings."""
    if x is None:
        return None
    if not math.isfinite(x):
        return number_json(x)
    x = float(f"{x:.{digits}g}")
    return int(x) if x.is_integer() and abs(x) < 1e15 else x


# --- stopping at the first non-finite value (--stop-on-nonfinite) ---------------------------------


class NonfiniteError(FloatingPointError):
    """Raised, when asked (``%%autograd --stop-on-nonfinite``, ``record(stop_on_nonfinite=True)``),
    by the op or backward step that made the recording's first NaN or Inf. ``found`` is its
    NonfiniteRecord (without ``spread``: nothing ran after it)."""

    def __init__(self, found):
        self.found = found
        super().__init__(_stop_message(found))


def _stop_message(found):
    what = " and ".join(found.kinds)
    line = f", line {found.line}" if found.line is not None else ""
    if found.phase == "forward":  # (names are given when recording ends: not yet)
        node = f" ({found.node.name})" if found.node is not None else ""
        where = f"forward op {found.op.op}{node}"
    else:
        where = f"backward step {found.step.index + 1} ({found.node.name})"
    bad = ", ".join(found.already_bad)
    if found.phase == "forward":  # by position: the inputs' names are not known yet either
        positions = [
            str(k + 1)
            for k, tensor in enumerate(found.op.inputs)
            if hasattr(tensor, "value") and nonfinite_kinds(tensor.value)
        ]
        bad = f"argument {', '.join(positions)} of {found.op.op}"
    why = "it was made here" if found.made_here else f"already bad when it came in: {bad}"
    return f"{what} in {where}{line}; {why} (stopped at the first non-finite value, as asked)"


class NonfiniteWatch:
    """Checks what a recorder added since the last look (its ops' outputs, its backward steps'
    gradients) and raises NonfiniteError at the first NaN or Inf. A recorder calls ``check``
    after each op and each step it recorded, outside its own fault handling, so that the error
    reaches the user's code from the op or the ``backward()`` call that made it."""

    def __init__(self):
        self._ops_seen = 0
        self._steps_seen = 0
        self.raised = None

    def check(self, trace):
        if self.raised is not None:  # once: what runs while the error unwinds is not checked
            return
        ops, steps = trace.ops, trace.backward_steps
        if len(ops) > self._ops_seen:
            for op in ops[self._ops_seen :]:
                self._ops_seen += 1
                if any(nonfinite_kinds(output.value) for output in op.outputs):
                    self._raise(_first_in_ops([op]))
        if len(steps) > self._steps_seen:
            new_steps = steps[self._steps_seen :]
            self._steps_seen = len(steps)
            found = _first_in_steps(trace, new_steps)
            if found is not None:
                self._raise(found)

    def _raise(self, found):
        self.raised = NonfiniteError(found)
        raise self.raised
