"""Global module forward hooks (``register_module_forward_pre_hook`` /
``register_module_forward_hook``), against PyTorch's: the order they run in, what their return
values change, ``always_call`` on an error, and removal."""

import warnings

import numpy as np
import pytest


def _modules(lib):
    """The library's nn and its module-hook home (``torch.nn.modules.module``)."""
    if lib == "nbgrad":
        import nbgrad
        import nbgrad.nn.modules.module as home

        return nbgrad, nbgrad.nn, home
    torch = pytest.importorskip("torch")
    import torch.nn.modules.module as home

    return torch, torch.nn, home


LIBS = ["nbgrad", "torch"]


@pytest.mark.parametrize("lib", LIBS)
def test_global_hooks_run_around_every_forward_before_the_modules_own(lib):
    T, nn, home = _modules(lib)
    calls = []
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    model[0].register_forward_pre_hook(lambda m, args: calls.append(("own pre", type(m).__name__)))
    model[0].register_forward_hook(lambda m, args, out: calls.append(("own", type(m).__name__)))
    pre = home.register_module_forward_pre_hook(
        lambda m, args: calls.append(("global pre", type(m).__name__))
    )
    post = home.register_module_forward_hook(
        lambda m, args, out: calls.append(("global", type(m).__name__))
    )
    try:
        model(T.ones(1, 2))
    finally:
        pre.remove()
        post.remove()
    assert calls == [
        ("global pre", "Sequential"),
        ("global pre", "Linear"),
        ("own pre", "Linear"),
        ("global", "Linear"),
        ("own", "Linear"),
        ("global pre", "ReLU"),
        ("global", "ReLU"),
        ("global", "Sequential"),
    ]
    calls.clear()
    model(T.ones(1, 2))
    assert calls == [("own pre", "Linear"), ("own", "Linear")]  # removed


@pytest.mark.parametrize("lib", LIBS)
def test_global_hooks_may_replace_the_args_and_the_output(lib):
    T, nn, home = _modules(lib)
    relu = nn.ReLU()
    with home.register_module_forward_pre_hook(lambda m, args: -args[0]):
        negated = relu(T.tensor([1.0, -2.0]))
    with home.register_module_forward_hook(lambda m, args, out: out + 10):
        shifted = relu(T.tensor([1.0, -2.0]))
    assert negated.tolist() == [0.0, 2.0]
    assert shifted.tolist() == [11.0, 10.0]


class Failing:
    """A module whose forward raises."""

    @staticmethod
    def make(nn):
        class Broken(nn.Module):
            def forward(self, x):
                raise ValueError("broken forward")

        return Broken()


@pytest.mark.parametrize("lib", LIBS)
def test_always_call_hooks_run_when_forward_raises(lib):
    T, nn, home = _modules(lib)
    seen = []
    always = home.register_module_forward_hook(
        lambda m, args, out: seen.append(("always", out)), always_call=True
    )
    normal = home.register_module_forward_hook(lambda m, args, out: seen.append(("normal", out)))
    try:
        with pytest.raises(ValueError, match="broken forward"):
            Failing.make(nn)(T.ones(1))
        assert seen == [("always", None)]
        seen.clear()
        nn.Identity()(T.ones(1))
        assert [kind for kind, _ in seen] == ["always", "normal"]  # once each on success
    finally:
        always.remove()
        normal.remove()


@pytest.mark.parametrize("lib", LIBS)
def test_an_always_call_hook_that_fails_after_an_error_is_silenced_with_a_warning(lib):
    T, nn, home = _modules(lib)

    def failing_hook(module, args, out):
        raise RuntimeError("hook failed too")

    handle = home.register_module_forward_hook(failing_hook, always_call=True)
    try:
        with warnings.catch_warnings(record=True) as caught, pytest.raises(ValueError):
            warnings.simplefilter("always")
            Failing.make(nn)(T.ones(1))
    finally:
        handle.remove()
    assert any("hook failed too" in str(w.message) for w in caught)


def test_exported_where_pytorch_has_them():
    import nbgrad.nn.modules.module as home

    assert callable(home.register_module_forward_pre_hook)
    assert callable(home.register_module_forward_hook)


def test_no_global_hooks_left_and_the_plain_call_is_unchanged():
    import nbgrad
    import nbgrad.nn.modules.module as home

    assert not home._global_forward_pre_hooks and not home._global_forward_hooks
    layer = nbgrad.nn.Linear(3, 2)
    x = nbgrad.randn(4, 3)
    with home.register_module_forward_hook(lambda m, args, out: None):
        hooked = layer(x)
    assert np.array_equal(hooked.detach().numpy(), layer(x).detach().numpy())
