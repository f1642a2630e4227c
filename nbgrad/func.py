"""``torch.func``: ``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``hessian`` and
``functional_call``, built on ``autograd.grad``.

PyTorch runs these transforms at levels of its own (functorch), so that a transform inside
another sees its inputs as fresh variables while the outer one still tracks them. nbgrad gets the
same results from one graph:

- the arguments differentiated are aliased (``view_as``) when they already require grad (an
  outer transform's variables, or the user's tensors), and made new leaves
  (``detach().requires_grad_()``) otherwise;
- the derivatives are taken with ``create_graph=True`` whenever grad mode is on, so that an outer
  transform, or the user's own backward, can differentiate them again;
- a result that depends on none of the tensors outside the transform (only on the leaves made
  for it) is returned detached, as PyTorch returns a plain tensor there; one that depends on the
  user's tensors keeps its ``grad_fn``, as PyTorch's does (``grad(f)(x)`` with ``x`` requiring
  grad is differentiable with respect to ``x``).

``argnums`` picks the positional arguments differentiated; each may be a tensor or a tuple, list
or dict of them (the derivatives come back in the same structure).

nbgrad has no forward mode: ``jvp`` differentiates a vector-Jacobian product again (the
"double backward trick": the same numbers), ``jacfwd`` builds the Jacobian as ``jacrev`` does,
and ``hessian`` is ``jacfwd(jacrev(f))`` as in PyTorch (the same numbers up to rounding).

``vmap`` runs the function once per element of the mapped dimension and stacks the results, where
PyTorch runs it once on batched tensors: the same results for the functions vmap accepts, with
its argument checks and its randomness modes. What PyTorch's batched tensors refuse inside the
function (``.item()``, a tensor's value deciding an ``if``) works here, one element at a time.
"""

import functools

import numpy as np

from nbgrad.autograd import grad_mode
from nbgrad.autograd.api import grad as _autograd_grad
from nbgrad.autograd.node import AccumulateGrad
from nbgrad.autograd.tensor import Tensor

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "stack_module_state",
    "vjp",
    "vmap",
]


# --- pytrees: a tensor, or tuples, lists and dicts of them ------------------------------------


def _leaves(tree):
    """The tensors of ``tree``, in order."""
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _leaves(item)]
    return []


def _rebuild(tree, leaves):
    """``tree`` with its tensors replaced, in order, by those of the iterator ``leaves``."""
    if isinstance(tree, Tensor):
        return next(leaves)
    if isinstance(tree, (tuple, list)):
        return type(tree)(_rebuild(item, leaves) for item in tree)
    if isinstance(tree, dict):
        return {key: _rebuild(item, leaves) for key, item in tree.items()}
    return tree


# --- the variables a transform differentiates --------------------------------------------------


def _variable(tensor):
    """The tensor as a variable of this transform: when something outside tracks it, an alias
    of it (a view: differentiating with respect to the alias takes the partial derivative through
    this argument only, not through other uses of the tensor, and outside gradients still flow
    to the tensor); a new leaf on its values otherwise (PyTorch's error for integer tensors)."""
    if tensor.requires_grad:
        return tensor.view_as(tensor)
    leaf = tensor.detach()
    if leaf.is_inference():  # it cannot be made to require grad; a copy of its values can
        leaf = leaf.clone()
    return leaf.requires_grad_()


def _argnums_tuple(argnums, args):
    numbers = argnums if isinstance(argnums, tuple) else (argnums,)
    if isinstance(argnums, tuple) and not argnums:
        raise RuntimeError("argnums must be non-empty")
    for number in numbers:
        if not isinstance(number, int):
            if isinstance(argnums, tuple):
                raise RuntimeError(f"argnum must be int, got: {type(number)}")
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -len(args) <= number < len(args):
            raise RuntimeError(f"Got argnum={number}, but only {len(args)} positional inputs")
    return tuple(number % len(args) for number in numbers)


def _with_variables(args, numbers):
    """The arguments with the tensors of those at ``numbers`` made variables, and those
    variables, in order."""
    args = list(args)
    variables = []
    for number in numbers:
        made = [_variable(leaf) for leaf in _leaves(args[number])]
        args[number] = _rebuild(args[number], iter(made))
        variables += made
    return args, variables


