"""A node's local-gradient formulas as a learner writes them.

The op table (``nbgrad/ops/derivatives.py``) writes each input's gradient as Python over
``grad`` and the names the node saved, calling the helpers of ``formula_math``:
``0 * grad if exponent == 0 else grad * scalar_times(exponent, power(self, exponent - 1.0))``.
That text runs; it does not read as math. ``readable(...)`` parses it with ``ast`` and, knowing
what this node saved (``exponent`` is 2), rewrites it exactly: constants put in, conditions
decided, trivial factors dropped (``* 1``, ``** 1``, ``0 * grad`` is 0), helper calls turned
into math (``matrix_t(W)`` is Wᵀ, ``sum_to(g, s)`` is "g summed to shape s"). What has no
exact rewrite is described in words ("computed by NativeLayerNormBackward0 from ∂L/∂out, input,
..."), never shown as the helper's name.

The result is a small tree of JSON lists (the trace's ``readable`` table, docs/trace-schema.md)
that the widget typesets as MathML with the program's names, and also reads as plain text:

    ["g"]                    the gradient arriving at the node: ∂L/∂out  (["g", k]: of output k)
    ["v", name]              a formula name (self, other, result, a saved tensor): the widget
                             puts the program's name in
    ["n", text]              a number, as written
    ["add"|"sub"|"div"|"mm", a, b]     a + b, a − b, a / b, the matrix product a b
    ["mul", a, b, ...]       elementwise product
    ["neg", a] ["pow", a, b] ["T", a] ["sqrt", a] ["abs", a]
    ["f", name, a, ...]      a math function: exp, log, sin, cos, tanh, σ, sgn, erf⁻¹, ...
    ["cmp", op, a, b]        a comparison (op one of < ≤ > ≥ = ≠)
    ["and", a, b] ["or", a, b] ["not", a]
    ["cases", [value, condition], ..., [value, null]]   a piecewise definition
    ["ind", condition]       𝟙[condition]: 1 where the condition holds, else 0
    ["tuple", text]          a shape or other tuple of numbers: "(5, 3)"
    ["idx", a, text]         a indexed by text: a[:, 2]
    ["sum", a, text]         Σ over text of a
    ["pieces", a, dim, lengths, count]  cat's and stack's backward: input k gets piece k of a
                             along dim (lengths of the pieces; None for stack: one slice each)
    ["say", part, ...]       words (strings) and math (trees) in a row
"""

import ast

# Functions whose names are math notation, not nbgrad vocabulary: name in the table -> shown.
MATH_FUNCTIONS = {
    "exp": "exp",
    "log": "log",
    "scalar_log": "log",
    "sin": "sin",
    "cos": "cos",
    "tanh": "tanh",
    "sinh": "sinh",
    "cosh": "cosh",
    "sigmoid": "σ",
    "sign": "sgn",
    "erfinv": "erf⁻¹",
}

# Floats the table writes out that are better known by name (exactly those doubles).
KNOWN_CONSTANTS = {
    1.1283791670955126: ["div", ["n", "2"], ["sqrt", ["n", "π"]]],
    0.886226925452758: ["div", ["sqrt", ["n", "π"]], ["n", "2"]],
    0.6931471805599453: ["f", "log", ["n", "2"]],
    2.302585092994046: ["f", "log", ["n", "10"]],
    0.017453292519943295: ["div", ["n", "π"], ["n", "180"]],
    57.29577951308232: ["div", ["n", "180"], ["n", "π"]],
    0.1666666716337204: ["div", ["n", "1"], ["n", "6"]],  # 1/6 in float32, as PyTorch has it
}

_COMPARE = {
    ast.Lt: "<",
    ast.LtE: "≤",
    ast.Gt: ">",
    ast.GtE: "≥",
    ast.Eq: "=",
    ast.NotEq: "≠",
    ast.Is: "=",
    ast.IsNot: "≠",
}
_PY_COMPARE = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}


class _Unknown:
    """A name whose value this node did not save as a plain constant (a tensor, or missing)."""


_UNKNOWN = _Unknown()


def readable(grads, op_name="", constants=None):
    """``{input: tree}`` for a table entry's ``grads`` ({input: formula text}) of the node
    named ``op_name`` (``MulBackward0``: what a formula with no exact rewrite is described by),
    resolved
    against ``constants`` (the node's saved values that are not tensors: numbers, tuples,
    strings, None)."""
    constants = dict(constants or {})
    return {name: formula_tree(text, op_name, constants) for name, text in grads.items()}


