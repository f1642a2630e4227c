"""The programs people write with torch.distributions, run unchanged on both libraries with the
same weights: a REINFORCE policy-gradient step and a VAE's reparameterized loss."""

import numpy as np
import pytest
from graph_compare import structure

import nbgrad

torch = pytest.importorskip("torch")

from distribution_validation import validation_on_in_both_libraries  # noqa: E402, F401

RNG = np.random.default_rng(2026)
OBS = RNG.normal(size=(6, 4))
W1, B1 = RNG.normal(size=(8, 4)) * 0.5, RNG.normal(size=8) * 0.1
W2, B2 = RNG.normal(size=(3, 8)) * 0.5, RNG.normal(size=3) * 0.1
ACTIONS = np.array([0, 2, 1, 1, 0, 2])
REWARDS = np.array([1.0, -0.5, 2.0, 0.3, -1.2, 0.8])

X = (RNG.uniform(size=(5, 6)) > 0.5).astype(float)  # binarized pixels
ENC_W, ENC_B = RNG.normal(size=(4, 6)) * 0.4, RNG.normal(size=4) * 0.1  # -> mu (2), logvar (2)
DEC_W, DEC_B = RNG.normal(size=(6, 2)) * 0.4, RNG.normal(size=6) * 0.1
EPS = RNG.normal(size=(5, 2))


def copy_weights(T, layer, weight, bias):
    with T.no_grad():
        layer.weight.copy_(T.tensor(weight, dtype=T.float32))
        layer.bias.copy_(T.tensor(bias, dtype=T.float32))


def reinforce_step(T):
    """A REINFORCE update as in PyTorch's examples/reinforcement_learning: policy logits ->
    Categorical -> log_prob of the taken actions times the returns, plus an entropy bonus."""
    D = T.distributions
    policy = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.Tanh(), T.nn.Linear(8, 3))
    copy_weights(T, policy[0], W1, B1)
    copy_weights(T, policy[2], W2, B2)
    optimizer = T.optim.SGD(policy.parameters(), lr=0.1)
    obs = T.tensor(OBS, dtype=T.float32)
    actions = T.tensor(ACTIONS)
    returns = T.tensor(REWARDS, dtype=T.float32)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)

    probs = T.softmax(policy(obs), dim=-1)
    m = D.Categorical(probs)
    sampled = m.sample()
    policy_loss = (-m.log_prob(actions) * returns).sum()
    loss = policy_loss - 0.01 * m.entropy().mean()
    optimizer.zero_grad()
    loss.backward()
    grads = [p.grad.clone() for p in policy.parameters()]
    optimizer.step()
    # the same loss from logits= after the step
    after = D.Categorical(logits=policy(obs))
    loss_after = -(after.log_prob(actions) * returns).sum()
    return {
        "loss": loss,
        "grads": grads,
        "loss_after": loss_after,
        "sampled_shape": tuple(sampled.shape),
        "sampled_dtype": str(sampled.dtype),
    }


def vae_loss(T, eps_patch):
    """A VAE's loss as in PyTorch's examples/vae, written with distributions: encoder ->
    mu, logvar -> Normal(mu, std).rsample() (with a fixed eps) -> decoder -> Bernoulli
    log-likelihood, and KL(q(z|x) || N(0, I)) through Independent."""
    D = T.distributions
    encoder, decoder = T.nn.Linear(6, 4), T.nn.Linear(2, 6)
    copy_weights(T, encoder, ENC_W, ENC_B)
    copy_weights(T, decoder, DEC_W, DEC_B)
    x = T.tensor(X, dtype=T.float32)
    h = encoder(x)
    mu, logvar = h[:, :2], h[:, 2:]
    std = T.exp(0.5 * logvar)
    q = D.Independent(D.Normal(mu, std), 1)
    eps_patch(T)
    z = q.rsample()
    prior = D.Independent(D.Normal(T.zeros_like(mu), T.ones_like(std)), 1)
    likelihood = D.Independent(D.Bernoulli(logits=decoder(z)), 1)
    reconstruction = -likelihood.log_prob(x).sum()
    kl = D.kl_divergence(q, prior).sum()
    loss = reconstruction + kl
    loss.backward()
    return {
        "z": z,
        "kl": kl,
        "reconstruction": reconstruction,
        "loss": loss,
        "grads": [p.grad for p in (*encoder.parameters(), *decoder.parameters())],
        # the closed form every VAE tutorial writes by hand, for the same KL
        "kl_by_hand": -0.5 * T.sum(1 + logvar - mu.pow(2) - logvar.exp()),
    }


