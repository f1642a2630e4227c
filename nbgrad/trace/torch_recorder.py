"""Recording real PyTorch: what a ``%%autograd`` cell on torch tensors did, as the same Trace
that nbgrad's own engine gives (so the same widget shows it).

PyTorch offers the observation points; nothing of PyTorch is patched:

- a ``torch.overrides.TorchFunctionMode`` sees every call of PyTorch's Python API (``x * y``,
  ``torch.addmm``, ``F.cross_entropy``, ``loss.backward()``) with its arguments and results: the
  op records, their nodes (the results' ``grad_fn``), the values, the user's line. It sees the
  API as the user wrote it (``cross_entropy``, whose node graph holds ``NllLossBackward0`` and
  ``LogSoftmaxBackward0``), not the ATen operators a ``TorchDispatchMode`` would (below
  autograd, where results have no ``grad_fn`` yet).
- ``Tensor.backward`` / ``torch.autograd.backward`` / ``torch.autograd.grad`` come through the
  same mode: a pass starts and ends around the call, with its roots and flags.
- a post-hook on every node (``node.register_hook``) gives, in the engine's order, the grads
  each node received and the grads it sent along each edge; on an ``AccumulateGrad`` node, the
  leaf's ``.grad`` after the sum.
- ``retain_grad()`` on every intermediate; what each node saved read from its ``_saved_*``
  attributes as soon as the node is made (backward frees them).
- during a ``create_graph=True`` pass only, a ``TorchDispatchMode`` sees the ATen operators of
  the formulas PyTorch's C++ engine runs (the function mode cannot): those between a node's
  pre-hook and its post-hook become ops run in that pass, as nbgrad's engine records its own
  formulas (``_formula_call``).
- ``backward(inputs=[non_leaf])``: what it summed into the non-leaf's ``.grad`` is logged after
  the pass (``_record_input_grads``).
- the global module hooks (``torch.nn.modules.module.register_module_forward_pre_hook`` ...)
  give the ``nn.Module`` path of each op.

A node PyTorch made without a recorded call (the nodes inside ``cross_entropy``, a custom C++
op, a ``torch.compile``d region) is still a node of the graph, with its name, edges and saved
values: it is drawn as an opaque node (``observed`` false), never an error. ``stop`` removes the
mode and every hook, also after an exception; the program's values and grads are the ones it
computes unrecorded. What it shares with nbgrad's recorder is ``recording.BaseRecorder``.
"""

import functools
import inspect
import os
import sys
import weakref

import torch
import torch.nn.modules.module
from torch.utils._python_dispatch import TorchDispatchMode

from nbgrad.trace import torch_bridge
from nbgrad.trace.failure import torch_backward_failure, torch_forward_failure
from nbgrad.trace.graph_reader import note_formula
from nbgrad.trace.history import TorchHistory
from nbgrad.trace.node_check import note_torch_function_rerun, note_torch_rerun
from nbgrad.trace.readable import note_backward_source
from nbgrad.trace.recording import BaseRecorder, single_grad_received
from nbgrad.trace.torch_bridge import (
    array_of,
    describe_saved,
    is_custom_function_node,
    node_name,
    storage_key,
)
from nbgrad.trace.trace import Accumulation, NodeRecord, OpRecord, TensorRecord
from nbgrad.trace.values import keep_plain, snapshot


