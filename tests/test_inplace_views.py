"""In-place operations on views, against real PyTorch.

Each program runs twice, once with ``nbgrad`` and once with ``torch`` as ``T``, on the same
float64 data. It returns the tensors to compare: their graphs (grad_fn names and next_functions,
recursively), values and versions, the geometry AsStridedBackward0 saved, and after a backward
every leaf's gradient.
"""

import json

import numpy as np
import pytest
from graph_compare import saved_names, structure, to_numpy

import nbgrad
from nbgrad.autograd import gradcheck, gradgradcheck

DATA = np.arange(12.0).reshape(3, 4) / 7 - 0.6
ROW = np.array([0.5, -1.5, 2.0, 1.25])
COLUMN = np.array([1.5, -0.75, 2.5])


def leaf(T, data):
    return T.tensor(np.array(data), dtype=T.float64, requires_grad=True)


# --- the programs: each returns (tensors to compare, loss to differentiate, leaves) --------------


def select_mul_scalar(T):
    """The example of PyTorch's documentation: a view made before the write is regenerated."""
    a = leaf(T, DATA)
    b = a * 2
    v = b[0]
    w = b[1:, 2]
    v.mul_(3)
    return {"b": b, "v": v, "w": w}, b.sum() + (w * w).sum(), [a]


def slice_add_tensor(T):
    """add_ saves nothing; its operand requires grad and broadcasts over the view."""
    a, y = leaf(T, DATA), leaf(T, ROW)
    b = a + 0.5
    v = b[1:]
    v.add_(y)
    return {"b": b, "v": v}, (b * b).sum(), [a, y]


def transpose_div_tensor(T):
    """div_ saves the view's old value and the divisor."""
    a, y = leaf(T, DATA), leaf(T, COLUMN)
    b = a * a
    v = b.t()
    v.div_(y)
    return {"b": b, "v": v}, (b * a).sum(), [a, y]


def transpose_method_add(T):
    a = leaf(T, DATA)
    c = a.clone()
    c.t().add_(1)
    return {"c": c}, (c * c).sum(), [a]


def flat_view_add_leaf(T):
    """The brief's example: CopySlices' second edge goes to the operand's AccumulateGrad."""
    a, ones = leaf(T, DATA), leaf(T, np.ones(12))
    d = a.clone()
    dv = d.view(12)
    dv.add_(ones)
    return {"d": d, "dv": dv}, (d * d).sum(), [a, ones]


def unsqueeze_mul_tensor(T):
    a, y = leaf(T, DATA), leaf(T, ROW)
    b = a - 0.25
    u = b.unsqueeze(1)
    u.mul_(y)
    return {"b": b, "u": u}, (b * b).sum(), [a, y]


def view_of_view_exp(T):
    """exp_ saves its result: the view itself, after the write."""
    a = leaf(T, DATA)
    b = a * 0.5
    middle = b[1:]
    inner = middle.view(8)[2:5]
    inner.exp_()
    return {"b": b, "middle": middle, "inner": inner}, (b * b).sum() + inner.sum(), [a]


def two_views_both_written(T):
    """The second view was made before the first write: it is refreshed before its own."""
    a, y = leaf(T, DATA), leaf(T, COLUMN)
    b = a * 3
    row = b[0]
    column = b[:, 1]
    row.mul_(2)
    column.add_(y)
    return {"b": b, "row": row, "column": column}, (b * b).sum(), [a, y]


def base_written_view_read(T):
    """A write into the base itself also gives its views a new history."""
    a = leaf(T, DATA)
    b = a * 2
    v = b[2]
    b.mul_(a)
    return {"b": b, "v": v}, (v * v).sum(), [a]


def no_grad_write_then_view(T):
    """A write under no_grad still changes the version: the view's history is regenerated."""
    a = leaf(T, DATA)
    b = a * 2
    v = b[:, 0]
    with T.no_grad():
        b.mul_(3)
    return {"b": b, "v": v}, (v * v).sum(), [a]


