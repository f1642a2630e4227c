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


def test_a_users_own_numpy_code_still_warns_under_their_filter():
    nbgrad.tensor([0.0]).log()  # nbgrad has put its filter back in front
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbgrad.tensor([0.0]).log()
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
            np.log(np.zeros(1))
