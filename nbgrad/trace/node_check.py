"""Check one node's backward numerically, and compute its local Jacobian.

A node of the backward graph is one function ``out = f(x0, x1, ...)`` seen from behind: given the
gradient ``g`` that reached its output, it sends ``g @ J_i`` to each input ``x_i`` (``J_i`` the
local Jacobian ``d out / d x_i``, rows the output's elements, columns the input's). Whether it
does that right can be checked without knowing its formulas: re-run ``f`` on the recorded
inputs, in float64, nudging one input element at a time; the central difference of
``<g, f(x)>`` is the numeric vector-Jacobian product. ``node.check()`` compares it with what the
engine's backward sends (the analytic one).

To re-run a node, its recorder keeps a ``Rerun`` beside the node record when the op runs: the
callable (nbgrad's op table entry, the custom ``autograd.Function`` class, or the PyTorch
function) and its arguments, the tensors among them replaced by their TensorRecords. The values
are those records' snapshots: kept whole up to the recording's ``max_elements`` (else only a
summary, and the node cannot be checked), never a second copy.
"""

import contextlib
import sys

import numpy as np

from nbgrad.trace.values import ArraySummary

# gradcheck's tolerances: an analytic VJP element is right when |a - n| <= ATOL + RTOL * |n|.
ATOL = 1e-5
RTOL = 1e-3
# The step of the central differences, in float64.
EPSILON = 1e-6
# The Jacobian travels with the trace for a node whose inputs and outputs are this small.
JACOBIAN_MAX_ELEMENTS = 64
# ... for at most this many nodes of one trace (each costs a few backward calls), while their
# Jacobians add up to at most this many numbers (they travel up front to the widget).
JACOBIAN_MAX_NODES = 200
JACOBIAN_BUDGET = 8192


class NodeCheckError(ValueError):
    """The node cannot be checked; the message says why."""


class Rerun:
    """What re-runs a node's forward: ``engine`` ("nbgrad" or "torch"), ``kind`` ("op": an
    entry of nbgrad's op table, ``call`` its OpSpec and ``extra`` its attrs; "function": a
    custom autograd.Function class; "torch": a PyTorch function), and its arguments with
    TensorRecords in place of tensors. ``why_not``: set when the node cannot be re-run."""

    __slots__ = ("engine", "kind", "call", "args", "kwargs", "extra", "why_not")

    def __init__(self, engine, kind, call, args=(), kwargs=None, extra=(), why_not=None):
        self.engine = engine
        self.kind = kind
        self.call = call
        self.args = args
        self.kwargs = kwargs or {}
        self.extra = extra
        self.why_not = why_not

    def __reduce__(self):
        # A pickled (or copied) trace keeps its values but not the callables: an op table
        # entry, a Function defined in a notebook or a PyTorch builtin need not pickle.
        why = "the trace was pickled or copied, which does not keep how to call its forward"
        return (Rerun, (self.engine, self.kind, None, (), None, (), self.why_not or why))


# --- what the recorders call -------------------------------------------------------------------


def rerun_for_nbgrad_op(dispatch_locals, input_records, policy):
    """The Rerun of an op of nbgrad's table, from the locals of the engine's dispatch frame
    (``spec`` and ``attrs``) and the records of its inputs."""
    spec = dispatch_locals.get("spec")
    if spec is None:
        return None
    attrs = tuple(dispatch_locals.get("attrs", ()))
    for attr in attrs:
        if isinstance(attr, np.ndarray) and attr.size > policy.max_elements:
            return Rerun(
                "nbgrad", "op", spec, why_not="an argument of the op was too large to keep"
            )
    attrs = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in attrs)
    return Rerun("nbgrad", "op", spec, tuple(input_records), extra=attrs)


def rerun_for_function(engine, function_class, args, kwargs, record_of):
    """The Rerun of a custom autograd.Function call: its class and arguments, each tensor
    replaced by ``record_of(tensor)``."""
    tensor_type = _tensor_type(engine)

    def placeholder(value):
        return record_of(value) if isinstance(value, tensor_type) else value

    return Rerun(
        engine,
        "function",
        function_class,
        tuple(placeholder(a) for a in args),
        {k: placeholder(v) for k, v in (kwargs or {}).items()},
    )