def leaf_view_after_optimizer_step(T):
    """A view of a parameter, then an update of the parameter under no_grad."""
    p = leaf(T, DATA)
    v = p[1]
    with T.no_grad():
        p.sub_(0.1 * p)
    return {"v": v}, (v * v).sum(), [p]


def base_without_grad(T):
    """The base gains a history through the write: a sibling view made before gains it too."""
    y = leaf(T, ROW)
    b = T.zeros(3, 4, dtype=T.float64)
    sibling = b[1]
    v = b[0]
    v.add_(y)
    return {"b": b, "v": v, "sibling": sibling}, (b * b).sum() + (sibling * y).sum(), [y]


def zero_and_fill(T):
    """zero_ and fill_ have one input: CopySlices has one edge."""
    a = leaf(T, DATA)
    b = a * a
    b[0].zero_()
    b[:, 3].fill_(2.0)
    return {"b": b}, (b * a).sum(), [a]


def augmented_assignment(T):
    a, y = leaf(T, DATA), leaf(T, ROW)
    b = a * 1.5
    v = b[1]
    v += y
    v *= y
    return {"b": b, "v": v}, (b * b).sum(), [a, y]


def relu_and_clamp(T):
    a = leaf(T, DATA)
    b = a * 2
    b[1:, 1:].clamp_(-0.5, 0.5)  # saves the view's old value: later writes do not matter
    b[0].relu_()  # saves its result, the view: the last write, or backward would refuse it
    return {"b": b}, (b * a).sum(), [a]


def sin_saves_self(T):
    a = leaf(T, DATA)
    b = a * 2
    v = b[:, 1:3]
    v.sin_()
    return {"b": b, "v": v}, (b * b).sum(), [a]


def copy_into_view(T):
    a, y = leaf(T, DATA), leaf(T, COLUMN)
    b = a * 2
    b[:, 0].copy_(y.exp())
    return {"b": b}, (b * b).sum(), [a, y]


def assign_into_view(T):
    """Item assignment into a view of a graph tensor."""
    a, y = leaf(T, DATA), leaf(T, ROW)
    b = a * 2
    v = b[1:]
    v[0] = y
    v[:, 1] = 5.0
    return {"b": b, "v": v}, (b * b).sum(), [a, y]


def assign_into_view_by_index_and_whole(T):
    a, y = leaf(T, DATA), leaf(T, ROW)
    b = a * 2
    v = b[1:]
    v[T.tensor([1])] = y
    w = b[0]
    w[...] = 5.0
    return {"b": b, "v": v, "w": w}, (b * b).sum(), [a, y]


def base_laid_out_transposed(T):
    """The result of an op on a transposed tensor keeps its layout (in NumPy as in PyTorch): the
    geometry is counted in that memory, as PyTorch counts in storage."""
    a, y = leaf(T, DATA), leaf(T, COLUMN)
    b = a.t() * 2
    v = b[1]
    w = b[:, 2]
    v.mul_(y)
    return {"b": b, "v": v, "w": w}, (b * b).sum() + (w * w).sum(), [a, y]


def detached_view_is_not_rebased(T):
    """detach() shares memory but not history: a write into it is an ordinary in-place op."""
    a = leaf(T, DATA)
    b = a * 2
    d = b.detach()
    d.add_(a)
    return {"b": b, "d": d}, (d * d).sum() + b.sum(), [a]


def view_of_a_0d_tensor_written(T):
    """A 1-element view of a 0-d tensor: its CopySlices picks the one element."""
    a = leaf(T, 0.75)
    b = a * 2
    v = b.view(1, 1)
    v.mul_(3)
    w = b.unsqueeze(0)
    w.add_(a)
    return {"b": b, "v": v, "w": w}, b * b, [a]


def expand_to_the_same_shape_written(T):
    """expand to the tensor's own shape repeats no element: writing into it is allowed."""
    a = leaf(T, DATA)
    b = a * 2
    e = b.expand(3, 4)
    e.mul_(a)
    f = b[:1].expand(1, 4)
    f.add_(1)
    return {"b": b, "e": e, "f": f}, (b * b).sum(), [a]


