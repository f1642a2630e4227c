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
