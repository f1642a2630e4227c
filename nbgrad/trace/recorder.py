"""The Recorder: listens at the engine's observation points and builds a Trace.

Four listeners do the work, each cheap and each guarded so that a fault in the recorder stops
recording instead of breaking the user's program:

- ``_on_op``: an operation (or a custom ``autograd.Function``) ran. Its inputs, outputs and node
  become records, values are snapshotted, the node's saved buffers noted, intermediates asked to
  retain their grad, and the user's line and the running nn.Module noted.
- ``_on_backward``: a ``backward()`` or ``autograd.grad()`` pass starts or ends.
- ``_on_node``: a node ran in backward. The grads it got and sent on each edge are logged.
- ``_on_accumulate``: a grad was summed into a leaf's ``.grad``, with the running total.

While recording, the recorder maps engine objects to their records by ``id`` with a weak
reference to check the object is still the same one; it never keeps a tensor alive. ``stop``
removes every listener; ``finish`` names the tensors and drops every engine reference, leaving a
Trace made only of snapshots. What this recorder shares with the one of PyTorch (options,
start/stop/finish, limits, logging passes and steps, finishing the trace) is
``recording.BaseRecorder``.
"""

import os
import sys
import weakref

import numpy as np

import nbgrad.autograd
import nbgrad.ops
from nbgrad.autograd import engine, function, grad_mode, observe, reading, views
from nbgrad.autograd.node import AccumulateGrad, TableNode
from nbgrad.autograd.tensor import Tensor
from nbgrad.trace.failure import nbgrad_failure
from nbgrad.trace.graph_reader import formula_entry
from nbgrad.trace.history import NbgradHistory
from nbgrad.trace.modules import find_hook_home
from nbgrad.trace.node_check import rerun_from_dispatch
from nbgrad.trace.readable import note_backward_source
from nbgrad.trace.recording import (  # the limits too: nbgrad.trace.api and magic import them
    DEFAULT_MAX_NODES,  # noqa: F401
    DEFAULT_MAX_PASSES,  # noqa: F401
    BaseRecorder,
    RecordingError,
    active_recorder,
    single_grad_received,
)
from nbgrad.trace.trace import Accumulation, NodeRecord, OpRecord, TensorRecord
from nbgrad.trace.values import PACKED, ArraySummary, dtype_name, keep_plain, snapshot

# Frames in these folders only carry an operation from the user's expression to the engine: an
# op called through them alone is the value of that expression.
_PLUMBING = tuple(
    os.path.dirname(package.__file__) + os.sep for package in (nbgrad.ops, nbgrad.autograd)
)
_TRACE_DIR = os.path.dirname(__file__) + os.sep


def _announcer():
    """The frame that announced the event being recorded (the engine's dispatch, Function.apply,
    the backward pass runner): the first frame outside the recorder's own package."""
    frame = sys._getframe(1)
    while frame.f_code.co_filename.startswith(_TRACE_DIR):
        frame = frame.f_back
    return frame


# An operation called by the engine itself (summing a retained or accumulated grad) is
# bookkeeping, not part of the user's computation.
_ENGINE_FILE = engine.__file__
_INTERNAL = object()
# ``Function.apply`` runs a custom Function's forward (under no_grad), then announces the call:
# an op whose frames pass through it ran inside that forward.
_FUNCTION_APPLY_CODE = getattr(getattr(function.Function.apply, "__func__", None), "__code__", None)