def empty_tensor_written(T):
    """A zero-size tensor overlaps nothing: in-place ops on it (and an expand of it) run."""
    a = T.ones(0, 3, dtype=T.float64, requires_grad=True)
    b = a * 2
    b.mul_(3)
    e = b.expand(2, 0, 3)
    e.add_(1)
    # (e's own geometry is not compared: NumPy counts no strides in an empty array.)
    return {"b": b}, b.sum() + e.sum(), [a]


def vector_matmul_written(T):
    """vector @ matrix is mm then squeeze_ in PyTorch: a fresh tensor at version 1, not a view,
    so writes into it are ordinary in-place ops (AddBackward0, CopySlices)."""
    a, w = leaf(T, ROW), leaf(T, DATA)
    y = a @ w.t()
    y.add_(1)
    z = T.nn.functional.linear(a, w)
    z[0] = 5.0
    u = a[:3] @ w
    return {"y": y, "z": z, "u": u}, (y * z).sum() + (u * u).sum(), [a, w]


PROGRAMS = [
    vector_matmul_written,
    view_of_a_0d_tensor_written,
    expand_to_the_same_shape_written,
    empty_tensor_written,
    select_mul_scalar,
    slice_add_tensor,
    transpose_div_tensor,
    transpose_method_add,
    flat_view_add_leaf,
    unsqueeze_mul_tensor,
    view_of_view_exp,
    two_views_both_written,
    base_written_view_read,
    no_grad_write_then_view,
    leaf_view_after_optimizer_step,
    base_without_grad,
    zero_and_fill,
    augmented_assignment,
    relu_and_clamp,
    sin_saves_self,
    copy_into_view,
    assign_into_view,
    assign_into_view_by_index_and_whole,
    base_laid_out_transposed,
    detached_view_is_not_rebased,
]


def _describe(tensors):
    """What can be compared across engines: graph, value, version, requires_grad, saved
    geometry of an AsStridedBackward0."""
    described = {}
    for name, t in tensors.items():
        fn = t.grad_fn
        entry = {
            "graph": structure(fn),
            "value": to_numpy(t),
            "version": t._version,
            "requires_grad": t.requires_grad,
            "is_leaf": t.is_leaf,
        }
        if fn is not None:
            entry["name"] = fn.name()
            entry["saved"] = saved_names(fn)
            if type(fn).__name__ == "AsStridedBackward0":
                entry["geometry"] = (
                    tuple(fn._saved_size),
                    tuple(fn._saved_stride),
                    fn._saved_storage_offset,
                )
        described[name] = entry
    return described


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_program_matches_torch(program, torch):
    ours, our_loss, our_leaves = program(nbgrad)
    theirs, their_loss, their_leaves = program(torch)
    expected = _describe(theirs)
    got = _describe(ours)
    for name in expected:
        for key in expected[name]:
            if key == "value":
                np.testing.assert_allclose(got[name][key], expected[name][key], rtol=1e-12)
            else:
                assert got[name][key] == expected[name][key], (name, key)

    our_loss.backward()
    their_loss.backward()
    np.testing.assert_allclose(to_numpy(our_loss), to_numpy(their_loss), rtol=1e-12)
    for ours_leaf, theirs_leaf in zip(our_leaves, their_leaves):
        np.testing.assert_allclose(
            to_numpy(ours_leaf.grad), to_numpy(theirs_leaf.grad), rtol=1e-10, atol=1e-12
        )


def test_the_brief_example_in_numbers():
    """Independent of torch: row 0 of the gradient is 2 * 3, the others 2."""
    a = nbgrad.randn(3, 4, requires_grad=True)
    b = a * 2
    v = b[0]
    v.mul_(3)
    assert type(b.grad_fn).__name__ == "CopySlices"
    assert b.grad_fn.name() == "torch::autograd::CopySlices"
    assert (v._version, b._version) == (1, 1)
    b.sum().backward()
    expected = np.full((3, 4), 2.0)
    expected[0] = 6.0
    np.testing.assert_array_equal(a.grad.numpy(), expected)


