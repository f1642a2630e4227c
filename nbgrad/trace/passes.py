"""Telling backward passes apart, from what the engine's observation points allow.

The engine announces each node that ran and each accumulation, but not where a ``backward()``
or ``autograd.grad()`` call starts or ends, nor its ``retain_graph``. Until it does (see the
report of issue 4: a ``backward_listeners`` observation point), this module recognises a pass by
the frame of ``engine._execute`` that is running it: every node listener is called from that
frame, so one frame object is one pass, and its arguments tell the pass's roots and flags.

Everything that knows about the engine's frames is here, so that replacing it by a real
observation point touches one file.
"""

from nbgrad.autograd import engine


def _pass_runner_code():
    """The code of the engine function that runs one pass (``_execute`` today). If the engine
    is reorganised and it is gone, recording still works, without telling passes apart."""
    for name in ("_execute", "execute"):
        code = getattr(getattr(engine, name, None), "__code__", None)
        if code is not None:
            return code
    return None


EXECUTE_CODE = _pass_runner_code()
ENGINE_FILE = engine.__file__
# How far above a listener the engine's frame can be (listener <- accumulate_into_leaf <-
# AccumulateGrad.apply <- _run_node <- _execute at most, today fewer).
SEARCH_DEPTH = 6


def execute_frame_above(frame):
    """The innermost ``engine._execute`` frame at most a few frames above ``frame``, or None."""
    for _ in range(SEARCH_DEPTH):
        if frame is None:
            return None
        if frame.f_code is EXECUTE_CODE:
            return frame
        frame = frame.f_back
    return None


def pass_arguments(frame):
    """What a pass was asked to do: (roots, retain_graph, create_graph, kind)."""
    args = frame.f_locals
    kind = "backward" if args.get("capture") is None else "grad"
    # backward(inputs=[...]) also captures: it accumulates into the leaves it names.
    if kind == "grad" and args.get("run_only"):
        kind = "backward"
    return (
        tuple(args.get("roots", ())),
        bool(args.get("keep_graph")),
        bool(args.get("create_graph")),
        kind,
    )


class PassFrames:
    """Maps the engine frames of passes still running to their BackwardPass records.

    A pass's frame is dropped when a later pass starts that does not run inside it, or when
    recording stops: holding an ended pass's frame keeps its graph alive.
    """

    def __init__(self):
        self._running = []  # (frame, BackwardPass), outermost first

    def find(self, frame):
        for held, backward_pass in reversed(self._running):
            if held is frame:
                return backward_pass
        return None

    def add(self, frame, backward_pass):
        on_stack = set()
        walker = frame.f_back
        while walker is not None:
            on_stack.add(id(walker))
            walker = walker.f_back
        # A new pass: the ones still running are those whose frames are below it on the stack.
        self._running = [(f, p) for f, p in self._running if id(f) in on_stack]
        self._running.append((frame, backward_pass))

    def latest(self):
        return self._running[-1][1] if self._running else None

    def clear(self):
        self._running = []
