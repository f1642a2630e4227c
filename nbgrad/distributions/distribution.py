"""The one base class. A distribution is a batch of independent distributions (batch_shape), each
over values of event_shape. The base class holds what every distribution does the same way:
checking parameters and values, shapes of draws, expand, repr, and the derived quantities
(stddev from variance, perplexity from entropy, sample from rsample)."""

import warnings
from numbers import Number

import nbgrad

from . import constraints
from .utils import broadcast_all, lazy_property

__all__ = ["Distribution"]


def _shown_value(t):
    """A tensor in an error message: one number as the number, otherwise the tensor's print."""
    return str(t.item()) if t.dim() == 0 else str(t)


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = nbgrad.Size(batch_shape)
        self._event_shape = nbgrad.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self):
        try:
            wanted = self.arg_constraints
        except NotImplementedError:
            wanted = {}
            warnings.warn(
                f"{self.__class__} does not define `arg_constraints`. Please set "
                "`arg_constraints = {}` or initialize the distribution with "
                "`validate_args=False` to turn off validation.",
                stacklevel=3,
            )
        for name, constraint in wanted.items():
            if constraints.is_dependent(constraint):
                continue
            # a parameter computed lazily from the one given is not checked (nor computed)
            if name not in self.__dict__ and isinstance(
                getattr(type(self), name, None), lazy_property
            ):
                continue
            value = getattr(self, name)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of "
                    f"distribution {self!r} to satisfy the constraint {constraint!r}, but found "
                    f"invalid values:\n{_shown_value(value)}"
                )

    def _take_parameters(self, **given):
        """Keeps the parameters as attributes, tensors of one shape (Python numbers take the
        tensors' dtype), and returns the batch shape they make: () when all were numbers."""
        tensors = broadcast_all(*given.values())
        for name, tensor in zip(given, tensors):
            setattr(self, name, tensor)
        if all(isinstance(v, Number) for v in given.values()):
            return nbgrad.Size()
        return tensors[0].shape

    # --- shapes ----------------------------------------------------------------------------------

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        """The shape of a draw of sample_shape: sample_shape + batch_shape + event_shape."""
        return nbgrad.Size(
            tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)
        )

    def expand(self, batch_shape, _instance=None):
        """The same distribution repeated to a larger batch_shape: each parameter (the entries of
        `arg_constraints` the instance holds) expanded, its event dimensions kept."""
        new = self._expanded_shell(batch_shape, _instance)
        for name in self._parameter_names():
            if name in self.__dict__:
                value = self.__dict__[name]
                event = tuple(value.shape[len(self.batch_shape) :])
                new.__dict__[name] = value.expand(tuple(new.batch_shape) + event)
        return new

    def _expanded_shell(self, batch_shape, instance=None):
        """What every expand starts from: an instance of this class (or the one given) with the
        new batch_shape, this event_shape and this one's validation, its parameters still to be
        filled in (no __init__ is run: the parameters are already checked)."""
        new = instance if instance is not None else type(self).__new__(type(self))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _parameter_names(self):
        """The names of the tensors that define this distribution (what expand expands)."""
        return list(self.arg_constraints)

    # --- what subclasses provide -----------------------------------------------------------------

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

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample(self, sample_shape=()):
        """A draw without a graph: the reparameterized draw, computed under no_grad."""
        with nbgrad.no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n):
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

    # --- checking a value ------------------------------------------------------------------------

    def _validate_sample(self, value):
        """Refuses a value that is no tensor, whose shape does not fit, or outside the support."""
        if not isinstance(value, nbgrad.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dims = len(self._event_shape)
        if tuple(value.shape[value.dim() - event_dims :]) != tuple(self._event_shape):
            raise ValueError(
                "The right-most size of value must match event_shape: "
                f"{value.shape} vs {self._event_shape}."
            )
        batch_and_event = tuple(self._batch_shape) + tuple(self._event_shape)
        value_shape = tuple(value.shape)
        for mine, theirs in zip(reversed(value_shape), reversed(batch_and_event)):
            if mine != 1 and theirs != 1 and mine != theirs:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"{value.shape} vs {nbgrad.Size(batch_and_event)}."
                )
        support = self.support
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument (Tensor of shape {value_shape}) to be within the "
                f"support ({support!r}) of the distribution {self!r}, but found invalid "
                f"values:\n{_shown_value(value)}"
            )

    def _checked(self, value):
        """value, validated when this distribution validates."""
        if self._validate_args:
            self._validate_sample(value)
        return value

    def __repr__(self):
        shown = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                text = value.item() if value.numel() == 1 else value.shape
                shown.append(f"{name}: {text}")
        return f"{type(self).__name__}({', '.join(shown)})"