def _outside_leaves(tensor, made):
    """Whether ``tensor``'s graph reaches a tensor the transform did not make: a leaf that
    requires grad other than ``made`` (ids of the transform's own leaves)."""
    if tensor.grad_fn is None:
        return tensor.requires_grad and id(tensor) not in made
    seen, stack = set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad:
            if id(node.variable) not in made:
                return True
            continue
        stack.extend(next_node for next_node, _ in node.next_functions)
    return False


def _finished(tensors, made):
    """Results as PyTorch returns them: unless they depend on tensors outside, new tensors on
    their values (version 0: what the engine added into them in place is not theirs to show)."""
    return [
        t if t.requires_grad and _outside_leaves(t, made) else Tensor._make(t._data)
        for t in tensors
    ]


def _keeps_graph(outputs, made):
    """Whether derivatives of ``outputs`` need a graph of their own: grad mode is on and the
    outputs depend on a tensor outside the transform (an outer transform's variable, the
    user's leaves): only then can anything differentiate them again (a transform's own leaves
    are gone when it returns, and building that graph for nothing would double its cost)."""
    return grad_mode.is_grad_enabled() and any(
        o.requires_grad and _outside_leaves(o, made) for o in outputs
    )


def _zeros_like(tensor):
    return Tensor._make(np.zeros(tensor._data.shape, tensor._data.dtype))


def _derivatives(outputs, variables, seeds, keep_graph):
    """d outputs / d variables seeded with ``seeds`` (None: a scalar output's 1); zeros for a
    variable not used, and for all when no output depends on anything."""
    seeds = [None] * len(outputs) if seeds is None else seeds
    tracked = [(o, s) for o, s in zip(outputs, seeds, strict=True) if o.requires_grad]
    if not tracked:
        return [_zeros_like(v) for v in variables]
    grads = _autograd_grad(
        [o for o, _ in tracked],
        variables,
        None if all(s is None for _, s in tracked) else [s for _, s in tracked],
        retain_graph=True,
        create_graph=keep_graph,
        allow_unused=True,
    )
    return [_zeros_like(v) if g is None else g for g, v in zip(grads, variables, strict=True)]


def _own_ids(variables, args, numbers):
    """Ids of the variables the transform made (those that are not the caller's tensors)."""
    caller = {id(leaf) for number in numbers for leaf in _leaves(args[number])}
    return {id(v) for v in variables if id(v) not in caller}


