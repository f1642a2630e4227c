"""``nbgrad.backends.cudnn``: cuDNN's flags, settable as in PyTorch; no cuDNN to use them."""

enabled = True
benchmark = False
benchmark_limit = None
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
