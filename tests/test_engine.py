"""The engine's behaviour a learner can observe: hooks, retain_grad, grad modes, retain_graph,
freed buffers, accumulation, create_graph, backward(inputs=...), autograd.grad, deep graphs."""

import warnings

import numpy as np
import pytest

import nbgrad


def hook_log(T):
    """Run one program with every kind of hook and return what the hooks saw, in order."""
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    c = b.exp()
    d = c.sum()
    b.register_hook(lambda g: log.append(("b tensor hook", g.tolist())))
    b.retain_grad()
    b.register_hook(lambda g: log.append(("b tensor hook 2", g.tolist())) or g * 10)
    a.register_hook(lambda g: log.append(("a hook", g.tolist())))
    b.grad_fn.register_prehook(lambda go: log.append(("b prehook", [x.tolist() for x in go])))
    b.grad_fn.register_hook(
        lambda gi, go: log.append(
            ("b hook", [None if x is None else x.tolist() for x in gi], [x.tolist() for x in go])
        )
    )
    a.register_post_accumulate_grad_hook(lambda t: log.append(("a accumulated", t.grad.tolist())))
    d.backward()
    log.append(("b.grad", b.grad.tolist()))
    log.append(("a.grad", a.grad.tolist()))
    return log


def test_hooks_fire_in_pytorchs_order_with_pytorchs_values(torch):
    ours, theirs = hook_log(nbgrad), hook_log(torch)
    assert [entry[0] for entry in ours] == [entry[0] for entry in theirs]
    for mine, real in zip(ours, theirs):
        np.testing.assert_allclose(_flat(mine[1:]), _flat(real[1:]), rtol=1e-6)


def _flat(values):
    out = []
    for v in values:
        if isinstance(v, list):
            out.extend(_flat(v))
        elif v is not None:
            out.append(v)
    return out


def execution_order(T):
    order = []
    x = T.tensor(1.0, requires_grad=True)
    p = x * 2
    q = x * 3
    r = p + q
    s = r * p
    for name, t in [("p", p), ("q", q), ("r", r), ("s", s)]:
        t.grad_fn.register_prehook(lambda go, name=name: order.append(name))
    s.backward()
    return order, x.grad.item()


def test_nodes_run_in_pytorchs_order(torch):
    assert execution_order(nbgrad) == execution_order(torch)


def test_removed_hook_does_not_fire():
    u = nbgrad.tensor(1.0, requires_grad=True)
    handle = u.register_hook(lambda g: g * 100)
    handle.remove()
    (u * 2).backward()
    assert u.grad.item() == 2.0


def test_hook_cannot_be_registered_on_a_tensor_without_grad():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        nbgrad.ones(2).register_hook(lambda g: g)


def test_grads_accumulate_across_backward_calls():
    u = nbgrad.tensor(1.0, requires_grad=True)
    (u * 2).backward()
    (u * 3).backward()
    assert u.grad.item() == 5.0


def test_first_grad_is_a_copy_not_an_alias_of_another_gradient():
    # AddBackward0 hands the same gradient to both inputs: zeroing one .grad in place must not
    # touch the other.
    a = nbgrad.ones(3, requires_grad=True)
    b = nbgrad.ones(3, requires_grad=True)
    (a + b).sum().backward()
    a.grad.zero_()
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_retain_grad_keeps_a_non_leaf_grad_without_warning():
    y = nbgrad.tensor(1.0, requires_grad=True)
    z = y * 2
    z.retain_grad()
    z.retain_grad()  # twice is harmless
    (z * z).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.grad.item() == 4.0
    assert z.retains_grad and not y.retains_grad


def test_reading_grad_of_a_non_leaf_warns_and_gives_none():
    z = nbgrad.tensor(1.0, requires_grad=True) * 2
    z.backward()
    with pytest.warns(UserWarning, match="is not a leaf Tensor"):
        assert z.grad is None


def test_no_grad_as_context_and_decorator():
    u = nbgrad.tensor(1.0, requires_grad=True)
    with nbgrad.no_grad():
        assert not (u * 2).requires_grad
        with nbgrad.enable_grad():
            assert (u * 2).requires_grad

    @nbgrad.no_grad()
    def doubled(t):
        return t * 2

    @nbgrad.no_grad
    def tripled(t):
        return t * 3

    assert not doubled(u).requires_grad and not tripled(u).requires_grad
    assert nbgrad.is_grad_enabled()
    with nbgrad.set_grad_enabled(False):
        assert not (u * 2).requires_grad
    assert nbgrad.is_grad_enabled()
    nbgrad.set_grad_enabled(False)
    assert not nbgrad.is_grad_enabled()
    nbgrad.set_grad_enabled(True)


