"""What recording nbgrad's engine and recording real PyTorch have in common.

Two recorders build the same Trace: ``recorder.Recorder`` listens at nbgrad's engine's
observation points, ``torch_recorder.TorchRecorder`` watches PyTorch through a mode and node
hooks. How each one sees an operation, a tensor, a node or a backward step is its own. The rest
is the same and lives here, in ``BaseRecorder``, which both subclass:

- the options and their checks, the Trace being built and the maps from engine objects to their
  records;
- one recording at a time (``claim_recording``), started by ``start``, ended by ``stop`` (which
  notes the grads as they are then) and ``finish`` (which names the tensors and drops every
  reference to the engine's objects);
- the limits (``max_nodes``, ``max_passes``) and what stops recording at them, or at a fault of
  the recorder's own;
- the walk that gives a new node, and every node below it new to the recording, a record;
- logging a backward pass and its steps once the engine's recorder has read them;
- finishing the trace: source spans, final grads of ended tensors, names, roles, source lines.

A subclass supplies the engine's side through the methods at the end of ``BaseRecorder``
(``_hook_home`` and ``_listen`` to start, ``_stop_listening`` and ``_note_final_grads`` to
stop, ``_link_accumulators`` to finish, ``_known_node_record`` and ``_new_node_record`` for
nodes, ``_grad_snapshot``), may extend ``_forget_engine_objects`` and ``_new_child_record``,
and sets the class attributes ``trace_engine`` and ``tensor_type``.
"""

import gc

from nbgrad.trace import naming
from nbgrad.trace.complete import assign_roles, grads_of_ended_tensors, note_source_lines
from nbgrad.trace.graph_reader import link_new_nodes
from nbgrad.trace.modules import ScopeTracker
from nbgrad.trace.trace import BackwardPass, BackwardStep, Trace
from nbgrad.trace.values import Policy

DEFAULT_MAX_NODES = 2000
DEFAULT_MAX_PASSES = 3

# While a recording runs, the garbage collector's full collections wait (its young and middle
# generations are collected as usual). A recording makes about a dozen lasting Python objects
# per operation; each full collection walks every one of them, and the collector starts one
# whenever the objects that survived since the last one reach a quarter of all: on a
# 10,000-node graph about half the recording's time went there, walking the same records again
# and again (benchmarks/README.md, issue 16). Garbage in the oldest generation is freed by the
# first full collection after the recording, which walks the finished trace once.
_FULL_COLLECTIONS_WAIT = 2**31 - 1  # gc's third threshold while recording: never reached

_active = None  # the recorder listening now (of nbgrad's engine or of PyTorch): they do not nest


class RecordingError(RuntimeError):
    """A recording could not start (another one is running)."""


def active_recorder():
    return _active


def claim_recording(recorder):
    """Make ``recorder`` the one recording, or refuse: recordings do not nest."""
    global _active
    if _active is not None:
        raise RecordingError(
            "a recording is already running (a %%autograd cell or a `with nbgrad.record()` "
            "block); recordings do not nest. Record the outer code only, or end the other "
            "recording first."
        )
    _active = recorder


def release_recording(recorder):
    global _active
    if _active is recorder:
        _active = None