# --- the transforms ----------------------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux=False):
    """``grad_and_value(f)(*args)``: (the gradient of the scalar ``f(*args)`` with respect to
    the arguments at ``argnums``, and ``f(*args)``); with ``has_aux``, ``f`` returns
    ``(output, aux)`` and the value is ``(output, aux)``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        numbers = _argnums_tuple(argnums, args)
        with grad_mode.enable_grad():
            call_args, flat = _with_variables(args, numbers)
            result = func(*call_args, **kwargs)
            output, aux = _split_aux(result, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, "
                    f"got {type(output)}"
                )
            if output.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                    f"got tensor with {output.dim()} dims. Maybe you wanted to use the vjp or "
                    "jacrev APIs instead?"
                )
            made = _own_ids(flat, args, numbers)
            grads = _derivatives([output], flat, None, _keeps_graph([output], made))
        grads = iter(_finished(grads, made))
        per_arg = [_rebuild(args[number], grads) for number in numbers]
        gradient = tuple(per_arg) if isinstance(argnums, tuple) else per_arg[0]
        output = _finished([output], made)[0]
        if has_aux:
            aux = _rebuild(aux, iter(_finished(_leaves(aux), made)))
            return gradient, (output, aux)
        return gradient, output

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``grad(f)(*args)``: the gradient of the scalar ``f(*args)`` with respect to the arguments
    at ``argnums`` (``(gradient, aux)`` with ``has_aux``)."""
    transformed = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = transformed(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def _split_aux(result, has_aux, name):
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(
            f"{name}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return result


def vjp(func, *primals, has_aux=False):
    """``vjp(f, *primals)``: ``(f(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``), where
    ``vjp_fn(cotangents)`` gives, for each primal, the vector-Jacobian product."""
    numbers = tuple(range(len(primals)))
    with grad_mode.enable_grad():
        call_args, flat = _with_variables(primals, numbers)
        output, aux = _split_aux(func(*call_args), has_aux, "vjp(f, *primals)")
    made = _own_ids(flat, primals, numbers)
    outputs = _leaves(output)

    def vjp_fn(cotangents):
        if _outline(cotangents) != _outline(output):
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function. cotangents: {_outline(cotangents)}, primal "
                f"output: {_outline(output)}"
            )
        seeds = _leaves(cotangents)
        with grad_mode.enable_grad():
            grads = _derivatives(outputs, flat, seeds, _keeps_graph(outputs, made))
        grads = iter(_finished(grads, made))
        return tuple(_rebuild(primals[number], grads) for number in numbers)

    shown = _rebuild(output, iter(_finished(outputs, made)))
    if has_aux:
        return shown, vjp_fn, _rebuild(aux, iter(_finished(_leaves(aux), made)))
    return shown, vjp_fn


def jacrev(func, argnums=0, has_aux=False, chunk_size=None):
    """``jacrev(f)(*args)``: the Jacobian of ``f(*args)`` with respect to the arguments at
    ``argnums``, one reverse pass per output element: for each output tensor and each input,
    a tensor of shape ``output.shape + input.shape``, in the structure of the outputs (outer)
    and of ``argnums`` and its arguments (inner)."""
    from nbgrad.ops.functions import reshape, stack

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        numbers = _argnums_tuple(argnums, args)
        with grad_mode.enable_grad():
            call_args, flat = _with_variables(args, numbers)
            output, aux = _split_aux(func(*call_args, **kwargs), has_aux, "jacrev(f)(*args)")
            made = _own_ids(flat, args, numbers)
            per_output = []
            for out in _leaves(output):
                keep_graph = _keeps_graph([out], made)
                rows = [[] for _ in flat]
                size = out._data.size
                for k in range(size):
                    seed = np.zeros(size, out._data.dtype)
                    seed[k] = 1
                    seeds = [Tensor._make(seed.reshape(out.shape))]
                    grads = _derivatives([out], flat, seeds, keep_graph)
                    for row, g in zip(rows, grads, strict=True):
                        row.append(g)
                blocks = []
                for v, row in zip(flat, rows, strict=True):
                    shape = (*out.shape, *v.shape)
                    if row:
                        blocks.append(reshape(stack(row), shape))
                    else:
                        blocks.append(Tensor._make(np.zeros(shape, v._data.dtype)))
                per_output.append(blocks)
        results = []
        for blocks in per_output:
            blocks = iter(_finished(blocks, made))
            per_arg = [_rebuild(args[number], blocks) for number in numbers]
            results.append(tuple(per_arg) if isinstance(argnums, tuple) else per_arg[0])
        jacobian = _rebuild(output, iter(results))
        if has_aux:
            return jacobian, _rebuild(aux, iter(_finished(_leaves(aux), made)))
        return jacobian

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """``jacfwd(f)(*args)``: the Jacobian ``jacrev`` gives (nbgrad has no forward mode; the
    same numbers up to rounding)."""
    return jacrev(func, argnums, has_aux)


def hessian(func, argnums=0):
    """``hessian(f)(*args)``: the Jacobian of the Jacobian of ``f`` with respect to the
    arguments at ``argnums``."""
    return jacfwd(jacrev(func, argnums), argnums)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``jvp(f, primals, tangents)``: ``(f(*primals), J tangents)`` (and ``aux``), the
    Jacobian-vector product taken as the derivative of a vector-Jacobian product along
    ``tangents``."""
    for name, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, tuple):
            raise RuntimeError(
                f"jvp(f, primals, tangents): Expected {name} to be a tuple. E.g. it should be "
                "valid to call f(*primals)."
            )
    if _outline(primals) != _outline(tangents):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents also must be. "
            f"Got primals with structure {_structure(primals)} and tangents with structure "
            f"{_structure(tangents)}"
        )
    primal_leaves, tangent_leaves = _leaves(primals), _leaves(tangents)
    for primal, tangent in zip(primal_leaves, tangent_leaves, strict=True):
        if tuple(primal.shape) != tuple(tangent.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(primal.shape)}"
                f" while the given forward gradient is of size {list(tangent.shape)}."
            )
    numbers = tuple(range(len(primals)))
    with grad_mode.enable_grad():
        call_args, flat = _with_variables(primals, numbers)
        output, aux = _split_aux(func(*call_args), has_aux, "jvp(f, primals, tangents)")
        outputs = _leaves(output)
        # d/du of (u^T J) t is J t, for any u: u is a variable the vjp is linear in.
        dummies = [_zeros_like(o).requires_grad_() for o in outputs]
        tracked = [(o, u) for o, u in zip(outputs, dummies, strict=True) if o.requires_grad]
        if tracked:
            vjps = _autograd_grad(
                [o for o, _ in tracked],
                flat,
                [u for _, u in tracked],
                create_graph=True,
                allow_unused=True,
            )
            used = [(g, t) for g, t in zip(vjps, tangent_leaves, strict=True) if g is not None]
        else:
            used = []
        made = _own_ids(flat, primals, numbers) | {id(u) for u in dummies}
        vjps_used = [g for g, _ in used]
        products = _derivatives(
            vjps_used, dummies, [t for _, t in used], _keeps_graph(vjps_used, made)
        )
    shown = _rebuild(output, iter(_finished(outputs, made)))
    products = _rebuild(output, iter(_finished(products, made)))
    if has_aux:
        return shown, products, _rebuild(aux, iter(_finished(_leaves(aux), made)))
    return shown, products


# --- vmap --------------------------------------------------------------------------------------


def _items(tree):
    """Every leaf of ``tree`` (tuples, lists and dicts), tensors or not, in order."""
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _items(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _items(item)]
    return [tree]


def _with_items(tree, items):
    """``tree`` with its leaves replaced, in order, by those of the iterator ``items``."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(_with_items(item, items) for item in tree)
    if isinstance(tree, dict):
        return {key: _with_items(item, items) for key, item in tree.items()}
    return next(items)


def _children(tree):
    """The items of a tuple, list or dict (None for anything else: a leaf)."""
    if isinstance(tree, (tuple, list)):
        return list(tree)
    if isinstance(tree, dict):
        return list(tree.values())
    return None


def _structure(tree, indent=0):
    """The structure of ``tree`` as PyTorch's pytree ``TreeSpec`` prints it in its messages:
    ``*`` a leaf, ``TreeSpec(tuple, None, [*,\n  *])`` a pair."""
    children = _children(tree)
    if children is None:
        return "*"
    context = repr(list(tree)) if isinstance(tree, dict) else "None"
    indent += 2
    parts = [_structure(child, indent) for child in children]
    body = ("," + "\n" + " " * indent).join(parts)
    return f"TreeSpec({type(tree).__name__}, {context}, [{body}])"


def _outline(tree):
    """The structure of ``tree`` as PyTorch's ``treespec_pprint`` writes it: ``(*, [*, *])``."""
    children = _children(tree)
    if children is None:
        return "*"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{key!r}: {_outline(v)}" for key, v in tree.items()) + "}"
    inner = ", ".join(_outline(child) for child in children)
    if isinstance(tree, list):
        return f"[{inner}]"
    return f"({inner},)" if len(children) == 1 else f"({inner})"


