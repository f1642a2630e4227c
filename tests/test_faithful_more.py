"""What a user sees, compared with real PyTorch 2.13 (issue 13, "faithful" round): NumPy's
floating-point warnings under the user's own warning filters, ``detach()``'s base and version,
sort's argument forms, ``_weight_norm``'s shape errors, in-place writes into views of views,
empty views, and the gradient of a leaf used twice in one op."""

import warnings

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch


def _outcome(fn):
    """What a learner sees of ``fn()``: its value or the error it raised (type and message)."""
    try:
        return ("value", fn())
    except Exception as error:  # noqa: BLE001 - compared with PyTorch's
        return ("raises", type(error).__name__, str(error))


def _values(t):
    """The values as text, so that NaN equals NaN."""
    return [repr(v) for v in t.detach().numpy().ravel().tolist()]


# --- 1. NumPy's floating-point warnings, whatever filters the user set after import ------------

NONFINITE_PROGRAMS = {
    "log(0)": lambda T: T.tensor([0.0]).log(),
    "1 / 0": lambda T: 1 / T.tensor([0.0]),
    "sqrt(-1)": lambda T: T.tensor([-1.0]).sqrt(),
    "0 / 0": lambda T: T.tensor([0.0]) / T.tensor([0.0]),
    "exp overflow": lambda T: T.tensor([1000.0]).exp(),
    "acos(2)": lambda T: T.tensor([2.0]).acos(),
    "log_ in place": lambda T: T.tensor([0.0, 1.0]).log_(),
}


def _gradient_of_log_at_zero(T):
    x = T.tensor([0.0, 2.0], requires_grad=True)
    x.log().sum().backward()
    return x.grad


def _gradient_of_sqrt_at_zero(T):
    x = T.tensor([0.0, 4.0], requires_grad=True)
    x.sqrt().sum().backward()
    return x.grad


# NumPy's reductions and scans warn from NumPy's own Python code (np.sum around the ufunc):
NONFINITE_PROGRAMS.update(
    {
        "sum overflow": lambda T: T.tensor([3e38, 3e38]).sum(),
        "cumprod overflow": lambda T: T.tensor([1e30, 1e30, 1e30]).cumprod(0),
        "mean of inf and -inf": lambda T: T.tensor([float("inf"), float("-inf")]).mean(),
        "prod overflow": lambda T: T.tensor([1e30, 1e30]).prod(),
        "float32 from 1e308": lambda T: T.tensor([1e308]),
    }
)
NONFINITE_PROGRAMS["log backward at 0"] = _gradient_of_log_at_zero
NONFINITE_PROGRAMS["sqrt backward at 0"] = _gradient_of_sqrt_at_zero


@pytest.mark.parametrize("action", ["error", "always"])
@pytest.mark.parametrize("name", list(NONFINITE_PROGRAMS))
def test_nonfinite_results_warn_no_more_than_torch_under_a_users_filter(name, action):
    program = NONFINITE_PROGRAMS[name]
    seen = {}
    for T in (torch, nbgrad):
        # The user's filter, set after nbgrad was imported: it goes in front of nbgrad's own.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            result = _outcome(lambda T=T: _values(program(T)))
        seen[T.__name__] = (result, [str(w.message) for w in caught])
    assert seen["torch"][1] == []  # PyTorch says nothing
    assert seen["nbgrad"] == seen["torch"]


def test_nonfinite_results_stay_quiet_after_the_user_empties_the_filters():
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("always")
        values = _values(nbgrad.tensor([0.0, -1.0]).log())
    assert caught == []
    assert values == _values(torch.tensor([0.0, -1.0]).log())


@pytest.mark.parametrize("action", ["default", "always"])
def test_nonfinite_reductions_warn_no_more_than_torch_under_default_filters(action):
    # (before any filter of the user's: NumPy's np.sum warned from NumPy's module, not nbgrad's)
    for name in ["sum overflow", "cumprod overflow", "mean of inf and -inf", "prod overflow"]:
        for T in (torch, nbgrad):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter(action)
                nbgrad.float_warnings.put_first()  # as import nbgrad left it
                _values(NONFINITE_PROGRAMS[name](T))
            assert [str(w.message) for w in caught] == [], (name, T.__name__)


