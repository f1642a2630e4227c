"""Run the same layer code through nbgrad and PyTorch, with the same weights and inputs.

A case is a function ``case(T, make)``: ``T`` is the library (``nbgrad`` or ``torch``) and
``make`` builds its modules and inputs. The case runs first with PyTorch; every module it makes
is remembered, and when the case runs again with nbgrad, the module made at the same point gets
PyTorch's weights and buffers (through ``load_state_dict``). Inputs come from one seeded
generator per run, so both runs see the same numbers.
"""

import warnings

import numpy as np
from graph_compare import structure, to_numpy

import nbgrad


class Maker:
    def __init__(self, T, dtype_name, reference=None):
        self.T = T
        self.dtype = getattr(T, dtype_name)
        self.rng = np.random.default_rng(11)
        self.modules = []
        self.initial_states = []
        self.inputs = []  # tensors created with requires_grad, in order
        self.reference = reference  # the PyTorch run's Maker, when this is the nbgrad run

    def module(self, module):
        module = module.to(self.dtype)
        if self.reference is None:
            # PyTorch's weights as they were made, before the case ran (and moved running stats).
            self.initial_states.append({k: v.clone() for k, v in module.state_dict().items()})
        else:
            module.load_state_dict(self.reference.initial_states[len(self.modules)])
        self.modules.append(module)
        return module

    def input(self, *shape, requires_grad=True, low=None, high=None):
        """Normal values, or uniform in [low, high) when given."""
        if low is None:
            values = self.rng.standard_normal(shape)
        else:
            values = self.rng.uniform(low, high, shape)
        tensor = self.T.tensor(values, dtype=self.dtype, requires_grad=requires_grad)
        if requires_grad:
            self.inputs.append(tensor)
        return tensor

    def labels(self, *shape, classes):
        return self.T.tensor(self.rng.integers(0, classes, shape), dtype=self.T.int64)

    def constant(self, values, dtype=None):
        return self.T.tensor(values, dtype=dtype or self.dtype)


def run_both(torch, case, dtype_name="float64"):
    """(nbgrad's output, PyTorch's output, nbgrad's maker, PyTorch's maker)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)  # PyTorch's initial weights, the same on every run
        theirs_maker = Maker(torch, dtype_name)
        theirs = case(torch, theirs_maker)
        ours_maker = Maker(nbgrad, dtype_name, reference=theirs_maker)
        ours = case(nbgrad, ours_maker)
    return ours, theirs, ours_maker, theirs_maker


def first(output):
    return output[0] if isinstance(output, tuple) else output


def assert_same_run(torch, case, dtype_name="float64", rtol=1e-10, atol=1e-12):
    """Outputs, graph, input and parameter gradients, and module state all agree."""
    ours, theirs, ours_maker, theirs_maker = run_both(torch, case, dtype_name)
    ours_out, theirs_out = first(ours), first(theirs)
    assert structure(ours_out.grad_fn) == structure(theirs_out.grad_fn)
    assert tuple(ours_out.shape) == tuple(theirs_out.shape)
    assert ours_out.dtype.name == str(theirs_out.dtype).split(".")[1]
    np.testing.assert_allclose(to_numpy(ours_out), to_numpy(theirs_out), rtol=rtol, atol=atol)
    if isinstance(ours, tuple):  # extra outputs (max-pool indices): equal too
        for mine, real in zip(ours[1:], theirs[1:]):
            np.testing.assert_array_equal(to_numpy(mine), to_numpy(real))

    if theirs_out.requires_grad:
        seed = np.random.default_rng(5).standard_normal(tuple(theirs_out.shape))
        ours_out.backward(nbgrad.tensor(seed, dtype=ours_out.dtype))
        theirs_out.backward(torch.tensor(seed, dtype=theirs_out.dtype))
        for mine, real in zip(ours_maker.inputs, theirs_maker.inputs):
            assert (mine.grad is None) == (real.grad is None)
            if real.grad is not None:
                np.testing.assert_allclose(
                    to_numpy(mine.grad), to_numpy(real.grad), rtol=rtol * 10, atol=atol * 10
                )
    for mine, real in zip(ours_maker.modules, theirs_maker.modules):
        mine_params = dict(mine.named_parameters())
        real_params = dict(real.named_parameters())
        assert list(mine_params) == list(real_params)
        for name, param in real_params.items():
            assert (mine_params[name].grad is None) == (param.grad is None), name
            if param.grad is not None:
                np.testing.assert_allclose(
                    to_numpy(mine_params[name].grad),
                    to_numpy(param.grad),
                    rtol=rtol * 10,
                    atol=atol * 10,
                    err_msg=name,
                )
        mine_state, real_state = mine.state_dict(), real.state_dict()
        assert list(mine_state) == list(real_state)
        for name, value in real_state.items():
            np.testing.assert_allclose(
                to_numpy(mine_state[name]), to_numpy(value), rtol=rtol, atol=atol, err_msg=name
            )
    return ours, theirs
