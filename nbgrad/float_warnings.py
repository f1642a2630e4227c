"""Keeping NumPy's floating-point notices quiet, as PyTorch is.

PyTorch computes ``log(0) = -inf``, ``1 / 0 = inf`` and ``sqrt(-1) = nan`` without a word; NumPy,
on which nbgrad computes, warns ("RuntimeWarning: divide by zero encountered in log"). nbgrad
hides those notices with a warnings filter that ignores them when they come from nbgrad's own
modules (a warning names the module whose line called NumPy). It matches nothing else: a user's
own NumPy code still warns, and any other warning from nbgrad's code shows (the test suite turns
those into errors).

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

import warnings

# What NumPy says when a computation divides by zero, overflows, underflows or makes a NaN.
MESSAGE = r"(divide by zero|invalid value|overflow|underflow) encountered"

_filter = None  # the filter's tuple, as ``warnings.filterwarnings`` made it first


def put_first():
    """Put nbgrad's filter at the front of ``warnings.filters``, unless it is there already, and
    return it (the tuple, which callers compare by identity with ``warnings.filters[0]``)."""
    global _filter
    filters = warnings.filters
    if _filter is None or not filters or filters[0] != _filter:
        # (filterwarnings drops an equal filter further back: the list holds it once)
        warnings.filterwarnings("ignore", MESSAGE, RuntimeWarning, r"nbgrad\.")
        _filter = warnings.filters[0]
    return warnings.filters[0]


def keep_first():
    """``put_first`` for the entry points less hot than ``run_op`` (which tests inline)."""
    filters = warnings.filters
    if not filters or filters[0] != _filter:
        put_first()
