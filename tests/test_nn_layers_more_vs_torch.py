"""Max unpooling, channel shuffle, 3-d convolutions and the interpolation modes of issue 14's
last pieces against PyTorch: the whole graph (every node's name, edges and saved values),
results, gradients, module reprs and errors."""

import numpy as np
import pytest
import test_misc_ops_vs_torch as misc

import nbgrad


def _same_value(mine, real, torch, where):
    """As test_misc_ops_vs_torch's, but a negative saved dim reads back as given (squeeze,
    unsqueeze) or made non-negative (select, cat): a difference README lists, PyTorch shows its
    unsigned wrap-around."""
    if where.endswith("_saved_dim") and isinstance(real, int) and real >= 2**63:
        assert isinstance(mine, int) and (mine == real - 2**64 or mine >= 0), where
        return
    misc_same_value(mine, real, torch, where)


misc_same_value = misc._same_value


@pytest.fixture(autouse=True)
def _saved_dims_may_be_non_negative(monkeypatch):
    monkeypatch.setattr(misc, "_same_value", _same_value)


run_both = misc.run_both


def _unpool(dims, kernel, stride=None, padding=0, output_size=None, unbatched=False):
    def build(T, x):
        F = T.nn.functional
        if unbatched:
            x = x[0]
        pool = getattr(F, f"max_pool{dims}d")
        values, indices = pool(x, kernel, stride, padding, return_indices=True)
        unpool = getattr(F, f"max_unpool{dims}d")
        return unpool(values, indices, kernel, stride, padding, output_size)

    return build


UNPOOL = {
    "1d": (_unpool(1, 2), (2, 3, 6)),
    "1d stride padding output size": (_unpool(1, 3, 2, 1, (7,)), (1, 2, 7)),
    "1d unbatched": (_unpool(1, 2, unbatched=True), (1, 2, 5)),
    "2d": (_unpool(2, 2), (2, 3, 4, 4)),
    "2d stride padding": (_unpool(2, (3, 2), (2, 1), (1, 0)), (1, 2, 5, 4)),
    "2d output size with batch dims": (_unpool(2, 2, output_size=(1, 2, 5, 5)), (1, 2, 5, 5)),
    "2d unbatched": (_unpool(2, 2, unbatched=True), (1, 2, 4, 6)),
    "2d overlapping windows": (_unpool(2, 3, 1), (1, 1, 4, 4)),
    "3d": (_unpool(3, 2), (1, 2, 4, 4, 4)),
    "3d stride padding output size": (_unpool(3, 2, 2, 1, (4, 5, 4)), (1, 1, 4, 5, 4)),
    "3d unbatched": (_unpool(3, (2, 1, 2), unbatched=True), (1, 2, 4, 3, 2)),
}


@pytest.mark.parametrize("name", UNPOOL)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_max_unpool(torch, name, dtype):
    build, shape = UNPOOL[name]
    run_both(torch, build, [shape], dtype=dtype)


def test_max_unpool_modules(torch):
    def build(T, x):
        pool, unpool = T.nn.MaxPool2d(2, return_indices=True), T.nn.MaxUnpool2d(2)
        values, indices = pool(x)
        return unpool(values, indices, output_size=x.size())

    run_both(torch, build, [(1, 2, 5, 5)])
    for T in (nbgrad, torch):
        assert repr(T.nn.MaxUnpool1d(2)) == repr(torch.nn.MaxUnpool1d(2))
    for name, args in (("MaxUnpool1d", (2, 1)), ("MaxUnpool2d", ((2, 3),)), ("MaxUnpool3d", (2,))):
        assert repr(getattr(nbgrad.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))
        ours, theirs = getattr(nbgrad.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert (ours.kernel_size, ours.stride, ours.padding) == (
            theirs.kernel_size, theirs.stride, theirs.padding,
        )  # fmt: skip


def test_max_unpool_double_backward(torch):
    """The gradient taken with create_graph=True is PyTorch's gather of the incoming gradient."""

    def build(T, x, g):
        values, indices = T.nn.functional.max_pool2d(x, 2, return_indices=True)
        out = T.nn.functional.max_unpool2d(values, indices, 2)
        (grad,) = T.autograd.grad(out, values, g, create_graph=True)
        return grad

    run_both(torch, build, [(1, 2, 4, 4), (1, 2, 4, 4)])


CHANNEL_SHUFFLE = {
    "3d": (lambda T, x: T.nn.functional.channel_shuffle(x, 2), (2, 4, 3)),
    "4d": (lambda T, x: T.channel_shuffle(x, 3), (1, 6, 2, 2)),
    "module 5d": (lambda T, x: T.nn.ChannelShuffle(2)(x), (1, 4, 2, 1, 2)),
    "double backward": (
        lambda T, x: T.autograd.grad(T.channel_shuffle(x, 2), x, x * 1, create_graph=True)[0],
        (1, 4, 3),
    ),
}


@pytest.mark.parametrize("name", CHANNEL_SHUFFLE)
def test_channel_shuffle(torch, name):
    build, shape = CHANNEL_SHUFFLE[name]
    run_both(torch, build, [shape])
    assert repr(nbgrad.nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))


