"""Names for what a trace recorded: the names the user's code gave, or labels from its text.

A tensor is named, by priority:

1. ``variable``: a name that holds it when recording ends: ``a``, ``model.fc1.weight`` (a
   module's parameter), ``xs[0]`` (an element of a list, tuple or dict);
2. ``version``: an earlier value of such a tensor, before an in-place change: ``w#1``;
3. ``assignment``: the name its expression was assigned to (``loss = ...`` in a loop whose
   earlier losses no variable holds any more: ``loss#1``, ``loss#2``);
4. ``expression``: the text of the expression that made it (``c * d``), or for an operation run
   inside a call, its name and where: ``t in model.fc1`` (a module), ``mul in f(x)``;
5. ``module``: the output of an nn.Module: ``model.fc1(...)``;
6. ``operand``: a leaf or constant written inline, by its text (``torch.tensor(3.0)``);
7. ``anonymous``: ``leaf``, ``constant``, or the op's name.

Names are unique in a trace: a repeated one gets ``#k``, k counting its occurrences in order.
"""

import types

import numpy as np

from nbgrad.autograd.tensor import Tensor
from nbgrad.trace.modules import is_module, module_paths, named_submodules
from nbgrad.trace.trace import TensorRecord

# IPython's own variables, never the user's names for things.
IGNORED_NAMES = {"In", "Out", "get_ipython", "exit", "quit"}
CONTAINER_DEPTH = 2
CONTAINER_LENGTH = 1000
MAX_VISITS = 50_000


class VariableNames:
    """What the user's variables said when recording ended, all that naming needs of the
    program: the rest comes from the records and the recorded code's text.

    chosen        record -> (its variable's path, "variable"), and its earlier values' records
                  -> (that path, "version")
    aliases       record -> the other paths that held it
    held          every path a variable held a tensor at (numbered wherever else it appears)
    module_calls  record -> "model.fc1(...)", for the outputs of a module's forward
    """

    __slots__ = ("chosen", "aliases", "held", "module_calls")

    def __init__(self, chosen, aliases, held, module_calls):
        self.chosen = chosen
        self.aliases = aliases
        self.held = held
        self.module_calls = module_calls


def read_variables(trace, namespaces, live, module_outputs, earlier=None, tensor_type=Tensor):
    """Read what depends on the program as it is now: which variable holds which record, and
    the dotted paths of the modules that ran (given to the trace's ``modules`` and to each op's
    ``module`` now). Returns a ``VariableNames``; ``give_names`` then names the records.

    tensor_type     the recorded engine's tensor class (nbgrad's Tensor, or torch.Tensor)
    live            id(tensor) -> (tensor, its latest record), for tensors still alive
    module_outputs  record -> scope (modules, outermost first) of the forward that returned it
    earlier         record -> the record of the same tensor's previous value (in-place changes)
    """
    tensors, modules = _variables(namespaces, tensor_type)
    module_names = {}
    for path, module in modules:
        for sub_path, sub in named_submodules(module, path):
            module_names.setdefault(id(sub), sub_path)

    chosen = {}  # record -> (base name, how)
    aliases = {}
    for path, tensor in tensors:
        entry = live.get(id(tensor))
        if entry is None or entry[0] is not tensor:
            continue
        record = entry[1]
        if record in chosen:
            aliases.setdefault(record, []).append(path)
        else:
            chosen[record] = (path, "variable")

    if earlier:
        for record, (path, _) in list(chosen.items()):
            previous = earlier.get(record)
            while previous is not None and previous not in chosen:
                chosen[previous] = (path, "version")
                previous = earlier.get(previous)

    in_modules = [op for op in trace.ops if op.module]
    module_calls = {}
    if in_modules or module_outputs:
        scopes = {op.module for op in in_modules} | set(module_outputs.values())
        paths = module_paths(_with_ancestors(scopes), module_names)
        # Sorted: scopes come from a set, whose order changes from run to run; parents first.
        for scope, path in sorted(paths.items(), key=lambda item: item[1]):
            trace.modules.setdefault(path, type(scope[-1]).__name__)
        for op in in_modules:
            op.module = paths[op.module]
        module_calls = {record: f"{paths[scope]}(...)" for record, scope in module_outputs.items()}

    # A name a variable holds now is numbered wherever else it appears (``out#1``, ``out#2``
    # for the recorded steps of a loop whose ``out`` now holds a later, unrecorded tensor).
    held = {base for base, how in chosen.values() if how == "variable"}
    held.update(path for path, _ in tensors)
    return VariableNames(chosen, aliases, held, module_calls)


def give_names(trace, source, sites, variables):
    """Name every tensor record from ``variables`` (``read_variables``), the labels of the
    code that made it, or its kind; from the records and the source alone. ``sites``: per op,
    ``(code, lasti, direct)`` of the user's frame that ran it, or None."""
    chosen = dict(variables.chosen)
    _label_results(trace, source, sites, variables.module_calls, chosen)
    _label_inputs(trace, source, sites, chosen)

    for record in trace.tensors.values():
        if record not in chosen:
            base = "leaf" if record.requires_grad and record.grad_fn is None else "constant"
            if record.grad_fn is not None:
                base = record.op.op if record.op is not None else record.grad_fn.name
            chosen[record] = (base, "anonymous")

    _make_unique(trace, chosen, variables.held)
    for record, names in variables.aliases.items():
        record.aliases = tuple(names)