def _mapped(arg, dims, describe):
    """The (tensor, dim) pairs of ``arg`` mapped by ``dims`` (an int or None for all of the
    argument's tensors, or a tuple, list or dict of them matching the argument)."""
    if dims is None:
        return []
    if isinstance(dims, int):
        if isinstance(arg, Tensor):
            if not -arg.dim() <= dims < max(arg.dim(), 1):
                raise ValueError(
                    f"{describe}: Got in_dim={dims} for some input, but that input is a Tensor "
                    f"of dimensionality {arg.dim()} so expected in_dim to satisfy "
                    f"-{arg.dim()} <= in_dim < {arg.dim()}."
                )
            return [(arg, dims % arg.dim())]
        if isinstance(arg, (tuple, list)):
            return [pair for item in arg for pair in _mapped(item, dims, describe)]
        if isinstance(arg, dict):
            return [pair for item in arg.values() for pair in _mapped(item, dims, describe)]
        raise ValueError(
            f"{describe}: Got in_dim={dims} for an input but the input is of type {type(arg)}. "
            "We cannot vmap over non-Tensor arguments, please use None as the respective in_dim"
        )
    if isinstance(dims, (tuple, list)) and isinstance(arg, (tuple, list)) and len(dims) == len(arg):
        return [pair for a, d in zip(arg, dims, strict=True) for pair in _mapped(a, d, describe)]
    if isinstance(dims, dict) and isinstance(arg, dict) and dims.keys() == arg.keys():
        return [pair for key in arg for pair in _mapped(arg[key], dims[key], describe)]
    raise ValueError(f"{describe}: in_dims is not compatible with the structure of `inputs`.")


