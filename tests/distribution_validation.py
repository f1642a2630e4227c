"""A fixture the distribution test files share (imported there: pytest finds it by name)."""

import pytest
import torch

import nbgrad


@pytest.fixture(autouse=True)
def validation_on_in_both_libraries():
    """Validation on, as by default: torch.compile (run by other test files) turns PyTorch's
    default off for the whole process (its tracer cannot follow the checks)."""
    saved = [T.distributions.Distribution._validate_args for T in (nbgrad, torch)]
    for T in (nbgrad, torch):
        T.distributions.Distribution.set_default_validate_args(True)
    yield
    for T, value in zip((nbgrad, torch), saved):
        T.distributions.Distribution.set_default_validate_args(value)
