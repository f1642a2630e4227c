"""nn.Module and the containers: registration, traversal, modes, state dicts, hooks and repr,
compared with PyTorch where PyTorch shows something."""

import copy
import pickle

import numpy as np
import pytest

import nbgrad
from nbgrad import nn


def build_net(T):
    """A model with nesting, a buffer-holding layer, a shared module and a parameter-less one."""

    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.features = T.nn.Sequential(
                T.nn.Conv2d(1, 2, 3), T.nn.BatchNorm2d(2), T.nn.ReLU(), T.nn.MaxPool2d(2)
            )
            self.head = T.nn.ModuleDict({"fc": T.nn.Linear(2, 3), "act": T.nn.Tanh()})
            self.blocks = T.nn.ModuleList([T.nn.Linear(3, 3) for _ in range(3)])
            self.shared = self.blocks[0]
            self.scale = T.nn.Parameter(T.ones(1))
            self.register_buffer("steps", T.zeros(1))
            self.register_buffer("scratch", T.zeros(2), persistent=False)

        def forward(self, x):
            x = self.features(x).flatten(1)
            x = self.head["act"](self.head["fc"](x))
            for block in self.blocks:
                x = block(x)
            return x * self.scale

    return Net()


def test_traversal_names_match_pytorch(torch):
    ours, theirs = build_net(nbgrad), build_net(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    assert [type(m).__name__ for m in ours.modules()] == [
        type(m).__name__ for m in theirs.modules()
    ]


def test_repr_matches_pytorch(torch):
    assert repr(build_net(nbgrad)) == repr(build_net(torch))


@pytest.mark.parametrize(
    "layer",
    [
        "Linear(3, 2)",
        "Linear(3, 2, bias=False)",
        "Identity()",
        "Conv1d(2, 4, 3, stride=2, groups=2, bias=False)",
        "Conv2d(1, 16, 3, padding=1)",
        "Conv2d(2, 4, (3, 5), dilation=2, padding='same')",
        "Conv2d(2, 4, 3, padding=1, padding_mode='reflect')",
        "MaxPool2d(2)",
        "MaxPool2d(3, stride=2, padding=1, ceil_mode=True)",
        "AvgPool2d(2, stride=1)",
        "Flatten()",
        "Unflatten(1, (2, 3))",
        "Dropout(0.2)",
        "Embedding(10, 3, padding_idx=0)",
        "Embedding(10, 3, max_norm=1.0, scale_grad_by_freq=True)",
        "LayerNorm(5)",
        "LayerNorm((2, 3), elementwise_affine=False)",
        "BatchNorm1d(3)",
        "BatchNorm2d(3, momentum=None, affine=False)",
        "ReLU()",
        "ReLU(inplace=True)",
        "Sigmoid()",
        "Tanh()",
        "GELU()",
        "GELU(approximate='tanh')",
        "LeakyReLU(0.2)",
        "Softmax(dim=1)",
        "LogSoftmax(dim=-1)",
        "MSELoss()",
        "L1Loss(reduction='sum')",
        "CrossEntropyLoss(label_smoothing=0.1)",
        "NLLLoss()",
        "BCELoss()",
        "BCEWithLogitsLoss()",
        "ModuleList([T.nn.Linear(2, 2) for _ in range(3)] + [T.nn.ReLU(), T.nn.ReLU()])",
        "ModuleList()",
        "Sequential()",
    ],
)
def test_layer_repr_matches_pytorch(torch, layer):
    ours = eval(f"T.nn.{layer}", {"T": nbgrad})  # noqa: S307 - our own test table
    theirs = eval(f"T.nn.{layer}", {"T": torch})  # noqa: S307
    assert repr(ours) == repr(theirs)


def test_parameter_is_a_leaf_tensor_that_requires_grad(torch):
    p = nn.Parameter(nbgrad.ones(2))
    assert isinstance(p, nbgrad.Tensor) and p.is_leaf and p.requires_grad
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2)))
    assert not nn.Parameter(nbgrad.ones(2), requires_grad=False).requires_grad
    assert type(p * 2) is nbgrad.Tensor
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(nbgrad.tensor([1, 2]))


def test_registration_by_assignment():
    net = build_net(nbgrad)
    net.extra = nn.Parameter(nbgrad.zeros(2))
    assert dict(net.named_parameters())["extra"] is net.extra
    net.extra = None  # a registered parameter may be cleared, and stays a key
    assert "extra" in net._parameters and net.extra is None
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'scale'"):
        net.scale = nbgrad.ones(1)
    net.plain = nbgrad.ones(1)  # a plain tensor attribute is not registered
    assert "plain" not in dict(net.named_parameters())
    net.head = nn.Identity()  # replacing a sub-module keeps its place
    assert [n for n, _ in net.named_children()][1] == "head"
    del net.head
    assert "head" not in dict(net.named_children())
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'missing'"):
        net.missing  # noqa: B018