def _pooled(T, shape, dims):
    x = T.tensor(np.random.default_rng(0).standard_normal(shape))
    return getattr(T.nn.functional, f"max_pool{dims}d")(x, 2, return_indices=True)


ERRORS = {
    "unpool int32 indices": lambda T: T.nn.functional.max_unpool2d(
        _pooled(T, (1, 1, 4, 4), 2)[0], _pooled(T, (1, 1, 4, 4), 2)[1].int(), 2
    ),
    "unpool3d int32 indices": lambda T: T.nn.functional.max_unpool3d(
        _pooled(T, (1, 1, 4, 4, 4), 3)[0], _pooled(T, (1, 1, 4, 4, 4), 3)[1].int(), 2
    ),
    "unpool indices shape": lambda T: T.nn.functional.max_unpool2d(
        _pooled(T, (1, 1, 4, 4), 2)[0], _pooled(T, (1, 1, 4, 2), 2)[1], 2
    ),
    "unpool 2-d input": lambda T: T.nn.functional.max_unpool2d(
        _pooled(T, (1, 1, 4, 4), 2)[0][0, 0], _pooled(T, (1, 1, 4, 4), 2)[1][0, 0], 2
    ),
    "unpool3d 6-d input": lambda T: T.nn.functional.max_unpool3d(
        _pooled(T, (1, 1, 4, 4, 4), 3)[0][None], _pooled(T, (1, 1, 4, 4, 4), 3)[1][None], 2
    ),
    "unpool output size length": lambda T: T.nn.functional.max_unpool2d(
        *_pooled(T, (1, 1, 4, 4), 2), 2, output_size=(5,)
    ),
    "unpool output size range": lambda T: T.nn.functional.max_unpool2d(
        *_pooled(T, (1, 1, 4, 4), 2), 2, output_size=(9, 9)
    ),
    "unpool invalid index": lambda T: T.nn.functional.max_unpool2d(
        _pooled(T, (1, 1, 4, 4), 2)[0], T.tensor([[[[0, 1], [2, 9]]]]), 2, stride=1
    ),
    "unpool3d invalid index": lambda T: T.nn.functional.max_unpool3d(
        _pooled(T, (1, 1, 4, 4, 4), 3)[0],
        _pooled(T, (1, 1, 4, 4, 4), 3)[1] * 0
        + T.tensor([0, 0, 0, 0, 0, 0, 0, 64]).view(1, 1, 2, 2, 2),
        2,
    ),
    "unpool empty": lambda T: T.nn.functional.max_unpool2d(
        T.zeros(1, 1, 0, 2), T.zeros(1, 1, 0, 2, dtype=T.int64), 2
    ),
    "antialias of linear": lambda T: T.nn.functional.interpolate(
        T.zeros(1, 1, 4), scale_factor=0.5, mode="linear", antialias=True
    ),
    "shuffle 2-d": lambda T: T.nn.functional.channel_shuffle(T.zeros(2, 4), 2),
    "shuffle groups": lambda T: T.nn.functional.channel_shuffle(T.zeros(1, 4, 2), 3),
    "shuffle no groups": lambda T: T.nn.functional.channel_shuffle(T.zeros(1, 4, 2), 0),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_pytorch(torch, name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[name](nbgrad)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


CONV3D = {
    "plain": (
        lambda T, x, w, b: T.nn.functional.conv3d(x, w, b),
        [(2, 2, 3, 4, 3), (3, 2, 2, 2, 2), (3,)],
    ),
    "stride padding dilation groups": (
        lambda T, x, w: T.nn.functional.conv3d(
            x, w, stride=(1, 2, 1), padding=(1, 0, 2), dilation=(1, 1, 2), groups=2
        ),
        [(1, 4, 3, 5, 4), (4, 2, 2, 3, 2)],
    ),
    "padding same": (
        lambda T, x, w: T.nn.functional.conv3d(x, w, padding="same"),
        [(1, 2, 3, 3, 3), (2, 2, 3, 1, 3)],
    ),
    "padding valid": (
        lambda T, x, w: T.nn.functional.conv3d(x, w, padding="valid"),
        [(1, 2, 3, 3, 3), (2, 2, 2, 1, 2)],
    ),
    "unbatched": (
        lambda T, x, w: T.nn.functional.conv3d(x, w, padding=1),
        [(2, 2, 3, 2), (1, 2, 2, 2, 2)],
    ),
}


@pytest.mark.parametrize("name", CONV3D)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv3d(torch, name, dtype):
    build, shapes = CONV3D[name]
    run_both(torch, build, shapes, dtype=dtype)


def test_conv3d_double_backward_values(torch):
    """The gradient made with create_graph=True differentiates to PyTorch's values (its graph
    is nbgrad's slices and einsums, not ConvolutionBackwardBackward0: README)."""
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(s) for s in [(1, 2, 3, 3, 4), (2, 1, 2, 2, 2), (1, 2, 2, 1, 3)]]
    results = []
    for T in (nbgrad, torch):
        x, w, g = (T.tensor(v, requires_grad=True) for v in values)
        y = T.nn.functional.conv3d(x, w, stride=(1, 2, 2), padding=(0, 0, 1), groups=2)
        gx, gw = T.autograd.grad(y, (x, w), g, create_graph=True)
        ((gx * gx).sum() + (gw**3).sum()).backward()
        results.append([t.detach().numpy() for t in (gx, gw, x.grad, w.grad, g.grad)])
    for mine, real in zip(*results):
        np.testing.assert_allclose(mine, real, rtol=1e-10, atol=1e-12)


def test_conv3d_module(torch):
    def build(T, x):
        T.manual_seed(0)
        conv = T.nn.Conv3d(2, 4, (2, 3, 1), stride=2, padding=1, bias=True).double()
        if T is nbgrad:
            conv.load_state_dict(torch_conv.state_dict())
        return conv(x)

    torch.manual_seed(0)
    torch_conv = torch.nn.Conv3d(2, 4, (2, 3, 1), stride=2, padding=1, bias=True).double()
    run_both(torch, build, [(1, 2, 4, 4, 3)])
    for args, kwargs in [((2, 4, 3), {"padding": 1, "bias": False}), ((2, 6, 2), {"groups": 2})]:
        assert repr(nbgrad.nn.Conv3d(*args, **kwargs)) == repr(torch.nn.Conv3d(*args, **kwargs))
        ours, theirs = nbgrad.nn.Conv3d(*args, **kwargs), torch.nn.Conv3d(*args, **kwargs)
        assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
            (n, tuple(p.shape)) for n, p in theirs.named_parameters()
        ]


