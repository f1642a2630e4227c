"""The Trace: an engine-neutral record of what autograd did while a cell (or block) ran.

It holds only snapshots and plain Python records, never the engine's tensors or nodes, so a
trace can outlive the program's objects, be serialised to one documented JSON schema
(docs/trace-schema.md), and be produced the same way from real PyTorch (torch_recorder.py).

Records point at each other directly (a node's ``next`` holds node records, a tensor's
``grad_fn`` a node record), so the Python API reads like PyTorch's: ``trace.tensors["e"]
.grad_fn.next[0][0].name == "AddBackward0"``. They also point back (``tensor.op`` and
``op.outputs``): while the trace lives, every link works both ways; when it is dropped, it cuts
the back links so that its records are freed at once (see ``Trace.__del__``).
"""

import json
from pathlib import Path

from nbgrad.trace import nonfinite as _nonfinite
from nbgrad.trace import summary as _summary
from nbgrad.trace.history import history_rows
from nbgrad.trace.serialize import trace_json

# The trace JSON's contract (docs/trace-schema.md in words), read by the widget too.
SCHEMA = json.loads((Path(__file__).parent / "schema.json").read_text(encoding="utf-8"))
SCHEMA_VERSION = SCHEMA["properties"]["version"]["const"]


class TensorRecord:
    """One value of a tensor: a tensor changed in place gets a new record (a new version).

    name           unique within the trace: a variable's name (``a``, ``model.fc1.weight``,
                   ``xs[0]``), else a label from the code that made it (``c * d``)
    named_by       how the name was found: "variable", "assignment", "expression", "operand",
                   or "anonymous"
    aliases        other variable names that held this tensor at the end
    shape, dtype   as tuple and dtype name ("float32")
    requires_grad, is_leaf, version
    role           "leaf" (requires grad, no grad_fn), "constant", "intermediate" or "output"
    value          the snapshot taken when it was recorded: a NumPy array, or an ArraySummary
                   for a large one (None if it was changed in place before it was first seen)
    grad           its ``.grad`` when recording stopped (a snapshot), or None
    grad_fn        the NodeRecord of its grad_fn, or None
    op             the OpRecord that produced it, or None (made outside any recorded operation)
    """

    __slots__ = (
        "id",
        "name",
        "named_by",
        "aliases",
        "shape",
        "dtype",
        "requires_grad",
        "is_leaf",
        "version",
        "role",
        "value",
        "grad",
        "grad_fn",
        "output_nr",
        "op",
        "uses",
        "__weakref__",
    )

    def __init__(self, id, shape, dtype, requires_grad, is_leaf, version, value):
        self.id = id
        self.name = id
        self.named_by = "anonymous"
        self.aliases = ()
        self.shape = shape
        self.dtype = dtype
        self.requires_grad = requires_grad
        self.is_leaf = is_leaf
        self.version = version
        self.role = "constant"
        self.value = value
        self.grad = None
        self.grad_fn = None
        self.output_nr = 0
        self.op = None
        self.uses = []  # the OpRecords that read this value, in order

    def __repr__(self):
        return f"<TensorRecord {self.name!r} shape={list(self.shape)} {self.role}>"


class OpRecord:
    """One call of an operation in the forward pass, in the order they ran.

    op        the operation's name ("mul"; an in-place one ends in "_": "add_")
    inputs    TensorRecords, or plain numbers for Python operands
    outputs   TensorRecords
    node      the NodeRecord of the grad_fn it made, or None (nothing required grad, or no_grad)
    line      the line (of the cell, or of the file for ``record()``) that ran it, or None
    code      that line's text
    span      (line, column, end line, end column) of the expression that ran it, or None
              (nbgrad's recorder gives ``line`` and ``span`` as soon as the op is recorded,
              PyTorch's ``line`` only; ``code`` comes when the trace is finished)
    module    the dotted path of the nn.Module it ran inside ("model.fc1"), or None
    in_backward  the index of the backward pass it ran in (create_graph), or None
    function  the OpRecord of the custom ``autograd.Function`` call whose ``forward`` ran it
              (under no_grad, so it made no node: the Function's node stands for it), or None
    """

    __slots__ = (
        "id",
        "op",
        "inputs",
        "outputs",
        "node",
        "_line",
        "code",
        "_span",
        "module",
        "in_backward",
        "function",
        "_source",
        "_site",
        "__weakref__",
    )

    def __init__(self, id, op, inputs, outputs, node, line, span, module, in_backward):
        self.id = id
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.node = node
        self._line = line
        self.code = None
        self._span = span
        self.module = module
        self.in_backward = in_backward
        self.function = None
        # Where the op ran, as a recorder saw it: a Source and the (code, instruction offset,
        # ...) of the user's frame. Its line and span are looked up from there when first read:
        # finding them for every op while recording cost more than the rest of recording it.
        self._source = None
        self._site = None

    def ran_at(self, source, site):
        """Note that the op ran at ``site`` ((code, lasti, ...)) in ``source``: its ``line``
        and ``span`` are found from there when first read."""
        self._source = source
        self._site = site

    @property
    def line(self):
        if self._site is not None:
            self._locate()
        return self._line

    @line.setter
    def line(self, value):
        self._line = value

    @property
    def span(self):
        if self._site is not None:
            self._locate()
        return self._span

    @span.setter
    def span(self, value):
        self._span = value

    def _locate(self):
        code, lasti = self._site[0], self._site[1]
        position = self._source.position_at(code, lasti)
        self._source = self._site = None  # once, and the code object is not kept
        if position is None:
            return
        line, end_line, col, end_col = position
        if self._line is None:
            self._line = line
        if self._span is None and None not in position:
            self._span = (line, col, end_line, end_col)

    def __repr__(self):
        where = f" line {self.line}" if self.line is not None else ""
        return f"<OpRecord {self.op}{where}>"


