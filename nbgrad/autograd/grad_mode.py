"""Grad modes: whether operations record a graph. Context managers and decorators, as in PyTorch."""

import functools

# One flag read by every operation; a plain module global is the cheapest thing to read.
_enabled = True


def is_grad_enabled():
    return _enabled


def _set_enabled(mode):
    global _enabled
    _enabled = bool(mode)


class _GradModeContext:
    """Base of no_grad and enable_grad: a context manager that is also a decorator."""

    _mode = None

    def __enter__(self):
        self._previous = _enabled
        _set_enabled(self._mode)
        return None

    def __exit__(self, *exc):
        _set_enabled(self._previous)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__.__new__(self.__class__) as _:
                return func(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):  # noqa: N801 - PyTorch's name
    _mode = False

    def __new__(cls, func=None):
        # `@no_grad` without parentheses is allowed by PyTorch too.
        instance = super().__new__(cls)
        if callable(func):
            return instance(func)
        return instance

    def __init__(self, func=None):
        pass


class enable_grad(no_grad):  # noqa: N801
    _mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Sets the mode at once (as a function call) and restores it when used as a context manager."""

    def __init__(self, mode):
        self._previous = _enabled
        self._mode = bool(mode)
        _set_enabled(mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _set_enabled(self._previous)
        return False

    def __call__(self, func):
        mode = self._mode
        _set_enabled(self._previous)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return func(*args, **kwargs)

        return wrapper


# --- inference mode -----------------------------------------------------------------------------
# Grad mode off, and every tensor made is an inference tensor: it can never be saved for a
# backward, nor written in place outside inference mode. The flag lives in the tensor module,
# whose constructor reads it.


def is_inference_mode_enabled():
    from nbgrad.autograd import tensor

    return tensor._inference_mode


def is_inference():
    from nbgrad.autograd import tensor

    return tensor._inference_mode


def _set_inference(mode):
    from nbgrad.autograd import tensor

    tensor._inference_mode = bool(mode)


class inference_mode:  # noqa: N801 - PyTorch's name
    """``with inference_mode():``, ``@inference_mode()``, ``@inference_mode`` and
    ``inference_mode(False)`` (grad mode back on, tensors normal again)."""

    def __new__(cls, mode=True):
        instance = super().__new__(cls)
        if callable(mode) and not isinstance(mode, bool):
            instance.__init__(True)
            return instance(mode)
        return instance

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self._previous = (_enabled, is_inference_mode_enabled())
        _set_enabled(not self.mode)
        _set_inference(self.mode)
        return None

    def __exit__(self, *exc):
        grad, inference = self._previous
        _set_enabled(grad)
        _set_inference(inference)
        return False

    def __call__(self, func):
        mode = self.mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__(self.mode)