def _variables(namespaces, tensor_type):
    """(path, tensor) and (path, module) for everything the user's variables reach."""
    tensors, modules = [], []
    budget = [MAX_VISITS]
    for namespace in namespaces:
        for key, value in list(namespace.items()):
            if not isinstance(key, str) or key.startswith("_") or key in IGNORED_NAMES:
                continue
            kind = type(value)
            if kind is tensor_type and budget[0] > 0:  # most variables: what _visit would do
                budget[0] -= 1
                tensors.append((key, value))
            elif kind in _NEVER_NAMED:
                budget[0] -= 1
            else:
                _visit(key, value, 0, tensors, modules, budget, tensor_type)
    return tensors, modules


# Values that are neither tensors, modules nor containers: skipped without looking at them.
# Asking a Python module whether it is an nn.Module goes through its ``__getattr__`` (NumPy's
# raises an AttributeError it builds with some care), a visible part of finishing a trace.
_NEVER_NAMED = frozenset(
    (
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        type,
        types.ModuleType,
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        np.ndarray,
    )
)


def _visit(path, value, depth, tensors, modules, budget, tensor_type):
    budget[0] -= 1
    if budget[0] < 0 or type(value) in _NEVER_NAMED:
        return
    if isinstance(value, tensor_type):
        tensors.append((path, value))
    elif is_module(value):
        modules.append((path, value))
        for method in ("named_parameters", "named_buffers"):
            try:
                named = list(getattr(value, method)())
            except Exception:  # noqa: S112 - a half-built module: name what we can
                continue
            for name, tensor in named:
                if isinstance(tensor, tensor_type):
                    tensors.append((f"{path}.{name}", tensor))
    elif depth < CONTAINER_DEPTH:
        if isinstance(value, (list, tuple)) and len(value) <= CONTAINER_LENGTH:
            for index, item in enumerate(value):
                _visit(f"{path}[{index}]", item, depth + 1, tensors, modules, budget, tensor_type)
        elif isinstance(value, dict) and len(value) <= CONTAINER_LENGTH:
            for key, item in list(value.items()):
                if isinstance(key, (str, int)) and not isinstance(key, bool):
                    _visit(
                        f"{path}[{key!r}]", item, depth + 1, tensors, modules, budget, tensor_type
                    )


def _with_ancestors(scopes):
    every = set()
    for scope in scopes:
        for depth in range(1, len(scope) + 1):
            every.add(scope[:depth])
    return every


def _is_value_of_site(sites, index):
    """Whether op ``index`` made the value of the expression it ran from: it was called
    straight from that expression, or it is the last of the ops one call made."""
    site = sites[index]
    if site is None:
        return False
    if site[2]:
        return True
    following = sites[index + 1] if index + 1 < len(sites) else None
    return following is None or following[:2] != site[:2]


def _label_results(trace, source, sites, module_calls, chosen):
    for index, op in enumerate(trace.ops):
        pending = [r for r in op.outputs if r not in chosen]
        if not pending:
            continue
        span = op.span
        described = source.describe(span) if span is not None else None
        for record in pending:
            if described is not None and _is_value_of_site(sites, index):
                label, target, _ = described
                chosen[record] = (target, "assignment") if target else (label, "expression")
            elif record in module_calls:
                chosen[record] = (module_calls[record], "module")
            elif op.module:
                chosen[record] = (f"{op.op} in {op.module}", "expression")
            elif described is not None:
                chosen[record] = (f"{op.op} in {described[0]}", "expression")


def _label_inputs(trace, source, sites, chosen):
    """Leaves and constants written inline get the text of the operand they were."""
    for index, op in enumerate(trace.ops):
        site = sites[index]
        if site is None or not site[2]:
            continue
        tensor_inputs = [r for r in op.inputs if type(r) is TensorRecord]
        unnamed = [r for r in tensor_inputs if r.op is None and r not in chosen]
        span = op.span
        if not unnamed or span is None:
            continue
        described = source.describe(span)
        if described is None:
            continue
        parts = described[2]
        operands = [text for text, _ in parts]
        literal_free = [text for text, is_literal in parts if not is_literal]
        if len(tensor_inputs) == len(literal_free):
            texts = literal_free
        elif len(tensor_inputs) == len(operands):
            texts = operands
        else:
            continue
        for record, text in zip(tensor_inputs, texts):
            if record in unnamed and record not in chosen and text:
                chosen[record] = (text, "operand")


def _make_unique(trace, chosen, held):
    """Give each record its name; repeated names get ``#k`` (k: its occurrence, in order), and
    so do names in ``held`` given to anything but the variable holding them."""
    occurrences = {}
    final = {}
    for record in trace.tensors.values():
        base, how = chosen[record]
        count = occurrences[base] = occurrences.get(base, 0) + 1
        if how == "variable" or (count == 1 and base not in held):
            name = base
        else:
            name = f"{base}#{count}"
        while name in final:  # a label that happens to read like another's "#k"
            name += "'"
        final[name] = record
        record.name = name
        record.named_by = how
    # Variables first would change occurrence counting; instead keep creation order in the
    # trace's table, now keyed by the final names.
    trace.tensors = {record.name: record for record in trace.tensors.values()}
