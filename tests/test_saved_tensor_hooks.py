"""Hooks on saved tensors (``torch.autograd.graph.saved_tensors_hooks``, ``save_on_cpu``,
``grad_fn._raw_saved_*.register_hooks``), compared with PyTorch: which tensors are packed and
unpacked, in which order and how often, what backward computes from them, and the errors."""

import gc
import weakref

import numpy as np
import pytest
from square_function import square_function

import nbgrad


def describe(t):
    """A tensor as a hook sees it, comparable across engines."""
    grad_fn = type(t.grad_fn).__name__ if t.grad_fn is not None else None
    # (rounded: NumPy's and PyTorch's exp or tanh may differ in the last bit)
    return (np.round(t.detach().numpy(), 5).tolist(), t.requires_grad, grad_fn)


def logging_hooks(log):
    def pack(t):
        log.append(("pack", describe(t)))
        return t

    def unpack(t):
        log.append(("unpack", describe(t)))
        return t

    return pack, unpack


def counting(calls):
    def unpack(t):
        calls.append(1)
        return t

    return unpack


def noting(log, word):
    def pack(t):
        log.append(word)
        return t

    return pack


PROGRAMS = {
    # name -> f(T, a, b) run under the hooks; a is a leaf, b a non-leaf
    "mul": lambda T, a, b: a * b,
    "div": lambda T, a, b: a / b,
    "exp (saves its result)": lambda T, a, b: a.exp(),
    "pow of two tensors": lambda T, a, b: a**b,
    "mm": lambda T, a, b: a.reshape(2, 2) @ b.reshape(2, 2),
    "maximum": lambda T, a, b: T.maximum(a, b),
    "tanh then sigmoid": lambda T, a, b: (a * 2).tanh().sigmoid(),
    "a used twice": lambda T, a, b: a * a,
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_pack_and_unpack_calls_match_pytorch(torch, name):
    logs = {}
    grads = {}
    for T in (nbgrad, torch):
        log = []
        a = T.tensor([1.0, 2.0, 0.5, 3.0], requires_grad=True)
        b = T.tensor([2.0, 1.0, 4.0, 0.25], requires_grad=True) * 1.5
        with T.autograd.graph.saved_tensors_hooks(*logging_hooks(log)):
            y = PROGRAMS[name](T, a, b)
        log.append(("backward",))
        y.sum().backward()
        logs[T.__name__] = log
        grads[T.__name__] = a.grad.numpy()
    assert logs["nbgrad"] == logs["torch"]
    assert any(entry[0] == "pack" for entry in logs["nbgrad"])  # the program does save tensors
    np.testing.assert_allclose(grads["nbgrad"], grads["torch"], rtol=1e-4)


def test_backward_uses_what_unpack_returns(torch):
    for T in (nbgrad, torch):
        x = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t * 4, lambda t: t / 4):
            y = T.pow(x, 2)
        y.sum().backward()
        assert x.grad.tolist() == [2.0, -4.0, 6.0]
        # any object can stand for the tensor: here an index into a list
        storage = []

        def pack(t, storage=storage):
            storage.append(t)
            return len(storage) - 1

        x.grad = None
        with T.autograd.graph.saved_tensors_hooks(pack, lambda i, storage=storage: storage[i]):
            y = x * x
        y.sum().backward()
        assert x.grad.tolist() == [2.0, -4.0, 6.0] and len(storage) == 2


def test_no_inplace_check_for_hooked_tensors_as_in_pytorch(torch):
    results = {}
    for T in (nbgrad, torch):
        for name, pack in (("identity", lambda t: t), ("copy", lambda t: t.clone())):
            q = T.ones(3, requires_grad=True)
            w = T.ones(3, requires_grad=True).clone()
            with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                y = q * w
            w.add_(1)  # would be "modified by an inplace operation" without hooks
            y.sum().backward()
            results[T.__name__, name] = q.grad.tolist()
    assert results["nbgrad", "identity"] == results["torch", "identity"] == [2.0, 2.0, 2.0]
    assert results["nbgrad", "copy"] == results["torch", "copy"] == [1.0, 1.0, 1.0]


