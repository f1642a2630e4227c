"""``nbgrad.device``: PyTorch's device objects, on a machine that has only a CPU.

Everything nbgrad computes lives on the CPU. Other devices can be named (``device("cuda:0")``)
as PyTorch names them; putting a tensor there raises what a CPU-only build of PyTorch raises.
"""

import builtins
import re

# The device types PyTorch's parser knows, in the order its error message lists them.
DEVICE_TYPES = (
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
)
NO_CUDA = "Torch not compiled with CUDA enabled"
NO_ACCELERATOR = "Cannot access accelerator device when none is available."
_MISSING = object()
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::(0|[1-9][0-9]*))?\Z")


def _signature_error(got):
    return TypeError(
        f"device() received an invalid combination of arguments - got ({got}), but expected "
        "one of:\n * (torch.device device)\n"
        + (
            f"      didn't match because some of the arguments have invalid types: (!{got}!)\n"
            if got
            else ""
        )
        + " * (str type, int index = -1)\n"
    )


class device:  # noqa: N801 - PyTorch's name
    """``device("cpu")``, ``device("cuda:0")``, ``device("cuda", 1)``, ``device(other)``."""

    __slots__ = ("_type", "_index", "_previous")

    def __init__(self, type=_MISSING, index=None):  # noqa: A002 - PyTorch's keywords
        if isinstance(type, device) and index is None:
            self._type, self._index = type._type, type._index
            return
        if isinstance(type, builtins.int) and not isinstance(type, builtins.bool):
            # A bare index names the current accelerator, of which there is none.
            raise RuntimeError(NO_ACCELERATOR)
        if not isinstance(type, str):
            raise _signature_error("" if type is _MISSING else builtins.type(type).__name__)
        if index is not None and not isinstance(index, builtins.int):
            raise TypeError(
                "device(): argument 'index' (position 2) must be int, not "
                f"{builtins.type(index).__name__}"
            )
        match = _DEVICE_STRING.match(type)
        if match is None:
            raise RuntimeError(f"Invalid device string: '{type}'")
        name, text_index = match.groups()
        if name not in DEVICE_TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device "
                f"string: {type}"
            )
        if text_index is not None:
            if index is not None:
                raise RuntimeError(
                    "type (string) must not include an index because index was passed "
                    f"explicitly: {type}"
                )
            index = builtins.int(text_index)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self._type, self._index = name, index

    @property
    def type(self):
        return self._type

    @property
    def index(self):
        return self._index

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other):
        # As in PyTorch, a device never equals a string: device("cpu") == "cpu" is False.
        if not isinstance(other, device):
            return NotImplemented
        return self._type == other._type and self._index == other._index

    def __hash__(self):
        return hash((self._type, self._index))

    def __lt__(self, other):
        raise TypeError("comparison not implemented")

    __le__ = __gt__ = __ge__ = __lt__

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        self._previous = _default
        set_default_device(self)

    def __exit__(self, *exc):
        set_default_device(self._previous)
        return False


CPU = device("cpu")

# set_default_device's device (None: the CPU, PyTorch's default).
_default = None


def set_default_device(dev):
    global _default
    _default = None if dev is None else device(dev)


def get_default_device():
    if _default is None:
        return CPU
    if _default._type == "cuda":
        raise AssertionError(NO_CUDA)
    return _default


def check(dev):
    """Raise what a CPU-only PyTorch raises for putting a tensor on ``dev`` (a device, a string,
    an index, or None for the default device)."""
    if dev is None:
        dev = _default
        if dev is None:
            return
    if dev.__class__ is str and dev == "cpu":
        return
    dev = device(dev)
    if dev._type == "cpu":
        return
    if dev._type == "cuda":
        raise AssertionError(NO_CUDA)
    raise RuntimeError(f"nbgrad runs on the CPU only: cannot put a tensor on {dev}")


def legacy_check(dev):
    """The legacy constructors' (``torch.Tensor(..., device=)``) own message."""
    if dev is None:
        return
    dev = device(dev)
    if dev._type != "cpu":
        raise RuntimeError(
            f"legacy constructor expects device type: cpu but device type: {dev._type} was passed"
        )
