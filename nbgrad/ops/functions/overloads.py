"""PyTorch's argument parser, for functions whose overloads a user meets by their arguments.

``torch.sort`` has two overloads, ``(Tensor input, *, bool stable, int dim = -1, bool descending
= False, ...)`` and ``(Tensor input, int dim = -1, bool descending = False, ...)``: which one a
call takes, and the error a call that fits neither gets, follow from PyTorch's parser
(``torch/csrc/utils/python_arg_parser.cpp`` and ``invalid_arguments.cpp``), modelled here:

1. The overloads are tried in order; the first whose parameters take the arguments wins.
2. When none does, an overload whose parameter count admits the number of arguments given is
   "plausible". If exactly one is, its own complaint is raised ("sort() takes from 1 to 0
   positional arguments but 2 were given", "sort(): argument 'dim' must be int, not bool").
3. Otherwise: "sort() received an invalid combination of arguments - got (...), but expected one
   of:" and the overloads, each with a line saying why it did not match when the number of
   arguments fits it. That line comes from re-reading each overload's printed form, in which a
   default (``int dim = -1``) makes the parameter's name read as ``-1``: PyTorch's quirk, kept.

PyTorch lists keyword arguments in the order of a C++ ``unordered_map``; for the few keywords of
these calls that is the reverse of the order given, which is what is used here.
"""

import os

import numpy as np

from nbgrad.autograd.tensor import Tensor

_NO_DEFAULT = object()


class Param:
    """One parameter: its name, its type as PyTorch prints it (``Tensor``, ``int``, ``bool``,
    ``tuple of Tensors``), its default (as printed, or none: then it is required), whether
    None is allowed (``bool?``), whether it is keyword-only, and NumPy's name for it."""

    def __init__(self, type_name, name, default=_NO_DEFAULT, *, allow_none=False, numpy_name=None):
        self.type_name, self.name, self.default = type_name, name, default
        self.allow_none = allow_none or default == "None"  # PyTorch: a None default allows it
        self.numpy_name = numpy_name
        self.keyword_only = False

    @property
    def optional(self):
        return self.default is not _NO_DEFAULT

    def takes(self, value):
        """Whether PyTorch's parser accepts ``value`` for this parameter."""
        if self.type_name == "Tensor":
            return isinstance(value, Tensor)
        if self.type_name == "int":
            if isinstance(value, Tensor):  # a 0-d integer tensor is an int (bool is not)
                return value.dim() == 0 and value.dtype._category == 1
            return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        if self.type_name == "bool":
            return isinstance(value, (bool, np.bool_))
        if self.type_name == "tuple of Tensors":
            return isinstance(value, (tuple, list)) and all(isinstance(v, Tensor) for v in value)
        raise AssertionError(f"no check for {self.type_name}")

    def __str__(self):
        if self.optional:
            return f"{self.type_name} {self.name} = {self.default}"
        return f"{self.type_name} {self.name}"


class Overload:
    """One signature: its parameters, ``"*"`` marking where the keyword-only ones start."""

    def __init__(self, name, *params):
        self.name = name
        self.params = []
        keyword_only = False
        for param in params:
            if param == "*":
                keyword_only = True
                continue
            param.keyword_only = keyword_only
            self.params.append(param)
        self.min_args = sum(not p.optional for p in self.params)
        self.max_args = len(self.params)
        self.max_pos_args = sum(not p.keyword_only for p in self.params)

    def __str__(self):
        parts, starred = [], False
        for param in self.params:
            if param.keyword_only and not starred:
                parts.append("*")
                starred = True
            parts.append(str(param))
        return f"({', '.join(parts)})"

    def parse(self, args, kwargs, complain):
        """The arguments by parameter name (None for those not given), or None when they do
        not fit; with ``complain``, PyTorch's error for why they do not."""
        if len(args) > self.max_pos_args:
            return self._too_many(args) if complain else None
        values = {}
        remaining = len(kwargs)
        for position, param in enumerate(self.params):
            from_keyword = position >= len(args)
            if not from_keyword:
                if param.keyword_only:
                    return self._too_many(args) if complain else None
                value = args[position]
            elif param.name in kwargs:
                value = kwargs[param.name]
            elif param.numpy_name in kwargs:  # dim given as NumPy's axis
                value = kwargs[param.numpy_name]
            else:
                value = _NO_DEFAULT
            if value is _NO_DEFAULT:
                if not param.optional:
                    if complain:
                        self._missing(position)
                    return None
                values[param.name] = None
            elif value is None and param.allow_none:
                values[param.name] = None
            elif param.takes(value):
                values[param.name] = value
            elif complain:
                where = "" if from_keyword else f" (position {position + 1})"
                raise TypeError(
                    f"{self.name}(): argument '{param.name}'{where} must be {param.type_name}, "
                    f"not {type(value).__name__}"
                )
            else:
                return None
            if from_keyword and value is not _NO_DEFAULT:
                remaining -= 1
        if remaining > 0:
            if complain:
                self._unexpected_keyword(args, kwargs)
            return None
        return values

    def _too_many(self, args):
        if self.min_args != self.max_pos_args:
            raise TypeError(
                f"{self.name}() takes from {self.min_args} to {self.max_pos_args} positional "
                f"arguments but {len(args)} were given"
            )
        plural = "" if self.max_pos_args == 1 else "s"
        raise TypeError(
            f"{self.name}() takes {self.max_pos_args} positional argument{plural} but "
            f"{len(args)} {'was' if len(args) == 1 else 'were'} given"
        )

    def _missing(self, position):
        missing = [f'"{p.name}"' for p in self.params[position:] if not p.optional]
        # ("argument" + "s" when one is missing: PyTorch's own slip, kept)
        plural = "s" if len(missing) == 1 else ""
        raise TypeError(
            f"{self.name}() missing {len(missing)} required positional argument{plural}: "
            f"{', '.join(missing)}"
        )

    def _unexpected_keyword(self, args, kwargs):
        for key in kwargs:
            found = [i for i, p in enumerate(self.params) if p.name == key]
            if not found:
                raise TypeError(f"{self.name}() got an unexpected keyword argument '{key}'")
            if found[0] < len(args):
                raise TypeError(f"{self.name}() got multiple values for argument '{key}'")
        raise TypeError("invalid keyword arguments")