class BaseRecorder:
    """Records what an autograd engine does from ``start()`` to ``stop()``.

    source      a ``Source``: the code whose lines and expressions label the records
    base_frame  the frame that runs the recorded code (the search for the user's line stops
                there)
    policy      a values.Policy: how much of each array to keep
    max_nodes   stop recording at this many grad_fn nodes, or this many operations, whichever
                comes first
    max_passes  stop recording when a backward pass would start after this many
    name        the Trace's name
    source_kind "cell" (a %%autograd cell) or "file" (a ``with nbgrad.record()`` block)
    """

    trace_engine = None  # the Trace's ``engine``: None for nbgrad's own
    history_class = None  # what keeps per-parameter numbers for every pass (trace/history.py)
    tensor_type = None  # the engine's tensor class: what naming and module outputs look for

    # a nonfinite.NonfiniteWatch when asked to stop at the first NaN or Inf (--stop-on-nonfinite):
    # the listeners call its check after recording an op or a step, outside their fault handling
    nonfinite_watch = None

    def __init__(
        self,
        source,
        base_frame=None,
        policy=None,
        max_nodes=DEFAULT_MAX_NODES,
        max_passes=DEFAULT_MAX_PASSES,
        name=None,
        source_kind="cell",
        history=True,
    ):
        if max_nodes < 1:
            raise ValueError(f"max_nodes must be at least 1, got {max_nodes}")
        if max_passes < 0:
            raise ValueError(f"max_passes must be at least 0, got {max_passes}")
        self.source = source
        self.policy = policy or Policy()
        self.max_nodes = int(max_nodes)
        self.max_passes = int(max_passes)
        self.trace = Trace(
            name=name,
            policy=self.policy,
            source_kind=source_kind,
            filename=source.filename,
            engine=self.trace_engine,
        )
        self._filename = source.filename
        # Per-parameter numbers for every backward pass, past max_passes too (history=False:
        # none); started with the recording, ended by ``finish`` (not by ``stop``).
        self._history = self.history_class() if history and self.history_class else None
        self._base_frame = base_frame
        self._listening = False
        self._gc_thresholds = None  # gc's thresholds before recording, while full ones wait
        self._scopes = ScopeTracker(on_output=self._module_returned)
        # Engine object -> record, by id, with a reference proving the id is still that object
        # (weak where the engine allows it: the recorder never keeps a tensor alive).
        self._tensors = {}  # id(tensor) -> (weakref, latest TensorRecord of that tensor)
        self._nodes = {}  # id(node) -> (reference to the node, NodeRecord)
        self._sites = []  # per OpRecord: (code, lasti, direct) of the user's frame, for labels
        self._module_outputs = {}  # TensorRecord -> scope of the module whose forward returned it
        self._earlier = {}  # TensorRecord -> the same tensor's record before an in-place change
        self._pending = {}  # records whose value is taken only if autograd reads them (a set)
        self._accumulations = []  # every Accumulation, in order
        self._running_passes = []  # BackwardPass records of the passes running now, innermost last
        # Custom Functions whose forward is running, until their call is known (each engine
        # keeps its own kind of entry).
        self._function_calls = []
        # A grad's snapshot by id, within one pass: the same grad sent along an edge and
        # received by the next node is snapshotted once.
        self._grad_snapshots = {}
        # A leaf's running .grad as last summed: leaf record -> (its .grad, version, snapshot).
        self._last_totals = {}
        # The same by id of the .grad, so that ``p.grad`` read right after backward (an
        # optimizer step) reuses the snapshot.
        self._known_grads = {}

    # --- starting and stopping ----------------------------------------------------------------

    def start(self):
        """Start listening."""
        claim_recording(self)
        self._listening = True
        self._hold_full_collections()
        try:
            self._scopes.attach(self._hook_home())
            self._listen()
            if self._history is not None:
                self._history.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, reason=None):
        """Stop listening: remove every listener and hook, note the grads as they are now."""
        release_recording(self)
        if not self._listening:
            return
        self._listening = False
        self._release_full_collections()
        self._stop_listening()
        self._scopes.detach()
        if reason and self.trace.truncated is None:
            self.trace.truncated = reason
        self._running_passes = []
        self._function_calls = []
        self._grad_snapshots.clear()
        self._note_final_grads()

    def finish(self, namespaces=(), error=None, defer=False):
        """Stop, name everything from ``namespaces`` (dicts of the user's variables), and drop
        every reference to the engine's objects. Returns the finished Trace.

        ``defer``: what the program's objects say is read now (which tensors are alive, what
        the variables hold, which modules ran), and the rest, which only reads the records and
        the recorded code's text (labels, names, roles, source lines), is done when the trace
        is first read (``Trace.complete_later``): a trace nobody reads costs less."""
        failure = self._failure_of(error) if error is not None else None
        self.stop()
        trace = self.trace
        if error is not None:
            trace.error = f"{type(error).__name__}: {error}"
            trace.failure = failure
        self._hold_full_collections()  # naming makes many objects too
        try:
            if self._history is not None:
                trace.history_log = self._history.finish(self._tensors)
                self._history = None
            self._complete(namespaces, defer)
        finally:
            self._forget_engine_objects()
            trace.complete = True
            self._release_full_collections()
        return trace

    @property
    def listening(self):
        return self._listening

    def _hold_full_collections(self):
        """Let the garbage collector's full collections wait (see ``_FULL_COLLECTIONS_WAIT``)."""
        if self._gc_thresholds is None:
            young, middle, oldest = self._gc_thresholds = gc.get_threshold()
            gc.set_threshold(young, middle, _FULL_COLLECTIONS_WAIT)

    def _release_full_collections(self):
        """Give the garbage collector its thresholds back, unless the recorded code set its own
        meanwhile."""
        held, self._gc_thresholds = self._gc_thresholds, None
        if held is not None and gc.get_threshold() == (held[0], held[1], _FULL_COLLECTIONS_WAIT):
            gc.set_threshold(*held)

    def _forget_engine_objects(self):
        """Drop what refers to the engine's objects once the trace is finished (a subclass
        extends it with its own)."""
        self._tensors.clear()
        self._nodes.clear()
        self._sites.clear()
        self._module_outputs.clear()
        self._earlier.clear()
        self._pending.clear()
        self._last_totals.clear()
        self._accumulations = []
        self._scopes.on_output = None
        # The recorder and the frame that runs the recorded code point at each other (the
        # frame holds the recorder in a variable): unbroken, that cycle would leave the
        # recorder, that frame with its locals (a cell's parsed tree) and the frames above it
        # for the garbage collector, several hundred objects per cell.
        self._base_frame = None

    # --- limits and faults ----------------------------------------------------------------------

    def _limit_reached(self, makes_node):
        """Whether an operation (``makes_node``: one that makes a node) comes past a limit;
        recording then stops."""
        trace = self.trace
        if len(trace.nodes) >= self.max_nodes:
            self.stop(reason=f"stopped at {len(trace.nodes)} grad_fn nodes (max_nodes)")
            return True
        if len(trace.ops) >= self.max_nodes:  # ops that make no node (no_grad) count too
            self.stop(reason=f"stopped after {len(trace.ops)} operations (max_nodes)")
            return True
        if (
            makes_node
            and not self._running_passes
            and self.max_passes
            and len(trace.passes) >= self.max_passes
        ):
            # The last allowed backward pass is over and a new forward begins: the first steps
            # of a training loop are recorded, the rest runs at full speed.
            self._stop_at_max_passes()
            return True
        return False

    def _stop_at_max_passes(self):
        self.stop(reason=f"stopped after {len(self.trace.passes)} backward passes (max_passes)")

    def _failure_of(self, error):
        """The call that raised ``error`` (a failure.Failure), or None; an engine's recorder
        knows how to find it. Never raises: a recorder fault must not hide the user's error."""
        return None

    def _fail(self, error):
        self.stop(reason=f"the recorder failed and stopped: {type(error).__name__}: {error}")

    # --- tensors --------------------------------------------------------------------------------

    def _module_returned(self, scope, output):
        if isinstance(output, self.tensor_type) and self._listening:
            entry = self._tensors.get(id(output))
            if entry is not None and entry[0]() is output:
                self._module_outputs[entry[1]] = scope

    # --- nodes ----------------------------------------------------------------------------------

    def _make_node(self, node, op):
        """A record for ``node`` (made by ``op``, or None) and, following ``next_functions``,
        for every node below it that is new to the recording (iteratively: a graph can be
        deeper than Python's stack)."""
        record = self._new_node_record(node, op)
        return link_new_nodes(node, record, self._known_node_record, self._new_child_record)

    def _new_child_record(self, node):
        """A record for a node first met below another (no op made it here)."""
        return self._new_node_record(node, None)

    # --- backward -------------------------------------------------------------------------------

    def _begin_pass(self, kind, roots, retain_graph, create_graph, user_frame):
        """Log a backward pass that starts now (``roots``: (NodeRecord, output_nr) pairs)."""
        trace = self.trace
        backward_pass = BackwardPass(
            len(trace.passes),
            kind,
            roots,
            retain_graph,
            create_graph,
            user_frame.f_lineno if user_frame is not None else None,
        )
        trace.passes.append(backward_pass)
        self._running_passes.append(backward_pass)
        self._grad_snapshots.clear()
        return backward_pass

    def _log_step(self, backward_pass, record, grads_in, grads_out, freed):
        """Log a backward step of ``record``'s node: the grads it received (``grads_in``) and
        sent along each of its edges (``grads_out``), and whether it freed its saved values."""
        trace = self.trace
        # ``record.next`` mirrors the node's ``next_functions``, edge for edge (``_make_node``)
        sent = [
            (child_record, nr, self._grad_snapshot(grad))
            for (child_record, nr), grad in zip(record.next, grads_out)
        ]
        step = BackwardStep(
            len(trace.backward_steps),
            backward_pass.index,
            record,
            [self._grad_snapshot(grad) for grad in grads_in],
            sent,
            freed,
        )
        if freed:
            record.freed_at = step.index
        record.steps.append(step)
        backward_pass.steps.append(step)
        trace.backward_steps.append(step)
        return step

    # --- the end --------------------------------------------------------------------------------

    def _complete(self, namespaces, defer=False):
        trace = self.trace
        latest = {}  # id(tensor) -> (tensor, its latest record), for tensors still alive
        for ref, record in self._tensors.values():
            tensor = ref()
            if tensor is not None:
                latest[id(tensor)] = (tensor, record)
        # A leaf changed in place (an optimizer step) is one tensor with several values; its
        # contributions are listed together, under its newest value's name.
        newer = {old: new for new, old in self._earlier.items()}

        def newest(record):
            while record in newer:
                record = newer[record]
            return record

        self._record_roots_held_by_variables(namespaces, latest)
        self._link_accumulators(latest, newest)
        by_version = {}
        accumulations = {}
        for accumulation in self._accumulations:
            by_version.setdefault(accumulation.tensor, []).append(accumulation)
            accumulations.setdefault(newest(accumulation.tensor), []).append(accumulation)
        variables = naming.read_variables(
            trace,
            namespaces,
            latest,
            self._module_outputs,
            self._earlier,
            self.tensor_type,
        )
        # From here on only records and the source are read, none of the program's objects
        # (a trace completed later must not refer to the trace itself: see Trace.__del__).
        rest = (
            self.source,
            list(self._sites),
            variables,
            by_version,
            {record for _, record in latest.values()},
            accumulations,
            list(self._accumulations),
        )
        if defer:
            trace.complete_later(complete_from_records, *rest)
        else:
            complete_from_records(trace, *rest)

    def _record_roots_held_by_variables(self, namespaces, latest):
        """A backward pass over a graph made before recording started (a cell that runs only
        ``loss.backward()``) meets the graph's nodes, never the tensor it started from: a
        variable holding that tensor gets its record now, so that the pass starts at a name."""
        root_nodes = {id(node) for p in self.trace.passes for node, _ in p.roots if node.op is None}
        if not root_nodes:
            return
        for namespace in namespaces:
            for value in list(namespace.values()):
                if not isinstance(value, self.tensor_type) or id(value) in latest:
                    continue
                grad_fn = value.grad_fn
                node = self._known_node_record(grad_fn) if grad_fn is not None else None
                if node is not None and id(node) in root_nodes:
                    latest[id(value)] = (value, self._new_tensor(value))

    # --- the engine's side ----------------------------------------------------------------------

    def _hook_home(self):
        """The module system whose global forward hooks give each op its nn.Module."""
        raise NotImplementedError

    def _listen(self):
        """Start observing the engine."""
        raise NotImplementedError

    def _stop_listening(self):
        """Stop observing the engine: remove every listener and hook."""
        raise NotImplementedError

    def _note_final_grads(self):
        """Each live tensor's ``.grad`` (and pending value) now, when recording stops: later
        steps of a loop that were not recorded must not show up in the trace."""
        raise NotImplementedError

    def _link_accumulators(self, latest, newest):
        """Point each AccumulateGrad record at its leaf's newest record."""
        raise NotImplementedError

    def _known_node_record(self, node):
        """The record of a node the recording has met, else None."""
        raise NotImplementedError

    def _new_node_record(self, node, op):
        """A record for a node new to the recording (made by ``op``, or None), its edges not
        yet set."""
        raise NotImplementedError

    def _grad_snapshot(self, grad):
        """A gradient's snapshot, taken once for the same grad within a pass."""
        raise NotImplementedError


def complete_from_records(
    trace, source, sites, variables, by_version, live_records, accumulations, accumulation_log
):
    """The part of finishing a trace that reads only its records and the recorded code's text:
    the ops' spans, the grads of tensors that are gone, names (``naming.give_names``, from the
    ``variables`` read when recording ended), accumulations by name, roles, source lines."""
    source.fill_spans(trace.ops, sites)
    grads_of_ended_tensors(trace, by_version, live_records)
    naming.give_names(trace, source, sites, variables)
    trace.accumulations = {record.name: items for record, items in accumulations.items()}
    trace.accumulation_log = accumulation_log
    assign_roles(trace)
    note_source_lines(trace, source)


def single_grad_received(record):
    """The grad a non-leaf received, if its node ran exactly once while recording."""
    node = record.grad_fn
    if node is None or record.op is None or len(node.steps) != 1:
        return None
    grads_in = node.steps[0].grads_in
    return grads_in[record.output_nr] if record.output_nr < len(grads_in) else None
