"""``Distribution``, the base class: shapes, argument and sample validation, repr."""

import warnings

import nbgrad
from nbgrad.distributions import constraints
from nbgrad.distributions.utils import lazy_property

__all__ = ["Distribution"]


def _is_all_true(valid):
    return bool(valid.all())


class Distribution:
    """A probability distribution with parameters batched over ``batch_shape``; one draw has
    ``event_shape``. Validation, on by default as in PyTorch (like Python's ``assert``), checks
    parameters at construction and values given to log_prob / cdf."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = nbgrad.Size(batch_shape)
        self._event_shape = nbgrad.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()
        super().__init__()

    def _check_parameters(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(
                f"{self.__class__} does not define `arg_constraints`. "
                "Please set `arg_constraints = {}` or initialize the distribution "
                "with `validate_args=False` to turn off validation.",
                stacklevel=3,
            )
        for name, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # it depends on other parameters: nothing to check on its own
            if name not in self.__dict__ and isinstance(getattr(type(self), name), lazy_property):
                continue  # not given by the user (logits when probs were): nothing to check
            value = getattr(self, name)
            if not _is_all_true(constraint.check(value)):
                raise ValueError(
                    f"Expected parameter {name} "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} "
                    f"to satisfy the constraint {constraint!r}, "
                    f"but found invalid values:\n{value}"
                )

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        with nbgrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn(
            "`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return self.sample(nbgrad.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return nbgrad.exp(self.entropy())

    def _extended_shape(self, sample_shape=()):
        """The shape of a draw: sample_shape + batch_shape + event_shape."""
        shape = tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)
        return nbgrad.Size(shape)

    def _validate_sample(self, value):
        """PyTorch's checks on a value to score: a tensor, its rightmost dimensions equal to
        event_shape, broadcastable with batch_shape, inside the support."""
        if not isinstance(value, nbgrad.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.dim() - len(self._event_shape)
        if value.size()[event_start:] != self._event_shape:
            raise ValueError(
                "The right-most size of value must match event_shape: "
                f"{value.size()} vs {self._event_shape}."
            )
        actual = value.size()
        expected = nbgrad.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"{actual} vs {expected}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. "
                "Please initialize the distribution with `validate_args=False` to turn off "
                "validation.",
                stacklevel=3,
            )
            return
        if not _is_all_true(support.check(value)):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        shown = [name for name in self.arg_constraints if name in self.__dict__]
        parts = []
        for name in shown:
            value = self.__dict__[name]
            parts.append(f"{name}: {value if value.numel() == 1 else value.size()}")
        return f"{type(self).__name__}({', '.join(parts)})"


class ExponentialFamily(Distribution):
    """Distributions of the form exp(<natural params, t(x)> - F(natural params) + k(x)); the
    entropy follows from the log normalizer F by autograd (PyTorch's generic formula)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        natural = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*natural)
        grads = nbgrad.autograd.grad(log_normalizer.sum(), natural, create_graph=True)
        result += log_normalizer
        for param, grad in zip(natural, grads):
            result -= (param * grad).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
