"""The public way to record outside IPython: ``with nbgrad.record() as trace:``, and
``nbgrad.last_trace()``."""

import sys

from nbgrad.trace.engines import recorder_class
from nbgrad.trace.nonfinite import NonfiniteWatch
from nbgrad.trace.recorder import DEFAULT_MAX_NODES, DEFAULT_MAX_PASSES
from nbgrad.trace.source import source_for
from nbgrad.trace.values import DEFAULT_MAX_ELEMENTS, Policy

_last_trace = None


def last_trace():
    """The newest finished Trace (of a ``%%autograd`` cell or a ``record()`` block), or None."""
    return _last_trace


def set_last_trace(trace):
    global _last_trace
    _last_trace = trace


class record:
    """Record everything autograd does inside a ``with`` block::

        with nbgrad.record() as trace:
            e = (a + b) * d
            e.backward()
        trace.tensors["e"].grad_fn.name   # "MulBackward0"

    The trace is filled in as the block runs and finished (names given, references to the
    program's objects dropped) when it ends, also when it ends with an exception.

    full          keep every array whole (by default arrays with more than ``max_elements``
                  elements are kept as statistics and a preview)
    max_elements  the size above which arrays are summarised
    max_nodes     stop recording at this many grad_fn nodes, or this many operations
                  (those under no_grad too), whichever comes first
    max_passes    stop recording when one more backward pass would start
    name          a name for the trace (shown in its summary)
    engine        "nbgrad" (the default) or "torch": record real PyTorch's autograd instead
    stop_on_nonfinite  raise nonfinite.NonfiniteError from the op or backward step that makes
                  the first NaN or Inf (by default recording goes on: ``trace.first_nonfinite``)
    history       keep grad, update and value norms of every parameter for every backward pass,
                  past ``max_passes`` too (``trace.history``; nbgrad/trace/history.py)
    """

    def __init__(
        self,
        *,
        full=False,
        max_elements=DEFAULT_MAX_ELEMENTS,
        max_nodes=DEFAULT_MAX_NODES,
        max_passes=DEFAULT_MAX_PASSES,
        name=None,
        engine="nbgrad",
        stop_on_nonfinite=False,
        history=True,
    ):
        if engine not in ("nbgrad", "torch"):
            raise ValueError(f"engine must be 'nbgrad' or 'torch', got {engine!r}")
        self._engine = engine
        self._options = dict(
            policy=Policy(max_elements=max_elements, full=full),
            max_nodes=max_nodes,
            max_passes=max_passes,
            name=name,
            history=history,
        )
        self._recorder = None
        self._stop_on_nonfinite = bool(stop_on_nonfinite)

    def __enter__(self):
        if self._recorder is not None:
            raise RuntimeError("this record() block is already running")
        caller = sys._getframe(1)
        source = source_for(caller.f_code.co_filename)
        recorder = recorder_class(self._engine)
        self._recorder = recorder(source, base_frame=caller, source_kind="file", **self._options)
        if self._stop_on_nonfinite:
            self._recorder.nonfinite_watch = NonfiniteWatch()
        self._recorder.start()
        return self._recorder.trace

    def __exit__(self, exc_type, exc, tb):
        caller = sys._getframe(1)
        namespaces = [caller.f_locals]
        if caller.f_globals is not caller.f_locals:
            namespaces.append(caller.f_globals)
        recorder, self._recorder = self._recorder, None
        trace = recorder.finish(namespaces, error=exc)
        set_last_trace(trace)
        return False  # an exception goes on, as if the block were not recorded
