"""Keeping NumPy's floating-point notices quiet, as PyTorch is.

PyTorch computes ``log(0) = -inf``, ``1 / 0 = inf`` and ``sqrt(-1) = nan`` without a word; NumPy,
on which nbgrad computes, warns ("RuntimeWarning: divide by zero encountered in log"). nbgrad
hides those notices with a warnings filter that ignores them when nbgrad's code made NumPy
compute (a warning names the module whose line called NumPy: nbgrad's, or NumPy's own Python
code that nbgrad called). It matches nothing else: a user's own NumPy code still warns, and any
other warning from nbgrad's code shows (the test suite turns those into errors).

A filter only works while it comes first. Python tries the filters in order and the first that
matches decides, so a user's ``warnings.simplefilter("error")`` (or ``"always"``), set after
``import nbgrad``, goes in front of nbgrad's and would turn ``torch.tensor([0.]).log()`` into an
exception. So the engine's entry points (an operation, an in-place operation, a backward pass)
check, with one identity test, that nbgrad's filter is still the first, and put it back in front
when it is not: once after each change of the user's filters.

Why not ``np.errstate(all="ignore")`` around each operation: it costs about a microsecond per use,
more than half of what ``a * b`` on small tensors costs in all; the identity test costs about 15
nanoseconds.
"""

import re
import sys
import warnings

# What NumPy says when a computation divides by zero, overflows, underflows or makes a NaN.
MESSAGE = r"(divide by zero|invalid value|overflow|underflow) encountered"


class _CalledFromNbgrad:
    """The filter's test of the module a warning names (a filter's module is matched by calling
    its ``match``, as a compiled pattern's): nbgrad's own, or NumPy's own Python code (``np.sum``
    and ``np.cumprod`` are Python functions around the ufunc that warns) when what called NumPy
    is nbgrad's. A user's own call of ``np.sum`` does not match: it still warns. The stack is
    only walked when a warning is on its way, never on an operation's path."""

    def match(self, module):
        if module.startswith("nbgrad."):
            return True
        if not module.startswith("numpy"):
            return False
        frame = sys._getframe(1)  # the line that warned (this is called from the warnings C code)
        while frame is not None and frame.f_globals.get("__name__", "").startswith("numpy"):
            frame = frame.f_back
        return frame is not None and frame.f_globals.get("__name__", "").startswith("nbgrad.")

    def __repr__(self):
        return "<nbgrad's modules, or NumPy's called from them>"


# nbgrad's filter, the very tuple put in ``warnings.filters`` (compared by identity).
FILTER = ("ignore", re.compile(MESSAGE, re.IGNORECASE), RuntimeWarning, _CalledFromNbgrad(), 0)


def put_first():
    """Put nbgrad's filter at the front of ``warnings.filters``, unless it is there already, and
    return it (callers compare ``warnings.filters[0]`` with it by identity)."""
    filters = warnings.filters
    if filters and filters[0] is FILTER:
        return FILTER
    # ``filterwarnings`` tells the warnings module that its filters changed (it keeps a count
    # that invalidates what it remembers of past warnings); the plain filter it puts in front
    # is then replaced by nbgrad's, which it cannot make, held once.
    warnings.filterwarnings("ignore", MESSAGE, RuntimeWarning, r"nbgrad\.")
    filters = warnings.filters
    filters[:] = [FILTER, *(f for f in filters[1:] if f is not FILTER)]
    return FILTER


def keep_first():
    """``put_first`` for the entry points less hot than ``run_op`` (which tests inline)."""
    filters = warnings.filters
    if not filters or filters[0] is not FILTER:
        put_first()
