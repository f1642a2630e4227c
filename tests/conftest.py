import numpy as np
import pytest

import nbgrad


@pytest.fixture
def torch():
    """Real PyTorch, to compare against (an optional extra: ``pip install -e '.[torch]'``)."""
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _fresh_state():
    """Every test starts with grad mode on and a seeded generator."""
    nbgrad.manual_seed(0)
    yield
    assert nbgrad.is_grad_enabled(), "a test left grad mode off"


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