def test_requires_grad_is_contagious_and_freezing_works():
    frozen = nbgrad.ones(2)
    trained = nbgrad.ones(2, requires_grad=True)
    out = frozen * 3 + trained
    assert out.requires_grad and not out.is_leaf and not (frozen * 3).requires_grad
    out.sum().backward()
    assert frozen.grad is None and trained.grad.tolist() == [1.0, 1.0]


def test_retain_graph_allows_a_second_backward():
    a = nbgrad.tensor(2.0, requires_grad=True)
    b = a * a
    b.backward(retain_graph=True)
    b.backward()
    assert a.grad.item() == 8.0


def test_second_backward_without_retain_graph_fails_and_saved_buffers_are_freed():
    a = nbgrad.tensor(2.0, requires_grad=True)
    b = a * a
    assert b.grad_fn._saved_self.item() == 2.0
    b.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        b.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        b.grad_fn._saved_self  # noqa: B018


def test_nodes_without_saved_tensors_can_run_twice():
    a = nbgrad.tensor(2.0, requires_grad=True)
    b = a + 1
    b.backward()
    b.backward()
    assert a.grad.item() == 2.0


def test_gradient_argument_for_non_scalar_outputs():
    x = nbgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(nbgrad.tensor([1.0, 0.1, 0.01]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.4, 0.06], rtol=1e-6)


def test_create_graph_gives_second_and_third_derivatives():
    w = nbgrad.tensor(3.0, requires_grad=True)
    f = w**3
    (g,) = nbgrad.autograd.grad(f, w, create_graph=True)
    assert g.item() == 27.0 and g.grad_fn is not None
    (h,) = nbgrad.autograd.grad(g, w, create_graph=True)
    assert h.item() == 18.0
    (k,) = nbgrad.autograd.grad(h, w)
    assert k.item() == 6.0


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")  # as PyTorch
def test_backward_create_graph_makes_grad_differentiable():
    u = nbgrad.tensor(2.0, requires_grad=True)
    (u**3).backward(create_graph=True)
    assert u.grad.item() == 12.0 and u.grad.requires_grad
    (second,) = nbgrad.autograd.grad(u.grad, u)
    assert second.item() == 12.0


def test_backward_inputs_only_fills_those():
    u = nbgrad.tensor(1.0, requires_grad=True)
    v = nbgrad.tensor(2.0, requires_grad=True)
    (u * v).backward(inputs=[u])
    assert u.grad.item() == 2.0 and v.grad is None


def test_backward_inputs_fills_a_non_leaf_grad_once_as_pytorch(torch):
    """``backward(inputs=[b])`` puts the gradient that reached a non-leaf ``b`` into ``b.grad``
    once, whether or not ``b`` retains its grad (it was counted twice with retain_grad)."""
    results = {}
    for T in (nbgrad, torch):
        for retain in (False, True):
            a = T.tensor([1.0, 2.0], requires_grad=True)
            b = a * 3
            if retain:
                b.retain_grad()
            (b * b).sum().backward(inputs=[b])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # reading .grad of a non-leaf
                results[T.__name__, retain] = (b.grad.tolist(), a.grad)
    assert results["nbgrad", False] == results["nbgrad", True] == results["torch", True]
    assert results["torch", False] == results["torch", True] == ([6.0, 12.0], None)


def test_autograd_grad_leaves_dot_grad_alone_and_reaches_non_leaves():
    u = nbgrad.tensor(1.0, requires_grad=True)
    m = u * 3
    out = m * m
    (gm, gu) = nbgrad.autograd.grad(out, [m, u])
    assert gm.item() == 6.0 and gu.item() == 18.0 and u.grad is None


def test_autograd_grad_allow_unused_and_materialize():
    u = nbgrad.tensor(1.0, requires_grad=True)
    unused = nbgrad.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        nbgrad.autograd.grad(u * 2, [u, unused], retain_graph=True)
    assert nbgrad.autograd.grad(u * 2, [u, unused], allow_unused=True)[1] is None
    zeros = nbgrad.autograd.grad(u * 2, [u, unused], materialize_grads=True)[1]
    assert zeros.item() == 0.0


def test_tensor_used_twice_gets_both_contributions():
    x = nbgrad.tensor(3.0, requires_grad=True)
    y = x * x + x
    y.backward()
    assert x.grad.item() == 7.0


def test_a_100000_deep_chain_runs_without_recursion():
    x = nbgrad.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0
    del y  # freeing a deep graph must not overflow the stack either


