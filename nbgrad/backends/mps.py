"""``nbgrad.backends.mps``: Apple's Metal backend is not available."""


def is_available():
    return False


def is_built():
    return False


def is_macos13_or_newer(minor=0):
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")