class NodeRecord:
    """One grad_fn node (``MulBackward0``, ``AccumulateGrad``, a custom Function's node).

    name      the node's class name
    op        the OpRecord that made it, or None (an AccumulateGrad, or a node made before
              recording started or by a custom Function, first met in backward: ``observed``
              is False for those)
    next      like ``next_functions``: a tuple of (NodeRecord or None, input_nr)
    saved     what it saved for backward, name -> value (a snapshot, a number, a tuple...)
    saved_tensors  name -> TensorRecord, for the saved values that are recorded tensors
    formulas  input name -> local-gradient formula text, as the op table declares it
    variable  for an AccumulateGrad: the TensorRecord of its leaf
    freed_at  the index of the backward step after which its saved buffers were freed, or None
    steps     the BackwardSteps in which it ran
    """

    __slots__ = (
        "id",
        "name",
        "op",
        "op_name",
        "next",
        "saved",
        "saved_tensors",
        "formulas",
        "inputs",
        "variable",
        "freed_at",
        "steps",
        "observed",
        "rerun",
        "jacobian_cache",
        "__weakref__",
    )

    def __init__(self, id, name):
        self.id = id
        self.name = name
        self.op = None
        self.op_name = None
        self.next = ()
        self.saved = {}
        self.saved_tensors = {}
        self.formulas = {}
        self.inputs = ()
        self.variable = None
        self.freed_at = None
        self.steps = []
        self.observed = True
        self.rerun = None  # how to re-run its forward (node_check.Rerun), for check()
        self.jacobian_cache = None  # its local Jacobian, once computed (node_check)

    def check(self):
        """A finite-difference check of this node's backward on the recorded values, in
        float64: a NodeCheck (analytic and numeric VJPs per input, errors, verdict)."""
        from nbgrad.trace.node_check import check_node

        return check_node(self)

    @property
    def module(self):
        return self.op.module if self.op is not None else None

    @property
    def line(self):
        return self.op.line if self.op is not None else None

    @property
    def outputs(self):
        return self.op.outputs if self.op is not None else ()

    def __repr__(self):
        return f"<NodeRecord {self.name} {self.id}>"


class BackwardPass:
    """One call of ``backward()`` or ``autograd.grad()`` that ran nodes while recording.

    kind          "backward" or "grad"
    roots         the (NodeRecord, input_nr) edges it started from
    retain_graph, create_graph
    line, code    where in the cell it was called
    steps         its BackwardSteps, in the order the engine ran them
    """

    __slots__ = ("index", "kind", "roots", "retain_graph", "create_graph", "line", "code", "steps")

    def __init__(self, index, kind, roots, retain_graph, create_graph, line):
        self.index = index
        self.kind = kind
        self.roots = roots
        self.retain_graph = retain_graph
        self.create_graph = create_graph
        self.line = line
        self.code = None
        self.steps = []

    def __repr__(self):
        return f"<BackwardPass {self.index} {self.kind}: {len(self.steps)} steps>"