def test_a_users_own_numpy_code_still_warns_under_their_filter():
    nbgrad.tensor([0.0]).log()  # nbgrad has put its filter back in front
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbgrad.tensor([0.0]).log()
        nbgrad.tensor([3e38, 3e38]).sum()
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
            np.log(np.zeros(1))
        with pytest.raises(RuntimeWarning, match="overflow encountered in reduce"):
            np.sum(np.array([3e38, 3e38], dtype=np.float32))


# --- 2. detach(): not a view, the same memory and version counter ------------------------------


def _detach_facts(T):
    """What a user can read of detached tensors: base, is_view, versions, offsets, strides."""
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    d = x.detach()
    facts = [d._base is None, d._is_view(), d.requires_grad, d.is_leaf, d._version]
    d.add_(1)  # the same version counter: x sees the write
    facts += [x._version, d._version, _values(x)]
    tail = x[1:]
    detached_tail = tail.detach()
    facts += [detached_tail._base is None, detached_tail._is_view(), tail._is_view()]
    facts += [detached_tail.storage_offset(), detached_tail.stride()]
    grid = T.arange(12.0).reshape(3, 4)[:, 1:]
    detached_grid = grid.detach()
    facts += [detached_grid.storage_offset(), detached_grid.stride()]
    facts += [detached_grid.is_contiguous(), grid.t().detach().stride()]
    # a view of a detached tensor is a view of it (not of the tensor it was detached from)
    corner = detached_grid[1:, 1:]
    facts += [corner._base is detached_grid, corner._is_view()]
    facts += [corner.storage_offset(), corner.stride(), _values(corner)]
    # .data too: no base, its source's place in memory, a version counter of its own
    data = tail.data
    facts += [data._base is None, data._is_view(), data.storage_offset()]
    data.mul_(2)
    facts += [x._version]
    return facts


def test_detach_is_no_view_yet_shares_memory_and_version():
    assert _detach_facts(nbgrad) == _detach_facts(torch)


def _detach_in_place_outcomes(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    twice = x.detach().detach_()
    outcomes = [(twice._base is None, twice.requires_grad, twice._version)]
    outcomes.append(_outcome(lambda: x[1:].detach_()))  # a view: refused, as in PyTorch
    outcomes.append(_outcome(lambda: x.detach()[1:].detach_()))  # a view of a detached tensor
    outcomes.append(_outcome(lambda: x.detach().detach().detach_()._version))
    return outcomes


def test_detach_in_place_of_a_detached_tensor_works_as_in_torch():
    assert _detach_in_place_outcomes(nbgrad) == _detach_in_place_outcomes(torch)


def _writes_through_detach(T):
    """In-place writes into a detached tensor, seen by backward through ops that saved x."""
    outcomes = []
    x = T.tensor([0.5, 1.0, 1.5], requires_grad=True)
    y = x.exp()  # saves its result
    y.detach().mul_(2)
    outcomes.append(_outcome(lambda: y.sum().backward()))
    x = T.tensor([0.5, 1.0, 1.5], requires_grad=True)
    w = x * 1
    s = w.sin()  # saves w
    w.detach().zero_()
    outcomes.append(_outcome(lambda: s.sum().backward()))
    x = T.tensor([0.5, 1.0, 1.5], requires_grad=True)
    s = (x * x).sum()  # saves the leaf x
    x.detach()[0] = 5.0
    outcomes.append((x._version, _outcome(lambda: s.backward())))
    # a view whose base is written through a detached tensor gets a new history
    base = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True).clone()
    view = base[1:]
    names = [view.grad_fn.name()]
    view.detach().mul_(2)
    names += [view.grad_fn.name(), base.grad_fn.name(), view._version, base._version]
    outcomes.append(names)
    return outcomes


def test_writes_into_a_detached_tensor_are_seen_by_backward_as_in_torch():
    assert _writes_through_detach(nbgrad) == _writes_through_detach(torch)


def test_a_detached_tensor_does_not_keep_its_source_alive():
    import gc
    import weakref

    for T in (torch, nbgrad):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        source = weakref.ref(y)
        kept = y.detach()
        del y
        gc.collect()
        assert source() is None, T.__name__
        assert _values(kept) == _values(T.tensor([1.0, 2.0]).exp())


# --- 3. sort / argsort: every argument form, as PyTorch's parser takes or refuses it -----------


def _long(T):
    return T.empty(0, dtype=T.long)


