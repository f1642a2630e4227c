"""nbgrad.save / nbgrad.load (torch.save / torch.load) and nn.DataParallel, as a CPU-only
PyTorch behaves, and the errors of loading what is not only tensors."""

import io
import pickle

import numpy as np
import pytest

import nbgrad
from nbgrad import nn


def round_trip(obj, **load_args):
    buffer = io.BytesIO()
    nbgrad.save(obj, buffer)
    buffer.seek(0)
    return nbgrad.load(buffer, **load_args)


def test_tensors_keep_values_dtypes_and_requires_grad(torch):
    for T in (nbgrad, torch):
        a = T.tensor([1.0, 2.0], requires_grad=True)
        values = {
            "float32": T.tensor([[1.5, -2.0], [0.25, 3.0]]),
            "float64": T.tensor([1.0, 2.0], dtype=T.float64),
            "int64": T.tensor([1, 2, 3]),
            "bool": T.tensor([True, False]),
            "transposed": T.tensor([[1.0, 2.0], [3.0, 4.0]]).t(),
            "non-leaf": a * 2,
        }
        buffer = io.BytesIO()
        T.save(values, buffer)
        buffer.seek(0)
        loaded = T.load(buffer)
        for name, value in values.items():
            got = loaded[name]
            assert got.dtype == value.dtype and got.tolist() == value.tolist(), (T, name)
            # a tensor with history loads as a leaf that requires grad, as in PyTorch
            assert (got.requires_grad, got.is_leaf, got.grad_fn) == (name == "non-leaf", True, None)


def test_a_state_dict_through_a_file_restores_a_model(tmp_path):
    nbgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    nbgrad.save(model.state_dict(), tmp_path / "model.pt")  # a Path
    other = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    state = nbgrad.load(str(tmp_path / "model.pt"), map_location="cpu")  # a str path
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    other.load_state_dict(state)
    x = nbgrad.randn(5, 3)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())
    # the loaded values are copies: training one model leaves the other alone
    with nbgrad.no_grad():
        model[0].weight.add_(1)
    assert not np.array_equal(other[0].weight.detach().numpy(), model[0].weight.detach().numpy())


def test_a_parameter_loads_as_a_parameter():
    loaded = round_trip(nn.Parameter(nbgrad.ones(2)))
    assert isinstance(loaded, nn.Parameter) and loaded.requires_grad


class Opaque:
    pass


def test_weights_only_refuses_other_objects_and_false_loads_them(torch):
    for T in (nbgrad, torch):
        buffer = io.BytesIO()
        T.save({"w": T.ones(1), "other": Opaque()}, buffer)
        buffer.seek(0)
        refused = r"Unsupported global: GLOBAL .*Opaque"
        for default in ({}, {"weights_only": None}):
            buffer.seek(0)
            with pytest.raises(pickle.UnpicklingError, match=refused):
                T.load(buffer, **default)
        buffer.seek(0)
        assert isinstance(T.load(buffer, weights_only=False)["other"], Opaque)


def test_a_pytorch_file_gets_a_clear_error(torch, tmp_path):
    torch.save(torch.ones(2), tmp_path / "torch.pt")
    with pytest.raises(RuntimeError, match="written by nbgrad.save"):
        nbgrad.load(tmp_path / "torch.pt")


def test_data_parallel_runs_its_module_as_pytorch_does_without_gpus(torch):
    shown = {}
    for T in (nbgrad, torch):
        T.manual_seed(0)
        wrapped = T.nn.DataParallel(T.nn.Linear(2, 3), device_ids=[0])
        wrapped.load_state_dict({"module.weight": T.ones(3, 2), "module.bias": T.zeros(3)})
        out = wrapped(T.tensor([[1.0, 2.0]]))
        out.sum().backward()
        shown[T.__name__] = (
            repr(wrapped),
            list(wrapped.state_dict()),
            wrapped.device_ids,
            out.tolist(),
            wrapped.module.weight.grad.tolist(),
            type(out.grad_fn).__name__,
        )
    assert shown["nbgrad"] == shown["torch"]
