"""Distribution programs recorded through nbgrad's engine (``nbgrad.trace.recorder``) and through
real PyTorch (``nbgrad.trace.torch_recorder``) give the same traces: node names, edges, values,
gradients and backward steps (the recorders' own test's comparison, reused)."""

import numpy as np
import pytest

import nbgrad

torch = pytest.importorskip("torch")

from distribution_validation import validation_on_in_both_libraries  # noqa: E402, F401
from test_torch_recorder import assert_same_trace, record  # noqa: E402

LOGITS = np.array([[0.2, -1.0, 2.3], [1.5, 1.4, -0.3]], dtype=np.float32)
MU = np.array([[0.3, -1.2], [2.0, 0.1]], dtype=np.float32)
LOGVAR = np.array([[-0.5, 0.2], [0.1, -1.0]], dtype=np.float32)


def policy_gradient(T):
    D = T.distributions
    logits = T.tensor(LOGITS, requires_grad=True)
    actions = T.tensor([2, 0])
    returns = T.tensor([1.5, -0.5])
    m = D.Categorical(logits=logits)
    loss = -(m.log_prob(actions) * returns).sum() - 0.01 * m.entropy().mean()
    loss.backward()
    return locals()


def vae_kl(T):
    D = T.distributions
    mu = T.tensor(MU, requires_grad=True)
    logvar = T.tensor(LOGVAR, requires_grad=True)
    q = D.Independent(D.Normal(mu, (0.5 * logvar).exp()), 1)
    prior = D.Independent(D.Normal(T.zeros(2, 2), T.ones(2, 2)), 1)
    kl = D.kl_divergence(q, prior).mean()
    nll = -q.log_prob(T.zeros(2, 2)).mean()
    loss = kl + nll
    loss.backward()
    return locals()


def bernoulli_and_beta(T):
    D = T.distributions
    logits = T.tensor(MU, requires_grad=True)
    a = T.tensor(np.exp(LOGVAR), requires_grad=True)
    bits = T.tensor([[1.0, 0.0], [0.0, 1.0]])
    loss = -D.Bernoulli(logits=logits).log_prob(bits).sum()
    loss = loss + D.kl_divergence(D.Beta(a, a + 1), D.Beta(a + 1, a)).sum()
    loss.backward()
    return locals()


@pytest.mark.parametrize(
    "program", [policy_gradient, vae_kl, bernoulli_and_beta], ids=lambda p: p.__name__
)
def test_distribution_programs_give_the_same_trace_in_both_engines(program):
    mine, _ = record(program, nbgrad)
    theirs, _ = record(program, torch)
    assert_same_trace(mine, theirs)
    assert {n.name for n in mine.nodes} == {n.name for n in theirs.nodes}