def formula_tree(text, op_name="", constants=None):
    """One formula text as a tree (see the module's docstring)."""
    try:
        expression = ast.parse(text, mode="eval").body
    except SyntaxError:
        return _described(op_name, [])
    resolver = _Resolver(op_name, dict(constants or {}))
    try:
        return resolver.tree(expression)
    except _NoRewriteError:
        return _described(op_name, resolver.operands(expression))


def _inlined_backward_function(name, args):
    """A call of a backward function written in the formulas' language (derivatives.py's
    ``backward_function``: ``sigmoid_backward(grad, result)``) as its text, with the call's
    arguments in place of its parameters; None for any other call."""
    from nbgrad.ops.derivatives import BACKWARD_FUNCTIONS

    params, text = BACKWARD_FUNCTIONS.get(name, (None, None))
    if text is None or len(args) != len(params):
        return None
    bound = dict(zip(params, args, strict=True))

    class Substitute(ast.NodeTransformer):
        def visit_Name(self, name_node):
            return bound.get(name_node.id, name_node)

    return Substitute().visit(ast.parse(text, mode="eval").body)


class _NoRewriteError(Exception):
    """This formula has no exact rewrite: describe it in words instead."""


def _described(op_name, operands):
    what = op_name or "its backward formula"  # the node's name, as the graph shows it
    if not operands:
        return ["say", f"computed by {what}"]
    parts = ["say", f"computed by {what} from "]
    for i, operand in enumerate(operands):
        if i:
            parts.append(", ")
        parts.append(operand)
    return parts


def _number(value):
    """A Python number as a tree."""
    if isinstance(value, bool):
        return ["n", "1" if value else "0"]
    if isinstance(value, float):
        if abs(value) in KNOWN_CONSTANTS:
            known = KNOWN_CONSTANTS[abs(value)]
            return known if value > 0 else ["neg", known]
        if value.is_integer() and abs(value) < 1e15:
            value = int(value)
        else:
            return ["n", repr(value)] if value >= 0 else ["neg", ["n", repr(-value)]]
    return ["n", str(value)] if value >= 0 else ["neg", ["n", str(-value)]]