CONV3D_ERRORS = {
    "conv3d 3-d input": lambda T: T.nn.functional.conv3d(T.zeros(2, 3, 3), T.zeros(1, 2, 1, 1, 1)),
    "conv3d channels": lambda T: T.nn.functional.conv3d(
        T.zeros(1, 3, 3, 3, 3), T.zeros(1, 2, 1, 1, 1)
    ),
    "conv3d kernel too large": lambda T: T.nn.functional.conv3d(
        T.zeros(1, 2, 3, 3, 3), T.zeros(1, 2, 4, 1, 1)
    ),
}


@pytest.mark.parametrize("name", CONV3D_ERRORS)
def test_conv3d_errors_match_pytorch(torch, name):
    with pytest.raises(Exception) as theirs:
        CONV3D_ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        CONV3D_ERRORS[name](nbgrad)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def _interpolate(**options):
    return lambda T, x: T.nn.functional.interpolate(x, **options)


INTERPOLATE = {
    "trilinear": (_interpolate(scale_factor=2, mode="trilinear"), (1, 2, 2, 3, 2)),
    "trilinear corners size": (
        _interpolate(size=(3, 5, 2), mode="trilinear", align_corners=True),
        (2, 1, 2, 3, 4),
    ),
    "trilinear down recompute": (
        _interpolate(scale_factor=(0.5, 0.7, 1.3), mode="trilinear", recompute_scale_factor=True),
        (1, 1, 4, 5, 3),
    ),
    "nearest 3d": (_interpolate(scale_factor=(2, 1.5, 0.5), mode="nearest"), (1, 2, 2, 3, 4)),
    "nearest-exact 3d": (_interpolate(size=(3, 5, 2), mode="nearest-exact"), (1, 1, 2, 3, 4)),
    "bicubic": (_interpolate(scale_factor=2, mode="bicubic"), (1, 2, 3, 4)),
    "bicubic corners down": (
        _interpolate(size=(2, 5), mode="bicubic", align_corners=True),
        (2, 1, 5, 3),
    ),
    "bicubic scale 1.7": (_interpolate(scale_factor=1.7, mode="bicubic"), (1, 1, 4, 3)),
    "area 1d": (_interpolate(scale_factor=0.5, mode="area"), (1, 2, 6)),
    "area 2d size": (_interpolate(size=(2, 3), mode="area"), (1, 2, 5, 7)),
    "area 3d": (_interpolate(scale_factor=(0.5, 1, 0.7), mode="area"), (1, 1, 4, 3, 5)),
    "bilinear antialias down": (
        _interpolate(scale_factor=0.4, mode="bilinear", antialias=True),
        (1, 2, 9, 7),
    ),
    "bicubic antialias corners": (
        _interpolate(size=(4, 9), mode="bicubic", antialias=True, align_corners=True),
        (2, 1, 9, 7),
    ),
    "bicubic antialias mixed": (
        _interpolate(scale_factor=(0.5, 1.3), mode="bicubic", antialias=True),
        (1, 1, 8, 5),
    ),
    "upsample module trilinear": (
        lambda T, x: T.nn.Upsample(scale_factor=2, mode="trilinear")(x),
        (1, 1, 2, 2, 2),
    ),
}


