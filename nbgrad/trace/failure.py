"""Where recorded code failed: the call or the backward step that raised.

When a ``%%autograd`` cell raises, its trace is partial (``status.error``). A ``Failure`` says
which call raised, so the widget can draw the graph up to it with that call marked:

- ``where="forward"``: an operation raised before it produced anything (``a @ b`` on shapes that
  do not fit). It has no op record (nothing was made); the failure names the call as PyTorch
  names it (``matmul``) and lists the tensors it was given, which the widget draws as inputs of
  a placeholder op.
- ``where="backward"``: a node raised while the engine ran it (its saved values freed by an
  earlier backward, or changed in place since). The failure names that node's record and the
  pass it ran in.

Each recorder finds the failing call its own way (nbgrad's from the exception's traceback, which
shows the engine's frames; PyTorch's from the call its mode was handling, or from the order its
engine runs nodes in), and both fill in the same record.
"""

import os

import nbgrad

# nbgrad's public operations live here: the first frame in them under the user's code is the
# call the user made (``matmul`` for ``a @ b``, ``linear`` inside ``nn.Linear``).
_NBGRAD_DIR = os.path.dirname(nbgrad.__file__)
_OP_DIRS = (
    os.path.join(_NBGRAD_DIR, "ops") + os.sep,
    os.path.join(_NBGRAD_DIR, "nn", "functional"),
    os.path.join(_NBGRAD_DIR, "linalg.py"),
    os.path.join(_NBGRAD_DIR, "special.py"),
)
_ENGINE_FILE = os.path.join(_NBGRAD_DIR, "autograd", "engine.py")
# Frames of nbgrad's operations that wrap the call rather than being it.
_WRAPPERS = {"wrapper", "operator", "method", "with_numpy_names", "inner", "wrapped"}


class Failure:
    """The call that raised.

    where       "forward" (an operation) or "backward" (a node run by the engine)
    call        the operation's name as PyTorch names it (``matmul``), or the node's class name
                (``ExpBackward0``)
    line        the line of the recorded code that made the failing call (for backward, the
                line that called ``backward()``), or None
    error_type  the exception's class name (``RuntimeError``)
    message     the exception's message
    inputs      forward: the TensorRecords of the tensors the call was given
    node        backward: the NodeRecord of the node that raised
    pass_index  backward: the index of the pass it ran in
    """

    def __init__(self, where, call, line, error, inputs=(), node=None, pass_index=None):
        self.where = where
        self.call = call
        self.line = line
        self.error_type = type(error).__name__
        self.message = str(error)
        self.inputs = list(inputs)
        self.node = node
        self.pass_index = pass_index

    def __repr__(self):
        return f"<Failure {self.where} {self.call} line {self.line}: {self.error_type}>"

    def to_json(self):
        """The trace JSON's ``failure`` (docs/trace-schema.md): optional keys left out."""
        out = {
            "where": self.where,
            "call": self.call,
            "type": self.error_type,
            "message": self.message,
        }
        if self.line is not None:
            out["line"] = self.line
        if self.inputs:
            out["inputs"] = [record.id for record in self.inputs]
        if self.node is not None:
            out["node"] = self.node.id
        if self.pass_index is not None:
            out["pass"] = self.pass_index
        return out


def _frames(error):
    """The frames of the exception's traceback, outermost first."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _user_line(frames, filename):
    """The line of the innermost frame of the recorded code, or None."""
    line = None
    for frame, lineno in frames:
        if frame.f_code.co_filename == filename:
            line = lineno
    return line


def _tensor_arguments(frame, tensor_type):
    """The tensors among a frame's arguments (a list or tuple argument's too), in order."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    if code.co_flags & 0x04:  # *args
        count += 1
    found = []
    for name in code.co_varnames[:count]:
        value = frame.f_locals.get(name)
        values = value if isinstance(value, (list, tuple)) else (value,)
        for item in values:
            if isinstance(item, tensor_type) and not any(item is seen for seen in found):
                found.append(item)
    return found