SORT_CALLS = {
    "sort(x)": lambda T, x: T.sort(x),
    "sort(x, 0)": lambda T, x: T.sort(x, 0),
    "sort(x, 0, True)": lambda T, x: T.sort(x, 0, True),
    "sort(x, 0, True, stable=True)": lambda T, x: T.sort(x, 0, True, stable=True),
    "sort(x, -1, False, True)": lambda T, x: T.sort(x, -1, False, True),
    "sort(x, stable=True)": lambda T, x: T.sort(x, stable=True),
    "sort(x, stable=False)": lambda T, x: T.sort(x, stable=False),
    "sort(x, stable=None)": lambda T, x: T.sort(x, stable=None),
    "sort(x, dim=0)": lambda T, x: T.sort(x, dim=0),
    "sort(x, axis=0)": lambda T, x: T.sort(x, axis=0),
    "sort(x, dim=0, axis=0)": lambda T, x: T.sort(x, dim=0, axis=0),
    "sort(x, descending=True)": lambda T, x: T.sort(x, descending=True),
    "sort(x, stable=True, dim=0, descending=True)": lambda T, x: T.sort(
        x, stable=True, dim=0, descending=True
    ),
    "sort(x, True)": lambda T, x: T.sort(x, True),
    "sort(x, True, 0)": lambda T, x: T.sort(x, True, 0),
    "sort(x, 0, True, stable=1)": lambda T, x: T.sort(x, 0, True, stable=1),
    "sort(x, 0, descending=1)": lambda T, x: T.sort(x, 0, descending=1),
    "sort(x, dim=1.0)": lambda T, x: T.sort(x, dim=1.0),
    "sort(x, dim='a')": lambda T, x: T.sort(x, dim="a"),
    "sort(x, dim=2)": lambda T, x: T.sort(x, dim=2),
    "sort(x, np.int64(0))": lambda T, x: T.sort(x, np.int64(0)),
    "sort(x, tensor(0))": lambda T, x: T.sort(x, T.tensor(0)),
    "sort(input=x)": lambda T, x: T.sort(input=x),
    "sort(input=x, dim=0)": lambda T, x: T.sort(input=x, dim=0),
    "sort(x, bogus=1)": lambda T, x: T.sort(x, bogus=1),
    "sort(x, 0, dim=0)": lambda T, x: T.sort(x, 0, dim=0),
    "sort(x, 0, False, descending=True)": lambda T, x: T.sort(x, 0, False, descending=True),
    "sort()": lambda T, x: T.sort(),
    "sort([3, 1])": lambda T, x: T.sort([3, 1]),
    "sort(x, None)": lambda T, x: T.sort(x, None),
    "sort(x, dim=None)": lambda T, x: T.sort(x, dim=None),
    "sort(x, 0, None)": lambda T, x: T.sort(x, 0, None),
    "sort(x, descending=None)": lambda T, x: T.sort(x, descending=None),
    "sort(x, out=None)": lambda T, x: T.sort(x, out=None),
    "sort(x, out=(v, i))": lambda T, x: T.sort(x, out=(T.empty(0), _long(T))),
    "sort(x, 0, True, out=(v, i))": lambda T, x: T.sort(x, 0, True, out=(T.empty(0), _long(T))),
    "sort(x, stable=True, out=[v, i])": lambda T, x: T.sort(
        x, stable=True, out=[T.empty(0), _long(T)]
    ),
    "sort(x, out=(v,))": lambda T, x: T.sort(x, out=(T.empty(0),)),
    "sort(x, out=(v, float))": lambda T, x: T.sort(x, out=(T.empty(0), T.empty(0))),
    "sort(x, out=(double, i))": lambda T, x: T.sort(x, out=(T.empty(0, dtype=T.float64), _long(T))),
    "sort(x, out=v)": lambda T, x: T.sort(x, out=T.empty(0)),
    "x.sort()": lambda T, x: x.sort(),
    "x.sort(0)": lambda T, x: x.sort(0),
    "x.sort(0, True)": lambda T, x: x.sort(0, True),
    "x.sort(0, True, stable=True)": lambda T, x: x.sort(0, True, stable=True),
    "x.sort(stable=True)": lambda T, x: x.sort(stable=True),
    "x.sort(stable=None)": lambda T, x: x.sort(stable=None),
    "x.sort(stable='yes')": lambda T, x: x.sort(stable="yes"),
    "x.sort(dim=0, descending=True)": lambda T, x: x.sort(dim=0, descending=True),
    "x.sort(axis=0)": lambda T, x: x.sort(axis=0),
    "x.sort(True)": lambda T, x: x.sort(True),
    "x.sort(0, True, True)": lambda T, x: x.sort(0, True, True),
    "x.sort(bogus=1)": lambda T, x: x.sort(bogus=1),
    "x.sort(0, dim=0)": lambda T, x: x.sort(0, dim=0),
    "x.sort(dim=1.5)": lambda T, x: x.sort(dim=1.5),
    "x.sort(None)": lambda T, x: x.sort(None),
    "x.sort(0, None)": lambda T, x: x.sort(0, None),
    "x.sort(0, True, stable=True, descending=False)": lambda T, x: x.sort(
        0, True, stable=True, descending=False
    ),
    "x.sort(out=...)": lambda T, x: x.sort(out=(T.empty(0), _long(T))),
    "Tensor.sort(x, 0)": lambda T, x: T.Tensor.sort(x, 0),
    "argsort(x, 0, True)": lambda T, x: T.argsort(x, 0, True),
    "argsort(x, stable=True)": lambda T, x: T.argsort(x, stable=True),
    "argsort(x, stable=None)": lambda T, x: T.argsort(x, stable=None),
    "argsort(x, 0, True, stable=True)": lambda T, x: T.argsort(x, 0, True, stable=True),
    "argsort(x, 0, True, True)": lambda T, x: T.argsort(x, 0, True, True),
    "argsort(x, None)": lambda T, x: T.argsort(x, None),
    "argsort(x, out=i)": lambda T, x: T.argsort(x, out=_long(T)),
    "argsort(x, stable=True, out=i)": lambda T, x: T.argsort(x, stable=True, out=_long(T)),
    "argsort(x, stable=True, out=float)": lambda T, x: T.argsort(x, stable=True, out=T.empty(0)),
    "argsort(x, 0, True, out=i)": lambda T, x: T.argsort(x, 0, True, out=_long(T)),
    "x.argsort(stable=True, dim=0)": lambda T, x: x.argsort(stable=True, dim=0),
    "x.argsort(True)": lambda T, x: x.argsort(True),
    "x.argsort(stable=None)": lambda T, x: x.argsort(stable=None),
    "x.argsort(stable=True, out=None)": lambda T, x: x.argsort(stable=True, out=None),
    "x.argsort(None)": lambda T, x: x.argsort(None),
    "msort(x)": lambda T, x: T.msort(x),
}