def rerun_for_torch(func, args, kwargs, record_of):
    """The Rerun of a PyTorch call; an in-place one (``x.mul_(2)``) re-runs as its out-of-place
    form, on the value before the write."""
    import torch
    from torch.utils import _pytree

    name = getattr(func, "__name__", "")
    if name.endswith("_") and not name.endswith("__"):
        out_of_place = getattr(torch.Tensor, name[:-1], None)
        if out_of_place is None:
            return Rerun("torch", "torch", func, why_not=f"the in-place {name} has no plain form")
        func = out_of_place
    leaves, layout = _pytree.tree_flatten((args, kwargs or {}))
    leaves = [record_of(v) if isinstance(v, torch.Tensor) else v for v in leaves]
    args, kwargs = _pytree.tree_unflatten(leaves, layout)
    return Rerun("torch", "torch", func, tuple(args), dict(kwargs))


# --- the check ---------------------------------------------------------------------------------


class InputCheck:
    """One input of a checked node: its name (the recorded tensor's, with its position when the
    same tensor is read twice), the analytic and numeric VJPs (float64 arrays of its shape), the
    largest absolute and relative errors, and whether they agree within the tolerances."""

    __slots__ = ("name", "position", "analytic", "numeric", "max_abs_error", "max_rel_error", "ok")

    def __init__(self, name, position, analytic, numeric):
        self.name = name
        self.position = position
        self.analytic = analytic
        self.numeric = numeric
        difference = np.abs(analytic - numeric)
        self.max_abs_error = float(difference.max()) if difference.size else 0.0
        scale = np.maximum(np.abs(numeric), ATOL)
        self.max_rel_error = float((difference / scale).max()) if difference.size else 0.0
        self.ok = bool(np.all(difference <= ATOL + RTOL * np.abs(numeric)))

    def __repr__(self):
        mark = "ok" if self.ok else "WRONG"
        return f"<InputCheck {self.name}: {mark}, max abs error {self.max_abs_error:.3g}>"


class NodeCheck:
    """The result of ``node.check()``: ``inputs`` (InputChecks), ``grad_in`` (the incoming
    gradients used, float64), ``ok``, ``wrong_inputs`` (the names of the inputs whose gradient
    is wrong), ``max_abs_error``, ``max_rel_error``, ``verdict`` (a sentence) and ``note``."""

    def __init__(self, node_name, engine, inputs, grad_in, note=None):
        self.node_name = node_name
        self.engine = engine
        self.inputs = inputs
        self.grad_in = grad_in
        self.note = note
        self.ok = all(i.ok for i in inputs)
        self.wrong_inputs = [i.name for i in inputs if not i.ok]
        self.max_abs_error = max((i.max_abs_error for i in inputs), default=0.0)
        self.max_rel_error = max((i.max_rel_error for i in inputs), default=0.0)

    @property
    def verdict(self):
        tolerance = f"|analytic - numeric| <= {ATOL:g} + {RTOL:g} * |numeric|"
        if not self.inputs:
            return f"{self.node_name}: no input needs a gradient, nothing to check"
        if self.ok:
            return f"{self.node_name}'s backward is right: every input within {tolerance}"
        wrong = ", ".join(self.wrong_inputs)
        s = "" if len(self.wrong_inputs) == 1 else "s"
        return f"{self.node_name}'s backward is WRONG: the gradient of input{s} {wrong} is off"

    def to_json(self):
        """What the widget shows (plain lists of numbers)."""
        return {
            "node": self.node_name,
            "engine": self.engine,
            "ok": self.ok,
            "verdict": self.verdict,
            "note": self.note,
            "max_abs_error": _number_json(self.max_abs_error),
            "max_rel_error": _number_json(self.max_rel_error),
            "atol": ATOL,
            "rtol": RTOL,
            "inputs": [
                {
                    "name": i.name,
                    "shape": list(i.analytic.shape),
                    "analytic": [_number_json(x) for x in i.analytic.ravel()],
                    "numeric": [_number_json(x) for x in i.numeric.ravel()],
                    "max_abs_error": _number_json(i.max_abs_error),
                    "max_rel_error": _number_json(i.max_rel_error),
                    "ok": i.ok,
                }
                for i in self.inputs
            ],
        }

    def __repr__(self):
        lines = [self.verdict]
        for i in self.inputs:
            mark = "ok   " if i.ok else "WRONG"
            lines.append(
                f"  {mark} {i.name}: max abs error {i.max_abs_error:.3g}, "
                f"max rel error {i.max_rel_error:.3g}"
            )
            lines.append(f"        analytic {_short(i.analytic)}")
            lines.append(f"        numeric  {_short(i.numeric)}")
        if self.note:
            lines.append(f"  ({self.note})")
        return "\n".join(lines)