def test_what_saved_attributes_read_back_under_hooks(torch):
    seen = {}
    for T in (nbgrad, torch):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        b = T.tensor([3.0, 4.0], requires_grad=True) * 2
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = a * b
            z = a.exp()
        self_, other = y.grad_fn._saved_self, y.grad_fn._saved_other
        result = z.grad_fn._saved_result
        seen[T.__name__] = [
            (self_ is a, describe(self_), self_.is_leaf),
            (other is b, describe(other)),
            (result is z, describe(result), result.grad_fn is z.grad_fn),
        ]
    assert seen["nbgrad"] == seen["torch"]
    assert seen["nbgrad"][0][0] is False  # a new tensor, not the saved one


def test_unpack_runs_at_each_read_and_each_backward(torch):
    counts = {}
    for T in (nbgrad, torch):
        calls = []
        x = T.tensor([1.0, 2.0], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, counting(calls)):
            y = x * x
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        counts[T.__name__] = len(calls)
    assert counts["nbgrad"] == counts["torch"] == 4


def test_double_backward_through_hooked_tensors(torch):
    results = {}
    for T in (nbgrad, torch):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([0.5, -1.0], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = (x**3 * w).sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (g * g).sum().backward()
        results[T.__name__] = (g.tolist(), x.grad.tolist(), w.grad.tolist())
    for ours, theirs in zip(results["nbgrad"], results["torch"]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_custom_function_saved_tensors_are_packed(torch):
    logs = {}
    for T in (nbgrad, torch):
        Square = square_function(T)
        log = []
        x = T.tensor([3.0], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(*logging_hooks(log)):
            y = Square.apply(x)
        y.backward()
        logs[T.__name__] = (log, x.grad.tolist())
    assert logs["nbgrad"] == logs["torch"]


def test_innermost_hooks_win_and_no_grad_saves_nothing(torch):
    for T in (nbgrad, torch):
        log = []
        a = T.tensor([1.0], requires_grad=True)
        hooks = T.autograd.graph.saved_tensors_hooks
        with hooks(noting(log, "outer"), lambda t: t):
            with hooks(noting(log, "inner"), lambda t: t):
                a.exp()
            with T.no_grad():
                a.exp()
            a.exp()
        assert log == ["inner", "outer"], T.__name__


def test_packed_objects_are_released_with_the_graph():
    """What a pack hook returns lives as long as the graph needs it: freed by backward (a
    temporary file deleted by its owner's __del__ would go then), kept by retain_graph."""

    class Packed:
        def __init__(self, tensor):
            self.tensor = tensor

    made = []

    def pack(t):
        made.append(Packed(t))
        return made[-1]

    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    with nbgrad.autograd.graph.saved_tensors_hooks(pack, lambda p: p.tensor):
        y = (x * x).sum()
    alive = [weakref.ref(p) for p in made]
    made.clear()
    y.backward(retain_graph=True)
    gc.collect()
    assert all(ref() is not None for ref in alive)
    y.backward()
    gc.collect()
    assert all(ref() is None for ref in alive) and len(alive) == 2


def test_register_hooks_on_one_saved_tensor(torch):
    logs = {}
    for T in (nbgrad, torch):
        log = []
        a = T.ones(3, requires_grad=True)
        b = T.ones(3, requires_grad=True) * 2
        y = a * b
        assert y.grad_fn._raw_saved_other is not None
        y.grad_fn._raw_saved_self.register_hooks(*logging_hooks(log))
        log.append(("read",))
        shown = describe(y.grad_fn._saved_self)
        y.sum().backward()
        logs[T.__name__] = (log, shown, a.grad.tolist())
    assert logs["nbgrad"] == logs["torch"]
    # the pack hook got the saved data without its history
    assert logs["nbgrad"][0][0] == ("pack", ([1.0, 1.0, 1.0], False, None))


def test_register_hooks_errors_as_pytorch(torch):
    messages = {}
    for T in (nbgrad, torch):
        a = T.ones(2, requires_grad=True)
        y = a * a
        raw = y.grad_fn._raw_saved_self
        raw.register_hooks(lambda t: t, lambda t: t)
        with pytest.raises(RuntimeError) as twice:
            raw.register_hooks(lambda t: t, lambda t: t)
        y.sum().backward()
        with pytest.raises(RuntimeError) as freed:
            y.grad_fn._raw_saved_other.register_hooks(lambda t: t, lambda t: t)
        with pytest.raises(TypeError):
            (a * a).grad_fn._raw_saved_self.register_hooks(1, 2)
        product = a * T.tensor([2.0, 3.0])
        with pytest.raises(RuntimeError) as in_place:
            product.grad_fn._raw_saved_other.register_hooks(lambda t: t.mul_(2), lambda t: t)
        messages[T.__name__] = (str(twice.value), str(freed.value), str(in_place.value))
    assert messages["nbgrad"] == messages["torch"]
    assert "already been set" in messages["nbgrad"][0]


def test_hook_errors_as_pytorch(torch):
    messages = {}
    for T in (nbgrad, torch):
        found = []
        a = T.ones(3, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
            y = a * a
        with pytest.raises(TypeError) as not_a_tensor:
            y.sum().backward()
        found.append(str(not_a_tensor.value))
        constant = T.ones(3)
        hooks = T.autograd.graph.saved_tensors_hooks
        with hooks(lambda t: t.mul_(2), lambda t: t), pytest.raises(RuntimeError) as in_place:
            a * constant
        found.append(str(in_place.value))
        found.append(constant.tolist())  # the write happened, and neither engine undoes it
        disable = T.autograd.graph.disable_saved_tensors_hooks
        with disable("not here"), pytest.raises(RuntimeError, match="not here"):
            hooks(lambda t: t, lambda t: t).__enter__()
        with hooks(lambda t: t, lambda t: t), pytest.raises(RuntimeError, match="nor here"):
            disable("nor here").__enter__()
        messages[T.__name__] = found
    assert messages["nbgrad"] == messages["torch"]
    assert messages["nbgrad"][2] == [2.0, 2.0, 2.0]


def test_save_on_cpu(torch):
    for T, pins in ((nbgrad, (False, True)), (torch, (False,))):
        # (PyTorch's CPU-only build fails a backward after save_on_cpu(pin_memory=True); the
        # tutorial that uses it runs on a GPU.)
        for pin in pins:
            x = T.tensor([1.0, 2.0], requires_grad=True)
            w = T.tensor([3.0, -1.0], requires_grad=True)
            with T.autograd.graph.save_on_cpu(pin_memory=pin):
                y = (x * w).sum()
            w_saved = y.grad_fn.next_functions[0][0]._saved_other
            y.backward()
            assert x.grad.tolist() == [3.0, -1.0] and w.grad.tolist() == [1.0, 2.0]
            assert w_saved.tolist() == [3.0, -1.0]


def test_saved_tensors_kept_on_disk_are_deleted_with_the_graph(tmp_path):
    """Saved tensors packed into files by save and read back by load; each file belongs to an
    object whose __del__ deletes it, so the files go when backward frees the saved values."""

    class TemporaryFile:
        count = 0

        def __init__(self):
            TemporaryFile.count += 1
            self.name = tmp_path / f"saved-{TemporaryFile.count}.pt"

        def __del__(self):
            self.name.unlink()

    def pack(tensor):
        file = TemporaryFile()
        nbgrad.save(tensor, file.name)
        return file

    def unpack(file):
        return nbgrad.load(file.name)

    x = nbgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with nbgrad.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).exp().sum()
    assert len(list(tmp_path.iterdir())) == 3  # x twice (self and other), and exp's result
    read_back = y.grad_fn.next_functions[0][0]._saved_result  # its file is still there
    np.testing.assert_allclose(read_back.detach().numpy(), np.exp([1.0, 4.0, 9.0]), rtol=1e-6)
    y.backward()
    gc.collect()
    assert list(tmp_path.iterdir()) == []
    expected = 2 * np.array([1.0, -2.0, 3.0]) * np.exp(np.array([1.0, 4.0, 9.0]))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