def test_detach_shares_memory_and_version_but_not_history():
    x = nbgrad.ones(2, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    with nbgrad.no_grad():
        x.add_(1)
    assert d.tolist() == [2.0, 2.0] and d._version == 1


def test_in_place_on_a_leaf_that_requires_grad_is_refused_outside_no_grad():
    x = nbgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.add_(1)
    with nbgrad.no_grad():
        x.add_(1)
    assert x._version == 1 and x.tolist() == [2.0, 2.0]


def test_in_place_bumps_version_and_rewrites_grad_fn(torch):
    for T in (nbgrad, torch):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        h = x.clone()
        h += 1
        assert type(h.grad_fn).__name__ == "AddBackward0" and h._version == 1
        h.mul_(x)
        assert type(h.grad_fn).__name__ == "MulBackward0" and h._version == 2
        assert h.grad_fn._saved_self.tolist() == [2.0, 3.0]  # the value before the write
        h.sum().backward()
        assert x.grad.tolist() == [3.0, 5.0]  # d/dx (x + 1) * x = 2x + 1


def test_item_assignment_records_copy_slices(torch):
    for T in (nbgrad, torch):
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        z = T.zeros(3)
        z[1:] = x[:2] * 2
        assert type(z.grad_fn).__name__ == "CopySlices" and not z.is_leaf
        assert z.grad_fn.next_functions[0] == (None, 0)
        z.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 0.0]


def test_modifying_a_saved_tensor_in_place_breaks_backward():
    x = nbgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = x.clone()
    e = w.sin()
    w.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.sum().backward()


def test_anomaly_mode_names_the_node_that_produced_nan():
    with pytest.warns(UserWarning), nbgrad.autograd.detect_anomaly():
        s = nbgrad.tensor([0.0], requires_grad=True)
        out = (s.sqrt() * 0).sum()
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan"):
            out.backward()
    assert not nbgrad.autograd.is_anomaly_enabled()


def test_nodes_print_like_pytorchs():
    x = nbgrad.tensor(1.0, requires_grad=True)
    y = x * 2
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    assert y.grad_fn.name() == "MulBackward0"
    assert repr(y.grad_fn.next_functions[0][0]).startswith("<AccumulateGrad object at 0x")
    assert y.grad_fn.next_functions[0][0].variable is x
    assert y.grad_fn.metadata == {}


def test_same_leaf_has_one_accumulate_grad_while_graphs_live():
    x = nbgrad.tensor(1.0, requires_grad=True)
    y, z = x * 2, x * 3
    assert y.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[0][0]


def test_calling_a_node_directly():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    grad_self, grad_other = y.grad_fn(nbgrad.ones(2))
    assert grad_self.tolist() == grad_other.tolist() == [1.0, 2.0]


def test_a_fresh_gradient_becomes_grad_without_a_copy_and_a_shared_one_is_copied():
    seen = []
    nbgrad.autograd.observe.accumulate_listeners.append(
        lambda leaf, grad, total: seen.append(total._data is grad)
    )
    try:
        w = nbgrad.randn(5, 3, requires_grad=True)
        (nbgrad.randn(4, 5) @ w).sum().backward()  # mm's gradient for w is a new array
        a, b = nbgrad.ones(3, requires_grad=True), nbgrad.ones(3, requires_grad=True)
        (a + b).sum().backward()  # AddBackward0 hands one array to both leaves
    finally:
        nbgrad.autograd.observe.accumulate_listeners.clear()
    assert seen == [True, False, False]


def test_backward_passes_are_announced_to_listeners_even_when_they_fail():
    events = []

    def listener(event, roots, retain_graph, create_graph, is_grad):
        events.append((event, len(roots), retain_graph, create_graph, is_grad))

    nbgrad.autograd.observe.backward_listeners.append(listener)
    try:
        x = nbgrad.tensor(2.0, requires_grad=True)
        y = x * x
        y.backward(retain_graph=True)
        nbgrad.autograd.grad(y, x)
        z = x * 3
        z.backward(inputs=[x])  # a backward pass, though it names its inputs
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()
    finally:
        nbgrad.autograd.observe.backward_listeners.clear()
    assert events == [
        ("start", 1, True, False, False),
        ("end", 1, True, False, False),
        ("start", 1, False, False, True),
        ("end", 1, False, False, True),
        ("start", 1, False, False, False),
        ("end", 1, False, False, False),
        ("start", 1, False, False, False),
        ("end", 1, False, False, False),
    ]


def test_retain_grad_follows_a_tensor_through_an_in_place_op(torch):
    for T in (nbgrad, torch):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1
        h.retain_grad()
        h.mul_(3)
        (h * h).sum().backward()
        assert h.grad.tolist() == [6.0, 12.0]  # d/dh of h**2 at the new h = [3, 6]


