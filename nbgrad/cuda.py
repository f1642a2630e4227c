"""``nbgrad.cuda``: what ``torch.cuda`` answers on a machine without GPUs (and without CUDA).

Queries answer as PyTorch's CPU build does (``is_available()`` is False, memory counters are 0,
seeding does nothing); whatever needs a GPU raises PyTorch's own error.
"""

from nbgrad.devices import NO_CUDA


def _no_cuda(*args, **kwargs):
    raise AssertionError(NO_CUDA)


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def _zero(device=None):
    return 0


memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero


def empty_cache():
    """Nothing is cached without a GPU."""


def manual_seed(seed):
    """Seeding a GPU that is not there does nothing (PyTorch defers it until CUDA starts)."""


def manual_seed_all(seed):
    """See ``manual_seed``."""


def seed():
    """See ``manual_seed``."""


def seed_all():
    """See ``manual_seed``."""


synchronize = get_device_name = get_device_capability = get_device_properties = _no_cuda
current_device = get_rng_state = _no_cuda
init = _no_cuda


def get_rng_state_all():
    return []


def _missing_binding(name):
    def missing(*args, **kwargs):
        # PyTorch's CPU build looks these bindings up in torch._C and does not find them.
        raise AttributeError(f"module 'torch._C' has no attribute '{name}'")

    return missing


reset_peak_memory_stats = _missing_binding("_cuda_resetPeakMemoryStats")
set_device = _missing_binding("_cuda_setDevice")
