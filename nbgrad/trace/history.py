"""Across training steps: a few numbers per parameter for EVERY backward pass of a recording.

A recording keeps the first ``max_passes`` backward passes in full; a training loop runs on
unrecorded after them. What a learner wants to see over the whole loop (does a layer's gradient
vanish, does its update dwarf its weights) needs only three numbers per parameter and pass, so
those are kept for every pass, recorded in full or not:

- ``grad_norm``: the L2 norm of the parameter's ``.grad`` when the pass has finished (what an
  optimizer step then reads; with gradients accumulated over passes, the running total);
- ``value_norm``: the L2 norm of the parameter's value during that pass;
- ``update_norm``: the L2 norm of how much the value changed from that pass to the next one
  that reached the parameter (an optimizer step in between), or, for its last pass, to the end
  of the recording. Compared with a copy of the values, so a change that bypasses the version
  counter (``p.data -= ...``) counts too.

A *parameter* is a leaf the recording saw receive a gradient (the recorder calls ``watch``
when it logs the leaf's accumulation); a leaf first reached after recording stopped is not
followed. *Step* k is the k-th backward pass (counted from 0) that delivered a gradient to at
least one parameter: ``autograd.grad`` calls, which fill no ``.grad``, are not steps.

How each engine is watched past the recorder's limit, cheaply:

- nbgrad's engine: two of its observation points (``observe``): the backward pass's start and
  end, and each accumulation into a leaf. At a pass's end, each parameter it reached is read.
- real PyTorch: ``register_post_accumulate_grad_hook`` on each parameter (PyTorch runs it once
  per pass, after summing into ``.grad``); the pass is told apart by PyTorch's graph task id.

The cost, per parameter and pass, is a few vectorised NumPy calls (two norms, a difference
with the previous values and a copy); ``benchmarks/record_history.py`` measures it against the
same loop unrecorded. A fault in this code stops the history (noted in ``error``), never the
user's program.

``history_rows(trace)`` gives the numbers to Python (``Trace.history``), ``history_json`` to
the trace JSON (docs/trace-schema.md, ``history``).
"""

import math
import weakref

import numpy as np

from nbgrad.autograd import observe, reading

COLUMNS = ("step", "parameter", "tensor", "grad_norm", "update_norm", "value_norm")


_FAST = (np.dtype(np.float32), np.dtype(np.float64))


def _squared_norm(array):
    """The squared L2 norm of an array, as a Python float (NaN and inf pass through). float32
    and float64, nearly every parameter, take one BLAS dot product over a flat view."""
    flat = array.reshape(-1)
    if flat.dtype in _FAST:
        return float(np.dot(flat, flat))
    kind = flat.dtype.kind
    if kind == "c":
        return float(np.vdot(flat, flat).real)
    if kind not in "fiub":
        return math.nan
    flat = flat.astype(np.float64)  # float16, bfloat16 read as float32, integers
    return float(np.dot(flat, flat))


def _norm(array):
    return math.sqrt(_squared_norm(np.asarray(array)))


class _Parameter:
    """One parameter's numbers, step by step, and what is needed to measure the next update."""

    __slots__ = (
        "ref",
        "records",
        "steps",
        "grad_norm",
        "value_norm",
        "update_norm",
        "previous",
        "previous_finite",
        "view",
    )

    def __init__(self, leaf, record):
        self.ref = weakref.ref(leaf)
        # its TensorRecords, one per recorded value that received a grad (and the newest)
        self.records = [record] if record is not None else []
        self.steps = []
        self.grad_norm = []
        self.value_norm = []
        self.update_norm = []  # one shorter than steps until the next pass (or the end)
        self.previous = None  # a copy of the values at its last step
        self.previous_finite = True  # whether every one of those values was finite
        self.view = None  # PyTorch: (data_ptr, NumPy view of the leaf's memory), read again

    def sample(self, step, values, grad):
        """The numbers of ``step``: ``values`` the leaf's array now, ``grad`` its .grad's."""
        steps = self.steps
        if steps and steps[-1] == step:
            return  # read already in this pass
        # Every pass of a loop comes here for every parameter: the common case (float32 or
        # float64, C order) is written out, one BLAS dot product per norm over a flat view.
        flat = values.reshape(-1)
        fast = flat.dtype in _FAST
        squared = float(np.dot(flat, flat)) if fast else _squared_norm(flat)
        previous = self.previous
        if previous is not None:
            if previous.shape == flat.shape and previous.dtype == flat.dtype:
                # The copy becomes the change, then the copy of the new values: three passes
                # over the array, none allocated (benchmarks/record_history.py).
                if math.isfinite(squared) and self.previous_finite:
                    np.subtract(flat, previous, out=previous)
                else:  # inf - inf: NaN, said by the norm, not by a NumPy warning
                    with np.errstate(all="ignore"):
                        np.subtract(flat, previous, out=previous)
                change = float(np.dot(previous, previous)) if fast else _squared_norm(previous)
                self.update_norm.append(math.sqrt(change))
                np.copyto(previous, flat)
            else:  # resized in place: no meaningful difference
                self.update_norm.append(math.nan)
                self.previous = flat.copy()
        else:
            self.previous = flat.copy()
        self.previous_finite = math.isfinite(squared)
        steps.append(step)
        self.value_norm.append(math.sqrt(squared))
        if grad is None:
            self.grad_norm.append(math.nan)
        else:
            grad_flat = grad.reshape(-1)
            squared = (
                float(np.dot(grad_flat, grad_flat))
                if grad_flat.dtype in _FAST
                else _squared_norm(grad_flat)
            )
            self.grad_norm.append(math.sqrt(squared))

    def close(self, values):
        """The recording ends: the update after the last step, if the leaf still lives."""
        previous = self.previous
        if previous is not None and len(self.update_norm) < len(self.steps):
            same = values is not None and values.size == previous.size
            change = None
            if same:
                with np.errstate(all="ignore"):  # inf - inf: NaN, said by the norm
                    change = np.subtract(values.reshape(-1), previous, dtype=np.float64)
            self.update_norm.append(_norm(change) if same else math.nan)
        self.previous = None