def _version(tensor):
    """``tensor._version``; an inference tensor has none (PyTorch raises on reading it): 0, as
    it had when made (a write to it inside inference mode is not seen as a new version)."""
    return 0 if tensor.is_inference() else tensor._version


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Frames in these files only carry a call from the user's expression to PyTorch's C++ (the op
# is the value of that expression). torch/nn/modules is not among them: an op run inside a
# module's forward is labelled by the module.
_PLUMBING = tuple(
    _TORCH_DIR + path
    for path in (
        "_tensor.py",
        "overrides.py",
        "functional.py",
        "nn/functional.py",
        "autograd" + os.sep,
    )
) + (os.path.dirname(__file__) + os.sep,)
_FUNCTION_APPLY_CODE = torch.autograd.function.Function.apply.__func__.__code__
# torch.compile's tracing (below): asked through the public function where it exists (2.3+).
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
# Calls that are not operations: attribute reads and writes, printing, conversions.
_NOT_OPS = {
    "__get__",
    "__set__",
    "__delete__",
    "__repr__",
    "__format__",
    "__str__",
    "__len__",
    "__bool__",
    "__hash__",
    "__iter__",
    "__contains__",
    "__reduce_ex__",
    "__deepcopy__",
    "__array__",
    "numpy",
    "tolist",
    "item",
    "size",
    "dim",
    "numel",
    "_set_grad_enabled",
    "retain_grad",
    "register_hook",
    "register_post_accumulate_grad_hook",
    "requires_grad_",
    "backward",
    "grad",
}
_PASSES = {
    torch.Tensor.backward: "backward",
    torch.autograd.backward: "backward",
    torch.autograd.grad: "grad",
}
# Their parameter names in order, to read a call's arguments by name (``inspect``'s ``bind``
# costs more than the rest of starting a pass; a call PyTorch refuses raises there anyway).
_PARAMETERS = {func: tuple(inspect.signature(func).parameters) for func in _PASSES}


class _Pass:
    """What the mode does with a function that runs a backward pass."""

    __slots__ = ("kind",)

    def __init__(self, kind):
        self.kind = kind


_NOT_AN_OP = object()
# What the mode does with each function it has seen: _NOT_AN_OP, a _Pass, or the op's name as
# the trace writes it. Functions are few (PyTorch's API), but a library can route its own
# functions through the mode: the table stops growing at a bound.
_KINDS = {}
_MAX_KINDS = 4096


def _kind_of(func):
    kind = _PASSES.get(func)
    if kind is not None:
        kind = _Pass(kind)
    else:
        name = getattr(func, "__name__", "")
        kind = _NOT_AN_OP if name in _NOT_OPS else _op_name(name)
    try:
        if len(_KINDS) < _MAX_KINDS:
            _KINDS[func] = kind
    except TypeError:  # an unhashable callable: decided on every call
        pass
    return kind


_DETACH = torch.ops.aten.detach


class _RecordingMode(torch.overrides.TorchFunctionMode):
    """Hands every PyTorch API call to the recorder. While a mode handles a call, PyTorch
    disables it, so the calls a call makes inside (``F.linear`` in ``nn.Linear``) and the
    recorder's own (``detach``, ``numpy``) are not seen."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # Every call of PyTorch's API comes here, attribute reads (``p.grad``) too: what to do
        # with each function is decided once (``_kind_of``), and calls that are not operations
        # go straight through.
        try:
            kind = _KINDS[func]
        except (KeyError, TypeError):  # first seen, or unhashable
            kind = _kind_of(func)
        recorder = self.recorder
        if kind is _NOT_AN_OP or recorder._busy or not recorder._listening or _is_compiling():
            # (torch.compile traces modes' code into its graph: the recorder must not be in it.
            # A compiled region is recorded from the outside, as one opaque node.)
            return func(*args, **kwargs) if kwargs else func(*args)
        return recorder._call(func, kind, args, kwargs or {})


class _FormulaMode(TorchDispatchMode):
    """Active only while a ``create_graph=True`` pass runs: PyTorch's C++ engine then runs each
    node's backward formula as ATen operators, which no TorchFunctionMode sees. A dispatch mode
    sees them below autograd, before their results get a ``grad_fn``: the recorder keeps the
    call and records it at the next event, when autograd has set the result's history."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.recorder._formula_call(func, args, kwargs or {})


class TorchRecorder(BaseRecorder):
    """Records what PyTorch's autograd does from ``start()`` to ``stop()``; the same interface
    and options as nbgrad's ``Recorder`` (``BaseRecorder``'s).

    Its own state, besides what every recorder keeps: ``_nodes`` holds the nodes themselves
    (PyTorch's nodes cannot be weakly referenced); ``_last_totals`` and ``_known_grads`` hold a
    weak reference to the .grad tensor; ``_function_calls`` are ``_FunctionCall``s;
    ``_grad_snapshots`` maps id(grad tensor) to (weak reference, version, snapshot).
    """

    trace_engine = torch_bridge.ENGINE
    tensor_type = torch.Tensor
    history_class = TorchHistory

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._busy = False  # inside the recorder's own code: calls and hooks pass through
        self._mode = _RecordingMode(self)
        self._mode_entered = False
        self._hook_handles = []
        self._by_storage = {}  # storage_key -> TensorRecord, for saved tensors read back
        self._with_saved_tensors = set()  # NodeRecords whose backward frees saved tensors
        # Recording the ops of a create_graph=True pass (``_formula_call``): the node whose
        # formula runs now (set by a pre-hook, cleared by its post-hook; ops outside a formula
        # are the engine's bookkeeping, as in nbgrad's recorder), and the last formula call,
        # recorded once autograd has given its result a grad_fn.
        self._formula_node = None
        self._unresolved = None
        self._prehook_handles = []
        self._failed = None  # (exception, how to find its Failure, with what): the last raise

    # --- starting and stopping ----------------------------------------------------------------

    def _hook_home(self):
        return torch.nn.modules.module

    def _listen(self):
        self._mode.__enter__()
        self._mode_entered = True

    def _stop_listening(self):
        """Leave the mode, remove every hook."""
        self._leave_mode()
        for handle in self._hook_handles + self._prehook_handles:
            handle.remove()
        self._hook_handles = []
        self._prehook_handles = []
        self._formula_node = self._unresolved = None

    def finish(self, namespaces=(), error=None, defer=False):
        self.stop()
        # A recording stopped while the mode handled a call (a limit reached inside an op)
        # could not take the mode off PyTorch's stack: it is taken off now, before the trace
        # is finished (``stop``, called again there, has nothing left to do).
        self._leave_mode()
        return super().finish(namespaces, error, defer)

    def _forget_engine_objects(self):
        super()._forget_engine_objects()
        self._by_storage.clear()
        # The recorder and its mode point at each other: unbroken, that cycle would keep the
        # recorder (see ``BaseRecorder._forget_engine_objects``). A mode still on PyTorch's
        # stack (see ``_leave_mode``) keeps its recorder, which passes every call through.
        if not self._mode_entered:
            self._mode = None

    def _leave_mode(self):
        """Take the mode off PyTorch's stack. Not while it is handling a call (a limit reached
        inside an op): PyTorch has taken it off for that call and puts it back after. It then
        passes every call through until ``finish`` takes it off."""
        if self._mode_entered and self._mode in torch.overrides._get_current_function_mode_stack():
            self._mode_entered = False
            self._mode.__exit__(None, None, None)

    # --- every PyTorch API call ------------------------------------------------------------------

    def _call(self, func, kind, args, kwargs):
        """An operation (``kind`` is its name) or a backward pass (``kind`` is a _Pass)."""
        if type(kind) is _Pass:
            return self._run_pass(func, kind.kind, args, kwargs)
        name = kind
        first = args[0] if args else None
        version_before = _version(first) if isinstance(first, torch.Tensor) else None
        try:
            result = func(*args, **kwargs)
        except Exception as error:
            # sys._getframe(2): _call <- __torch_function__ <- the PyTorch call that raised
            user_frame, _ = self._locate(sys._getframe(2))
            line = user_frame.f_lineno if user_frame is not None else None
            self._note_failure(error, torch_forward_failure, name, args, kwargs, line)
            raise
        self._busy = True
        try:
            # sys._getframe(2): _call <- __torch_function__ <- the PyTorch call that ran it
            self._record_op(name, args, kwargs, result, version_before, sys._getframe(2))
            if self.trace.ops and self.trace.ops[-1].node is not None:  # for node.check()
                note_torch_rerun(self.trace.ops[-1], func, args, kwargs, self._record_of)
        except Exception as error:  # a recorder fault must not break the user's program
            self._fail(error)
        finally:
            self._busy = False
        if self.nonfinite_watch is not None:  # raises from the op that made a NaN or Inf
            self.nonfinite_watch.check(self.trace)
        return result

    def _note_failure(self, error, find, *details):
        """Remember the call that raised ``error``: ``find(self, *details, error)`` makes its
        Failure if the recording ends with that error (``_failure_of``), so that a call whose
        error the program caught adds nothing to the trace. The first call seen is the
        innermost."""
        if self._failed is None or self._failed[0] is not error:
            self._failed = (error, find, details)

    def _failure_of(self, error):
        failed, self._failed = self._failed, None
        if failed is None or failed[0] is not error:
            return None
        _, find, details = failed
        try:
            return find(self, *details, error)
        except Exception:  # noqa: BLE001 - finding the failing call must not hide the error
            return None

    def _record_op(self, name, args, kwargs, result, version_before, frame, in_formula=False):
        """Record a call that returned ``result``; ``frame`` is the first frame above it
        (the search for the user's line starts there)."""
        outputs = _tensors_in(result)
        if not outputs or not self._listening:
            return
        inputs = _operands(args, kwargs)
        tensor_inputs = [value for value in inputs if isinstance(value, torch.Tensor)]
        if not tensor_inputs:
            return  # a tensor made from numbers (torch.ones): a constant where it is used
        first = inputs[0]
        in_place = outputs[0] is first and _version(first) != version_before
        if not in_place and _handed_back(outputs, tensor_inputs):
            return  # an input handed back unchanged (``x.to(x.dtype)``)
        if in_place and not torch.is_grad_enabled() and id(first) not in self._tensors:
            # Filling a tensor the recording has not met yet (``nn.Linear`` initialising its
            # weights): its value is recorded where it is first used.
            return
        grad_fn = outputs[0].grad_fn
        node = (
            grad_fn
            if grad_fn is not None and (in_place or id(grad_fn) not in self._nodes)
            else None
        )
        if self._limit_reached(makes_node=node is not None):
            return
        trace = self.trace

        input_records = []
        for position, value in enumerate(inputs):
            if isinstance(value, torch.Tensor):
                if in_place and position == 0 and id(value) in self._tensors:
                    record = self._tensors[id(value)][1]
                elif in_formula:
                    # A formula reads saved values back as new tensors on the same memory.
                    record = self._saved_record(value) or self._record_of(value)
                else:
                    record = self._record_of(value)
                if node is not None and record.value is None and record in self._pending:
                    record.value = snapshot(array_of(value), self.policy)
                    del self._pending[record]
                input_records.append(record)
            else:
                input_records.append(keep_plain(_plain_operand(value), self.policy))

        user_frame, direct = self._locate(frame)
        if in_formula:
            direct = False  # run by backward, not by the expression on the user's line
        line, site = None, None
        if user_frame is not None:
            line = user_frame.f_lineno
            site = (user_frame.f_code, user_frame.f_lasti, direct)
        running = self._running_passes
        op = OpRecord(
            f"o{len(trace.ops)}",
            name,
            input_records,
            [],
            None,
            line,
            None,  # its span: from its site, when the trace is finished (Source.fill_spans)
            self._scopes.current or None,
            running[-1].index if running else None,
        )
        trace.ops.append(op)
        self._sites.append(site)
        inside_function = not torch.is_grad_enabled() and self._note_function_call(frame, op)
        for record in input_records:
            if type(record) is TensorRecord:
                record.uses.append(op)
        if node is not None:
            op.node = self._make_node(node, op)
        for output_nr, tensor in enumerate(outputs):
            if tensor.grad_fn is None or node is None:
                record = self._new_tensor(tensor, op=op, take_value=inside_function)
                if not inside_function:
                    self._pending[record] = None
                record.output_nr = output_nr
            else:
                record = self._new_tensor(tensor, op=op)
                record.output_nr = tensor.output_nr
                if tensor.grad_fn is node:
                    record.grad_fn = op.node
                    if not tensor.retains_grad:
                        tensor.retain_grad()  # every intermediate keeps its grad (issue 7)
            op.outputs.append(record)
        if node is not None:
            self._read_saved(op.node, node)

    def _locate(self, frame):
        """(the innermost frame of the recorded code or None, whether only PyTorch's plumbing
        lies between)."""
        filename, base = self._filename, self._base_frame
        direct = True
        while frame is not None:
            code = frame.f_code
            if code.co_filename == filename:
                return frame, direct
            if not code.co_filename.startswith(_PLUMBING):
                direct = False
            if frame is base:
                break
            frame = frame.f_back
        return None, False

    # --- tensors --------------------------------------------------------------------------------

    def _record_of(self, tensor):
        entry = self._tensors.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            record = entry[1]
            if record.version == _version(tensor):
                if record.grad_fn is not None or tensor.grad_fn is None:
                    return record
                if is_custom_function_node(tensor.grad_fn):
                    # It gained a grad_fn since: a custom Function returned it.
                    return self._function_output(tensor, record)
        record = self._new_tensor(tensor)
        if tensor.grad_fn is not None and is_custom_function_node(tensor.grad_fn):
            return self._function_output(tensor, record)
        return record

    def _new_tensor(self, tensor, op=None, take_value=True):
        version = _version(tensor)
        grad_fn = tensor.grad_fn
        trace = self.trace
        dtype = tensor.dtype
        record = TensorRecord(
            f"t{len(trace.tensors)}",
            tuple(tensor.shape),
            _DTYPE_NAMES.get(dtype) or _dtype_name(dtype),
            tensor.requires_grad,
            grad_fn is None,
            version,
            self._value_of(tensor, version) if take_value else None,
        )
        record.op = op
        # In the trace before its node is read: reading it may record other tensors (the leaves
        # below it), and each takes the next id.
        trace.tensors[record.id] = record
        if op is None and grad_fn is not None:
            record.grad_fn = self._node_record(grad_fn)
            record.output_nr = tensor.output_nr
        key = id(tensor)
        entry = self._tensors.get(key)
        if entry is not None and entry[0]() is tensor and entry[1].version != version:
            self._earlier[record] = entry[1]
        self._tensors[key] = (weakref.ref(tensor), record)
        if op is not None and grad_fn is not None:
            # A saved result reads back as a new tensor on the same memory (``_saved_result``);
            # saved inputs read back as themselves.
            self._by_storage[storage_key(tensor)] = record
        return record

    def _value_of(self, tensor, version):
        """A snapshot of the tensor's values; a leaf's ``.grad`` snapshotted when it was summed
        is reused."""
        known = self._known_grads.get(id(tensor))
        if known is not None and known[0]() is tensor and known[1] == version:
            return known[2]
        return snapshot(array_of(tensor), self.policy)

    def _saved_record(self, tensor):
        """The record of a tensor a node saved: the very tensor, or one on its memory."""
        entry = self._tensors.get(id(tensor))
        if entry is not None and entry[0]() is tensor and entry[1].version == _version(tensor):
            return entry[1]
        record = self._by_storage.get(storage_key(tensor))
        if record is not None and record.version == _version(tensor):
            return record
        return None

    # --- custom autograd.Function calls ---------------------------------------------------------

    def _note_function_call(self, frame, op):
        """Whether ``op`` runs inside a custom Function's forward. PyTorch's mode does not see
        the Function call itself: its output shows it later, with a grad_fn (see
        ``_function_output``). Each call is kept with the user's frame that made it."""
        base = self._base_frame
        while frame is not None and frame is not base:
            if frame.f_code is _FUNCTION_APPLY_CODE:
                for call in reversed(self._function_calls):
                    if call.frame is frame:
                        call.ops.append(op)
                        return True
                user_frame, direct = self._locate(frame.f_back)
                self._function_calls.append(_FunctionCall(frame, op, user_frame, direct, self))
                return True
            frame = frame.f_back
        return False

    def _function_output(self, tensor, earlier):
        """A tensor a custom Function returned: its call becomes an op (named after the
        Function), whose output is this tensor and whose node is its grad_fn; the ops its
        forward ran are marked as run inside it."""
        node = tensor.grad_fn
        known = self._nodes.get(id(node))
        if known is not None and known[1].op is not None:
            call = known[1].op
        else:
            found = _FunctionCall.pop_for(self._function_calls, earlier)
            inner = found.ops if found is not None else []
            made_inside = {id(o) for op in inner for o in op.outputs}
            outer_inputs = []
            for op in inner:
                for value in op.inputs:
                    outside = type(value) is TensorRecord and id(value) not in made_inside
                    if outside and value not in outer_inputs:
                        outer_inputs.append(value)
            name = node_name(node)
            call = OpRecord(
                f"o{len(self.trace.ops)}",
                name[: -len("Backward")] if name.endswith("Backward") else name,
                outer_inputs,
                [],
                None,
                found.line if found else None,
                found.span if found else None,
                found.module if found else None,
                None,
            )
            self.trace.ops.append(call)
            self._sites.append(found.site if found else None)
            for op in inner:
                op.function = call
            call.node = self._node_record(node, op=call)
            self._read_saved(call.node, node)
            if found is not None:  # for node.check()
                note_torch_function_rerun(call, node, found.frame, self._record_of)
        record = self._new_tensor(tensor, op=call)
        record.value = earlier.value if earlier.value is not None else record.value
        if record.value is None:
            record.value = snapshot(array_of(tensor), self.policy)
        record.grad_fn = call.node
        record.output_nr = tensor.output_nr
        call.outputs.append(record)
        if not tensor.retains_grad:
            tensor.retain_grad()
        return record

    # --- nodes ----------------------------------------------------------------------------------

    def _node_record(self, node, op=None):
        record = self._known_node_record(node)
        if record is not None:
            if op is not None and record.op is None:
                record.op = op
                record.observed = True
            return record
        record = self._make_node(node, op)
        if op is None:  # met through a tensor made where the mode could not see
            self._read_saved(record, node)
        return record

    def _known_node_record(self, node):
        entry = self._nodes.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else None

    def _new_child_record(self, node):
        # What a node met below another saved is read at once. The node at the top is read
        # by the caller: an op's once its outputs are recorded, any other once the nodes
        # below it (and their leaves) have records.
        record = self._new_node_record(node, None)
        self._read_saved(record, node)
        return record

    def _new_node_record(self, node, op):
        """A record for ``node``, with a post-hook that logs its backward step."""
        record = NodeRecord(f"n{len(self.trace.nodes)}", node_name(node))
        self.trace.nodes.append(record)
        self._nodes[id(node)] = (node, record)
        record.op = op
        note_backward_source(self.trace, node)
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            record.variable = self._record_of(variable)
        else:
            record.observed = op is not None
            note_formula(self.trace, record)
        self._hook_handles.append(node.register_hook(functools.partial(self._on_step, node)))
        return record

    def _read_saved(self, record, node):
        if record.variable is not None or record.saved:
            return

        def saved_record(tensor):
            known = self._saved_record(tensor)
            if known is not None or tensor.grad_fn is node:
                return known
            # A saved input made before recording started (a cell that only runs backward):
            # PyTorch gives back the very tensor, which gets its record, as nbgrad's recorder
            # gives it. (A saved result reads back as a new tensor: left a snapshot.)
            return self._record_of(tensor)

        saved_a_tensor = describe_saved(record, node, saved_record, self.policy)
        if saved_a_tensor is None:  # freed by a backward without retain_graph
            record.freed_at = -1
        elif saved_a_tensor:
            self._with_saved_tensors.add(record)

    # --- backward -------------------------------------------------------------------------------

    def _run_pass(self, func, kind, args, kwargs):
        started = None
        self._busy = True
        try:
            started = self._start_pass(func, kind, args, kwargs)
        except Exception as error:
            self._fail(error)
        finally:
            self._busy = False
        if started is None:
            return func(*args, **kwargs)
        backward_pass, root_nodes, non_leaf_inputs = started
        formula_mode, prehooks = None, []
        if self._listening:
            # With create_graph every node's formula is recorded; without it, only a custom
            # Function's Python backward is (nbgrad's own formulas run on NumPy, unrecorded).
            self._busy = True
            try:
                only = None if backward_pass.create_graph else is_custom_function_node
                if self._watch_formulas(root_nodes, prehooks, only):
                    formula_mode = _FormulaMode(self)
            except Exception as error:
                self._fail(error)
            finally:
                self._busy = False
        outer_node, self._formula_node = self._formula_node, None
        try:
            if formula_mode is None:
                result = func(*args, **kwargs)
            else:
                with formula_mode:
                    result = func(*args, **kwargs)
        except Exception as error:
            self._note_failure(error, torch_backward_failure, backward_pass, root_nodes)
            raise
        finally:
            if self._unresolved is not None:
                self._resolve_formula_op()
            self._formula_node = outer_node
            for handle in prehooks:
                handle.remove()
            if backward_pass in self._running_passes:
                self._running_passes.remove(backward_pass)
        if non_leaf_inputs and self._listening:
            self._busy = True
            try:
                self._record_input_grads(backward_pass, non_leaf_inputs)
            except Exception as error:
                self._fail(error)
            finally:
                self._busy = False
        return result

    def _start_pass(self, func, kind, args, kwargs):
        """A new BackwardPass for this call, with the root nodes it starts from and the
        non-leaf tensors of ``backward(inputs=...)``; None past ``max_passes``."""
        if len(self.trace.passes) >= self.max_passes:
            self._stop_at_max_passes()
            return None
        bound = dict(zip(_PARAMETERS[func], args))
        bound.update(kwargs)
        outputs = bound.get("self", bound.get("tensors", bound.get("outputs")))
        roots, root_nodes = [], []
        for tensor in _tensors_in(outputs):
            if tensor.grad_fn is not None:
                record = self._record_of(tensor)  # a root made where the mode could not see
                node = record.grad_fn or self._node_record(tensor.grad_fn)
                roots.append((node, tensor.output_nr))
                root_nodes.append(tensor.grad_fn)
        create_graph = bool(bound.get("create_graph", False))
        retain_graph = bound.get("retain_graph")
        user_frame, _ = self._locate(sys._getframe(4))
        backward_pass = self._begin_pass(
            kind,
            tuple(roots),
            bool(create_graph if retain_graph is None else retain_graph),
            create_graph,
            user_frame,
        )
        # backward(inputs=[non_leaf]) sums into the non-leaf's .grad (PyTorch does it through
        # the tensor's retain_grad hook, which no node hook reports): noted after the pass.
        non_leaf_inputs = []
        if kind == "backward":
            non_leaf_inputs = [t for t in _tensors_in(bound.get("inputs")) if t.grad_fn is not None]
        return backward_pass, root_nodes, non_leaf_inputs

    def _record_input_grads(self, backward_pass, tensors):
        """The accumulations of ``backward(inputs=[non_leaf])``, as nbgrad's recorder logs
        them: after the pass, with no step. What came is what the tensor's grad_fn received
        in this pass (PyTorch runs that node, sending nothing on); a tensor no gradient
        reached has no accumulation (PyTorch leaves its .grad as it was)."""
        for tensor in tensors:
            total = tensor.grad
            if total is None:
                continue
            record = self._record_of(tensor)
            node = record.grad_fn
            came = None
            for step in reversed(backward_pass.steps):
                if step.node is node:
                    if tensor.output_nr < len(step.grads_in):
                        came = step.grads_in[tensor.output_nr]
                    break
            if came is None:
                continue
            total_value = snapshot(array_of(total), self.policy)
            kept = (weakref.ref(total), _version(total), total_value)
            self._last_totals[record] = kept
            self._accumulations.append(
                Accumulation(record, backward_pass.index, None, came, total_value)
            )

    # --- the ops of a create_graph=True pass ----------------------------------------------------

    def _watch_formulas(self, root_nodes, handles, only=None):
        """A pre-hook on every node the pass can run (``only``: on those it accepts;
        AccumulateGrad's copy into ``.grad`` is bookkeeping, as are the engine's sums of two
        grads, which run after a node's post-hook): an ATen call between a node's pre- and
        post-hook is its formula. Each hook's handle goes into ``handles`` (removed after the
        pass) and the recorder's list (removed by ``stop``) as soon as it is registered.
        Returns whether any node is watched."""
        seen, pending = set(), list(root_nodes)
        while pending:
            node = pending.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if getattr(node, "variable", None) is None and (only is None or only(node)):
                hook = functools.partial(self._on_formula_start, node)
                handle = node.register_prehook(hook)
                handles.append(handle)
                self._prehook_handles.append(handle)
            pending.extend(child for child, _ in node.next_functions)
        return bool(handles)

    def _on_formula_start(self, node, grad_outputs):
        if self._listening and not self._busy:
            if self._unresolved is not None:
                self._resolve_formula_op()
            self._formula_node = node

    def _formula_call(self, func, args, kwargs):
        """An ATen call while a watched pass runs (from ``_FormulaMode``)."""
        if self._unresolved is not None and not self._busy:
            self._resolve_formula_op()  # before this call could change its inputs or outputs
        if (
            self._formula_node is None
            or self._busy
            or not self._listening
            or func.overloadpacket is _DETACH  # reading a saved value back (SavedVariable)
        ):
            return func(*args, **kwargs)
        first = args[0] if args else None
        version_before = _version(first) if isinstance(first, torch.Tensor) else None
        result = func(*args, **kwargs)
        self._unresolved = (func.overloadpacket.__name__, args, kwargs, result, version_before)
        return result

    def _resolve_formula_op(self):
        """Record the last formula call: by now autograd has given its result a grad_fn."""
        name, args, kwargs, result, version_before = self._unresolved
        self._unresolved = None
        if not self._listening:
            return
        self._busy = True
        try:
            frame = sys._getframe(1)
            self._record_op(name, args, kwargs, result, version_before, frame, in_formula=True)
        except Exception as error:
            self._fail(error)
        finally:
            self._busy = False

    def _on_step(self, node, grad_inputs, grad_outputs):
        """A node's post-hook: it received ``grad_outputs`` and sent ``grad_inputs``."""
        if self._busy or not self._listening or not self._running_passes:
            return
        if self._unresolved is not None:
            self._resolve_formula_op()
        self._formula_node = None  # what runs next, until a node's pre-hook, is bookkeeping
        self._busy = True
        try:
            self._record_step(node, grad_inputs, grad_outputs)
        except Exception as error:
            self._fail(error)
        finally:
            self._busy = False
        if self.nonfinite_watch is not None:
            self.nonfinite_watch.check(self.trace)

    def _record_step(self, node, grad_inputs, grad_outputs):
        backward_pass = self._running_passes[-1]
        record = self._node_record(node)
        freed = (
            not backward_pass.retain_graph
            and record.freed_at is None
            and record in self._with_saved_tensors
        )
        # PyTorch's names, from the node's side: it received grad_outputs, sent grad_inputs.
        step = self._log_step(backward_pass, record, grad_outputs, grad_inputs, freed)
        leaf = getattr(node, "variable", None)
        if isinstance(leaf, torch.Tensor) and grad_outputs and grad_outputs[0] is not None:
            self._record_accumulation(backward_pass, step, leaf, grad_outputs[0])

    def _record_accumulation(self, backward_pass, step, leaf, grad):
        total = leaf.grad
        grad_value = self._grad_snapshot(grad)
        if total is None:
            return
        # The first grad becomes .grad itself (PyTorch takes it over, same memory) or a copy.
        same_memory = total.data_ptr() == grad.data_ptr() and total.shape == grad.shape
        if same_memory or (total.shape == grad.shape and torch.equal(total, grad)):
            total_value = grad_value
        else:
            total_value = snapshot(array_of(total), self.policy)
        record = self._record_of(leaf)
        if self._history is not None and leaf.is_leaf:
            self._history.watch(leaf, record)
        kept = (weakref.ref(total), _version(total), total_value)
        self._last_totals[record] = kept
        self._known_grads[id(total)] = kept  # ``p.grad`` read next (an optimizer step)
        self._accumulations.append(
            Accumulation(record, backward_pass.index, step.index, grad_value, total_value)
        )

    def _grad_snapshot(self, grad):
        if grad is None:
            return None
        # The same grad sent along an edge and received by the next node is snapshotted once,
        # unless PyTorch summed another into it in place meanwhile (a tensor used twice).
        hit = self._grad_snapshots.get(id(grad))
        version = _version(grad)
        if hit is not None and hit[0]() is grad and hit[1] == version:
            return hit[2]
        value = snapshot(array_of(grad), self.policy)
        self._grad_snapshots[id(grad)] = (weakref.ref(grad), version, value)
        return value

    # --- the end ----------------------------------------------------------------------------------

    def _note_final_grads(self):
        with torch._C.DisableTorchFunction():  # the recorder's own reads pass no mode
            self._read_final_grads()

    def _read_final_grads(self):
        for ref, record in self._tensors.values():
            tensor = ref()
            if tensor is None:
                continue
            if record in self._pending and record.version == _version(tensor):
                record.value = snapshot(array_of(tensor), self.policy)
            grad = tensor.grad if (tensor.is_leaf or tensor.retains_grad) else None
            if grad is None:
                continue
            # Already snapshotted when it was summed into a leaf or sent to a non-leaf, unless
            # it changed since (a later unrecorded pass, an in-place change).
            last = self._last_totals.get(record)
            received = single_grad_received(record)
            if last is not None and last[0]() is grad and last[1] == _version(grad):
                record.grad = last[2]
            elif received is not None and _version(grad) == 0 and not self._passes_after(record):
                record.grad = received
            else:
                record.grad = snapshot(array_of(grad), self.policy)
        self._pending.clear()
        self._last_totals.clear()
        self._known_grads.clear()

    def _passes_after(self, record):
        """Whether a recorded pass ran after the one that delivered ``record``'s grad."""
        return record.grad_fn.steps[0].pass_index != len(self.trace.passes) - 1

    def _link_accumulators(self, latest, newest):
        # A leaf changed in place has several records: its AccumulateGrad points at the newest.
        for _, record in self._nodes.values():
            if record.variable is not None:
                record.variable = newest(record.variable)


class _FunctionCall:
    """A custom Function's call seen from inside its forward: the ops it ran, where it was
    called from."""

    def __init__(self, frame, first_op, user_frame, direct, recorder):
        self.frame = frame
        self.ops = [first_op]
        self.line = self.span = self.site = None
        self.module = first_op.module
        if user_frame is not None:
            code, lasti = user_frame.f_code, user_frame.f_lasti
            self.line = user_frame.f_lineno
            self.site = (code, lasti, direct)
            self.span = recorder.source.span_at(code, lasti)

    @staticmethod
    def pop_for(calls, output_record):
        """The call that made ``output_record`` (else the latest call), removed from ``calls``."""
        for position in range(len(calls) - 1, -1, -1):
            if any(o is output_record for op in calls[position].ops for o in op.outputs):
                return calls.pop(position)
        return calls.pop() if calls else None


# --- arguments and results ----------------------------------------------------------------------


def _tensors_in(value):
    """The tensors of a result (or of backward's ``tensors``): one, or those of a tuple/list."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _handed_back(outputs, inputs):
    """Whether every output is one of the inputs."""
    for output in outputs:
        for value in inputs:
            if output is value:
                break
        else:
            return False
    return True


def _operands(args, kwargs):
    """A call's operands in order: its arguments, with the tensors of a list argument (``cat``)
    spread out, then keyword arguments that are tensors or numbers."""
    if not kwargs:
        for value in args:
            if isinstance(value, (tuple, list)):
                break
        else:
            return args  # the common case: the arguments as they are
    operands = []
    for value in args:
        if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
            operands.extend(value)
        else:
            operands.append(value)
    operands.extend(v for v in kwargs.values() if isinstance(v, (torch.Tensor, int, float)))
    return operands


def _plain_operand(value):
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(value)
    return value


_DTYPE_NAMES = {}


def _dtype_name(dtype):
    """``torch.float32`` -> ``"float32"``, NumPy's name, as nbgrad's traces write dtypes."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).replace("torch.", "")
    return name


_OPERATOR_NAMES = {"truediv": "div", "floordiv": "floor_divide", "neg": "neg", "matmul": "matmul"}


def _op_name(name):
    """``__mul__`` -> ``mul``, ``__rtruediv__`` -> ``div``, ``__iadd__`` -> ``add_``: the
    names nbgrad's trace uses for the same operations."""
    if not (name.startswith("__") and name.endswith("__")):
        return name
    bare = name[2:-2]
    suffix = ""
    if bare.startswith("i") and bare[1:] in _BINARY:
        bare, suffix = bare[1:], "_"
    elif bare.startswith("r") and bare[1:] in _BINARY:
        bare = bare[1:]
    return _OPERATOR_NAMES.get(bare, bare) + suffix


_BINARY = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor"}