def check_node(node):
    """Finite-difference check of ``node``'s backward (see the module's docstring)."""
    with _unrecorded():
        return _check(node)


def _check(node):
    runner = _Runner(node)
    grads_in, note = runner.incoming_gradients()
    analytic = runner.vjp(grads_in)
    inner = runner.nodes_made()
    if len(inner) > 1:  # (PyTorch: cross_entropy makes LogSoftmaxBackward0 and NllLossBackward0)
        together = f"the call made {len(inner)} nodes ({', '.join(inner)}): checked together"
        note = f"{note}; {together}" if note else together
    checks = []
    for slot, analytic_grad in zip(runner.checked, analytic):
        numeric = runner.numeric_vjp(slot, grads_in)
        checks.append(InputCheck(runner.input_name(slot), slot, analytic_grad, numeric))
    return NodeCheck(node.name, runner.rerun.engine, checks, grads_in, note)


def local_jacobian(node, max_elements=JACOBIAN_MAX_ELEMENTS):
    """The node's local Jacobian as the engine's backward computes it, or None when it cannot
    be re-run or an input or output has more than ``max_elements`` elements: ``{"of": output
    record ids, "wrt": input record ids, "blocks": [[rows x columns nested lists] per input]
    per output}``, row r being what the node sends back for a gradient of 1 on output element
    r (so grad sent = grad in (a row) @ block)."""
    with _unrecorded():
        try:
            return _jacobian(node, max_elements)
        except NodeCheckError:  # (a random forward, a forward that fails in float64)
            return None


def _jacobian(node, max_elements):
    try:
        runner = _Runner(node)
    except NodeCheckError:
        return None
    if not runner.checked or any(a.size > max_elements for a in runner.arrays.values()):
        return None
    if any(o.size > max_elements for o in runner.output_shapes_arrays()):
        return None
    if len(runner.nodes_made()) > 1:  # the call's Jacobian would not be this node's
        return None
    outputs = runner.output_shapes_arrays()
    blocks = [[np.zeros((o.size, runner.arrays[s].size)) for s in runner.checked] for o in outputs]
    for j, out in enumerate(outputs):
        for r in range(out.size):
            grads_in = [np.zeros(o.shape) for o in outputs]
            grads_in[j].flat[r] = 1.0
            for i, row in enumerate(runner.vjp(grads_in)):
                blocks[j][i][r] = row.ravel()
    if not all(np.all(np.isfinite(b)) for row in blocks for b in row):
        return None
    output_records = list(node.outputs)
    return {
        "of": [
            output_records[j].id if j < len(output_records) else None for j in range(len(outputs))
        ],
        "wrt": [runner.records[s].id for s in runner.checked],
        "blocks": [[_rounded(b) for b in row] for row in blocks],
    }


@contextlib.contextmanager
def _unrecorded():
    """The check's own forward and backward runs are not part of any recording going on (a
    ``check()`` inside a ``record()`` block): nbgrad's listeners are set aside meanwhile, and
    PyTorch's recorder lets calls through while it is busy."""
    from nbgrad.autograd import observe
    from nbgrad.trace.recording import active_recorder

    with _random_state_kept():
        recorder = active_recorder()
        if recorder is None:
            yield
            return
        with _listeners_aside(recorder, observe):
            yield


