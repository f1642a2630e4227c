"""``nbgrad.accelerator``: PyTorch's device-agnostic accelerator API, with no accelerator."""

from nbgrad.devices import NO_ACCELERATOR


def is_available():
    return False


def current_accelerator(check_available=False):
    return None


def device_count():
    return 0


def _none_available(*args, **kwargs):
    raise RuntimeError(NO_ACCELERATOR)


current_device_index = current_device_idx = set_device_index = set_device_idx = _none_available
synchronize = _none_available