class Recorder(BaseRecorder):
    """Records what nbgrad's autograd does from ``start()`` to ``stop()``; the options are
    ``BaseRecorder``'s.

    Its own state, besides what every recorder keeps: ``_nodes`` holds weak references to the
    nodes; ``_last_totals`` and ``_known_grads`` hold the .grad's array (not the tensor);
    ``_function_calls`` are (Function.apply's frame, [OpRecords run inside it]) pairs, until
    the call is announced and becomes the ops' ``function``; ``_grad_snapshots`` maps id(array)
    to (weak reference to the array, snapshot).
    """

    tensor_type = Tensor
    history_class = NbgradHistory

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._listeners = (
            (observe.op_listeners, self._on_op),
            (observe.backward_listeners, self._on_backward),
            (observe.node_listeners, self._on_node),
            (observe.accumulate_listeners, self._on_accumulate),
        )
        self._leaf_of_accumulator = {}  # AccumulateGrad NodeRecord -> weakref to its leaf
        self._last_pass = None  # the newest pass, running or ended

    # --- starting and stopping ----------------------------------------------------------------

    def _hook_home(self):
        return find_hook_home()

    def _listen(self):
        for listeners, listener in self._listeners:
            listeners.append(listener)

    def _stop_listening(self):
        for listeners, listener in self._listeners:
            while listener in listeners:
                listeners.remove(listener)

    def _forget_engine_objects(self):
        super()._forget_engine_objects()
        self._leaf_of_accumulator.clear()
        # The listeners are the recorder's own bound methods: the engine's lists would keep it
        # (and through it the frame that runs the recorded code) in a cycle.
        self._listeners = ()

    def _failure_of(self, error):
        if not self._listening:  # raised after recording stopped: not in the recorded graph
            return None
        try:
            return nbgrad_failure(self, error)
        except Exception:  # noqa: BLE001 - finding the failing call must not hide the error
            return None

    # --- the four listeners --------------------------------------------------------------------

    def _on_op(self, node, op_name, inputs, outputs):
        try:
            self._record_op(node, op_name, inputs, outputs)
        except Exception as error:  # a recorder fault must not break the user's program
            self._fail(error)
        if self.nonfinite_watch is not None:  # raises from the op that made a NaN or Inf
            self.nonfinite_watch.check(self.trace)

    def _on_backward(self, event, roots, retain_graph, create_graph, is_grad):
        try:
            if event == "start":
                self._start_pass(roots, retain_graph, create_graph, is_grad)
            elif self._running_passes:
                self._running_passes.pop()
        except Exception as error:
            self._fail(error)

    def _on_node(self, node, grads_in, grads_out):
        try:
            self._record_step(node, grads_in, grads_out)
        except Exception as error:
            self._fail(error)
        if self.nonfinite_watch is not None:
            self.nonfinite_watch.check(self.trace)

    def _on_accumulate(self, leaf, grad, total):
        try:
            self._record_accumulation(leaf, grad, total)
        except Exception as error:
            self._fail(error)

    # --- forward --------------------------------------------------------------------------------

    def _record_op(self, node, op_name, inputs, outputs):
        caller = _announcer()  # the engine's dispatch, Function.apply
        user_frame, direct = self._locate(caller)
        if user_frame is _INTERNAL:
            return
        trace = self.trace
        running = self._running_passes
        # A cheap look at the limits first (every op comes here); _limit_reached decides.
        max_nodes, max_passes = self.max_nodes, self.max_passes
        if (
            len(trace.ops) >= max_nodes
            or len(trace.nodes) >= max_nodes
            or (node is not None and not running and max_passes and len(trace.passes) >= max_passes)
        ) and self._limit_reached(makes_node=node is not None):
            return
        backward_pass = running[-1] if running else None

        in_place = bool(outputs) and bool(inputs) and outputs[0] is inputs[0]
        known_tensors = self._tensors
        input_records = []
        for position, value in enumerate(inputs):
            if type(value) in _NUMBERS:
                input_records.append(value)
            elif isinstance(value, Tensor):
                entry = known_tensors.get(id(value))
                if in_place and position == 0:
                    record = self._value_before_inplace(value)
                elif (
                    entry is not None
                    and entry[0]() is value
                    and entry[1].version == reading.version(value)
                ):
                    record = entry[1]  # ``_record_of``, written out: every input comes here
                else:
                    record = self._new_tensor(value)
                if node is not None and record.value is None and record in self._pending:
                    # Read by autograd now: its value is part of the graph, keep it.
                    record.value = snapshot(reading.values(value), self.policy)
                    del self._pending[record]
                input_records.append(record)
            else:
                input_records.append(keep_plain(value, self.policy))

        op = OpRecord(
            f"o{len(trace.ops)}",
            op_name,
            input_records,
            [],
            None,
            None,  # its line and span: from its site, when first read
            None,
            self._scopes.current or None,
            backward_pass.index if backward_pass is not None else None,
        )
        site = None
        if user_frame is not None:
            site = (user_frame.f_code, user_frame.f_lasti, direct)
            op.ran_at(self.source, site)
        trace.ops.append(op)
        self._sites.append(site)
        is_function_call = caller.f_code is _FUNCTION_APPLY_CODE
        if is_function_call:
            self._close_function_call(caller, op)
        inside_function = not grad_mode._enabled and self._note_function_call(
            caller.f_back if is_function_call else caller, op
        )  # a custom Function's forward runs under no_grad
        for record in input_records:
            if type(record) is TensorRecord:
                record.uses.append(op)

        node_record = None
        if node is not None:
            node_record = self._make_node(node, op)
            op.node = node_record
            if node_record.rerun is None and type(node) is not AccumulateGrad:
                node_record.rerun = rerun_from_dispatch(  # for node.check()
                    caller, node, is_function_call, input_records, self.policy, self._record_of
                )
        for output_nr, tensor in enumerate(outputs):
            if node is None:
                # Under no_grad or on constants: autograd keeps nothing of it, and neither do we
                # unless autograd reads the result later (an optimizer's ``lr * p.grad`` is not
                # worth a copy; the updated parameter is, when the next forward reads it). What
                # a custom Function's forward computes is kept: it is what its node stands for.
                record = self._new_tensor(tensor, op=op, take_value=inside_function)
                if not inside_function:
                    self._pending[record] = None
                record.output_nr = output_nr
            else:
                record = self._new_tensor(tensor, op=op, same_value=is_function_call)
                record.output_nr = tensor.output_nr
                if tensor.grad_fn is node:
                    record.grad_fn = node_record
                    tensor.retain_grad()  # every intermediate keeps its grad (issue 4); once
            op.outputs.append(record)
        if node_record is not None:
            if is_function_call:
                self._note_function_saved(node_record, node, op.outputs)
            elif type(node) is not AccumulateGrad:
                self._note_saved(node_record, node, input_records, op.outputs)

    def _locate(self, frame, from_op=True):
        """From an op's caller frame up to the recorded code: (the innermost frame of the
        recorded code or None, whether only op plumbing lies between); ``_INTERNAL`` first for
        the engine's own bookkeeping operations."""
        filename = self._filename
        base = self._base_frame
        direct = True
        while frame is not None:
            frame_file = frame.f_code.co_filename
            if frame_file == filename:
                return frame, direct
            if direct and from_op and frame_file == _ENGINE_FILE:
                return _INTERNAL, False
            if direct and not frame_file.startswith(_PLUMBING):
                direct = False
            if frame is base:
                break
            frame = frame.f_back
        return None, False

    # --- custom autograd.Function calls ---------------------------------------------------------

    def _note_function_call(self, frame, op):
        """If ``op`` runs inside a custom Function's forward, remember it under that call (the
        call is announced only when its forward has returned) and return True."""
        base = self._base_frame
        while frame is not None and frame is not base:
            if frame.f_code is _FUNCTION_APPLY_CODE:
                for held, inner in reversed(self._function_calls):
                    if held is frame:
                        inner.append(op)
                        return True
                self._function_calls.append((frame, [op]))
                return True
            frame = frame.f_back
        return False

    def _close_function_call(self, apply_frame, op):
        """The Function call run by ``apply_frame`` is ``op``: the ops its forward ran are
        marked as run inside it."""
        calls = self._function_calls
        for position in range(len(calls) - 1, -1, -1):
            held, inner = calls[position]
            if held is apply_frame:
                del calls[position]
                for inner_op in inner:
                    inner_op.function = op
                return

    def _value_before_inplace(self, tensor):
        """The record of what an in-place op overwrote: the tensor's latest record if there is
        one (its value was snapshotted when it was recorded), else a record without a value."""
        entry = self._tensors.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1]
        record = self._new_tensor(tensor, take_value=False)
        record.version = reading.version(tensor) - 1
        # The overwritten value is gone, unless the node kept a copy to differentiate through.
        return record

    # --- tensors ----------------------------------------------------------------------------

    def _record_of(self, tensor):
        """The record of the tensor's current value: its latest record, or a new one when the
        tensor is new to the recording or was changed in place since."""
        entry = self._tensors.get(id(tensor))
        known = entry is not None and entry[0]() is tensor
        if known and entry[1].version == reading.version(tensor):
            return entry[1]
        return self._new_tensor(tensor)

    def _new_tensor(self, tensor, op=None, take_value=True, same_value=False):
        """A new record for ``tensor``'s current value. A record the tensor had before is its
        earlier value (changed in place since), unless ``same_value``: a custom Function
        returning the very tensor its forward made gives that value a second record, the
        Function's output."""
        data = reading.values(tensor)
        version = reading.version(tensor)
        key = id(tensor)
        entry = self._tensors.get(key)
        if entry is not None and entry[0]() is not tensor:
            entry = None
        value = None
        if take_value:
            known = self._known_grads.get(id(data))
            if known is not None and known[0] is data and known[1] == version:
                value = known[2]
            elif same_value and entry is not None and entry[1].version == version:
                earlier = entry[1]
                if earlier.value is None:  # the forward's result autograd had not read yet
                    earlier.value = snapshot(data, self.policy)
                    self._pending.pop(earlier, None)
                value = earlier.value
            else:
                value = snapshot(data, self.policy)
        tensors = self.trace.tensors
        grad_fn = tensor.grad_fn
        record = TensorRecord(
            f"t{len(tensors)}",
            data.shape,
            dtype_name(data.dtype),
            tensor.requires_grad,
            grad_fn is None,
            version,
            value,
        )
        record.op = op
        # In the trace before its node is read: reading it may record other tensors (the leaves
        # below it), and each takes the next id.
        tensors[record.id] = record
        if op is None and grad_fn is not None:
            # Made outside the recording (an earlier cell, a custom Function): its node is met now.
            record.grad_fn = self._node_record(grad_fn)
            record.output_nr = tensor.output_nr
        if entry is not None and not (same_value and entry[1].version == version):
            self._earlier[record] = entry[1]
        self._tensors[key] = (weakref.ref(tensor), record)
        return record

    # --- nodes --------------------------------------------------------------------------------

    def _node_record(self, node):
        record = self._known_node_record(node)
        return record if record is not None else self._make_node(node, None)

    def _known_node_record(self, node):
        entry = self._nodes.get(id(node))
        return entry[1] if entry is not None and entry[0]() is node else None

    def _new_node_record(self, node, op):
        record = NodeRecord(f"n{len(self.trace.nodes)}", type(node).__name__)
        self.trace.nodes.append(record)
        self._nodes[id(node)] = (weakref.ref(node), record)
        record.op = op
        if isinstance(node, TableNode):  # nearly every node: an op of the formula table
            record.observed = op is not None
            spec = node.spec
            record.op_name = spec.name
            record.inputs = spec.inputs
            record.formulas = self._formulas_of(spec)["grads"]
            if op is None:
                self._note_saved(record, node, None, None)
            return record
        note_backward_source(self.trace, node)  # a custom Function's node: its backward's text
        if type(node) is AccumulateGrad:
            record.variable = self._record_of(node.variable)
            self._leaf_of_accumulator[record] = weakref.ref(node.variable)
        else:
            record.observed = op is not None
            if type(node) is views.CopySlices:
                self._note_copy_slices_formulas(record, node)
        return record

    def _note_copy_slices_formulas(self, record, node):
        """A write into a view: the wrapped op's formulas, read on the view's part of the
        base's gradient (the widget shows them like a table op's)."""
        described = node.formulas()
        if described is None:
            return
        name, inputs, grads = described
        record.op_name, record.inputs, record.formulas = name, inputs, grads
        self.trace.formulas.setdefault(
            name, {"node": "CopySlices", "inputs": list(inputs), "saves": [], "grads": grads}
        )

    def _formulas_of(self, spec):
        table = self.trace.formulas
        entry = table.get(spec.name)
        if entry is None:
            entry = table[spec.name] = formula_entry(spec)
        return entry

    def _note_saved(self, record, node, input_records, output_records):
        """What the node saved for backward, by name. A saved input or output is its tensor's
        record (shared, not copied again); other saved values are kept as they are."""
        if not isinstance(node, TableNode):
            return
        entries = reading.saved(node)
        if entries is None:
            return
        spec = node.spec
        for position, name in spec.shown_saves:
            saved = entries[position]
            if saved is None:
                continue
            if saved.kind == "plain":
                record.saved[name] = keep_plain(saved.data, self.policy)
                continue
            # Under saved_tensors_hooks the node holds what the pack hook made of the tensor:
            # the trace shows the tensor that was packed (reading it back would run the user's
            # unpack hook, with its side effects).
            packed = saved.kind == "packed"
            kind, index = spec.save_sources[position]
            tensor_record = None
            if kind == "input" and input_records is not None:
                candidate = input_records[index]
                tensor_record = candidate if type(candidate) is TensorRecord else None
            elif kind == "result" and len(output_records or ()) > index:
                tensor_record = output_records[index]
            elif saved.tensor is not None:
                tensor_record = self._record_of(saved.tensor)
            if tensor_record is not None and tensor_record.value is not None:
                record.saved_tensors[name] = tensor_record
                record.saved[name] = tensor_record.value
            else:
                record.saved[name] = PACKED if packed else snapshot(saved.data, self.policy)

    def _note_function_saved(self, record, ctx, output_records):
        """What a custom Function's forward passed to ``ctx.save_for_backward``, by position
        (``tensors[0]``, as ``ctx.saved_tensors[0]`` reads it back)."""
        entries = reading.saved(ctx)
        if entries is None:
            return
        for position, saved in enumerate(entries):
            name = f"tensors[{position}]"
            if saved is None:
                continue
            if saved.kind == "packed":
                record.saved[name] = PACKED
                continue
            if saved.kind == "plain":
                record.saved[name] = keep_plain(saved.data, self.policy)
                continue
            tensor_record = None
            if saved.tensor is not None:  # an input or any other tensor
                entry = self._tensors.get(id(saved.tensor))
                if entry is not None and entry[0]() is saved.tensor:
                    candidate = entry[1]
                    if candidate.version == saved.version and candidate.value is not None:
                        tensor_record = candidate
            else:  # an output: kept as its data only
                tensor_record = next(
                    (r for r in output_records if r.value is not None and _holds(r, saved.data)),
                    None,
                )
            if tensor_record is not None:
                record.saved_tensors[name] = tensor_record
                record.saved[name] = tensor_record.value
            else:
                record.saved[name] = snapshot(saved.data, self.policy)

    # --- backward -----------------------------------------------------------------------------

    def _start_pass(self, roots, retain_graph, create_graph, is_grad):
        """A backward pass starts: a new BackwardPass, unless it is one more than
        ``max_passes`` (recording then stops)."""
        if len(self.trace.passes) >= self.max_passes:
            self._stop_at_max_passes()
            return
        user_frame, _ = self._locate(_announcer(), from_op=False)
        self._last_pass = self._begin_pass(
            "grad" if is_grad else "backward",
            tuple((self._node_record(node), nr) for node, nr in roots),
            retain_graph,
            create_graph,
            user_frame,
        )

    def _record_step(self, node, grads_in, grads_out):
        if not self._running_passes:
            return  # a pass that started before recording did: nothing to place it in
        record = self._node_record(node)
        freed = record.freed_at is None and reading.is_freed(node)
        self._log_step(self._running_passes[-1], record, grads_in, grads_out, freed)

    def _record_accumulation(self, leaf, grad, total):
        # Inside a pass, an accumulation is the AccumulateGrad node about to be logged;
        # ``backward(inputs=[non_leaf])`` accumulates just after its pass, outside any node.
        in_node = bool(self._running_passes)
        backward_pass = self._running_passes[-1] if in_node else self._last_pass
        if backward_pass is not None and backward_pass.kind == "grad":
            # The engine announces ``backward(inputs=...)`` as it does ``autograd.grad`` (both
            # capture gradients); only backward accumulates into ``.grad``.
            backward_pass.kind = "backward"
        record = self._record_of(leaf)
        if self._history is not None and record.is_leaf:
            self._history.watch(leaf, record)
        grad_array = reading.values(grad) if isinstance(grad, Tensor) else grad
        grad_value = self._grad_snapshot(grad)
        total_array = reading.values(total)
        if total_array is grad_array or _equal_arrays(total_array, grad_array):
            # The first grad: the total is that very array, or a copy of it.
            total_value = grad_value
        else:
            total_value = snapshot(total_array, self.policy)
        kept = (total_array, reading.version(total), total_value)
        self._last_totals[record] = kept
        self._known_grads[id(total_array)] = kept
        self._accumulations.append(
            Accumulation(
                record,
                backward_pass.index if backward_pass is not None else None,
                len(self.trace.backward_steps) if in_node else None,
                grad_value,
                total_value,
            )
        )

    def _grad_snapshot(self, grad):
        """A gradient's snapshot; the same array sent along an edge and received by the next
        node is snapshotted once. The cache refers to the array weakly: a strong reference
        would keep the engine from taking a leaf's first gradient as ``.grad`` without a copy
        (it checks that nothing else refers to it)."""
        if grad is None:
            return None
        array = grad
        if type(array) is not np.ndarray:
            array = reading.values(grad) if isinstance(grad, Tensor) else np.asarray(grad)
        key = id(array)
        hit = self._grad_snapshots.get(key)
        if hit is not None and hit[0]() is array:
            return hit[1]
        value = snapshot(array, self.policy)
        self._grad_snapshots[key] = (weakref.ref(array), value)
        return value

    # --- the end ---------------------------------------------------------------------------

    def _note_final_grads(self):
        for ref, record in self._tensors.values():
            tensor = ref()
            if tensor is None:
                continue
            if record in self._pending and record.version == reading.version(tensor):
                record.value = snapshot(reading.values(tensor), self.policy)
            grad = reading.grad(tensor)
            if grad is None:
                continue
            last = self._last_totals.get(record)
            received = single_grad_received(record)
            grad_values, grad_version = reading.values(grad), reading.version(grad)
            if last is not None and last[0] is grad_values and last[1] == grad_version:
                record.grad = last[2]  # unchanged since it was last accumulated
            elif received is not None and grad_version == 0 and grad.shape == record.shape:
                # A retained grad that one backward step delivered: the step's snapshot is it.
                record.grad = received
            else:
                record.grad = snapshot(grad_values, self.policy)
        self._pending.clear()
        self._known_grads.clear()

    def _link_accumulators(self, latest, newest):
        # Each AccumulateGrad record points at its leaf's latest record, if the leaf lives.
        for record, leaf_ref in self._leaf_of_accumulator.items():
            leaf = leaf_ref()
            if leaf is not None and id(leaf) in latest:
                record.variable = latest[id(leaf)][1]


_NUMBERS = (int, float, bool)


def _holds(record, array):
    """Whether ``record``'s snapshot was taken of ``array``'s current values."""
    value = record.value
    return (
        isinstance(value, np.ndarray) and value.shape == array.shape and _equal_arrays(value, array)
    )


def _equal_arrays(a, b):
    """Whether two arrays hold the same values (the same bits: NaN equals NaN). Small arrays
    are compared as bytes, much faster than ``np.array_equal``'s checks and temporaries."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.size <= 4096:
        return a.tobytes() == b.tobytes()
    return bool((a == b).all())


__all__ = ["ArraySummary", "Recorder", "RecordingError", "active_recorder"]