@pytest.mark.parametrize("name", INTERPOLATE)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_interpolate(torch, name, dtype):
    build, shape = INTERPOLATE[name]
    run_both(torch, build, [shape], dtype=dtype)


@pytest.mark.parametrize(
    "name", ["trilinear corners size", "bicubic corners down", "bicubic antialias mixed"]
)
def test_interpolate_double_backward_values(torch, name):
    build, shape = INTERPOLATE[name]
    value = np.random.default_rng(4).standard_normal(shape)
    results = []
    for T in (nbgrad, torch):
        x = T.tensor(value, requires_grad=True)
        y = build(T, x)
        g = T.ones_like(y, requires_grad=True)
        (gx,) = T.autograd.grad(y, x, g, create_graph=True)
        (gx * gx).sum().backward()
        results.append([gx.detach().numpy(), g.grad.numpy()])
    for mine, real in zip(*results):
        np.testing.assert_allclose(mine, real, rtol=1e-10, atol=1e-12)


CONV_TRANSPOSE3D = {
    "plain": (
        lambda T, x, w, b: T.nn.functional.conv_transpose3d(x, w, b),
        [(2, 2, 2, 3, 2), (2, 3, 2, 2, 2), (3,)],
    ),
    "stride padding output padding groups dilation": (
        lambda T, x, w: T.nn.functional.conv_transpose3d(
            x,
            w,
            stride=2,
            padding=(0, 1, 1),
            output_padding=(1, 0, 1),
            groups=2,
            dilation=(1, 2, 1),
        ),
        [(1, 4, 2, 3, 2), (4, 3, 2, 2, 3)],
    ),  # fmt: skip
    "unbatched": (
        lambda T, x, w: T.nn.functional.conv_transpose3d(x, w, stride=(1, 2, 1)),
        [(2, 2, 2, 2), (2, 1, 1, 2, 2)],
    ),
}


@pytest.mark.parametrize("name", CONV_TRANSPOSE3D)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv_transpose3d(torch, name, dtype):
    build, shapes = CONV_TRANSPOSE3D[name]
    run_both(torch, build, shapes, dtype=dtype)


def test_conv_transpose3d_double_backward_values(torch):
    rng = np.random.default_rng(5)
    values = [rng.standard_normal(s) for s in [(1, 2, 2, 2, 3), (2, 2, 2, 1, 2)]]
    results = []
    for T in (nbgrad, torch):
        x, w = (T.tensor(v, requires_grad=True) for v in values)
        y = T.nn.functional.conv_transpose3d(x, w, stride=2, padding=(0, 0, 1), output_padding=1)
        g = T.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)), requires_grad=True)
        gx, gw = T.autograd.grad(y, (x, w), g, create_graph=True)
        ((gx * gx).sum() + (gw**3).sum()).backward()
        results.append([t.detach().numpy() for t in (gx, gw, x.grad, w.grad, g.grad)])
    for mine, real in zip(*results):
        np.testing.assert_allclose(mine, real, rtol=1e-10, atol=1e-12)


def test_conv_transpose3d_module(torch):
    torch.manual_seed(0)
    torch_conv = torch.nn.ConvTranspose3d(2, 4, (2, 3, 1), stride=2, padding=1).double()

    def build(T, x):
        conv = T.nn.ConvTranspose3d(2, 4, (2, 3, 1), stride=2, padding=1).double()
        conv.load_state_dict(torch_conv.state_dict())
        return conv(x, output_size=(5, 6, 3))

    run_both(torch, build, [(1, 2, 3, 3, 3)])
    args, kwargs = (2, 4, 3), {"stride": 2, "output_padding": 1, "bias": False}
    assert repr(nbgrad.nn.ConvTranspose3d(*args, **kwargs)) == repr(
        torch.nn.ConvTranspose3d(*args, **kwargs)
    )
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.functional.conv_transpose3d(
            torch.zeros(1, 4, 2, 2, 2), torch.zeros(4, 3, 2, 2, 2), output_padding=1
        )
    with pytest.raises(RuntimeError) as ours:
        nbgrad.nn.functional.conv_transpose3d(
            nbgrad.zeros(1, 4, 2, 2, 2), nbgrad.zeros(4, 3, 2, 2, 2), output_padding=1
        )
    assert str(ours.value) == str(theirs.value)