def _sort_outcome(T, call):
    x = T.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])

    def run():
        result = call(T, x)
        if isinstance(result, tuple):
            return (type(result).__name__, *(r.tolist() for r in result))
        return result.tolist()

    return _outcome(run)


@pytest.mark.parametrize("name", list(SORT_CALLS))
def test_sort_argument_forms_as_torch(name):
    call = SORT_CALLS[name]
    assert _sort_outcome(nbgrad, call) == _sort_outcome(torch, call)


def _sort_graph_facts(T):
    x = T.tensor([3.0, 1.0, 2.0], requires_grad=True)
    names = [
        T.sort(x)[0].grad_fn.name(),
        T.sort(x, stable=False)[0].grad_fn.name(),
        T.sort(x, stable=None)[0].grad_fn.name(),
        x.sort(dim=0, descending=True, stable=True)[0].grad_fn.name(),
        x.sort(0, True)[0].grad_fn.name(),
    ]
    values, indices = T.sort(x, dim=0, descending=True, stable=True)
    (values * T.tensor([1.0, 10.0, 100.0])).sum().backward()
    out_values, out_indices = T.empty(0), _long(T)
    given = T.sort(x.detach(), out=(out_values, out_indices))
    outs = [given.values is out_values, out_values._version, out_indices._version]
    refused = _outcome(lambda: T.sort(x, out=(T.empty(0), _long(T))))
    return names, indices.tolist(), x.grad.tolist(), outs, refused


def test_sort_records_the_node_of_the_overload_taken_as_torch():
    assert _sort_graph_facts(nbgrad) == _sort_graph_facts(torch)


# --- 4. _weight_norm with a g of another shape ---------------------------------------------------