def test_assigning_before_init_is_a_clear_error():
    class Broken(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"before Module.__init__\(\) call"):
        Broken()


def test_forward_is_required():
    with pytest.raises(NotImplementedError, match='missing the required "forward" function'):
        nn.Module()(nbgrad.ones(1))


def test_shared_module_is_counted_once():
    net = build_net(nbgrad)
    names = [n for n, _ in net.named_parameters()]
    assert "shared.weight" not in names and "blocks.0.weight" in names
    assert len(names) == len({id(p) for p in net.parameters()})


def test_train_and_eval_reach_every_submodule():
    net = build_net(nbgrad)
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")


def test_zero_grad_sets_grads_to_none():
    net = build_net(nbgrad)
    net(nbgrad.randn(2, 1, 4, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net(nbgrad.randn(2, 1, 4, 4)).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad._data.any() for p in net.parameters())


def test_requires_grad_and_apply():
    net = build_net(nbgrad)
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen.count("Linear") == 5  # shared counted twice, as PyTorch


def test_state_dict_round_trip_and_sharing():
    net, other = build_net(nbgrad), build_net(nbgrad)
    state = net.state_dict()
    assert "scratch" not in state  # not persistent
    assert state["features.1.num_batches_tracked"].dtype is nbgrad.int64
    assert not state["scale"].requires_grad
    state["scale"][0] = 3.0  # a state dict shares memory with the module, as in PyTorch
    assert net.scale.item() == 3.0
    result = other.load_state_dict(net.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    for (name, mine), (_, theirs) in zip(other.state_dict().items(), net.state_dict().items()):
        np.testing.assert_array_equal(mine._data, theirs._data, err_msg=name)


def test_load_state_dict_lists_missing_and_unexpected_keys(torch):
    def attempt(T, state, strict=True):
        layer = T.nn.Linear(3, 2)
        try:
            return layer.load_state_dict(state(T), strict=strict)
        except RuntimeError as error:
            return str(error)

    def bad_keys(T):
        return {"weight": T.zeros(2, 3), "foo": T.zeros(1), "bar": T.ones(1)}

    def bad_shape(T):
        return {"weight": T.zeros(2, 4), "bias": T.zeros(2)}

    ours, theirs = attempt(nbgrad, bad_keys), attempt(torch, bad_keys)
    assert ours == theirs
    assert 'Missing key(s) in state_dict: "bias".' in ours
    assert 'Unexpected key(s) in state_dict: "foo", "bar".' in ours
    assert attempt(nbgrad, bad_shape) == attempt(torch, bad_shape)
    loose_ours = attempt(nbgrad, bad_keys, strict=False)
    loose_theirs = attempt(torch, bad_keys, strict=False)
    assert loose_ours.missing_keys == loose_theirs.missing_keys == ["bias"]
    assert loose_ours.unexpected_keys == loose_theirs.unexpected_keys == ["foo", "bar"]
    assert repr(loose_ours) == repr(loose_theirs)


def test_weights_load_from_a_pytorch_state_dict(torch):
    torch.manual_seed(0)
    theirs = torch.nn.Linear(4, 2)
    ours = nn.Linear(4, 2)
    ours.load_state_dict(theirs.state_dict())
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(
        ours(nbgrad.tensor(x)).detach()._data,
        theirs(torch.tensor(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-6,  # float32 sums in another order: outputs near 0 differ in the last bits
    )


def test_forward_hooks_see_and_may_replace_output():
    layer = nn.Linear(2, 2)
    calls = []
    handle = layer.register_forward_hook(lambda m, args, out: calls.append((m, args, out)))
    x = nbgrad.ones(1, 2)
    out = layer(x)
    assert calls[0][0] is layer and calls[0][1][0] is x and calls[0][2] is out
    replace = layer.register_forward_hook(lambda m, args, out: out * 0)
    assert not layer(x)._data.any()
    handle.remove()
    replace.remove()
    assert len(calls) == 2 and layer(x)._data.any()
    first = layer.register_forward_hook(lambda m, a, out: calls.append("later"))
    layer.register_forward_hook(lambda m, a, out: calls.append("first"), prepend=True)
    layer(x)
    assert calls[-2:] == ["first", "later"]
    first.remove()


def test_forward_pre_hook_may_replace_input():
    layer = nn.Identity()
    layer.register_forward_pre_hook(lambda m, args: args[0] + 1)
    assert layer(nbgrad.zeros(2)).tolist() == [1.0, 1.0]


def test_sequential_indexing_and_editing():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(model[-1], nn.Linear) and len(model) == 3
    head = model[:2]
    assert isinstance(head, nn.Sequential) and [n for n, _ in head.named_children()] == ["0", "1"]
    assert head(nbgrad.ones(4, 2)).shape == (4, 3)
    with pytest.raises(IndexError, match="index 3 is out of range"):
        model[3]
    model.append(nn.Sigmoid())
    del model[1]
    assert [type(m).__name__ for m in model] == ["Linear", "Linear", "Sigmoid"]
    assert [n for n, _ in model.named_children()] == ["0", "1", "2"]
    named = nn.Sequential(__import__("collections").OrderedDict(fc=nn.Linear(2, 2)))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]


def test_editing_numbered_containers_as_pytorch(torch):
    """Deleting (an index or a slice) and inserting keep the names 0, 1, 2, ...; what each edit
    returns is PyTorch's (Sequential.insert returns the container, ModuleList.insert None)."""

    def edits(T, container):
        layers = container(*[T.nn.Linear(1, i + 1) for i in range(5)])
        log = []
        del layers[1]
        del layers[1:3]
        log.append(layers.insert(1, T.nn.ReLU()) is layers)
        log.append(layers.insert(2, T.nn.Tanh()) is layers)  # (ModuleList(-1) fails in PyTorch)
        log.append(layers.append(T.nn.Sigmoid()) is layers)
        log.append(layers.extend([T.nn.ReLU()]) is layers)
        del layers[-2]
        shown = [
            (name, type(m).__name__, getattr(m, "out_features", None))
            for name, m in layers.named_children()
        ]
        return log, shown

    for container in ("Sequential", "ModuleList"):
        ours = edits(
            nbgrad,
            lambda *m, c=container: (
                getattr(nn, c)(*m) if c == "Sequential" else getattr(nn, c)(list(m))
            ),
        )
        theirs = edits(
            torch,
            lambda *m, c=container: (
                getattr(torch.nn, c)(*m) if c == "Sequential" else getattr(torch.nn, c)(list(m))
            ),
        )
        assert ours == theirs, container
    assert ours[1][0] == ("0", "Linear", 1)  # not vacuous: the edits left real layers


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2)])
    layers.append(nn.ReLU())
    layers.extend([nn.Tanh()])
    layers += [nn.Sigmoid()]
    assert len(layers) == 4 and isinstance(layers[1], nn.ReLU)
    assert isinstance(layers[1:], nn.ModuleList) and len(layers[1:]) == 3
    assert len(list(layers.parameters())) == 2
    table = nn.ModuleDict({"a": nn.Linear(1, 1)})
    table["b"] = nn.ReLU()
    assert list(table) == ["a", "b"] and "b" in table and len(table) == 2
    assert [k for k, _ in table.items()] == ["a", "b"]
    assert isinstance(table.pop("b"), nn.ReLU) and list(table.keys()) == ["a"]