def test_a_number_selected_from_a_vector_is_a_view(torch):
    """NumPy gives a copied scalar for ``vector[1]``: nbgrad's select keeps it a 0-d view."""
    for T in (nbgrad, torch):
        x = T.zeros(3)
        v = x[1]
        x.add_(1)
        assert v.item() == 1.0 and v._version == 1


def test_backward_from_a_view_whose_base_was_written(torch):
    grads = []
    for T in (nbgrad, torch):
        a = leaf(T, ROW)
        b = a * 2
        v = b[1]
        b.mul_(a)
        v.backward()  # v is 2 * a[1] ** 2 now
        grads.append(to_numpy(a.grad))
    np.testing.assert_allclose(grads[0], grads[1])
    np.testing.assert_allclose(grads[0], [0.0, 4 * ROW[1], 0.0, 0.0])


def test_a_view_prints_its_regenerated_grad_fn(torch):
    printed = []
    for T in (nbgrad, torch):
        b = leaf(T, ROW) * 2
        v = b[:2]
        b.mul_(2)
        printed.append(repr(v))
    assert printed[0] == printed[1]
    assert "grad_fn=<AsStridedBackward0>" in printed[0]


def test_view_history_is_regenerated_once_per_version(torch):
    for T in (nbgrad, torch):
        a = leaf(T, DATA)
        b = a * 2
        v, w = b[0], b[1]
        v.mul_(3)
        first = w.grad_fn
        assert w.grad_fn is first  # read again at the same version: the same node
        v.add_(1)
        assert w.grad_fn is not first
        assert type(w.grad_fn).__name__ == "AsStridedBackward0"


def test_retained_grad_of_a_sibling_view_follows_it(torch):
    grads = []
    for T in (nbgrad, torch):
        a = leaf(T, DATA)
        b = a * 2
        v, w = b[0], b[1]
        w.retain_grad()
        v.mul_(2)
        (w * w).sum().backward()
        grads.append(to_numpy(w.grad))
    np.testing.assert_allclose(grads[0], grads[1])
    np.testing.assert_allclose(grads[0], 2 * (DATA[1] * 2))


# --- errors, as PyTorch words them ----------------------------------------------------------------


def _error(fn, T):
    with pytest.raises(RuntimeError) as info:
        fn(T)
    return str(info.value)


def saved_result_of_view_modified(T):
    a = leaf(T, DATA)
    b = a * 2
    v = b[0:2]
    v.exp_()  # saves its result, the view
    b.add_(1)
    b.sum().backward()


def saved_operand_view_modified(T):
    a, y = leaf(T, DATA), leaf(T, DATA)
    b, w = a * 2, y * 3
    v = b[0:2]
    v.mul_(w[0:2])  # saves the other operand, a view of w
    w.add_(1)
    b.sum().backward()


def saved_old_value_modified(T):
    a = leaf(T, DATA)
    b = a * 2
    v = b[1]
    c = v * 1
    v.mul_(c)  # saves c
    c.add_(1)
    b.sum().backward()


def leaf_view_written(T):
    x = leaf(T, ROW)
    x[0].mul_(2)


def leaf_view_made_in_no_grad_written(T):
    x = leaf(T, ROW)
    with T.no_grad():
        v = x[0:2]
    v.add_(1)


def view_made_in_no_grad_written(T):
    y = leaf(T, ROW)
    x = T.zeros(4, dtype=T.float64)
    with T.no_grad():
        v = x[0:2]
    v.add_(y[:2])


def view_of_a_no_grad_view_written(T):
    b = leaf(T, ROW) * 2
    with T.no_grad():
        m = b[0:3]
    m[0:1].add_(1)