V_ROWS = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize(
    "g_shape, dim",
    [((3, 1), 0), ((3,), 0), ((3, 1, 1), 0), ((1, 4), 1), ((4,), 1), ((4,), -1)],
)
def test_weight_norm_reads_a_g_of_the_right_count_in_order_as_torch(g_shape, dim):
    outcomes = []
    for T in (torch, nbgrad):
        v = T.tensor(V_ROWS, dtype=T.float32)
        g = T.arange(1.0, 1.0 + int(np.prod(g_shape))).reshape(g_shape)
        w = T._weight_norm(v, g, dim)
        outcomes.append((_values(w), w.shape == v.shape))
    assert outcomes[0] == outcomes[1]


def _weight_norm_outcomes(T, v_shape, g_shape, dim):
    v = T.arange(1.0, 1.0 + int(np.prod(v_shape))).reshape(v_shape)
    return _outcome(lambda: _values(T._weight_norm(v, T.ones(g_shape), dim)))


@pytest.mark.parametrize(
    "v_shape, g_shape, dim",
    [
        ((), (), 0),  # a 0-d v: no dims to keep, whatever g is
        ((), (1,), -1),
        ((), (), 1),
        ((3, 4), (3, 1), 2),
        ((3, 4), (12,), -1),  # dim -1 is not the fused kernel's "last dim": the whole norm
        ((2, 3, 4), (3,), 1),  # a middle dim: g broadcasts against the norms, or cannot
        ((2, 3, 4), (2, 1), 1),
        ((2, 3, 4), (1, 3, 1), 1),
    ],
)
def test_weight_norm_errors_and_values_as_torch(v_shape, g_shape, dim):
    ours = _weight_norm_outcomes(nbgrad, v_shape, g_shape, dim)
    assert ours == _weight_norm_outcomes(torch, v_shape, g_shape, dim)


@pytest.mark.parametrize(
    "g_shape, dim, count, expected",
    [
        ((2, 1), 0, "3 elements", [3, 1]),
        ((1, 1), 0, "3 elements", [3, 1]),
        ((3, 2), 0, "3 elements", [3, 1]),
        ((3, 1), 1, "4 elements", [1, 4]),
        ((12,), 1, "4 elements", [1, 4]),
    ],
)
def test_weight_norm_refuses_a_g_of_another_count_with_a_clear_error(g_shape, dim, count, expected):
    # PyTorch 2.13 does not check: with fewer elements its kernel reads past g's memory (values
    # of order 1e30 where g ends), with more it takes the first ones. nbgrad refuses both.
    v = nbgrad.tensor(V_ROWS, dtype=nbgrad.float32, requires_grad=True)
    g = nbgrad.ones(g_shape, requires_grad=True)
    message = (
        f"_weight_norm: expected g to hold one element per slice of v along dim {dim}: {count} "
        f"(a tensor of size {expected}), but got g of size {list(g_shape)}"
    )
    with pytest.raises(RuntimeError) as caught:
        nbgrad._weight_norm(v, g, dim)
    assert str(caught.value) == message
    with pytest.raises(RuntimeError) as caught:
        nbgrad._weight_norm_interface(v, g, dim)
    assert str(caught.value) == message


def test_weight_norm_module_with_a_replaced_g_of_another_count_says_so():
    with pytest.warns(FutureWarning):  # both deprecate it for parametrizations.weight_norm
        layer = nbgrad.nn.utils.weight_norm(nbgrad.nn.Linear(4, 3))
    with pytest.warns(FutureWarning):
        theirs = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    assert list(layer.weight_g.shape) == list(theirs.weight_g.shape) == [3, 1]
    layer.weight_g = nbgrad.nn.Parameter(nbgrad.ones(2, 1))
    with pytest.raises(RuntimeError, match=r"one element per slice of v along dim 0: 3 elements"):
        layer(nbgrad.ones(1, 4))


# --- 5. in-place writes into views of views --------------------------------------------------


def _history(t):
    """What a user reads of a tensor's place in the graph and in memory."""
    name = t.grad_fn.name() if t.grad_fn is not None else None
    return (name, t.requires_grad, t.is_leaf, t._version, t._base is not None, t.storage_offset())


def _view_of_view_of_leaf(T):
    base = T.zeros(4, requires_grad=True)
    return base[1:][1:].mul_(2)


def _view_of_no_grad_view(T):
    base = T.zeros(4, requires_grad=True)
    with T.no_grad():
        view = base[1:]
    return view[1:].add_(1)