class ParameterHistory:
    """What a recording kept across its steps: ``parameters`` (in the order first watched),
    each with ``record`` (its newest TensorRecord), ``tensors`` (the ids of all its records, one
    per version the trace kept), ``steps``, ``grad_norm``, ``update_norm``, ``value_norm``
    (lists of the same length); ``error`` is why the history stopped early, or None."""

    def __init__(self, parameters, error):
        self.parameters = parameters
        self.error = error

    def __len__(self):
        return len(self.parameters)


class _HistoryTracker:
    """The engine-neutral part: the watched parameters and the step count."""

    def __init__(self):
        self._watched = {}  # id(leaf) -> _Parameter
        self._step = -1
        self._last_pass = None  # the key of the pass the last sample came from
        self.error = None

    def watch(self, leaf, record):
        """Follow ``leaf`` from now on (the recorder logged a gradient summed into it, into
        its value ``record``; called again at each recorded pass, with that pass's record)."""
        if self.error is not None:
            return
        parameter = self._watched.get(id(leaf))
        if parameter is not None and parameter.ref() is leaf:
            if record is not None and record not in parameter.records:
                parameter.records.append(record)
            return
        self._watched[id(leaf)] = _Parameter(leaf, record)
        self._started_watching(leaf)

    def _step_of(self, pass_key):
        if pass_key != self._last_pass:
            self._last_pass = pass_key
            self._step += 1
        return self._step

    def _failed(self, error):
        self.error = f"the history failed and stopped: {type(error).__name__}: {error}"
        self.stop()

    def finish(self, recorder_tensors):
        """Stop, close every parameter's last update, and return the ParameterHistory (or None
        when no parameter was watched). ``recorder_tensors`` is the recorder's map id(tensor)
        -> (weakref, latest record): a parameter still alive is named by its newest record."""
        self.stop()
        parameters = []
        for key, parameter in self._watched.items():
            leaf = parameter.ref()
            values = None
            if leaf is not None and self.error is None:
                try:
                    values = self._values(leaf)
                except Exception:  # noqa: BLE001 - a leaf that cannot be read: update unknown
                    values = None
            parameter.close(values)
            records = parameter.records
            entry = recorder_tensors.get(key)
            alive = leaf is not None and entry is not None and entry[0]() is leaf
            if alive and entry[1] not in records:
                records.append(entry[1])
            parameter.ref = None
            parameters.append(_Finished(parameter))
        self._watched = {}
        if not parameters:
            return None
        return ParameterHistory(parameters, self.error)


class _Finished:
    """One parameter's history once the recording has ended (no engine object kept):
    ``record`` its newest TensorRecord (None if the recording kept none), ``tensors`` the ids
    of its records in the trace, oldest first."""

    __slots__ = ("record", "tensors", "steps", "grad_norm", "update_norm", "value_norm")

    def __init__(self, parameter):
        records = parameter.records
        self.record = records[-1] if records else None
        self.tensors = [record.id for record in records]
        self.steps = parameter.steps
        self.grad_norm = parameter.grad_norm
        self.update_norm = parameter.update_norm
        self.value_norm = parameter.value_norm

    @property
    def name(self):
        return self.record.name if self.record is not None else None


class NbgradHistory(_HistoryTracker):
    """Watches nbgrad's engine through its observation points."""

    def __init__(self):
        super().__init__()
        self._depth = 0  # passes running now (a pass may run inside another's formula)
        self._passes = 0  # outermost passes started
        self._reached = {}  # id(leaf) -> leaf: accumulated into during the running pass

    def start(self):
        observe.backward_listeners.append(self._on_backward)
        observe.accumulate_listeners.append(self._on_accumulate)

    def stop(self):
        for listeners, listener in (
            (observe.backward_listeners, self._on_backward),
            (observe.accumulate_listeners, self._on_accumulate),
        ):
            while listener in listeners:
                listeners.remove(listener)
        self._reached = {}

    def _started_watching(self, leaf):
        pass  # read at the end of the pass, with the others it reached

    def _values(self, leaf):
        return reading.values(leaf)

    def _on_accumulate(self, leaf, grad, total):
        if self._depth:
            self._reached[id(leaf)] = leaf

    def _on_backward(self, event, roots, retain_graph, create_graph, is_grad):
        try:
            if event == "start":
                if self._depth == 0:
                    self._passes += 1
                self._depth += 1
                return
            self._depth = max(self._depth - 1, 0)
            if self._depth == 0 and self._reached:
                self._read_reached()
        except Exception as error:  # a fault here must not break the user's program
            self._failed(error)

    def _read_reached(self):
        reached, self._reached = self._reached, {}
        step = None
        for key, leaf in reached.items():
            parameter = self._watched.get(key)
            if parameter is None or parameter.ref() is not leaf:
                continue
            if step is None:
                step = self._step_of(self._passes)
            grad = reading.grad(leaf)
            parameter.sample(
                step, reading.values(leaf), None if grad is None else reading.values(grad)
            )