@contextlib.contextmanager
def _random_state_kept():
    """Re-running a random op (dropout) draws numbers: the program's random state is put back
    after, so checking a node changes nothing the program will draw next."""
    import nbgrad

    states = [(nbgrad.set_rng_state, nbgrad.get_rng_state())]
    torch = sys.modules.get("torch")
    if torch is not None:
        states.append((torch.set_rng_state, torch.get_rng_state()))
    try:
        yield
    finally:
        for set_state, state in states:
            set_state(state)


@contextlib.contextmanager
def _listeners_aside(recorder, observe):
    """No listener of the engine's hears the check's runs, and PyTorch's recorder, busy,
    lets its calls through."""
    lists = (
        observe.op_listeners,
        observe.op_start_listeners,
        observe.node_listeners,
        observe.node_start_listeners,
        observe.accumulate_listeners,
        observe.backward_listeners,
    )
    kept = [list(listeners) for listeners in lists]
    busy = getattr(recorder, "_busy", None)
    for listeners in lists:
        listeners.clear()  # (in place: the engine holds these very lists)
    if busy is not None:
        recorder._busy = True
    try:
        yield
    finally:
        for listeners, listening in zip(lists, kept):
            listeners[:] = listening
        if busy is not None:
            recorder._busy = busy


class _Runner:
    """Re-runs one node's forward and backward in float64 on its recorded values."""

    def __init__(self, node):
        rerun = getattr(node, "rerun", None)
        if rerun is None:
            raise NodeCheckError(_why_no_rerun(node))
        if rerun.why_not is not None:
            raise NodeCheckError(f"{node.name} cannot be re-run: {rerun.why_not}")
        self.node = node
        self.rerun = rerun
        self.engine = _Engine(rerun.engine)
        # Every TensorRecord among the arguments is a slot: its value, as a float64 array when
        # floating; the slots that required grad (floating) are the inputs checked.
        self.records, self.arrays, self.checked = [], {}, []
        for record in _records_in(rerun):
            slot = len(self.records)
            self.records.append(record)
            value = record.value
            if value is None:
                raise NodeCheckError(
                    f"{node.name} cannot be checked: "
                    f"the value of its input {record.name} was not kept"
                )
            if isinstance(value, ArraySummary):
                raise NodeCheckError(
                    f"{node.name} cannot be checked: its input {record.name} "
                    f"({value.size} elements) was summarised, not kept whole "
                    "(record with a larger max_elements, or --full)"
                )
            array = np.asarray(value)
            if array.dtype.kind in "fc":
                array = array.astype(np.complex128 if array.dtype.kind == "c" else np.float64)
                if record.requires_grad:
                    self.checked.append(slot)
            self.arrays[slot] = array
        self._outputs = None

    def input_name(self, slot):
        record = self.records[slot]
        repeated = sum(r is record for r in self.records) > 1
        return f"{record.name} (input {slot})" if repeated else record.name

    def run(self, arrays, grad_slots=()):
        """Run the forward on ``arrays`` (slot -> array); the slots in ``grad_slots`` become
        leaves that require grad. Returns (leaves, floating outputs)."""
        engine = self.engine
        leaves = {}
        values = {}
        for slot, array in arrays.items():
            tensor = engine.tensor(array, requires_grad=slot in grad_slots)
            if slot in grad_slots:
                leaves[slot] = tensor
            values[slot] = tensor
        args, kwargs = _fill(self.rerun, values, self.records)
        rerun = self.rerun
        try:
            if rerun.kind == "op":
                from nbgrad.autograd.dispatch import run_op

                spec = rerun.call
                result = run_op(spec, [args] if spec.variadic else args, rerun.extra)
            elif rerun.kind == "function":
                result = rerun.call.apply(*args, **kwargs)
            else:
                result = rerun.call(*args, **kwargs)
        except Exception as error:
            raise NodeCheckError(
                f"{self.node.name} cannot be checked: re-running its forward in float64 failed "
                f"({type(error).__name__}: {error})"
            ) from error
        outputs = [o for o in _flat(result) if engine.is_tensor(o)]
        return leaves, outputs

    def output_shapes_arrays(self):
        """The forward's floating outputs on the recorded inputs (float64 arrays)."""
        if self._outputs is None:
            runs = []
            for _ in range(2):
                with self.engine.no_grad():
                    _, outputs = self.run(self.arrays)
                runs.append([self.engine.array(o) for o in outputs if self.engine.floating(o)])
            if not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(*runs)):
                raise NodeCheckError(
                    f"{self.node.name} cannot be checked: its forward is random (each run draws "
                    "new numbers, as dropout does), so finite differences do not apply"
                )
            self._outputs = runs[0]
        return self._outputs

    def incoming_gradients(self):
        """The gradients the node received in its (first) backward step, float64, one per
        floating output; ones when it never ran in backward (said in the note)."""
        outputs = self.output_shapes_arrays()
        steps = getattr(self.node, "steps", None) or []
        if not steps:
            note = "the node did not run in backward: checked with an incoming gradient of ones"
            return [np.ones(o.shape) for o in outputs], note
        recorded = list(steps[0].grads_in)
        grads = []
        for position, out in enumerate(outputs):
            grad = recorded[position] if position < len(recorded) else None
            if isinstance(grad, ArraySummary):
                raise NodeCheckError(
                    f"{self.node.name} cannot be checked: the gradient it received was "
                    "summarised, not kept whole (record with a larger max_elements, or --full)"
                )
            grad = np.zeros(out.shape) if grad is None else np.asarray(grad, dtype=np.float64)
            grads.append(np.broadcast_to(grad, out.shape).copy())
        return grads, None

    def nodes_made(self):
        """The names of the nodes one re-run makes between its outputs and its inputs (one,
        unless the recorded call ran several differentiable steps inside, unseen)."""
        _, outputs = self.run(self.arrays, grad_slots=set(self.checked))
        names, seen = [], set()
        stack = [o.grad_fn for o in outputs if getattr(o, "grad_fn", None) is not None]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            name = node.name() if callable(getattr(node, "name", None)) else type(node).__name__
            if name.endswith("AccumulateGrad"):  # (PyTorch: "torch::autograd::AccumulateGrad")
                continue
            names.append(name)
            stack.extend(child for child, _ in node.next_functions)
        return names[::-1]

    def vjp(self, grads_in):
        """What the engine's backward sends to each checked input for ``grads_in``."""
        engine = self.engine
        leaves, outputs = self.run(self.arrays, grad_slots=set(self.checked))
        pairs = [
            (o, g)
            for o, g in zip((o for o in outputs if engine.floating(o)), grads_in)
            if engine.requires_grad(o)
        ]
        if not pairs:
            return [np.zeros(self.arrays[s].shape) for s in self.checked]
        try:
            grads = engine.grad(
                [o for o, _ in pairs],
                [leaves[s] for s in self.checked],
                [engine.tensor(g) for _, g in pairs],
            )
        except Exception as error:
            raise NodeCheckError(
                f"{self.node.name} cannot be checked: its backward raised "
                f"({type(error).__name__}: {error})"
            ) from error
        return [
            np.zeros(self.arrays[s].shape) if g is None else engine.array(g)
            for s, g in zip(self.checked, grads)
        ]

    def numeric_vjp(self, slot, grads_in):
        """Central differences of <grads_in, forward> along each element of input ``slot``."""
        base = self.arrays[slot]
        numeric = np.zeros(base.shape)
        with self.engine.no_grad():
            for k in range(base.size):
                sides = []
                for step in (EPSILON, -EPSILON):
                    nudged = base.copy()
                    nudged.flat[k] += step
                    _, outputs = self.run({**self.arrays, slot: nudged})
                    floating = [self.engine.array(o) for o in outputs if self.engine.floating(o)]
                    sides.append(sum(float(np.sum(g * o)) for g, o in zip(grads_in, floating)))
                numeric.flat[k] = (sides[0] - sides[1]) / (2 * EPSILON)
        return numeric