def _base_written_under_no_grad_then_view_read(T):
    base = T.zeros(4, requires_grad=True)
    with T.no_grad():
        view = base[1:]
        inner = view[1:]
        inner.add_(1)
    return _history(inner), _history(view), _history(base)


def _view_of_view_of_non_leaf(T):
    base = T.zeros(4, requires_grad=True).clone()
    view = base[1:]
    inner = view[1:]
    inner.add_(1)
    return _history(inner), _history(view), _history(base)


def _reshape_of_slice_written(T):
    leaf = T.arange(6.0, requires_grad=True)
    base = leaf * 1
    part = base[1:5]
    square = part.reshape(2, 2)  # a view of the slice
    square.mul_(3)
    base.sum().backward()
    return _history(square), _history(part), _history(base), _values(leaf.grad)


def _reshape_that_copies_written(T):
    leaf = T.arange(6.0, requires_grad=True)
    base = leaf * 1
    copied = base.reshape(2, 3).t().reshape(6)  # not viewable: a copy
    copied.mul_(3)
    return _history(copied), _history(base)


def _view_written_with_a_leaf(T):
    leaf = T.arange(6.0, requires_grad=True)
    base = leaf * 2
    column = base.view(2, 3)[:, 1]
    column.mul_(leaf[:2])
    (base * base).sum().backward()
    return _history(column), _history(base), _values(leaf.grad)


def _written_under_no_grad_then_backward(T):
    leaf = T.arange(6.0, requires_grad=True)
    base = leaf.clone()
    inner = base[1:][1:]
    with T.no_grad():
        inner.mul_(2)
    base.sum().backward()
    return _history(inner), _history(base), _values(leaf.grad)


def _no_grad_view_of_a_view(T):
    leaf = T.arange(6.0, requires_grad=True)
    base = leaf * 1
    view = base[1:]
    with T.no_grad():
        inner = view[1:]
    return inner.add_(1)


def _view_of_a_no_grad_view_of_a_view(T):
    leaf = T.arange(6.0, requires_grad=True)
    base = leaf * 1
    view = base[1:]
    with T.no_grad():
        inner = view[1:]
    return inner[1:].add_(1)


def _saved_view_written_through_its_base_view(T):
    leaf = T.arange(6.0, requires_grad=True)
    base = leaf * 1
    view = base[1:]
    inner = view[1:]
    product = inner * inner
    inner.mul_(2)
    return product.sum().backward()


def _in_place_view_op_on_a_view(T):
    leaf = T.arange(6.0, requires_grad=True)
    base = leaf * 1
    row = base.view(2, 3)[1]
    row.unsqueeze_(0)
    row.mul_(2)
    base.sum().backward()
    return _history(row), list(row.shape), _values(leaf.grad)


def _view_of_a_detached_tensor_written(T):
    x = T.arange(6.0, requires_grad=True)
    inner = x.detach()[1:][1:]
    inner.zero_()
    return _history(inner), x._version, _values(x)


VIEW_CHAINS = [
    _view_of_view_of_leaf,
    _view_of_no_grad_view,
    _base_written_under_no_grad_then_view_read,
    _view_of_view_of_non_leaf,
    _reshape_of_slice_written,
    _reshape_that_copies_written,
    _view_written_with_a_leaf,
    _written_under_no_grad_then_backward,
    _no_grad_view_of_a_view,
    _view_of_a_no_grad_view_of_a_view,
    _saved_view_written_through_its_base_view,
    _in_place_view_op_on_a_view,
    _view_of_a_detached_tensor_written,
]


@pytest.mark.parametrize("chain", VIEW_CHAINS, ids=[c.__name__.strip("_") for c in VIEW_CHAINS])
def test_in_place_writes_into_views_of_views_as_torch(chain):
    ours, theirs = _outcome(lambda: _plain(chain(nbgrad))), _outcome(lambda: _plain(chain(torch)))
    assert ours == theirs


def _plain(result):
    """A chain's result as comparable data (a tensor: its history)."""
    if isinstance(result, (nbgrad.Tensor, torch.Tensor)):
        return _history(result)
    return result


# --- 6. empty views: storage_offset, stride, _version ------------------------------------------

