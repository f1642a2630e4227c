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
  end, and each accumulation into a leaf. At a pass's end, the parameters it reached are read.
- real PyTorch: ``register_post_accumulate_grad_hook`` on each parameter (PyTorch runs it once
  per pass, after summing into ``.grad``) notes the parameter; the first one of a pass asks
  PyTorch's engine to call back when the pass ends (``queue_callback``, what PyTorch's
  DistributedDataParallel uses), and the parameters it reached are read then.

What reading costs (``benchmarks/record_history.py`` measures it against the same loop
unrecorded; the goal is under 10% of a training step). Per pass and parameter the history
reads the grad and the values and keeps a copy of the values: for a large parameter that
memory traffic is the cost, for a small one the fixed cost of each NumPy call (about a
microsecond, as much as the Python around it). So the parameters of a pass are read in two
ways:

- small ones (up to ``BATCH_LIMIT`` elements) together, in a ``_Batch``: a pass only copies
  their values and grads into one float64 row, one NumPy call for all of them; every
  ``ROWS`` passes (and at the end) five NumPy calls measure all the rows copied since;
- large ones (and the rare dtypes a float64 row cannot hold) one by one, in their own dtype:
  a BLAS dot product per norm, the difference with the copy computed in that copy, and the
  grad read in its memory order (a transposed grad is not copied).

Only squared norms are kept while the loop runs; the square roots are taken once, when the
recording ends. A fault in this code stops the history (noted in ``error``), never the user's
program.

``history_rows(trace)`` gives the numbers to Python (``Trace.history``), ``history_json`` to
the trace JSON (docs/trace-schema.md, ``history``).
"""

import math
import weakref

import numpy as np

from nbgrad.autograd import observe, reading

COLUMNS = ("step", "parameter", "tensor", "grad_norm", "update_norm", "value_norm")

# Parameters of up to this many elements are read in the pass's batch; larger ones alone, where
# a NumPy call's fixed cost is small beside its work and their own dtype keeps the traffic low.
BATCH_LIMIT = 4096
# A batch measures its passes every ROWS passes at most, its copies taking ROWS_BYTES at most.
ROWS = 64
ROWS_BYTES = 4 * 2**20

_FAST = (np.dtype(np.float32), np.dtype(np.float64))


def _squared_norm(flat):
    """The squared L2 norm of a flat array, as a Python float (NaN and inf pass through).
    float32 and float64, nearly every parameter, take one BLAS dot product."""
    if flat.dtype in _FAST:
        return float(np.dot(flat, flat))
    kind = flat.dtype.kind
    if kind == "c":
        return float(np.vdot(flat, flat).real)
    if kind not in "fiub":
        return math.nan
    flat = flat.astype(np.float64)  # float16, bfloat16 read as float32, integers
    return float(np.dot(flat, flat))


class _Parameter:
    """One watched parameter: its numbers so far, and its values at its last step."""

    __slots__ = (
        "ref",
        "records",
        "steps",
        "grad_squared",
        "change_squared",
        "value_squared",
        "previous",
        "view",
    )

    def __init__(self, leaf, record):
        self.ref = weakref.ref(leaf)
        # its TensorRecords, one per recorded value that received a grad (and the newest)
        self.records = [record] if record is not None else []
        # Per step, squared norms: of the grad, of the values, and of the change of the values
        # since the parameter's step before (NaN at its first step, or when it was resized).
        # _Finished turns them into the three norms. While the parameter is in a _Batch, the
        # batch keeps copies of its last passes and hands their numbers over later (measure).
        self.steps = []
        self.grad_squared = []
        self.change_squared = []
        self.value_squared = []
        # Its values at its last step, flat: its own copy when read alone, its segment of the
        # batch's float64 copy when read in a batch.
        self.previous = None
        self.view = None  # PyTorch: (data_ptr, NumPy view of the leaf's memory), read again

    def read_alone(self, step, values, grad):
        """The numbers of ``step`` from the parameter's own arrays, in their own dtype."""
        values = values.reshape(-1)  # C order: compared element by element with the last step
        value_squared = _squared_norm(values)
        previous = self.previous
        if previous is None or previous.size != values.size:
            change_squared = math.nan  # its first step, or resized in place: no difference
            self.previous = values.copy()
        elif previous.dtype == values.dtype:
            # The copy becomes the change, then the copy of the new values: three passes over
            # the array, none allocated. Finite norms, now and at the step before, mean finite
            # values and no overflow: no NumPy warning to silence (np.errstate costs a
            # microsecond or two).
            before = self.value_squared[-1] if self.value_squared else math.nan
            if math.isfinite(value_squared) and math.isfinite(before):
                np.subtract(values, previous, out=previous)
            else:
                with np.errstate(all="ignore"):  # inf - inf: NaN, said by the norm
                    np.subtract(values, previous, out=previous)
            change_squared = _squared_norm(previous)
            np.copyto(previous, values)
        else:  # its dtype changed, or it was in a batch: compared exactly, then copied anew
            change_squared = _squared_norm(_difference(values, previous))
            self.previous = values.copy()
        grad_squared = _squared_norm(grad.ravel(order="K"))  # in memory order: never a copy
        self.steps.append(step)
        self.grad_squared.append(grad_squared)
        self.change_squared.append(change_squared)
        self.value_squared.append(value_squared)

    def close(self, values):
        """The recording ends: the change after the last step, from ``values`` (the leaf's
        array now, or None when the leaf is gone or cannot be read)."""
        if not self.steps:
            return
        previous = self.previous
        change_squared = math.nan
        if values is not None and previous is not None and values.size == previous.size:
            values = values.reshape(-1)
            if previous.dtype == values.dtype and previous.base is None:
                # its own copy, needed no more: the change is computed in it, as at a step
                with np.errstate(all="ignore"):  # inf - inf: NaN, said by the norm
                    change_squared = _squared_norm(np.subtract(values, previous, out=previous))
            else:  # a segment of a batch's row, or another dtype
                change_squared = _squared_norm(_difference(values, previous))
        self.change_squared.append(change_squared)
        self.previous = None


