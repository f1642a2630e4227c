"""``nn.Parameter``: a tensor that a Module registers as one of its learnable parameters."""

from nbgrad.autograd import errors
from nbgrad.autograd.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and that a Module, on attribute assignment,
    adds to its ``parameters()``. It shares memory with the tensor it was made from."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from nbgrad.ops.creation import empty

            data = empty(0)
        if requires_grad and not data.is_floating_point():
            raise RuntimeError(errors.ONLY_FLOAT_REQUIRES_GRAD)
        param = cls._make(data._data, bool(requires_grad))
        param._version_counter = data._version_counter
        return param

    def __init__(self, data=None, requires_grad=True):
        """Everything happened in ``__new__`` (a Tensor has no ``__init__`` of its own)."""

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self._data, self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        copy = Parameter(Tensor._make(self._data.copy()), self._requires_grad)
        if self._grad is not None:
            copy._grad = Tensor._make(self._grad._data.copy())
        memo[id(self)] = copy
        return copy


def _rebuild_parameter(data, requires_grad):
    return Parameter(Tensor._make(data), requires_grad)
