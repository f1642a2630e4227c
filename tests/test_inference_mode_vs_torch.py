"""inference_mode against PyTorch: flags, inference tensors, and the errors using them raises."""

import pytest

import nbgrad

torch = pytest.importorskip("torch")  # the comparisons need PyTorch


def program(T):
    """Everything observable about inference mode, as a list to compare."""

    def run(f):
        try:
            return f()
        except Exception as error:  # noqa: BLE001 - compared as type and message
            return (type(error).__name__, str(error))

    x = T.ones(3, requires_grad=True)
    out = [T.is_inference_mode_enabled()]
    with T.inference_mode():
        out += [T.is_inference_mode_enabled(), T.is_grad_enabled()]
        y = x * 2
        out += [y.requires_grad, y.grad_fn, y.is_inference(), x.is_inference()]
        out += [T.ones(2).is_inference(), T.randn(2).is_inference()]
        with T.inference_mode(False):
            out += [T.is_inference_mode_enabled(), T.is_grad_enabled()]
            out += [(x * 2).is_inference(), (x * 2).requires_grad]
        out.append(x.view(3).is_inference())
        w = T.ones(2)
        w.add_(1)  # an inference tensor may be written in place inside inference mode
        out.append(w.tolist())
        out.append(run(lambda: y.add_(1).tolist()))
    out += [T.is_inference_mode_enabled(), T.is_grad_enabled()]
    out.append(run(lambda: (y * x).sum().backward()))
    out += [(y * 2).is_inference(), (y + 1).requires_grad]
    out.append(run(lambda: y.add_(1)))
    out.append(run(lambda: y.mul_(2)))
    out.append(run(lambda: y.requires_grad_()))
    out.append(run(lambda: y.view(3).is_inference()))
    out.append(y.clone().is_inference())
    a = T.ones(3, requires_grad=True)
    out.append(run(lambda: (a * y).sum().backward()))
    out.append(run(lambda: ((a + y).sum().backward(), a.grad.tolist())[1]))
    out.append(run(lambda: T.exp(y).is_inference()))
    out.append(run(lambda: (a.exp() * 1).mul_(y)))
    out.append(run(lambda: T.cat([a, y]).requires_grad))

    @T.inference_mode()
    def f():
        return T.is_inference_mode_enabled(), T.ones(1).is_inference()

    @T.inference_mode
    def g():
        return T.is_inference_mode_enabled()

    @T.inference_mode(False)
    def h():
        return T.is_inference_mode_enabled()

    out += [f(), g(), h(), T.autograd.inference_mode is T.inference_mode]
    with T.no_grad():
        out.append(T.ones(2).is_inference())
    with T.inference_mode():
        out.append(run(lambda: (x * 1).sum().backward()))
        out.append(run(lambda: y.add_(1).is_inference()))
        out.append(run(lambda: y.requires_grad_().requires_grad))
    out.append(run(lambda: y.detach().is_inference()))
    return out


def test_inference_mode_is_pytorchs():
    assert program(nbgrad) == program(torch)


def test_mode_is_restored_after_an_exception():
    with pytest.raises(ValueError), nbgrad.inference_mode():
        raise ValueError
    assert not nbgrad.is_inference_mode_enabled() and nbgrad.is_grad_enabled()