def _difference(values, previous):
    """``values - previous`` in float64 at least (complex stays complex); inf - inf is NaN,
    said by the norm, not by a NumPy warning."""
    with np.errstate(all="ignore"):
        return np.subtract(values, previous, dtype=np.result_type(values, previous, np.float64))


def _missing_grad(values):
    """What a parameter reached by a pass but with no .grad reads as: NaN, of its shape."""
    return np.full(values.shape, math.nan)


class _Batch:
    """The small parameters of a pass, read together. Kept from pass to pass while the same
    parameters, of the same sizes, come in the same order (a training loop); made again
    otherwise.

    A pass only copies their values and grads, one NumPy call for all of them, into the next
    row of ``rows`` (float64). Each row has three parts, each with one segment per parameter,
    in order: their values, their grads, and (filled by ``measure``) the change of their values
    since the pass before. Every ``capacity`` passes, and when the batch is replaced or the
    recording ends, ``measure`` takes the norms of all the passes copied since, with five NumPy
    calls for all of them: the changes are differences of consecutive rows, and one
    ``np.add.reduceat`` over the squares sums every segment of every row. Row 0 holds the
    values of the last pass measured: each parameter's ``previous`` is its segment of it."""

    def __init__(self, parameters, values):
        self.parameters = parameters
        self.sizes = [array.size for array in values]
        self.total = total = sum(self.sizes)
        self.capacity = max(1, min(ROWS, ROWS_BYTES // (8 * 3 * total)))
        self.rows = np.empty((self.capacity + 1, 3 * total))
        # where each pass's values and grads are copied: row 1, 2, ... (views made once)
        self.copies = [row[: 2 * total] for row in self.rows[1:]]
        self.steps = []  # of the passes copied and not measured yet
        starts = np.cumsum([0, *self.sizes[:-1]])
        self.starts = np.concatenate([starts, starts + total, starts + 2 * total])
        # The positions of the parameters with no values to compare with, at the first pass.
        self.first = []
        for position, (parameter, start, size) in enumerate(
            zip(parameters, starts, self.sizes, strict=True)
        ):
            segment = self.rows[0, start : start + size]
            previous = parameter.previous
            if previous is not None and previous.size == size and previous.dtype.kind == "f":
                segment[...] = previous
            else:
                segment[...] = 0.0
                self.first.append(position)
            parameter.previous = segment

    def read(self, step, values, grads):
        """Copy the values and grads of ``step`` (the parameters' arrays, in order)."""
        if len(self.steps) == self.capacity:
            self.measure()
        np.concatenate(values + grads, axis=None, out=self.copies[len(self.steps)])
        self.steps.append(step)

    def measure(self):
        """The numbers of the passes copied since the last time, handed to the parameters."""
        count, total = len(self.steps), self.total
        if not count:
            return
        passes = self.rows[1 : count + 1]
        # inf - inf, overflowing squares: said by the numbers (NaN, inf), not NumPy warnings
        with np.errstate(all="ignore"):
            np.subtract(passes[:, :total], self.rows[:count, :total], out=passes[:, 2 * total :])
            self.rows[0, :total] = passes[-1, :total]  # the values to compare the next with
            np.square(passes, out=passes)
            sums = np.add.reduceat(passes, self.starts, axis=1)
        number = len(self.parameters)
        if self.first:  # their first pass: no change to measure
            sums[0, [2 * number + position for position in self.first]] = math.nan
            self.first = []
        columns = sums.T.tolist()
        for position, parameter in enumerate(self.parameters):
            parameter.steps.extend(self.steps)
            parameter.value_squared.extend(columns[position])
            parameter.grad_squared.extend(columns[number + position])
            parameter.change_squared.extend(columns[2 * number + position])
        self.steps = []


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
    """The engine-neutral part: the watched parameters, the step count, reading a pass."""

    def __init__(self):
        self._watched = {}  # id(leaf) -> _Parameter
        self._step = -1
        self._last_pass = None  # the key of the pass the last step came from
        self._batch = None  # the _Batch of the last pass that had small parameters
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

    def _read_pass(self, pass_key, leaves):
        """Read the watched parameters among ``leaves``, the leaves the pass ``pass_key`` (just
        ended) summed a gradient into: the small ones in one batch, the others one by one."""
        batched, batched_values, batched_grads, alone = [], [], [], []
        watched = self._watched
        for leaf in leaves:
            parameter = watched.get(id(leaf))
            if parameter is None or parameter.ref() is not leaf:
                continue
            values, grad = self._arrays(parameter, leaf)
            small = 0 < values.size <= BATCH_LIMIT and grad.size == values.size
            if small and values.dtype.kind == "f" and grad.dtype.kind == "f":
                batched.append(parameter)
                batched_values.append(values)
                batched_grads.append(grad)
            else:  # large, complex, empty
                alone.append((parameter, values, grad))
        if not batched and not alone:
            return
        step = self._step_of(pass_key)
        batch = self._batch
        if (
            batch is None
            or batch.parameters != batched
            or batch.sizes != [array.size for array in batched_values]
        ):
            # Others than last time: the old batch hands over its numbers first, so that
            # a parameter's steps stay in order.
            if batch is not None:
                batch.measure()
            batch = self._batch = _Batch(batched, batched_values) if batched else None
        if batch is not None:
            batch.read(step, batched_values, batched_grads)
        for parameter, values, grad in alone:
            parameter.read_alone(step, values, grad)

    def _failed(self, error):
        self.error = f"the history failed and stopped: {type(error).__name__}: {error}"
        self.stop()

    def finish(self, recorder_tensors):
        """Stop, close every parameter's last update, and return the ParameterHistory (or None
        when no parameter was watched). ``recorder_tensors`` is the recorder's map id(tensor)
        -> (weakref, latest record): a parameter still alive is named by its newest record."""
        self.stop()
        if self._batch is not None:
            try:
                self._batch.measure()
            except Exception as error:  # noqa: BLE001 - its last passes are lost, said in error
                self.error = self.error or f"the history failed: {type(error).__name__}: {error}"
            self._batch = None
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


def _roots(squares):
    return np.sqrt(np.array(squares, dtype=np.float64)).tolist()


class _Finished:
    """One parameter's history once the recording has ended (no engine object kept):
    ``record`` its newest TensorRecord (None if the recording kept none), ``tensors`` the ids
    of its records in the trace, oldest first, and its numbers step by step."""

    __slots__ = ("record", "tensors", "steps", "grad_norm", "update_norm", "value_norm")

    def __init__(self, parameter):
        records = parameter.records
        self.record = records[-1] if records else None
        self.tensors = [record.id for record in records]
        self.steps = parameter.steps
        self.grad_norm = _roots(parameter.grad_squared)
        self.value_norm = _roots(parameter.value_squared)
        # The change measured at a step is the update after the parameter's step before it
        # (the change measured at its first step is nothing's; close() measured the last).
        self.update_norm = _roots(parameter.change_squared[1:])

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

    def _arrays(self, parameter, leaf):
        """The leaf's values and its .grad's, as NumPy arrays (NaN for a missing grad)."""
        values, grad = reading.values(leaf), reading.grad(leaf)
        return values, _missing_grad(values) if grad is None else reading.values(grad)

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
                reached, self._reached = self._reached, {}
                self._read_pass(self._passes, reached.values())
        except Exception as error:  # a fault here must not break the user's program
            self._failed(error)


class TorchHistory(_HistoryTracker):
    """Watches real PyTorch: a post-accumulate-grad hook on each parameter notes it, and the
    parameters a pass reached are read when PyTorch's engine ends that pass."""

    def __init__(self):
        import torch

        from nbgrad.trace.torch_bridge import array_of

        super().__init__()
        self._handles = []
        self._reached = {}  # graph task id -> {id(leaf): leaf} of a pass not ended yet
        # Looked up once: the hook runs for every parameter of every pass.
        self._no_torch_function = torch._C.DisableTorchFunction
        self._graph_task_id = torch._C._current_graph_task_id
        self._queue_callback = torch.autograd.Variable._execution_engine.queue_callback
        self._array_of = array_of

    def start(self):
        pass  # hooks are put on parameters as they are watched

    def stop(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._reached = {}

    def _values(self, leaf):
        with self._no_torch_function():
            return self._array_of(leaf)

    def _started_watching(self, leaf):
        # Watched from inside the pass that reached it (the recorder's AccumulateGrad hook),
        # after PyTorch ran the post-accumulate hooks of that pass: noted for this pass now.
        self._handles.append(leaf.register_post_accumulate_grad_hook(self._on_accumulated))
        self._on_accumulated(leaf)

    def _leaf_values(self, parameter, leaf):
        """The leaf's values as a NumPy array on its memory: the view made at an earlier step
        while the leaf keeps the same memory (an optimizer writes in place), else a new one.
        The view keeps that memory alive, so its address cannot be another tensor's."""
        address = leaf.data_ptr()
        view = parameter.view
        if view is not None and view[0] == address and view[1].shape == leaf.shape:
            return view[1]
        values = self._array_of(leaf)
        if values.ctypes.data == address:  # on the leaf's memory, not a converted copy
            parameter.view = (address, values)
        return values

    def _arrays(self, parameter, leaf):
        """The leaf's values and its .grad's, as NumPy arrays (NaN for a missing grad)."""
        values, grad = self._leaf_values(parameter, leaf), leaf.grad
        return values, _missing_grad(values) if grad is None else self._array_of(grad)

    def _on_accumulated(self, leaf):
        try:
            task = self._graph_task_id()
            if task < 0 or self.error is not None:
                return  # outside a backward pass (nothing to read), or stopped
            reached = self._reached.get(task)
            if reached is None:  # the pass's first parameter: be called when it ends
                reached = self._reached[task] = {}
                self._queue_callback(lambda: self._pass_ended(task))
            reached[id(leaf)] = leaf
        except Exception as error:  # a fault here must not break the user's program
            self._failed(error)

    def _pass_ended(self, task):
        try:
            reached = self._reached.pop(task, None)
            if reached and self.error is None:
                # Read with no mode: the recorder's mode must not see these reads as operations.
                with self._no_torch_function():
                    self._read_pass(task, reached.values())
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
