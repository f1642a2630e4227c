"""Where the public names come from: ``nbgrad.<name>``, ``x.<name>()`` and ``x.<name>_()``.

Each operation says once, beside its own code, under which names users call it:

* a table entry whose function is the entry run as is on one tensor (``exp``, ``sin``, ...)
  says so with flags in ``derivatives.py``; ``ops/functions/elementwise.py`` makes its functions::

      op("exp", "ExpBackward0", ..., function=True, method=True, inplace=True, out=True)

* a hand-written function in ``ops/functions`` (``add`` with ``alpha``, ``matmul``, ``sum``
  with dims) says so with a decorator::

      @public(function=True, method=True, out=True)
      def add(input, other, *, alpha=1): ...

A flag is ``True`` for the entry's or function's own name, a name, or a tuple of names (PyTorch's
aliases: ``mul`` is also ``multiply``). ``nbgrad/__init__.py`` exports ``exports()`` and
``methods.install()`` binds ``METHODS``; nothing else lists them.
"""

import functools
import inspect

from nbgrad.ops.out import with_out

FUNCTIONS = {}  # name -> function, exported as nbgrad.<name> (and as nbgrad.ops.functions.<name>)
TAKES_OUT = set()  # names of FUNCTIONS whose nbgrad.<name> also takes ``out=``
METHODS = {}  # name -> function taking the tensor first, bound as Tensor.<name>


def names(flag, own_name):
    """The names a flag declares: none, the own name, or the names given."""
    if flag is True:
        return (own_name,)
    if not flag:
        return ()
    return (flag,) if isinstance(flag, str) else tuple(flag)


# PyTorch's argument parser also takes NumPy's names for two arguments: ``axis`` for ``dim`` and
# ``keepdims`` for ``keepdim`` (``x.sum(1, keepdims=True)``, as in Karpathy's makemore lectures).
NUMPY_NAMES = {"axis": "dim", "keepdims": "keepdim"}


def taking_numpy_names(function):
    """``function``, also taking ``axis=`` / ``keepdims=`` where it has ``dim`` / ``keepdim``."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return function
    aliases = {alias: name for alias, name in NUMPY_NAMES.items() if name in parameters}
    if not aliases:
        return function

    @functools.wraps(function)
    def with_numpy_names(*args, **kwargs):
        for alias, name in aliases.items():
            if alias in kwargs:
                if name in kwargs:  # both names: PyTorch refuses the alias
                    raise TypeError(
                        f"{function.__name__}() got an unexpected keyword argument '{alias}'"
                    )
                kwargs[name] = kwargs.pop(alias)
        return function(*args, **kwargs)

    return with_numpy_names


def declare(function, own_name, *, as_function=False, as_method=False, out=False):
    """Record ``function`` under the names its flags give (``own_name`` for ``True``)."""
    given = function
    function = taking_numpy_names(function)
    for name in names(as_function, own_name):
        _add(FUNCTIONS, name, function)
        if out:
            TAKES_OUT.add(name)
    for name in names(as_method, own_name):
        _add(METHODS, name, function)
    return given


def _add(registry, name, function):
    if name in registry:
        raise ValueError(f"{name!r} is declared public twice")
    registry[name] = function


def public(function=False, method=False, out=False):
    """Decorator declaring a hand-written function ``nbgrad.<name>`` (``function``), the Tensor
    method ``x.<name>()`` (``method``), and whether ``nbgrad.<name>`` takes ``out=``."""

    def decorate(fn):
        return declare(fn, fn.__name__, as_function=function, as_method=method, out=out)

    return decorate


def exports():
    """``nbgrad``'s functions: each declared function, with ``out=`` where declared."""
    return {
        name: with_out(function) if name in TAKES_OUT else function
        for name, function in FUNCTIONS.items()
    }