class BackwardStep:
    """One node run by the engine.

    index       its position in ``trace.backward_steps`` (all passes, in order)
    pass_index  which BackwardPass
    node        the NodeRecord that ran
    grads_in    the gradients it received, one per output of its forward (None where none came)
    grads_out   one (NodeRecord or None, input_nr, gradient or None) per ``next`` edge
    freed       its saved buffers were freed right after it ran (no ``retain_graph``)
    """

    __slots__ = ("index", "pass_index", "node", "grads_in", "grads_out", "freed")

    def __init__(self, index, pass_index, node, grads_in, grads_out, freed):
        self.index = index
        self.pass_index = pass_index
        self.node = node
        self.grads_in = grads_in
        self.grads_out = grads_out
        self.freed = freed

    def __repr__(self):
        return f"<BackwardStep {self.index}: {self.node.name}>"


class Accumulation:
    """One gradient summed into a leaf's ``.grad``: ``grad`` is what came, ``total`` the running
    ``.grad`` after adding it. ``step`` is the index of the AccumulateGrad step (None when
    ``backward(inputs=...)`` accumulated into a non-leaf)."""

    __slots__ = ("tensor", "pass_index", "step", "grad", "total")

    def __init__(self, tensor, pass_index, step, grad, total):
        self.tensor = tensor
        self.pass_index = pass_index
        self.step = step
        self.grad = grad
        self.total = total

    def __repr__(self):
        return f"<Accumulation into {self.tensor.name} (pass {self.pass_index})>"