def test_leaf_nodes_run_before_other_ready_nodes_and_in_arrival_order(torch):
    orders = []
    for T in (nbgrad, torch):
        order = []
        a = T.tensor(2.0, requires_grad=True)
        b = T.tensor(3.0, requires_grad=True)
        d = T.tensor(4.0, requires_grad=True)
        for leaf, name in ((a, "a"), (b, "b"), (d, "d")):
            leaf.register_hook(lambda g, name=name, order=order: order.append(name))
        ((a + b) * d).backward()
        orders.append(order)
    assert orders[0] == orders[1] == ["d", "a", "b"]


def test_in_place_element_wise_functions_match_pytorch(torch):
    results = []
    for T in (nbgrad, torch):
        x = T.tensor([0.5, 1.5, 2.5], requires_grad=True)
        h = x * 1
        h.sin_()
        h.exp_()
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            T.tanh_(x)
        h.sum().backward()
        results.append((type(h.grad_fn).__name__, h._version, x.grad.tolist()))
    assert results[0][:2] == results[1][:2] == ("ExpBackward0", 2)
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-6)


@pytest.mark.parametrize(
    "name",
    ["mul", "div", "mm", "addmm", "pow", "maximum"],
)
def test_differentiable_backward_makes_nodes_in_pytorchs_order(torch, name):
    """With create_graph, each input's gradient formula makes new nodes; PyTorch computes them
    in the order of the inputs' names (other before self), and the nodes' creation order decides
    which runs first in a later backward."""
    programs = {
        "mul": (2, lambda T, a, b: a * b),
        "div": (2, lambda T, a, b: a / b),
        "mm": (2, lambda T, a, b: a @ b),
        "addmm": (3, lambda T, c, a, b: T.addmm(c, a, b)),
        "pow": (2, lambda T, a, b: a**b),
        "maximum": (2, lambda T, a, b: T.maximum(a, b) * a),
    }
    count, program = programs[name]
    orders = {}
    for T in (nbgrad, torch):
        xs = [T.tensor([[1.0, 2.0], [0.5, 3.0]]) + i for i in range(count)]
        xs = [x.requires_grad_() for x in xs]
        grads = T.autograd.grad(program(T, *xs).sum(), xs, create_graph=True)
        numbers = [
            g.grad_fn._sequence_nr() if T is torch else g.grad_fn._sequence_nr
            for g in grads
            if g.grad_fn is not None
        ]
        orders[T.__name__] = [sorted(numbers).index(n) for n in numbers]
    assert orders["nbgrad"] == orders["torch"]


def test_a_backward_listener_added_during_a_pass_hears_the_next_pass():
    from nbgrad.autograd import observe

    heard = []

    def listener(event, *rest):
        heard.append(event)

    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: observe.backward_listeners.append(listener))
    try:
        y.sum().backward()  # the hook adds the listener mid-pass: this pass ends normally
        assert heard == [] and x.grad.tolist() == [2.0, 2.0]
        (x * 3).sum().backward()
        assert heard == ["start", "end"]
    finally:
        observe.backward_listeners.remove(listener)


@pytest.mark.parametrize(
    "program, expected",
    [(lambda T, s: -s, -2.0), (lambda T, s: (s + T.ones(3)).sum(), 6.0)],
    ids=["negated", "summed from a broadcast"],
)
def test_a_hook_on_a_0d_tensor_may_change_its_gradient_in_place(torch, program, expected):
    # PyTorch allows it, and the changed gradient is the one accumulated.
    for T in (nbgrad, torch):
        s = T.tensor(2.0, requires_grad=True)
        s.register_hook(lambda grad: grad.mul_(2))
        program(T, s).backward()
        assert s.grad.item() == expected, T.__name__


def test_a_second_backward_adds_into_grad_in_place_and_bumps_its_version():
    """PyTorch adds a later gradient into ``.grad`` in place (``grad += new``): same tensor,
    version one higher (PyTorch 2.13: 0 after the first backward, 1 after the second)."""
    w = nbgrad.ones(3, requires_grad=True)
    (w * 2).sum().backward()
    grad = w.grad
    assert grad._version == 0
    (w * 2).sum().backward()
    assert w.grad is grad and grad._version == 1 and grad.tolist() == [4.0, 4.0, 4.0]


def test_grad_versions_after_two_backwards_as_pytorchs(torch):
    def versions(T):
        w = T.ones(3, requires_grad=True)
        seen = []
        for _ in range(3):
            T.exp(w).sum().backward()
            seen.append(w.grad._version)
        return seen

    assert versions(nbgrad) == versions(torch) == [0, 1, 2]