class TorchHistory(_HistoryTracker):
    """Watches real PyTorch through a post-accumulate-grad hook on each parameter."""

    def __init__(self):
        import torch

        from nbgrad.trace.torch_bridge import array_of

        super().__init__()
        self._handles = []
        # Looked up once: the hook runs for every parameter of every pass.
        self._no_torch_function = torch._C.DisableTorchFunction
        self._graph_task_id = torch._C._current_graph_task_id
        self._array_of = array_of

    def start(self):
        pass  # hooks are put on parameters as they are watched

    def stop(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _values(self, leaf):
        with self._no_torch_function():
            return self._array_of(leaf)

    def _started_watching(self, leaf):
        # Watched from inside the pass that reached it (the recorder's AccumulateGrad hook),
        # after PyTorch ran the post-accumulate hooks of that pass: this pass is read now.
        self._handles.append(leaf.register_post_accumulate_grad_hook(self._on_accumulated))
        self._on_accumulated(leaf)

    def _leaf_values(self, parameter, leaf):
        """The leaf's values as a NumPy array on its memory: the view made at an earlier step
        while the leaf keeps the same memory (an optimizer writes in place), else a new one.
        The view keeps that memory alive, so its address cannot be another tensor's."""
        address = leaf.data_ptr()
        view = parameter.view
        if view is not None and view[0] == address and view[1].shape == tuple(leaf.shape):
            return view[1]
        values = self._array_of(leaf)
        if values.ctypes.data == address:  # on the leaf's memory, not a converted copy
            parameter.view = (address, values)
        return values

    def _on_accumulated(self, leaf):
        try:
            parameter = self._watched.get(id(leaf))
            if parameter is None or parameter.ref() is not leaf or self.error is not None:
                return
            # Read with no mode: the recorder's mode must not see these reads as operations.
            with self._no_torch_function():
                step = self._step_of(self._graph_task_id())
                grad = leaf.grad
                values = self._leaf_values(parameter, leaf)
                parameter.sample(step, values, None if grad is None else self._array_of(grad))
        except Exception as error:  # a fault here must not break the user's program
            self._failed(error)


# --- reading the history ---------------------------------------------------------------------


def history_rows(trace):
    """The trace's history as rows, one per (step, parameter), in step order: dicts with the
    keys ``COLUMNS`` (``parameter`` the parameter's name in the trace, ``tensor`` the id of its
    newest record; a norm that could not be measured is NaN). A pandas DataFrame with those
    columns when pandas is installed."""
    history = trace.history_log
    rows = []
    if history is not None:
        trace.tensors  # noqa: B018 - completes a deferred trace: its records get their names
        for parameter in history.parameters:
            name, tensor = parameter.name, parameter.record.id
            for step, grad, update, value in zip(
                parameter.steps,
                parameter.grad_norm,
                parameter.update_norm,
                parameter.value_norm,
                strict=True,
            ):
                rows.append(
                    {
                        "step": step,
                        "parameter": name,
                        "tensor": tensor,
                        "grad_norm": grad,
                        "update_norm": update,
                        "value_norm": value,
                    }
                )
        rows.sort(key=lambda row: row["step"])  # stable: parameters keep their order
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows, columns=list(COLUMNS))


def _number_json(number):
    """A float as strict JSON: 6 significant digits, non-finite as the schema's strings."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return float(f"{number:.6g}")


def history_json(trace):
    """The trace JSON's optional ``history`` (docs/trace-schema.md), or None when there is
    none, or when no parameter was reached by two backward passes or more."""
    history = trace.history_log
    # A line over the steps needs two of them: a cell with one backward pass (its grads are in
    # the trace already) keeps its JSON as small as before.
    if history is None or all(len(p.steps) < 2 for p in history.parameters):
        return None
    entry = {
        "parameters": [
            {
                "tensor": parameter.record.id,
                "tensors": list(parameter.tensors),
                "steps": list(parameter.steps),
                "grad_norm": [_number_json(x) for x in parameter.grad_norm],
                "update_norm": [_number_json(x) for x in parameter.update_norm],
                "value_norm": [_number_json(x) for x in parameter.value_norm],
            }
            for parameter in history.parameters
        ]
    }
    if history.error is not None:
        entry["error"] = history.error
    return entry