def _slice(tree, chosen, index):
    """``tree`` with each mapped tensor (``chosen``: id -> dim) replaced by its element
    ``index`` of the mapped dimension."""
    if isinstance(tree, Tensor):
        dim = chosen.get(id(tree))
        return tree if dim is None else tree.select(dim, index)
    if isinstance(tree, (tuple, list)):
        return type(tree)(_slice(item, chosen, index) for item in tree)
    if isinstance(tree, dict):
        return {key: _slice(item, chosen, index) for key, item in tree.items()}
    return tree


def _zero_element(tree, chosen):
    """``tree`` with each mapped tensor replaced by zeros of one element's shape: what the
    function is run on to learn its outputs' shapes when the mapped dimension is empty."""
    if isinstance(tree, Tensor):
        dim = chosen.get(id(tree))
        if dim is None:
            return tree
        shape = tuple(tree.shape[:dim]) + tuple(tree.shape[dim + 1 :])
        return Tensor._make(np.zeros(shape, tree._data.dtype))
    if isinstance(tree, (tuple, list)):
        return type(tree)(_zero_element(item, chosen) for item in tree)
    if isinstance(tree, dict):
        return {key: _zero_element(item, chosen) for key, item in tree.items()}
    return tree


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``vmap(f)(*args)``: ``f`` mapped over dimension ``in_dims`` of its arguments (an int or
    None for each argument, or for all), its results stacked along ``out_dims``."""
    from nbgrad import random
    from nbgrad.ops.functions import movedim, stack

    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        describe = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        if isinstance(in_dims, int):
            per_argument = (in_dims,) * len(args)
        elif isinstance(in_dims, tuple):
            if len(in_dims) != len(args):
                raise ValueError(
                    f"{describe}: in_dims is not compatible with the structure of `inputs`. "
                    f"in_dims has structure {_structure(in_dims)} but inputs has "
                    f"structure {_structure(args)}."
                )
            per_argument = in_dims
        else:
            raise ValueError(
                f"{describe}: expected `in_dims` to be int or a (potentially nested) tuple "
                f"matching the structure of inputs, got: {type(in_dims)}."
            )
        pairs = [
            pair
            for arg, dims in zip(args, per_argument, strict=True)
            for pair in _mapped(arg, dims, describe)
        ]
        if not pairs:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        sizes = [tensor.shape[dim] for tensor, dim in pairs]
        if len(set(sizes)) > 1:
            raise ValueError(
                "vmap: Expected all tensors to have the same size in the mapped dimension, got "
                f"sizes {sizes} for the mapped dimension"
            )
        chosen = {id(tensor): dim for tensor, dim in pairs}
        with random.drawing_per_element(randomness) as element:
            if sizes[0] == 0:
                with element():
                    results = [func(*_zero_element(args, chosen), **kwargs)]
            else:
                results = []
                for index in range(sizes[0]):
                    with element():
                        results.append(func(*_slice(args, chosen, index), **kwargs))
        first = results[0]
        # out_dims: one for every output, or one per item of a tuple of outputs
        if isinstance(out_dims, tuple):
            # a single output counts as a tuple of one
            outputs = first if isinstance(first, tuple) else (first,)
            if len(out_dims) != len(outputs):
                raise ValueError(
                    f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                    "compatible with the structure of `outputs`. out_dims has structure "
                    f"{_structure(out_dims)} but outputs has structure {_structure(first)}."
                )
            dims = [d for item, d in zip(outputs, out_dims, strict=True) for _ in _items(item)]
        else:
            dims = [out_dims] * len(_items(first))
        columns = zip(*(_items(result) for result in results), strict=True)
        stacked = []
        for column, dim in zip(columns, dims, strict=True):
            item = column[0]
            if dim is None:
                if isinstance(item, Tensor):
                    raise ValueError(
                        f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                        "out_dim is None"
                    )
                stacked.append(item)
                continue
            if not isinstance(item, Tensor):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                    f"{type(item)}. Did you mean to set out_dims= to None for output?"
                )
            whole = stack(column)
            if sizes[0] == 0:
                whole = whole[:0]
            stacked.append(movedim(whole, 0, dim) if dim != 0 else whole)
        return _with_items(first, iter(stacked))

    return wrapper


# --- functional_call ---------------------------------------------------------------------------


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """``module(*args, **kwargs)`` run with the tensors of ``parameter_and_buffer_dicts``
    (a dict, or a tuple of dicts, from dotted names as ``named_parameters`` gives them) in
    place of the module's own parameters and buffers, which are put back afterwards."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        replacements = dict(dicts)
    else:
        replacements = {}
        repeated = []
        for d in dicts:
            repeated += [key for key in d if key in replacements and key not in repeated]
            replacements.update(d)
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(module.named_buffers(remove_duplicate=False))
    if strict:
        missing = sorted(set(own) - set(replacements))
        unexpected = sorted(set(replacements) - set(own))
        if missing or unexpected:
            lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            if unexpected:
                lines.append(
                    "\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + "."
                )
            raise RuntimeError("\n".join(lines))
    if tie_weights:  # a tensor shared under several names takes the replacement of any of them
        names_of = {}
        for name, tensor in own.items():
            names_of.setdefault(id(tensor), []).append(name)
        for names in names_of.values():
            given = [name for name in names if name in replacements]
            for name in names:
                if given and name not in replacements:
                    replacements[name] = replacements[given[0]]
    swapped = []
    try:
        for name, tensor in replacements.items():
            owner, _, attribute = name.rpartition(".")
            holder = module.get_submodule(owner) if owner else module
            registry = (
                holder._parameters
                if attribute in holder._parameters
                else holder._buffers
                if attribute in holder._buffers
                else None
            )
            if registry is None:  # not the module's: PyTorch sets it as an attribute
                swapped.append((holder, None, attribute, holder.__dict__.get(attribute, _ABSENT)))
                holder.__dict__[attribute] = tensor
                continue
            swapped.append((holder, registry, attribute, registry[attribute]))
            registry[attribute] = tensor
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for holder, registry, attribute, original in reversed(swapped):
            if registry is not None:
                registry[attribute] = original
            elif original is _ABSENT:
                del holder.__dict__[attribute]
            else:
                holder.__dict__[attribute] = original


_ABSENT = object()


def stack_module_state(models):
    """The parameters and buffers of ``models`` (modules of one architecture) stacked along a
    new first dimension, as two dicts by name: the parameters new leaves that require grad,
    the buffers plain tensors. What ``vmap`` over ``functional_call`` runs an ensemble with."""
    from nbgrad.ops.functions import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({model.training for model in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    names = [name for name, _ in models[0].named_parameters()]
    params = {
        name: stack([dict(m.named_parameters())[name].detach() for m in models]).requires_grad_()
        for name in names
    }
    buffer_names = [name for name, _ in models[0].named_buffers()]
    buffers = {
        name: stack([dict(m.named_buffers())[name] for m in models]) for name in buffer_names
    }
    return params, buffers