class _Engine:
    """The few calls the check needs, from nbgrad or from PyTorch."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch

            self.module = torch
        else:
            import nbgrad

            self.module = nbgrad

    def tensor(self, array, requires_grad=False):
        if self.name == "torch":
            return self.module.tensor(np.array(array), requires_grad=requires_grad)
        return self.module.tensor(np.array(array), requires_grad=requires_grad)

    def is_tensor(self, value):
        return isinstance(value, self.module.Tensor)

    def floating(self, tensor):
        return tensor.dtype.is_floating_point

    def requires_grad(self, tensor):
        return tensor.requires_grad

    def array(self, tensor):
        return np.array(tensor.detach().numpy(), dtype=np.float64)

    def no_grad(self):
        return self.module.no_grad()

    def grad(self, outputs, inputs, grad_outputs):
        return self.module.autograd.grad(
            outputs, inputs, grad_outputs=grad_outputs, allow_unused=True
        )


def _tensor_type(engine):
    if engine == "torch":
        import torch

        return torch.Tensor
    from nbgrad.autograd.tensor import Tensor

    return Tensor


def _records_in(rerun):
    from nbgrad.trace.trace import TensorRecord

    found = []
    for value in _walk((rerun.args, rerun.kwargs)):
        if type(value) is TensorRecord:
            found.append(value)
    return found


def _walk(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    else:
        yield value


def _fill(rerun, values, records):
    """The arguments with each TensorRecord replaced by the tensor of its slot, in the order
    ``_records_in`` found them."""
    from nbgrad.trace.trace import TensorRecord

    slots = iter(range(len(records)))

    def fill(value):
        if type(value) is TensorRecord:
            return values[next(slots)]
        if isinstance(value, (list, tuple)):
            return type(value)(fill(v) for v in value)
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return value

    return fill(rerun.args), fill(rerun.kwargs)


def _flat(result):
    if isinstance(result, (list, tuple)):
        for item in result:
            yield from _flat(item)
    else:
        yield result


def _why_no_rerun(node):
    if node.name == "AccumulateGrad":
        return "AccumulateGrad only adds the gradient into its leaf's .grad: nothing to check"
    if not node.observed:
        return (
            f"{node.name} cannot be re-run: no recorded call made it (it was made before "
            "recording started, or inside a call the recorder does not see)"
        )
    return f"{node.name} cannot be re-run: the recorder did not keep how to call its forward"


def _number_json(x):
    """A float for strict JSON: non-finite ones as the strings the trace schema uses."""
    x = float(x)
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def _rounded(matrix):
    """The matrix as nested lists of numbers with 8 significant digits (JSON stays small)."""
    return [[float(f"{x:.8g}") + 0.0 for x in row] for row in matrix]  # (no -0.0)


def _short(array, limit=6):
    flat = np.asarray(array).ravel()
    text = ", ".join(f"{x:.6g}" for x in flat[:limit])
    more = f", ... ({flat.size} values)" if flat.size > limit else ""
    return f"[{text}{more}]"


def rerun_from_dispatch(frame, node, is_function_call, input_records, policy, record_of):
    """nbgrad's recorder: the Rerun of the op whose announcing ``frame`` (the engine's
    dispatch, or ``Function.apply``) made ``node``. Reading a frame's locals costs more than
    recording the op, so they are read only when needed: for a Function call's arguments,
    and for an op with attributes (a table op's inputs are its records, its entry the node's)."""
    if is_function_call:
        local = frame.f_locals
        function_class = local.get("cls")
        if function_class is None:
            return None
        return rerun_for_function(
            "nbgrad", function_class, local.get("args", ()), local.get("kwargs"), record_of
        )
    spec = getattr(node, "spec", None)
    if spec is None:
        return None
    if not spec.attrs:
        return Rerun("nbgrad", "op", spec, tuple(input_records))
    return rerun_for_nbgrad_op(frame.f_locals, input_records, policy)


def note_torch_rerun(op, func, args, kwargs, record_of):
    """PyTorch's recorder: keep how to re-run the call that just made ``op`` (and its node).
    Its input records are the op's (an in-place op's first is the value before the write)."""
    node = op.node
    if node.rerun is not None or node.op is not op:
        return
    import torch

    operands = [v for v in _walk((args, kwargs or {})) if isinstance(v, torch.Tensor)]
    records = [r for r in op.inputs if not isinstance(r, (int, float, str, type(None)))]
    by_id = {id(t): r for t, r in zip(operands, records)} if len(operands) == len(records) else {}

    def record(tensor):
        return by_id.get(id(tensor)) or record_of(tensor)

    node.rerun = rerun_for_torch(func, args, kwargs, record)


def note_torch_function_rerun(call, node, apply_frame, record_of):
    """PyTorch's recorder: keep how to re-run a custom Function call, from the locals of its
    ``Function.apply`` frame (its class and arguments)."""
    record = call.node
    if record.rerun is not None:
        return
    local = apply_frame.f_locals
    function_class = local.get("cls") or getattr(node, "_forward_cls", None)
    if function_class is None or "args" not in local:
        record.rerun = Rerun(
            "torch", "function", None, why_not="its call's arguments were not seen"
        )
        return
    record.rerun = rerun_for_function(
        "torch", function_class, local["args"], local.get("kwargs"), record_of
    )


def jacobians_for(trace):
    """Node record -> its local Jacobian (``local_jacobian``), for the nodes small enough (every
    input and output of at most JACOBIAN_MAX_ELEMENTS elements), in the trace's order, while
    they add up to at most JACOBIAN_BUDGET numbers in all (the widget receives them up front);
    computed once per node and kept on it."""
    found = {}
    budget = JACOBIAN_BUDGET
    for node in trace.nodes:
        if len(found) >= JACOBIAN_MAX_NODES:
            break
        entries = _jacobian_entries(node)
        if entries is None or entries > budget:
            continue
        if node.jacobian_cache is None:
            try:
                node.jacobian_cache = local_jacobian(node) or False
            except Exception:  # a forward that cannot be re-run simply gets no Jacobian
                node.jacobian_cache = False
        if node.jacobian_cache:
            found[node] = node.jacobian_cache
            budget -= entries
    return found


def _jacobian_entries(node):
    """How many numbers the node's Jacobian has, from its records' shapes; None when it has no
    Jacobian to carry (cannot be re-run, or an input or output is too large)."""
    rerun = node.rerun
    if rerun is None or rerun.why_not is not None:
        return None
    if rerun.kind == "function":
        # a custom Function's backward is the user's code (it may print, count, write): it runs
        # when the user asks (node.check()), not behind their back when a trace is written
        return None
    inputs = [r for r in _records_in(rerun) if r.requires_grad]
    outputs = list(node.outputs)
    if not inputs or not outputs:
        return None
    sizes_in = [int(np.prod(r.shape)) for r in inputs]
    sizes_out = [int(np.prod(r.shape)) for r in outputs]
    if max(sizes_in + sizes_out) > JACOBIAN_MAX_ELEMENTS:
        return None
    return sum(sizes_in) * sum(sizes_out)


# The widget checks a node in the kernel while the user waits: at most this many input elements
# (two forward runs each); ``node.check()`` in Python has no such limit.
WIDGET_MAX_CHECK_ELEMENTS = 4096


def check_reply(source, message):
    """The widget's answer to ``{"type": "check", "node": id, "request": k}``: ``{"type":
    "check", "request": k, "ok": True, "result": NodeCheck.to_json()}``, or ``"ok": False``
    and an ``"error"`` saying why."""
    reply = {"type": "check", "request": message.get("request")}
    node_id = message.get("node")
    nodes = getattr(source, "nodes", None)
    if nodes is None:
        reply.update(ok=False, error="this widget was made from JSON: there is no node to re-run")
        return reply
    node = next((n for n in nodes if n.id == node_id), None)
    if node is None:
        reply.update(ok=False, error=f"the trace has no node {node_id!r}")
        return reply
    try:
        runner = _Runner(node)
        size = sum(runner.arrays[s].size for s in runner.checked)
        if size > WIDGET_MAX_CHECK_ELEMENTS:
            raise NodeCheckError(
                f"{node.name}'s inputs have {size} elements: too many to check here (at most "
                f"{WIDGET_MAX_CHECK_ELEMENTS}); call trace.node({node.id!r}).check() in Python"
            )
        reply.update(ok=True, result=check_node(node).to_json())
    except NodeCheckError as error:
        reply.update(ok=False, error=str(error))
    except Exception as error:  # the kernel answers whatever happens: the page is waiting
        reply.update(ok=False, error=f"the check failed: {type(error).__name__}: {error}")
    return reply