class Trace:
    """Everything recorded while a ``%%autograd`` cell or a ``with nbgrad.record()`` block ran.

    tensors         name -> TensorRecord, in the order they were first recorded
    ops             the OpRecords, in the order they ran
    nodes           the NodeRecords (grad_fn nodes and one AccumulateGrad per leaf)
    passes          the BackwardPasses
    backward_steps  every BackwardStep of every pass, in the order the engine ran them
    accumulations   leaf name -> its Accumulations, in order
    accumulation_log  every Accumulation, in the order they happened
    modules         module path -> class name, for the nn.Modules that ran
    source_lines    line number -> text, for the lines that ran a recorded operation
    engine          (name, version) of the autograd engine recorded: ("nbgrad", "0.1.0") or
                    ("torch", "2.13.0+cpu")
    truncated       why recording stopped early (a limit was reached), or None
    error           "ExceptionType: message" if the recorded code raised, or None
    history_log     per parameter, grad, update and value norms of every backward pass (past
                    max_passes too), or None: nbgrad/trace/history.py; ``history`` reads it

    A ``%%autograd`` cell's trace is completed (its records named from the variables as they
    were when the cell ended, given roles and lines) when one of its tables is first read.
    """

    def __init__(self, name=None, policy=None, source_kind="cell", filename=None, engine=None):
        self.name = name
        # which autograd was recorded: ("nbgrad", its version) or ("torch", torch.__version__)
        self.engine = engine
        self.policy = policy
        self.source_kind = source_kind
        self.filename = filename
        self.tensors = {}
        self.ops = []
        self.nodes = []
        self.passes = []
        self.backward_steps = []
        self.accumulations = {}
        self.accumulation_log = []
        self.modules = {}
        self.source_lines = {}
        self.formulas = {}
        # custom autograd.Function node name -> its backward's source (readable.backward_source)
        self.backward_sources = {}
        self.truncated = None
        self.error = None
        # per-parameter numbers of every backward pass (nbgrad/trace/history.py), or None
        self.history_log = None
        self.failure = None  # the call that raised (trace/failure.py), when one did
        self.complete = False
        self._buffers = {}
        self._later = None  # (function, its arguments, the tables it fills in): complete_later

    # --- completed when first read ----------------------------------------------------------

    def complete_later(self, complete, *args):
        """Leave the last steps of finishing the trace (names, roles, source lines: what only
        reads its records and the recorded code's text) to the first read of any table they
        fill in: then ``complete(trace, *args)`` runs, once. A trace never read (a
        ``%%autograd --no-show`` cell) never pays for them. ``args`` must not refer to the
        trace: it would then be in a cycle, left to the garbage collector."""
        tables = {name: self.__dict__.pop(name) for name in _COMPLETED_WHEN_READ}
        self._later = (complete, args, tables)

    def __getattr__(self, name):
        # Python asks this only for an attribute it did not find: the tables held aside by
        # ``complete_later``. The trace is completed, and the table is where it always is.
        later = self.__dict__.get("_later")
        if later is None or name not in _COMPLETED_WHEN_READ:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._complete_now()
        return self.__dict__[name]

    def _complete_now(self):
        complete, args, tables = self._later
        self._later = None
        self.__dict__.update(tables)
        try:
            complete(self, *args)
        except AttributeError as error:  # not "no such attribute" to whoever read the trace
            raise RuntimeError(f"completing the trace failed: {error!r}") from error

    def __getstate__(self):
        # Pickled or copied whole: completed first (what completes it may not pickle).
        if self.__dict__.get("_later") is not None:
            self._complete_now()
        return self.__dict__

    def __del__(self):
        # The records point at each other both ways (``op.outputs`` and ``tensor.op``,
        # ``node.steps`` and ``step.node``, ``node.saved_tensors`` and ``tensor.grad_fn``): left
        # as cycles, a dropped trace would wait for the garbage collector, which then also scans
        # the next cells' objects again and again (a recorded training step spent about a
        # sixth of its recording cost there). The trace itself is in no cycle, so it goes as
        # soon as the last reference to it does; cutting the links that point back then lets
        # every record go at once, by reference counting. A record kept after its trace was
        # dropped keeps its own fields and its forward links (``grad_fn``, ``next``,
        # ``inputs``, ``outputs``, ``node``, ``variable``), not the back ones.
        later = self.__dict__.get("_later")
        tables = later[2] if later is not None else self.__dict__  # never completed: held aside
        for record in tables.get("tensors", {}).values():  # (a half-made trace has none)
            record.op = None
            record.uses = []
        for record in tables.get("nodes", ()):
            record.op = None
            record.steps = []
            record.saved_tensors = {}

    # --- looking things up ------------------------------------------------------------------

    def node(self, name_or_id):
        """The first node whose class name (or id) is ``name_or_id``."""
        for node in self.nodes:
            if node.name == name_or_id or node.id == name_or_id:
                return node
        raise KeyError(name_or_id)

    def buffer(self, buffer_id):
        """The whole array behind a value's ``"buffer"`` id in the JSON (``--full`` only)."""
        return self._buffers[buffer_id]

    @property
    def history(self):
        """Per parameter (a leaf that received a grad) and backward pass, past ``max_passes``
        too: ``step``, ``parameter``, ``tensor``, ``grad_norm``, ``update_norm``,
        ``value_norm``; a pandas DataFrame when pandas is installed, else a list of dicts with
        those keys (nbgrad/trace/history.py)."""
        return history_rows(self)

    @property
    def leaves(self):
        return [t for t in self.tensors.values() if t.role == "leaf"]

    # --- debugging gradients (nonfinite.py) ----------------------------------------------------

    @property
    def first_nonfinite(self):
        """Where the first NaN or Inf appeared (forward ops first, then backward steps in the
        engine's order), as a NonfiniteRecord with the op or step, the line, what was already
        bad and the path it spread along; None when every recorded value is finite."""
        return _nonfinite.first_nonfinite(self)

    def grad_table(self, sort_by=None, descending=False):
        """Per parameter (leaf with a grad): |grad|, |param| and their ratio (a GradTable of
        GradRows; ``.to_pandas()`` with pandas installed). ``sort_by``: "ratio", "grad_norm",
        "param_norm" or "name"; by default in the order the parameters were recorded."""
        return _nonfinite.grad_table(self, sort_by, descending)

    # --- output ------------------------------------------------------------------------------

    def to_json(self, indent=None, values="inline"):
        """The trace as the JSON text documented in docs/trace-schema.md. ``values="inline"``
        writes arrays of up to ``inline_elements`` elements in it; ``"apart"`` (what the widget
        receives) only their statistics, a few numbers and buffer ids (``trace.buffer(id)``)."""
        import json

        return json.dumps(self.to_dict(values), indent=indent, separators=_separators(indent))

    def to_dict(self, values="inline", carried=None):
        """The trace as JSON-ready Python data (what ``to_json`` serialises). ``values`` as for
        ``to_json``, or ``"carried"`` (save_html: ``carried(buffer_id, array)`` says which
        arrays ride along as bytes, written without statistics)."""
        return trace_json(self, SCHEMA_VERSION, values, carried)

    def summary(self):
        """A text summary: the forward ops, the backward steps, the tensors and their grads."""
        return _summary.render(self)

    def __repr__(self):
        return _summary.one_line(self)

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.summary() if not cycle else repr(self))


# What Trace.complete_later holds aside until first read: every table that holds records (the
# records are named, given roles and lines by the completion) and the one it makes.
_COMPLETED_WHEN_READ = (
    "tensors",
    "ops",
    "nodes",
    "passes",
    "backward_steps",
    "accumulations",
    "accumulation_log",
    "source_lines",
)


def _separators(indent):
    return (",", ": ") if indent is not None else (",", ":")