EMPTY_VIEWS = {
    "x[5:]": lambda T: T.zeros(5)[5:],
    "x[2:2]": lambda T: T.zeros(5)[2:2],
    "x[7:]": lambda T: T.zeros(5)[7:],
    "x[3:1]": lambda T: T.zeros(5)[3:1],
    "x[-1:-1]": lambda T: T.zeros(5)[-1:-1],
    "x[::2][3:]": lambda T: T.zeros(5)[::2][3:],
    "x.narrow(0, 3, 0)": lambda T: T.zeros(5).narrow(0, 3, 0),
    "x.narrow(0, 5, 0)": lambda T: T.zeros(5).narrow(0, 5, 0),
    "x.split([2, 0, 3, 0])[3]": lambda T: T.zeros(5).split([2, 0, 3, 0])[3],
    "x.split([2, 0, 3, 0])[1]": lambda T: T.zeros(5).split([2, 0, 3, 0])[1],
    "m[1:1, 2:]": lambda T: T.zeros(3, 4)[1:1, 2:],
    "m[:, 4:]": lambda T: T.zeros(3, 4)[:, 4:],
    "m[2:, 4:]": lambda T: T.zeros(3, 4)[2:, 4:],
    "x.view(5, 1)[5:]": lambda T: T.zeros(5).view(5, 1)[5:],
    "x[4:4].unsqueeze(1)": lambda T: T.zeros(5)[4:4].unsqueeze(1),
    "x[2:2].expand(3, 0)": lambda T: T.zeros(5)[2:2].expand(3, 0),
    "x.view(5, 1)[5:].diagonal()": lambda T: T.zeros(5).view(5, 1)[5:].diagonal(),
    "zeros(3, 0).t()": lambda T: T.zeros(3, 0).t(),
    "zeros(0, 3)[1:]": lambda T: T.zeros(0, 3)[1:],
    "zeros(0, 3)[1:].detach()": lambda T: T.zeros(0, 3)[1:].detach(),
    "zeros(2, 0, 3).permute(2, 0, 1)": lambda T: T.zeros(2, 0, 3).permute(2, 0, 1),
}


def _empty_view_facts(T, make):
    view = make(T)
    facts = [tuple(view.shape), view.stride(), view.storage_offset(), view._version]
    facts.append((view._base is not None, view.is_contiguous()))
    view.add_(1)
    view.zero_()
    facts += [view._version, view.storage_offset(), view.stride()]
    return facts


@pytest.mark.parametrize("name", list(EMPTY_VIEWS))
def test_empty_views_lie_in_memory_as_torch(name):
    make = EMPTY_VIEWS[name]
    assert _empty_view_facts(nbgrad, make) == _empty_view_facts(torch, make)


def test_empty_view_writes_bump_the_base_version_as_torch():
    def versions(T):
        x = T.zeros(5)
        empty = x[5:]
        empty.add_(1)
        x.narrow(0, 3, 0).mul_(2)
        return x._version, empty._version, _values(x)

    assert versions(nbgrad) == versions(torch)


# --- 7. a leaf used twice in one op: the gradient's values and version ---------------------------

TWICE = {
    "stack([w, w])": lambda T, w: T.stack([w, w]).sum(),
    "stack([w, w, w])": lambda T, w: T.stack([w, w, w]).sum(),
    "stack([w, w], 1)": lambda T, w: T.stack([w, w], 1).sum(),
    "stack([w, w], -1)": lambda T, w: T.stack([w, w], -1).sum(),
    "cat([w, w])": lambda T, w: T.cat([w, w]).sum(),
    "cat([w, w[:1]])": lambda T, w: T.cat([w, w[:1]]).sum(),
    "w + w": lambda T, w: (w + w).sum(),
    "w * w": lambda T, w: (w * w).sum(),
    "add(w, w, alpha=2)": lambda T, w: T.add(w, w, alpha=2).sum(),
    "vstack([w, w])": lambda T, w: T.vstack([w, w]).sum(),
}


def _gradient_facts(T, program):
    w = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    program(T, w).backward()
    first = w.grad
    facts = [_values(first), first._version, first.stride(), first._base is not None]
    program(T, w).backward()  # the second backward adds into the same .grad, in place
    facts += [_values(w.grad), w.grad._version, w.grad is first]
    return facts


@pytest.mark.parametrize("name", list(TWICE))
def test_gradient_of_a_leaf_used_twice_as_torch(name):
    assert _gradient_facts(nbgrad, TWICE[name]) == _gradient_facts(torch, TWICE[name])