def expanded_view_written(T):
    b = leaf(T, COLUMN) * 2
    b.unsqueeze(1).expand(3, 4).mul_(2)


def backward_twice_through_copy_slices(T):
    a = leaf(T, DATA)
    b = a * 2
    b[0].mul_(3)
    b.sum().backward()
    b.sum().backward()


ERRORS = [
    backward_twice_through_copy_slices,
    saved_result_of_view_modified,
    saved_operand_view_modified,
    saved_old_value_modified,
    leaf_view_written,
    leaf_view_made_in_no_grad_written,
    view_made_in_no_grad_written,
    view_of_a_no_grad_view_written,
    expanded_view_written,
]


@pytest.mark.parametrize("program", ERRORS, ids=[p.__name__ for p in ERRORS])
def test_errors_match_torch(program, torch):
    assert _error(program, nbgrad) == _error(program, torch)


def test_writes_without_a_graph_record_nothing():
    b = nbgrad.zeros(3, 4)
    v = b[0]
    v.add_(1)
    assert b.grad_fn is None and v.grad_fn is None and not v.requires_grad
    assert (v._version, b._version) == (1, 1)
    with nbgrad.no_grad():
        a = nbgrad.ones(2, 2, requires_grad=True) * 1
    a[0].mul_(2)  # a itself was made under no_grad: nothing requires grad
    np.testing.assert_array_equal(a.numpy(), [[2.0, 2.0], [1.0, 1.0]])


# --- finite differences and second derivatives ----------------------------------------------------


def _through_views(x, y):
    b = x * x
    sibling = b[:, 1]
    b[0].mul_(y)
    b.t()[2:].div_(y[:3].exp().unsqueeze(0))
    b.view(12)[5:9].sin_()
    return b, sibling * sibling


def test_finite_differences_through_views():
    x = nbgrad.tensor(DATA + 1.0, requires_grad=True)
    y = nbgrad.tensor(ROW, requires_grad=True)
    assert gradcheck(_through_views, (x, y))
    assert gradgradcheck(_through_views, (x, y))