def test_to_double_converts_parameters_and_buffers_in_place():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    weight = model[0].weight
    model.double()
    assert model[0].weight is weight and weight.dtype is nbgrad.float64
    assert model[1].running_mean.dtype is nbgrad.float64
    assert model[1].num_batches_tracked.dtype is nbgrad.int64
    assert model(nbgrad.randn(3, 2, dtype=nbgrad.float64)).dtype is nbgrad.float64
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        model.to("cuda")  # what a CPU-only PyTorch raises


def test_deepcopy_and_pickle_keep_parameters():
    model = nn.Sequential(nn.Linear(2, 2))
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert isinstance(clone[0].weight, nn.Parameter)
        assert clone[0].weight is not model[0].weight
        np.testing.assert_array_equal(clone[0].weight._data, model[0].weight._data)
        assert [n for n, _ in clone.named_parameters()] == ["0.weight", "0.bias"]


def test_default_init_matches_pytorch_bounds():
    """Linear and Conv: uniform in +-1/sqrt(fan_in); Embedding N(0, 1); norms ones and zeros."""
    nbgrad.manual_seed(0)
    layer = nn.Linear(400, 300)
    bound = 1 / 20
    for p in (layer.weight, layer.bias):
        assert -bound <= p._data.min() < -0.9 * bound and 0.9 * bound < p._data.max() <= bound
    conv = nn.Conv2d(4, 8, 3)
    bound = 1 / 6
    assert 0.9 * bound < np.abs(conv.weight._data).max() <= bound
    embedding = nn.Embedding(1000, 20)
    assert abs(embedding.weight._data.std() - 1) < 0.05
    norm = nn.LayerNorm(3)
    assert norm.weight.tolist() == [1.0] * 3 and norm.bias.tolist() == [0.0] * 3


def test_init_functions(torch):
    w = nbgrad.empty(300, 200)
    nn.init.xavier_uniform_(w)
    bound = (6 / 500) ** 0.5
    assert 0.95 * bound < np.abs(w._data).max() <= bound
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(w._data.std() - (2 / 200) ** 0.5) < 0.002
    nn.init.constant_(w, 0.5)
    assert (w._data == 0.5).all()
    nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(w._data).max() <= 0.5
    for name in ("linear", "relu", "tanh", "sigmoid", "selu"):
        assert nn.init.calculate_gain(name) == torch.nn.init.calculate_gain(name)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain(
        "leaky_relu", 0.2
    )
    version = w._version
    nn.init.zeros_(w)
    assert w._version > version  # an in-place change, seen by graphs that saved w