def parse(overloads, args, kwargs):
    """``(the index of the overload that takes the call, its arguments by name)``, or PyTorch's
    TypeError for a call that no overload takes."""
    for index, overload in enumerate(overloads):
        values = overload.parse(args, kwargs, complain=False)
        if values is not None:
            return index, values
    count = len(args) + len(kwargs)
    plausible = [o for o in overloads if o.min_args <= count <= o.max_args]
    if len(plausible) == 1:
        plausible[0].parse(args, kwargs, complain=True)
    raise TypeError(_invalid_combination(overloads, args, kwargs))


def _invalid_combination(overloads, args, kwargs):
    keywords = list(reversed(kwargs.items()))  # the order of PyTorch's unordered_map
    described = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in keywords]
    got = ", ".join(described)
    if not args and keywords:
        got += ", "  # PyTorch trims the last separator only after positional arguments
    message = (
        f"{overloads[0].name}() received an invalid combination of arguments - got ({got}), "
        "but expected one of:\n"
    )
    for overload in overloads:
        printed = str(overload)
        message += f" * {printed}\n"
        reread = _reread(printed)
        if len(reread) != len(args) + len(keywords):
            continue
        if keywords:
            first = len(reread) - len(keywords)
            names = [name for name, _ in reread[max(first, 0) :]]
            unmatched = [k for k, _ in keywords if k not in names]
            if unmatched:
                message += (
                    "      didn't match because some of the keywords were incorrect: "
                    f"{', '.join(unmatched)}\n"
                )
                continue
        message += (
            "      didn't match because some of the arguments have invalid types: "
            f"{_marked(reread, args, keywords)}\n"
        )
    return message


def _reread(printed):
    """An overload's printed form split back into (name, type) as PyTorch's message code does:
    the last word is the name, the rest the type (``*`` is a parameter of its own)."""
    params = []
    for part in printed[1:-1].split(", "):
        head, _, last = part.rpartition(" ")
        params.append((last, head if head else last))
    return params


def _marked(reread, args, keywords):
    """The arguments, each between ``!`` where its type does not read as the parameter's
    (PyTorch colours them instead when both outputs are terminals)."""
    if _on_terminals():
        red, red_end, green, green_end = "\33[31;1m", "\33[0m", "\33[32;1m", "\33[0m"
    else:
        red, red_end, green, green_end = "!", "!", "", ""
    by_name = dict(keywords)
    parts = []
    for i in range(len(args) + len(keywords)):
        is_keyword = i >= len(args)
        # (a keyword is looked up by the name the re-read overload has at its position)
        value = by_name.get(reread[i][0]) if is_keyword else args[i]
        matching = type(value).__name__ == reread[i][1]
        text = type(value).__name__
        if isinstance(value, tuple):
            inner = ", ".join(type(v).__name__ for v in value)
            text = f"tuple of ({inner}{',' if len(value) == 1 else ''})"
        elif isinstance(value, list):
            text = f"list of [{', '.join(type(v).__name__ for v in value)}]"
        if is_keyword:
            text = f"{reread[i][0]}={text}"
        parts.append(f"{green}{text}{green_end}" if matching else f"{red}{text}{red_end}")
    return f"({', '.join(parts)})"


def _on_terminals():
    try:
        return os.isatty(1) and os.isatty(2)
    except OSError:
        return False