def _tuple_text(value):
    items = [_plain_text(v) for v in value]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _plain_text(value):
    if isinstance(value, (tuple, list)):
        return _tuple_text(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None:
        return "none"
    if isinstance(value, slice):
        return (
            ":".join(
                "" if v is None else str(v) for v in (value.start, value.stop, value.step)
            ).rstrip(":")
            or ":"
        )
    return str(value)


def _is_plain(value):
    """A value this module can write out: a number, a string, None, or a tuple of them."""
    if value is None or isinstance(value, (bool, int, float, str, slice)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_is_plain(v) for v in value)
    return False


def _tuples(value):
    """Lists as tuples, all the way down (a node may keep its saved sizes as either)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def _value_tree(value):
    if isinstance(value, (bool, int, float)):
        return _number(value)
    if isinstance(value, (tuple, list)):
        return ["tuple", _tuple_text(value)]
    return ["say", _plain_text(value)]


class _Resolver:
    def __init__(self, op_name, constants):
        self.op_name = op_name
        self.constants = {k: _tuples(v) for k, v in constants.items() if _is_plain(v)}

    # --- values known before backward runs -------------------------------------------------

    def value(self, node):
        """The Python value of an expression made of constants only, else _UNKNOWN."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.constants.get(node.id, _UNKNOWN)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.value(e) for e in node.elts]
            return _UNKNOWN if any(i is _UNKNOWN for i in items) else tuple(items)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if operand is _UNKNOWN or isinstance(operand, (str, tuple)) or operand is None:
                return _UNKNOWN
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.Not):
                return not operand
            return _UNKNOWN
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if left is _UNKNOWN or right is _UNKNOWN:
                return _UNKNOWN
            try:
                return _binary(node.op, left, right)
            except Exception:  # an operation the constants do not support: not folded
                return _UNKNOWN
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self.value(node.left), self.value(node.comparators[0])
            if left is _UNKNOWN or right is _UNKNOWN:
                return _UNKNOWN
            try:
                return _PY_COMPARE[type(node.ops[0])](left, right)
            except TypeError:
                return _UNKNOWN
        if isinstance(node, ast.BoolOp):
            values = [self.value(v) for v in node.values]
            if any(v is _UNKNOWN for v in values):
                return _UNKNOWN
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = [self.value(a) for a in node.args]
            if node.keywords or any(a is _UNKNOWN for a in args):
                return _UNKNOWN
            return _call_on_constants(node.func.id, args)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
            gen = node.generators[0]
            source = self.value(gen.iter)
            if source is _UNKNOWN or not isinstance(gen.target, ast.Name) or gen.ifs:
                return _UNKNOWN
            inner = _Resolver(self.op_name, self.constants)
            out = []
            for item in source:
                inner.constants[gen.target.id] = item
                v = inner.value(node.elt)
                if v is _UNKNOWN:
                    return _UNKNOWN
                out.append(v)
            return tuple(out)
        return _UNKNOWN

    # --- trees -----------------------------------------------------------------------------

    def operands(self, expression):
        """The tensors a formula reads (for a description in words), in order, once each."""
        seen, out = set(), []
        for node in ast.walk(expression):  # names bound by a comprehension are not operands
            if isinstance(node, ast.comprehension) and isinstance(node.target, ast.Name):
                seen.add(node.target.id)
        for node in ast.walk(expression):
            if isinstance(node, ast.Name) and node.id not in seen:
                if node.id == "grad":
                    seen.add("grad")
                    out.append(["g"])
                elif node.id not in self.constants and not _is_helper(node.id, expression):
                    seen.add(node.id)
                    out.append(["v", node.id])
        # the gradient first, then the saved names as they appear
        return sorted(out, key=lambda t: t[0] != "g")

    def tree(self, node):
        value = self.value(node)
        if value is not _UNKNOWN and not isinstance(value, str) and _is_plain(value):
            if value is None:
                raise _NoRewriteError
            return _value_tree(value)
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise _NoRewriteError
        return method(node)

    def _Name(self, node):
        if node.id == "grad":
            return ["g"]
        if _is_known_helper(node.id):
            raise _NoRewriteError
        return ["v", node.id]

    def _Subscript(self, node):
        # grad[0] of a node with several outputs: the gradient of output 0
        if isinstance(node.value, ast.Name) and node.value.id == "grad":
            index = self.value(node.slice)
            if isinstance(index, int):
                return ["g", index]
        base = self.tree(node.value)
        key = self.value(node.slice)
        if key is _UNKNOWN:
            if isinstance(node.slice, ast.Name):
                return ["idx", base, node.slice.id]
            raise _NoRewriteError
        keys = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(k, (int, slice)) for k in keys):
            raise _NoRewriteError
        return ["idx", base, ", ".join(_plain_text(k) for k in keys)]

    def _Attribute(self, node):
        if node.attr == "shape":
            return ["say", "the shape of ", self.tree(node.value)]
        raise _NoRewriteError

    def _UnaryOp(self, node):
        operand = self.tree(node.operand)
        if isinstance(node.op, ast.USub):
            return _negate(operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            return ["not", operand]
        raise _NoRewriteError

    def _BinOp(self, node):
        left, right = self.tree(node.left), self.tree(node.right)
        op = node.op
        if isinstance(op, ast.Mult):
            return _product(left, right)
        if isinstance(op, ast.Div):
            if _is_number(right, 1):
                return left
            if _is_zero(left):
                return left
            return ["div", left, right]
        if isinstance(op, ast.Add):
            if _is_zero(left):
                return right
            if _is_zero(right):
                return left
            return ["add", left, right]
        if isinstance(op, ast.Sub):
            if _is_zero(right):
                return left
            if _is_zero(left):
                return _negate(right)
            return ["sub", left, right]
        if isinstance(op, ast.Pow):
            if _is_number(right, 1):
                return left
            if _is_number(right, 0.5):
                return ["sqrt", left]
            return ["pow", left, right]
        if isinstance(op, ast.MatMult):
            return ["mm", left, right]
        if isinstance(op, ast.BitAnd):
            return ["and", left, right]
        if isinstance(op, ast.BitOr):
            return ["or", left, right]
        raise _NoRewriteError

    def _Compare(self, node):
        if len(node.ops) != 1:
            raise _NoRewriteError
        return [
            "cmp",
            _COMPARE[type(node.ops[0])],
            self.tree(node.left),
            self.tree(node.comparators[0]),
        ]

    def _BoolOp(self, node):
        parts = [self.tree(v) for v in node.values]
        tag = "and" if isinstance(node.op, ast.And) else "or"
        out = parts[0]
        for p in parts[1:]:
            out = [tag, out, p]
        return out

    def _IfExp(self, node):
        test = self.value(node.test)
        if test is not _UNKNOWN:
            return self.tree(node.body if test else node.orelse)
        return _cases(
            [(self.tree(node.body), self.tree(node.test)), (self.tree(node.orelse), None)]
        )

    def _Tuple(self, node):
        value = self.value(node)
        if value is _UNKNOWN:
            parts = ["say", "("]
            for i, e in enumerate(node.elts):
                if i:
                    parts.append(", ")
                parts.append(self.tree(e))
            parts.append(")")
            return parts
        return ["tuple", _tuple_text(value)]

    _List = _Tuple

    def _Call(self, node):
        if not isinstance(node.func, ast.Name) or node.keywords:
            raise _NoRewriteError
        name = node.func.id
        inlined = _inlined_backward_function(name, node.args)
        if inlined is not None:
            return self.tree(inlined)
        rewrite = _REWRITES.get(name)
        if rewrite is not None:
            out = rewrite(self, node.args)
            if out is not None:
                return out
        if name in MATH_FUNCTIONS:
            return ["f", MATH_FUNCTIONS[name], *[self.tree(a) for a in node.args]]
        raise _NoRewriteError

    # helpers of the rewrites
    def shape(self, node):
        value = self.value(node)
        if value is not _UNKNOWN and isinstance(value, tuple):
            return ["tuple", _tuple_text(value)]
        return self.tree(node)

    def text_of(self, node):
        value = self.value(node)
        if value is _UNKNOWN:
            raise _NoRewriteError
        return _plain_text(value)


def _binary(op, left, right):
    if isinstance(op, ast.Add):
        return left + right
    if isinstance(op, ast.Sub):
        return left - right
    if isinstance(op, ast.Mult):
        return left * right
    if isinstance(op, ast.Div):
        return left / right
    if isinstance(op, ast.Pow):
        return left**right
    raise TypeError


def _call_on_constants(name, args):
    """A call the constants decide: len(), min(), slice(), tuple(), and the formula helpers
    that compute a number or a shape from shapes (``reduced_count``, ``split_lengths``)."""
    plain = {"len": len, "min": min, "max": max, "slice": slice, "tuple": tuple, "abs": abs}
    if name in plain:
        try:
            return plain[name](*args)
        except Exception:
            return _UNKNOWN
    if name in ("reduced_count", "split_lengths"):
        from nbgrad.ops.formula_math import ARRAY_NAMESPACE

        try:
            result = ARRAY_NAMESPACE[name](*args)
        except Exception:
            return _UNKNOWN
        if isinstance(result, (list, tuple)):
            result = tuple(int(v) for v in result)
        elif hasattr(result, "item"):
            result = result.item()
        return result if _is_plain(result) else _UNKNOWN
    return _UNKNOWN


_HELPER_NAMES = None


def helper_names():
    """Every name the formulas may call (both of formula_math's namespaces)."""
    global _HELPER_NAMES
    if _HELPER_NAMES is None:
        from nbgrad.ops.formula_math import ARRAY_NAMESPACE
        from nbgrad.ops.formula_tensor import tensor_namespace

        _HELPER_NAMES = frozenset(ARRAY_NAMESPACE) | frozenset(tensor_namespace())
    return _HELPER_NAMES


def _is_known_helper(name):
    return name in helper_names() and name not in MATH_FUNCTIONS


def _is_helper(name, expression):
    for node in ast.walk(expression):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            return True
    return name in ("len", "min", "max", "tuple", "slice", "None", "True", "False")


# --- simplification --------------------------------------------------------------------------


def _is_number(tree, value):
    if tree[0] != "n":
        return False
    try:
        return float(tree[1]) == value
    except ValueError:
        return False


def _is_zero(tree):
    return _is_number(tree, 0)


def _negate(tree):
    if tree[0] == "neg":
        return tree[1]
    if _is_zero(tree):
        return tree
    if tree[0] == "mul" and tree[1][0] == "n":  # -(2 x) -> (-2) x keeps one sign in front
        return ["neg", tree]
    return ["neg", tree]


def _factors(tree):
    if tree[0] == "mul":
        return list(tree[1:])
    return [tree]


def _product(left, right):
    """left · right with exact simplifications: a factor 1 dropped, a factor 0 makes 0, signs
    pulled in front, numbers first and the incoming gradient last (how one writes it)."""
    negative = False
    factors = []
    for part in (left, right):
        while part[0] == "neg":
            negative = not negative
            part = part[1]
        factors.extend(_factors(part))
    cleaned = []
    for f in factors:
        while f[0] == "neg":
            negative = not negative
            f = f[1]
        if _is_zero(f):
            return ["n", "0"]
        if _is_number(f, 1):
            continue
        if _is_number(f, -1):
            negative = not negative
            continue
        if f[0] in ("cmp", "and", "or", "not"):
            f = ["ind", f]  # a condition as a factor: 1 where it holds, else 0
        cleaned.append(f)
    numbers = [
        f for f in cleaned if f[0] == "n" or (f[0] == "div" and f[1][0] == "n" and f[2][0] in "ns")
    ]
    grads = [f for f in cleaned if f[0] == "g"]
    others = [f for f in cleaned if f not in numbers and f not in grads]
    ordered = numbers + others + grads
    if not ordered:
        out = ["n", "1"]
    elif len(ordered) == 1:
        out = ordered[0]
    else:
        out = ["mul", *ordered]
    return ["neg", out] if negative else out


def _cases(pieces):
    """A piecewise value; pieces whose value is the same as the otherwise-case are merged."""
    flat = []
    for value, condition in pieces:
        if value[0] == "cases" and condition is None:
            flat.extend(value[1:])
        else:
            flat.append([value, condition])
    return ["cases", *flat]


# --- the helpers of formula_math, as math ------------------------------------------------------


def _transpose_last(r, args):
    return ["T", r.tree(args[0])]


def _transpose(r, args):
    dims = r.value(args[1]), r.value(args[2])
    grad = r.tree(args[0])
    if _UNKNOWN in dims:
        return None
    return ["say", grad, f" with dims {dims[0]} and {dims[1]} swapped"]


def _sum_to(r, args):
    return ["say", r.tree(args[0]), " summed to shape ", r.shape(args[1])]


def _expand(r, args):
    return ["say", r.tree(args[0]), " broadcast to shape ", r.shape(args[1])]


def _reshape(r, args):
    return ["say", r.tree(args[0]), " reshaped to ", r.shape(args[1])]


def _restore_reduced(r, args):
    keepdim = r.value(args[3])
    grad = r.tree(args[0])
    if keepdim is True:
        return grad
    dims = r.value(args[2])
    if dims is _UNKNOWN:
        return None
    if dims is None or dims == ():
        return grad  # a full reduction: broadcasting puts every dim back
    if isinstance(dims, tuple) and len(dims) == 1:
        dims = dims[0]
    several = isinstance(dims, tuple)
    return [
        "say",
        grad,
        f" with reduced dim{'s' if several else ''} {_plain_text(dims)} put back as size 1",
    ]


def _sum_dim(r, args):
    dim = r.value(args[1])
    dim = r.text_of(args[1]) if not (isinstance(dim, tuple) and len(dim) == 1) else str(dim[0])
    return ["sum", r.tree(args[0]), f"dim {dim}"]


def _power(r, args):
    exponent = r.tree(args[1])
    base = r.tree(args[0])
    if _is_number(exponent, 1):
        return base
    if _is_number(exponent, 0):
        return ["n", "1"]
    return ["pow", base, exponent]


def _rsqrt(r, args):
    return ["div", ["n", "1"], ["sqrt", r.tree(args[0])]]


def _sqrt(r, args):
    return ["sqrt", r.tree(args[0])]


def _where(r, args):
    condition = r.tree(args[0])
    when, otherwise = r.tree(args[1]), r.tree(args[2])
    if when == otherwise:
        return when
    return _cases([(when, condition), (otherwise, None)])


def _zeros_like(r, args):
    return ["n", "0"]


def _outer(r, args):
    return ["mm", r.tree(args[0]), ["T", r.tree(args[1])]]


def _masked_zero(r, args):
    return _cases([(["n", "0"], r.tree(args[1])), (r.tree(args[0]), None)])


def _clamp_backward(r, args):
    grad, x = r.tree(args[0]), r.tree(args[1])
    low, high = r.value(args[2]), r.value(args[3])
    conditions = []
    if low is not None:
        conditions.append(["cmp", "≥", x, r.tree(args[2])])
    if high is not None:
        conditions.append(["cmp", "≤", x, r.tree(args[3])])
    if not conditions:
        return grad
    condition = conditions[0] if len(conditions) == 1 else ["and", *conditions]
    return _cases([(grad, condition), (["n", "0"], None)])


def _evenly_distribute(r, args):
    grad, x, result = (r.tree(a) for a in args[:3])
    return _cases(
        [
            (
                ["div", grad, ["say", "the count of ", ["cmp", "=", x, result]]],
                ["cmp", "=", x, result],
            ),
            (["n", "0"], None),
        ]
    )


def _squeeze(r, args):
    return ["say", r.tree(args[0]), f" with dim {r.text_of(args[1])} removed"]


def _unsqueeze(r, args):
    return ["say", r.tree(args[0]), f" with a dim of size 1 inserted at {r.text_of(args[1])}"]


def _permute_back(r, args):
    dims = r.value(args[1])
    if dims is _UNKNOWN:
        return None
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[d % n] = i
    return ["say", r.tree(args[0]), " permuted by ", ["tuple", _tuple_text(inverse)]]


def _placed(what, shape, where):
    return ["say", "zeros of shape ", shape, " with ", what, f" placed at {where}"]


def _select_backward(r, args):
    dim, index = r.text_of(args[2]), r.text_of(args[3])
    return _placed(r.tree(args[0]), r.shape(args[1]), f"index {index} of dim {dim}")


def _slice_backward(r, args):
    dim = r.text_of(args[2])
    start, end, step = (r.value(a) for a in args[3:6])
    if _UNKNOWN in (start, end, step):
        return None
    span = f"{'' if start in (None, 0) else start}:{'' if end is None or end >= 2**62 else end}"
    if step not in (None, 1):
        span += f":{step}"
    return _placed(r.tree(args[0]), r.shape(args[1]), f"[{span}] of dim {dim}")


def _index_backward(r, args):
    return _placed(r.tree(args[0]), r.shape(args[1]), "the indexed positions")


def _split_along(r, args):
    """cat's backward: input k gets piece k of the gradient (the widget picks it per input)."""
    dim, sizes = r.value(args[1]), r.value(args[2])
    if not isinstance(dim, int):
        return None
    if isinstance(sizes, tuple) and all(isinstance(s, tuple) for s in sizes):
        return ["pieces", r.tree(args[0]), dim, [s[dim] for s in sizes]]
    # PyTorch's CatBackward0 saves only its dim: the widget reads the sizes off the inputs
    return ["pieces", r.tree(args[0]), dim, "inputs"]


def _unstack(r, args):
    dim, count = r.value(args[1]), r.value(args[2])
    if isinstance(dim, int) and isinstance(count, int):
        return ["pieces", r.tree(args[0]), dim, None, count]  # input k gets the slice at index k
    what = f" split along dim {r.text_of(args[1])} into {r.text_of(args[2])} slices"
    return ["say", r.tree(args[0]), what]


def _astype(r, args):
    return ["say", r.tree(args[0]), f" as {r.text_of(args[1])}"]


def _scalar_log(r, args):
    return ["f", "log", r.tree(args[0])]


def _isfinite(r, args):
    return ["ind", ["cmp", "<", ["abs", r.tree(args[0])], ["n", "∞"]]]


def _xlogy(r, args):
    return _product(r.tree(args[0]), ["f", "log", r.tree(args[1])])


def _reduced_count(r, args):
    return None  # decided by the constants (see _call_on_constants), else described


def _not_implemented(r, args):
    what = r.text_of(args[0])
    if what.strip("'\"") in helper_names():  # a backward op of nbgrad's table: its name in words
        what = what.strip("'\"_").replace("_", " ")
    return ["say", f"not differentiable here ({what})"]


def _mean_part(r, args):
    return None


def _scaled(r, args):
    return None


def _rounded_divide(r, args):
    mode = r.value(args[2])
    a, b = r.tree(args[0]), r.tree(args[1])
    if mode == "floor":
        return ["say", "⌊", ["div", a, b], "⌋"]
    if mode == "trunc":
        return ["say", "trunc(", ["div", a, b], ")"]
    return None


def _mse_loss_backward(r, args):
    grad, x, target = (r.tree(a) for a in args[:3])
    reduction = r.value(args[3])
    two = _product(["n", "2"], _product(["sub", x, target], grad))
    if reduction == 1:  # mean (at::Reduction::Mean)
        return ["div", two, ["say", "the number of elements"]]
    if reduction in (0, 2):  # none, sum
        return two
    return None


def _norm_backward(r, args):
    """The 1- and 2-norms (a full reduction, or one that kept its dims): sgn(x) · g and
    x · g / ‖x‖ (0 where the norm is 0, PyTorch's subgradient)."""
    ord_, dim, keepdim = r.value(args[2]), r.value(args[4]), r.value(args[5])
    if dim is _UNKNOWN or keepdim is _UNKNOWN or (dim not in (None, ()) and keepdim is not True):
        return None
    grad, x, norm = r.tree(args[0]), r.tree(args[1]), r.tree(args[3])
    if ord_ == 1:
        return _product(["f", "sgn", x], grad)
    if ord_ == 2:
        return _cases(
            [(["div", _product(x, grad), norm], ["cmp", "≠", norm, ["n", "0"]]), (["n", "0"], None)]
        )
    return None


def _channel_sum(r, args):
    return ["sum", r.tree(args[0]), "every dim but 1"]


def _bias_gradient(r, args):
    """``convolution_backward_output(2, grad, ...)`` and batch norm's: output 2 of the layer's
    backward function is the bias's gradient, the channel sums of the gradient; the input's and
    the weight's are described in words."""
    if isinstance(args[0], ast.Constant) and args[0].value == 2:
        return _channel_sum(r, args[1:])
    return None


def _layer_norm_bias_gradient(r, args):
    """``layer_norm_backward_output(2, grad, input, normalized_shape, ...)``: the bias's."""
    if isinstance(args[0], ast.Constant) and args[0].value == 2:
        return _sum_to(r, [args[1], args[3]])
    return None


def _swap_last(r, args):
    return ["T", r.tree(args[0])]


def _scalar_times(r, args):  # a Python number times a tensor (ATen's Scalar overload)
    return _product(r.tree(args[0]), r.tree(args[1]))


def _scalar_plus(r, args):  # a tensor plus a Python number (ATen's Scalar overload)
    return ["add", r.tree(args[0]), r.tree(args[1])]


_REWRITES = {
    "matrix_t": _transpose_last,
    "swap_last": _swap_last,
    "transpose": _transpose,
    "sum_to": _sum_to,
    "expand": _expand,
    "reshape": _reshape,
    "restore_reduced": _restore_reduced,
    "sum_dim": _sum_dim,
    "power": _power,
    "rsqrt": _rsqrt,
    "sqrt": _sqrt,
    "where": _where,
    "zeros_like": _zeros_like,
    "outer": _outer,
    "masked_zero": _masked_zero,
    "clamp_backward": _clamp_backward,
    "evenly_distribute": _evenly_distribute,
    "squeeze": _squeeze,
    "unsqueeze": _unsqueeze,
    "permute_back": _permute_back,
    "select_backward": _select_backward,
    "slice_backward": _slice_backward,
    "index_backward": _index_backward,
    "unsafe_index_backward": _index_backward,  # the same sum, through _unsafe_index_put
    "split_along": _split_along,
    "unstack": _unstack,
    "astype": _astype,
    "scalar_log": _scalar_log,
    "isfinite": _isfinite,
    "xlogy": _xlogy,
    "reduced_count": _reduced_count,
    "not_implemented": _not_implemented,
    "mean_part": _mean_part,
    "scaled": _scaled,
    "rounded_divide": _rounded_divide,
    "mse_loss_backward": _mse_loss_backward,
    "channel_sum": _channel_sum,
    "convolution_backward_output": _bias_gradient,
    "batch_norm_backward_output": _bias_gradient,
    "layer_norm_backward_output": _layer_norm_bias_gradient,
    "norm_backward": _norm_backward,
    "scalar_times": _scalar_times,
    "scalar_plus": _scalar_plus,
}


# --- plain text (what the widget writes beside the MathML, and what the tests read) -------------

_PRECEDENCE = {
    "cases": 1,
    "or": 2,
    "and": 3,
    "not": 4,
    "cmp": 5,
    "add": 6,
    "sub": 6,
    "mul": 7,
    "mm": 7,
    "div": 7,
    "neg": 8,
    "pow": 9,
    "T": 10,
    "idx": 10,
}


def to_text(tree, names=None, out="out"):
    """The tree as plain text: ``names`` maps formula names to the program's names, ``out`` is
    the name of the node's output (the gradient arriving is ∂L/∂out)."""
    names = names or {}

    def grouped(t, level):  # ∂L/∂y is a fraction: (∂L/∂y)ᵀ
        text = render(t)
        return f"({text})" if _PRECEDENCE.get(t[0], 9.5 if t[0] == "g" else 11) < level else text

    def render(t):
        tag = t[0]
        if tag == "g":
            return f"∂L/∂{out}" if len(t) == 1 else f"∂L/∂{out}[{t[1]}]"
        if tag == "v":
            return names.get(t[1], t[1])
        if tag in ("n", "tuple"):
            return t[1]
        if tag in ("add", "sub", "div"):
            symbol = {"add": " + ", "sub": " − ", "div": " / "}[tag]
            p = _PRECEDENCE[tag]
            return grouped(t[1], p) + symbol + grouped(t[2], p + 1)
        if tag == "mul":
            return " · ".join(grouped(f, 7) for f in t[1:])
        if tag == "mm":
            return grouped(t[1], 7) + " " + grouped(t[2], 8)
        if tag == "neg":  # −(a · b) reads as −a · b
            return "−" + grouped(t[1], 7)
        if tag == "pow":
            return grouped(t[1], 10) + "^" + grouped(t[2], 10)
        if tag == "T":
            return grouped(t[1], 10) + "ᵀ"
        if tag == "abs":
            return f"|{render(t[1])}|"
        if tag == "sqrt":
            return f"√({render(t[1])})"
        if tag == "f":
            return f"{t[1]}({', '.join(render(a) for a in t[2:])})"
        if tag == "cmp":
            return f"{grouped(t[2], 6)} {t[1]} {grouped(t[3], 6)}"
        if tag in ("and", "or"):
            word = " and " if tag == "and" else " or "
            return word.join(grouped(a, _PRECEDENCE[tag] + 1) for a in t[1:])
        if tag == "not":
            return "not " + grouped(t[1], 5)
        if tag == "cases":
            parts = []
            for value, condition in t[1:]:
                parts.append(
                    f"{render(value)} when {render(condition)}"
                    if condition
                    else f"{render(value)} otherwise"
                )
            return "{ " + "; ".join(parts) + " }"
        if tag == "ind":
            return f"𝟙[{render(t[1])}]"
        if tag == "idx":
            return f"{grouped(t[1], 10)}[{t[2]}]"
        if tag == "sum":
            return f"Σ_{{{t[2]}}} {grouped(t[1], 7)}"
        if tag == "pieces":  # one formula for every input of cat or stack: piece k for input k
            what = {None: "slices", "inputs": "the inputs' sizes"}.get(str(t[3]) if t[3] else t[3])
            what = what or f"pieces of lengths {t[3]}"
            return f"{grouped(t[1], 10)} cut into {what} along dim {t[2]}"
        if tag == "say":
            return "".join(p if isinstance(p, str) else grouped(p, 8) for p in t[1:])
        raise ValueError(f"unknown formula tree tag {tag!r}")

    return render(tree)


# --- custom autograd.Function nodes: their Python backward, as written ------------------------


def note_backward_source(trace, node):
    """For a custom ``autograd.Function``'s node (nbgrad's or PyTorch's: both classes carry
    ``_forward_cls``), keep the source of its ``backward`` once per node class in
    ``trace.backward_sources``, read now (at record time), while the class is at hand."""
    forward_cls = getattr(type(node), "_forward_cls", None)
    name = type(node).__name__
    if forward_cls is None or name in trace.backward_sources:
        return
    trace.backward_sources[name] = backward_source(forward_cls)


def backward_source(forward_cls):
    """``{"function": qualified name, "file", "line", "text"}`` of ``forward_cls.backward``;
    ``text`` is None when Python cannot read the source (defined in a string, or a C class)."""
    import inspect
    import textwrap

    backward = inspect.getattr_static(forward_cls, "backward", None)
    backward = getattr(backward, "__func__", backward)
    entry = {
        "function": getattr(forward_cls, "__qualname__", forward_cls.__name__),
        "file": None,
        "line": None,
        "text": None,
    }
    try:
        lines, first = inspect.getsourcelines(backward)
        entry["file"] = inspect.getsourcefile(backward)
        entry["line"] = first
        entry["text"] = textwrap.dedent("".join(lines)).rstrip("\n")
    except (OSError, TypeError):
        pass
    return entry