def test_second_derivatives_match_torch(torch):
    results = []
    for T in (nbgrad, torch):
        a = leaf(T, DATA + 1.0)
        b = a * a
        v = b[0]
        v.mul_(3)
        v.add_(a[1])
        b[1:, 2].exp_()  # saves its result
        (g,) = T.autograd.grad((b * b).sum(), a, create_graph=True)
        (g * g).sum().backward()
        results.append((to_numpy(g), to_numpy(a.grad), structure(g.grad_fn)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10)
    assert results[0][2] == results[1][2]  # the graph of the gradient itself


def test_as_strided_matches_torch(torch):
    outs = []
    for T in (nbgrad, torch):
        a = leaf(T, DATA)
        y = T.as_strided(a, (2, 3), (4, 1), 1)
        z = a.as_strided((3,), (5,))
        b = a * 1
        of_view = b[1:].as_strided((2, 2), (1, 4))  # from the view's own offset in the storage
        transposed = a.t() * 3  # laid out as a's transpose: its storage is column-major
        of_transposed = transposed.as_strided((4,), (1,), 2)
        # Reads storage outside b[1]: PyTorch (and so nbgrad) gives gradients to b[1] only,
        # though the values depend on b[0] and b[2] too (no finite-difference check for it).
        outside = b[1].as_strided((3,), (4,), 2)
        loss = y.sum() * 2 + (z * z).sum() + (of_view * of_transposed[:2]).sum() + outside.sum()
        loss.backward()
        fn = y.grad_fn
        outs.append(
            (
                to_numpy(y),
                to_numpy(z),
                to_numpy(of_view),
                to_numpy(of_transposed),
                to_numpy(outside),
                to_numpy(a.grad),
                structure(fn),
                structure(outside.grad_fn),
                saved_names(fn),
                (fn._saved_size, fn._saved_stride, fn._saved_storage_offset),
                of_view.grad_fn._saved_storage_offset,
            )
        )
    for ours, theirs in zip(*outs):
        if isinstance(ours, np.ndarray):
            np.testing.assert_allclose(ours, theirs)
        else:
            assert ours == theirs


@pytest.mark.parametrize(
    "size, stride, offset",
    [((3,), (5,), 2), ((2, 2), (1,), 0), ((2,), (-1,), 3)],
)
def test_as_strided_errors_match_torch(size, stride, offset, torch):
    messages = []
    for T in (nbgrad, torch):
        with pytest.raises(RuntimeError) as info:
            T.as_strided(T.zeros(3, 4), size, stride, offset)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_a_recorded_write_into_a_view_shows_the_wrapped_formulas():
    with nbgrad.record() as trace:
        a = nbgrad.randn(3, 4, requires_grad=True)
        w = nbgrad.randn(4, requires_grad=True)
        b = a * 2
        b[0].mul_(w)
        b.sum().backward()
    (copy_slices,) = [n for n in trace.nodes if n.name == "CopySlices"]
    assert copy_slices.op_name == "mul_ into a view"
    assert copy_slices.inputs == ("self", "other")
    assert copy_slices.formulas == {
        "self": "grad, with grad[view] = grad[view] * other",
        "other": "grad[view] * self",
    }
    entry = json.loads(trace.to_json())["formulas"]["mul_ into a view"]
    assert entry["node"] == "CopySlices" and entry["grads"] == copy_slices.formulas
    # The gradients it sent are the wrapped formulas' values: w's is the sum of 2 * a[0].
    np.testing.assert_allclose(w.grad.numpy(), (2 * a[0]).detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "write", ["y.mul_(o)", "y.div_(o)", "y.sin_()", "y.clamp_(min=0)", "y.fmod_(o)", "y.abs_()"]
)
def test_an_inplace_op_saves_a_clone_of_self(torch, write):
    """PyTorch saves ``self.clone()`` for an in-place op whose formula reads self: the saved
    self's history is a CloneBackward0 (made after the node) on the history before the write."""
    seen = []
    for T in (nbgrad, torch):
        x, o = leaf(T, ROW), leaf(T, ROW[::-1].copy())
        y = x * 1
        eval(write, {"y": y, "o": o})  # noqa: S307 - our own test table
        node = y.grad_fn
        saved = node._saved_self
        clone = saved.grad_fn
        if callable(clone._sequence_nr):  # a method in PyTorch, an attribute in nbgrad
            order = clone._sequence_nr() > node._sequence_nr()
        else:
            order = clone._sequence_nr > node._sequence_nr
        seen.append(
            (
                node.name(),
                clone.name(),
                clone.next_functions[0][0].name(),
                node.next_functions[0][0].name(),
                order,
                to_numpy(saved).tolist(),
            )
        )
    assert seen[0] == seen[1]


def test_zero_and_fill_of_an_expanded_tensor_without_graph(torch):
    """One value written into repeated elements: PyTorch allows zero_ and fill_ of a number."""
    seen = []
    for T in (nbgrad, torch):
        x = T.ones(1, 3)
        x.expand(2, 3).zero_()
        y = T.ones(3, 1)
        y.expand(3, 4).fill_(2.5)
        seen.append((to_numpy(x).tolist(), to_numpy(y).tolist(), x._version, y._version))
    assert seen[0] == seen[1]


def _offsets(T):
    x = T.arange(12.0).reshape(3, 4)
    views = [
        x,
        x[1:, 2:],
        x.t(),
        x[2],
        x.t()[1:],
        x.detach()[1],
        x.view(12)[5:],
        x.unfold(1, 2, 1)[1],
    ]
    return [v.storage_offset() for v in views]


def test_storage_offset_of_views():
    assert _offsets(nbgrad) == [0, 6, 0, 8, 1, 4, 5, 4]  # rows of 4: [1, 2] is 1 * 4 + 2


def test_storage_offset_of_views_as_pytorchs(torch):
    assert _offsets(nbgrad) == _offsets(torch)