def nbgrad_failure(recorder, error):
    """The Failure of ``error`` raised by code recorded on nbgrad's engine, or None when it
    was not raised by an operation or a backward step (a plain ``ValueError`` of the user's)."""
    frames = _frames(error)
    filename = recorder._filename
    line = _user_line(frames, filename)
    # A node the engine was running when it raised: the innermost engine loop's ``node``.
    for frame, _ in reversed(frames):
        if frame.f_code.co_filename == _ENGINE_FILE and "node" in frame.f_locals:
            node = frame.f_locals["node"]
            entry = recorder._nodes.get(id(node))
            record = entry[1] if entry is not None and entry[0]() is node else None
            if record is None:
                return None
            backward_pass = recorder.trace.passes[-1] if recorder.trace.passes else None
            return Failure(
                "backward",
                record.name,
                backward_pass.line if backward_pass is not None else line,
                error,
                node=record,
                pass_index=backward_pass.index if backward_pass is not None else None,
            )
    # Else the first call into nbgrad's operations under the innermost frame of the user's code.
    inner = None
    for k, (frame, _) in enumerate(frames):
        if frame.f_code.co_filename == filename:
            inner = k
    if inner is None:
        return None
    for frame, _ in frames[inner + 1 :]:
        if not frame.f_code.co_filename.startswith(_OP_DIRS):
            continue
        name = frame.f_code.co_name
        if name in _WRAPPERS:
            # ``x + y``'s operator names its op in ``spec``; other wrappers (``out=``, NumPy's
            # argument names) pass the call on: it is further in
            spec = frame.f_locals.get("spec")
            if spec is None:
                continue
            name = spec.name
        name = name.strip("_")
        if name:
            tensors = _tensor_arguments(frame, recorder.tensor_type)
            inputs = [recorder._record_of(tensor) for tensor in tensors]
            return Failure("forward", name, line, error, inputs=inputs)
    return None


def torch_forward_failure(recorder, name, args, kwargs, line, error):
    """The Failure of a PyTorch call (``name`` as the recorder names it) that raised."""
    import torch

    tensors = []
    for value in (*args, *kwargs.values()):
        values = value if isinstance(value, (list, tuple)) else (value,)
        for item in values:
            if isinstance(item, torch.Tensor) and not any(item is seen for seen in tensors):
                tensors.append(item)
    inputs = [recorder._record_of(tensor) for tensor in tensors]
    return Failure("forward", name, line, error, inputs=inputs)


def torch_backward_failure(recorder, backward_pass, root_nodes, error):
    """The Failure of a PyTorch backward pass that raised: the node its engine was running.

    PyTorch's engine runs in C++ (no frame to read), so the node is found the way the engine
    chooses it: of the nodes reachable from the roots, those every one of whose users in the
    pass has run are ready; the engine runs the ready node with the highest sequence number
    first (AccumulateGrad's is the highest). The first ready node that has not run is the one
    that raised. None if no node is left (the error came after the nodes ran)."""
    ran = {id(step.node) for step in backward_pass.steps}
    record_of = {}
    users = {}  # id(node) -> how many edges from nodes of the pass reach it
    nodes = {}
    stack = [node for node in root_nodes if node is not None]
    for node in stack:
        nodes[id(node)] = node
    while stack:
        node = stack.pop()
        for child, _ in getattr(node, "next_functions", ()):
            if child is None:
                continue
            users[id(child)] = users.get(id(child), 0) + 1
            if id(child) not in nodes:
                nodes[id(child)] = child
                stack.append(child)
    for key, node in nodes.items():
        entry = recorder._nodes.get(key)
        if entry is not None and entry[0] is node:
            record_of[key] = entry[1]
    # users that have run, per node
    done = {}
    for key, node in nodes.items():
        record = record_of.get(key)
        if record is None or id(record) not in ran:
            continue
        for child, _ in node.next_functions:
            if child is not None:
                done[id(child)] = done.get(id(child), 0) + 1
    ready = [
        node
        for key, node in nodes.items()
        if key in record_of
        and id(record_of[key]) not in ran
        and done.get(key, 0) == users.get(key, 0)
    ]
    if not ready:
        return None
    failing = max(ready, key=lambda node: node._sequence_nr())
    record = record_of[id(failing)]
    return Failure(
        "backward",
        record.name,
        backward_pass.line,
        error,
        node=record,
        pass_index=backward_pass.index,
    )
