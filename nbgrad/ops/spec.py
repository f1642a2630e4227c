"""How one operation is declared: its forward, what it saves, and its derivative formulas.

A formula is a short Python expression over ``grad`` (the gradient flowing in) and the names the
operation saves, like a line of PyTorch's derivatives.yaml::

    "self": "grad * other"

The same text is compiled twice: once against NumPy (plain backward, fast) and once against
nbgrad's own differentiable operations (``create_graph=True``, so backward builds a graph). The
widget shows the very same text, so the engine and the pictures cannot disagree.
"""

from nbgrad.generated import compile_registered
from nbgrad.ops import result_layout


class OpSpec:
    """The declaration of one differentiable operation.

    name      the forward op ("mul"), shown in the forward view of the graph
    node      the backward node's class name, as PyTorch names it ("MulBackward0")
    inputs    names of the tensor inputs, in order; each gets one edge in ``next_functions``
    attrs     names of the non-tensor arguments, passed to ``forward`` after the arrays
    saves     what backward needs, each exposed on the node as ``_saved_<name>``: a tensor input,
              ``result``, an attr, an extra output, or ``<input>_sym_sizes`` / ``<input>_sym_numel``
    grads     input name -> formula text (inputs without a formula are not differentiable)
    forward   NumPy implementation: ``forward(*arrays, *attrs)`` -> array (or tuple with extras)
    extra_outputs  names of outputs after the first that never require grad (``indices`` of max)
    constants saved values fixed for this entry (``alpha`` = 1 of plain addition), not arguments
    hidden    saved names that backward reads but PyTorch does not show as ``_saved_<name>``
              (its C++ node keeps them privately, as AsStridedBackward0 keeps its input's shape)
    same_shape  one input, and the gradient always has its shape and dtype: the engine can skip
              checking it (element-wise functions)
    view      the result shares memory (and so the version counter) with ``inputs[0]``
    variadic  the single input is a list of tensors (cat, stack); its formula returns a list
    multi_output  the forward returns a list of arrays, each a differentiable output of the one
              node (split, unbind, var_mean); ``grad`` in its formulas is then the list of their
              gradients (zeros for an output that got none), and ``result0`` saves the first
    output_names  for a multi_output op, the names of its outputs (``Q``, ``R`` of qr): saved
              outputs, as PyTorch names them (``_saved_R``)
    promote   bring the inputs to one dtype first, by PyTorch's type-promotion rules
    floating  integer inputs become the default float dtype first (exp, mean, true division)

    For an op whose function is this entry run as is on one tensor (see ``ops/public.py``):

    function  make ``nbgrad.<name>``: True, another name, or a tuple of names (aliases)
    method    make the Tensor method ``x.<name>()``, named the same ways
    inplace   make ``x.<name>_()`` and ``nbgrad.<name>_`` (True), or only the method ("method")
    out       ``nbgrad.<name>`` also takes ``out=``
    joint     PyTorch computes every input's gradient with one formula (the norm layers), so it
              keeps every saved tensor whichever inputs need a gradient
    layout    how PyTorch lays the result out in memory (``ops/result_layout.py``):
              "elementwise", "like_self", "self_strides", "contiguous", or None for the
              forward's array as it is; element-wise functions (``same_shape``) default to
              "elementwise", everything else to None
    layout_from  the operands that decide the layout, in PyTorch's order, as names of inputs
              and attrs (``where``: its condition first); the inputs by default
    """

    __slots__ = (
        "name",
        "node",
        "inputs",
        "attrs",
        "saves",
        "hidden",
        "joint",
        "shown_saves",
        "grads",
        "forward",
        "extra_outputs",
        "view",
        "formula_names",
        "_array_vjps",
        "_tensor_vjps",
        "saves_for_needs",
        "savers",
        "save_sources",
        "saves_tensors",
        "buffer_positions",
        "operand_positions",
        "constants",
        "same_shape",
        "variadic",
        "multi_output",
        "output_names",
        "promote",
        "floating",
        "node_class",
        "create_graph_order",
        "function",
        "method",
        "inplace",
        "out",
        "layout",
        "layout_positions",
        "layout_reads_attrs",
    )

    def __init__(
        self,
        name,
        node,
        inputs,
        grads,
        forward,
        attrs=(),
        saves=(),
        hidden=(),
        extra_outputs=(),
        view=False,
        variadic=False,
        multi_output=False,
        output_names=(),
        promote=False,
        floating=False,
        constants=None,
        same_shape=False,
        function=False,
        method=False,
        inplace=False,
        out=False,
        joint=False,
        layout="default",
        layout_from=None,
    ):
        self.name = name
        self.node = node
        self.inputs = tuple(inputs)
        self.attrs = tuple(attrs)
        self.saves = tuple(saves)
        self.hidden = frozenset(hidden)
        self.joint = joint
        # (position, name) of what the node shows as ``_saved_<name>`` (and the trace shows).
        self.shown_saves = tuple((p, n) for p, n in enumerate(self.saves) if n not in self.hidden)
        self.grads = dict(grads)
        self.forward = forward
        self.extra_outputs = tuple(extra_outputs)
        self.view = view
        self.constants = dict(constants or {})
        self.same_shape = same_shape
        self.variadic = variadic
        self.multi_output = multi_output
        self.output_names = tuple(output_names)
        self.promote = promote
        self.floating = floating
        self.function = function
        self.method = method
        self.inplace = inplace
        self.out = out
        if layout == "default":
            layout = "elementwise" if same_shape else None
        if layout not in result_layout.RULES:
            raise ValueError(f"{node}: unknown layout {layout!r}")
        self.layout = layout
        # (kind, index) of each operand that decides the layout: ("input", i) or ("attr", j)
        self.layout_positions = tuple(
            ("input", self.inputs.index(n)) if n in self.inputs else ("attr", self.attrs.index(n))
            for n in (layout_from or self.inputs)
        )
        self.layout_reads_attrs = any(kind == "attr" for kind, _ in self.layout_positions)
        unknown = set(self.grads) - set(self.inputs)
        if unknown:
            raise ValueError(f"{node}: formulas for unknown inputs {sorted(unknown)}")
        self.formula_names = {
            inp: _names_used(text, self.saves, node) for inp, text in self.grads.items()
        }
        # Compiled on first use, when every kernel module has added its names to the formulas'
        # namespaces: an entry may call a function declared further down the table.
        self._array_vjps = None
        self._tensor_vjps = None
        self.saves_for_needs = {}
        self.savers = {}  # needs -> function making the node's saved list (see dispatch)
        self.save_sources = tuple(self._source_of(s) for s in self.saves)
        # Whether anything saved may be a tensor or an array (index, mask, indices): those are
        # checked when read and freed after backward, as PyTorch frees its saved tensors.
        self.buffer_positions = tuple(
            p
            for p, (kind, _) in enumerate(self.save_sources)
            if kind in ("input", "result", "attr", "extra")
        )
        self.saves_tensors = bool(self.buffer_positions)
        # Saved operands: a Python number there is, in PyTorch, a wrapped 0-dim tensor, freed
        # after backward like any saved tensor (``(w * 2).sum()`` cannot backward twice).
        self.operand_positions = frozenset(
            p for p, (kind, _) in enumerate(self.save_sources) if kind == "input"
        )
        self.node_class = None
        # PyTorch's generated backward computes its inputs' gradients in the order of their
        # names (``other`` before ``self``, ``mat1`` before ``mat2``): in a differentiable
        # backward that order numbers the nodes it makes, so nbgrad follows it there.
        by_name = tuple(sorted(range(len(self.inputs)), key=lambda i: self.inputs[i]))
        self.create_graph_order = by_name if by_name != tuple(range(len(self.inputs))) else None

    def _source_of(self, saved):
        """Where a saved name's value comes from: ("input", i), ("result", 0), ("attr", j), ..."""
        if saved in self.inputs:
            return ("input", self.inputs.index(saved))
        # result0: the first output, as PyTorch names it where an op has several (_ctc_loss).
        if saved == "result" or (saved == "result0" and (self.multi_output or self.extra_outputs)):
            return ("result", 0)
        if saved in self.output_names:
            return ("result", self.output_names.index(saved))
        if saved in self.attrs:
            return ("attr", self.attrs.index(saved))
        if saved in self.constants:
            return ("constant", self.constants[saved])
        if saved in self.extra_outputs:  # after the named outputs but the first
            offset = max(len(self.output_names) - 1, 0)
            return ("extra", offset + self.extra_outputs.index(saved))
        for suffix, kind in (
            ("_sym_sizes", "sizes"),
            ("_sym_strides", "strides"),
            ("_sym_numel", "numel"),
            ("_dtype", "dtype"),
        ):
            base = saved[: -len(suffix)]
            if saved.endswith(suffix) and base in self.inputs:
                return (kind, self.inputs.index(base))
        raise ValueError(f"{self.node}: cannot tell where saved {saved!r} comes from")

    def _compile(self, namespace):
        """One function per input, ``f(grad, *saved) -> gradient for that input`` (or None)."""
        params = ", ".join(("grad",) + self.saves)
        vjps = []
        for inp in self.inputs:
            text = self.grads.get(inp)
            if text is None:
                vjps.append(None)
                continue
            source = f"lambda {params}: {text}"
            scope = {**namespace, "__name__": "nbgrad.ops.formulas"}
            code = compile_registered(source, f"<{self.node}: {inp}>", "eval")
            vjps.append(eval(code, scope))  # noqa: S307 - our own table
        return tuple(vjps)

    @property
    def array_vjps(self):
        if self._array_vjps is None:
            from nbgrad.ops import formula_math

            self._array_vjps = self._compile(formula_math.ARRAY_NAMESPACE)
        return self._array_vjps

    @property
    def tensor_vjps(self):
        if self._tensor_vjps is None:
            from nbgrad.ops import formula_tensor

            self._tensor_vjps = self._compile(formula_tensor.tensor_namespace())
        return self._tensor_vjps

    def save_plan(self, needs):
        """What to keep, as ``(position, kind, index)`` triples (see ``_source_of``), when only the
        inputs flagged in ``needs`` (bit i for input i) want a gradient.

        PyTorch keeps exactly what the needed formulas read (``x * 2`` does not save ``x``), and
        so do we; the answer is cached per combination of flags.
        """
        positions = self.saves_for_needs.get(needs)
        if positions is None:
            used = set(self.saves) if self.joint else set()
            for i, inp in enumerate(self.inputs):
                if needs >> i & 1 and inp in self.formula_names:
                    used |= self.formula_names[inp]
            # Inputs are kept only when a needed formula reads them; the result, sizes, dims and
            # other small values always (PyTorch's generated code saves outputs unconditionally:
            # ``b ** e`` shows ``_saved_result`` when only ``b`` needs a gradient, and it shows
            # ``_saved_alpha`` even when nothing needs it).
            positions = tuple(
                (i, kind, index)
                for i, (s, (kind, index)) in enumerate(zip(self.saves, self.save_sources))
                if s in used or kind != "input"
            )
            self.saves_for_needs[needs] = positions
        return positions


def _names_used(text, saves, node):
    code = compile(text, f"<{node}>", "eval")
    names = set(code.co_names)
    return {s for s in saves if s in names}