def fixed_eps(monkeypatch):
    """Normal.rsample's noise replaced, on both libraries, by the same fixed array."""

    def patch(T):
        module = T.distributions.normal

        def standard_normal(shape, dtype, device=None):
            assert tuple(shape) == EPS.shape
            return T.tensor(EPS, dtype=dtype)

        monkeypatch.setattr(module, "_standard_normal", standard_normal)

    return patch


def squashed_gaussian_policy(T, eps_patch):
    """A SAC-style policy: Normal(mu, std) squashed by tanh (cached, as SAC implementations
    write it), a reparameterized action, its log-probability, and the actor loss."""
    D = T.distributions
    encoder = T.nn.Linear(6, 4)
    copy_weights(T, encoder, ENC_W, ENC_B)
    h = encoder(T.tensor(X, dtype=T.float32))
    mu, log_std = h[:, :2], h[:, 2:].clamp(-5, 2)
    policy = D.TransformedDistribution(D.Normal(mu, log_std.exp()), [D.TanhTransform(cache_size=1)])
    eps_patch(T)
    action = policy.rsample()
    log_prob = policy.log_prob(action).sum(-1)
    loss = (0.2 * log_prob - action.pow(2).sum(-1)).mean()
    loss.backward()
    return {
        "action": action,
        "log_prob": log_prob,
        "loss": loss,
        "grads": [p.grad for p in encoder.parameters()],
    }


def close(a, b, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)


def test_reinforce_step_matches_torch():
    nbgrad.manual_seed(0)
    torch.manual_seed(0)
    mine, real = reinforce_step(nbgrad), reinforce_step(torch)
    close(mine["loss"], real["loss"])
    close(mine["loss_after"], real["loss_after"])
    assert structure(mine["loss"].grad_fn) == structure(real["loss"].grad_fn)
    for a, b in zip(mine["grads"], real["grads"]):
        close(a, b)
    assert mine["sampled_shape"] == real["sampled_shape"] == (6,)
    assert mine["sampled_dtype"] == real["sampled_dtype"] == "torch.int64"


def test_vae_loss_and_gradients_match_torch(monkeypatch):
    patch = fixed_eps(monkeypatch)
    mine, real = vae_loss(nbgrad, patch), vae_loss(torch, patch)
    for key in ("z", "kl", "reconstruction", "loss"):
        close(mine[key], real[key])
        assert structure(mine[key].grad_fn) == structure(real[key].grad_fn), key
    for a, b in zip(mine["grads"], real["grads"]):
        close(a, b)
    close(mine["kl"], mine["kl_by_hand"])


def test_squashed_gaussian_policy_matches_torch(monkeypatch):
    patch = fixed_eps(monkeypatch)
    mine, real = squashed_gaussian_policy(nbgrad, patch), squashed_gaussian_policy(torch, patch)
    for key in ("action", "log_prob", "loss"):
        close(mine[key], real[key])
        assert structure(mine[key].grad_fn) == structure(real[key].grad_fn), key
    for a, b in zip(mine["grads"], real["grads"]):
        close(a, b)


def test_vae_rsample_is_mu_plus_eps_times_std(monkeypatch):
    """With eps fixed, z = mu + eps * std exactly: computed here in NumPy."""
    patch = fixed_eps(monkeypatch)
    out = vae_loss(nbgrad, patch)
    h = X.astype(np.float32) @ ENC_W.T.astype(np.float32) + ENC_B.astype(np.float32)
    expected = h[:, :2] + EPS.astype(np.float32) * np.exp(0.5 * h[:, 2:])
    np.testing.assert_allclose(out["z"].detach().numpy(), expected, rtol=1e-5, atol=1e-6)
