"""Random number generators: ``nbgrad.Generator``, ``default_generator``, seeds and states.

Each Generator wraps a NumPy ``Generator`` over PCG64: the same seed gives the same numbers
within nbgrad, but not PyTorch's numbers (PyTorch uses a Mersenne Twister). A state
(``get_state``) is NumPy's PCG64 state serialized into a uint8 tensor of ``STATE_SIZE`` bytes
(PyTorch's are 5056 bytes long): states pass between nbgrad generators, not to PyTorch.
"""

import contextlib
import secrets

import numpy as np

from nbgrad import devices

_MASK64 = (1 << 64) - 1
# PCG64's 128-bit state and increment, the has_uint32 flag and the cached 32-bit half.
STATE_SIZE = 16 + 16 + 1 + 4


class Generator:
    """``torch.Generator(device='cpu')``: an independent stream of random numbers."""

    def __init__(self, device="cpu"):
        dev = devices.device(device) if not isinstance(device, devices.device) else device
        if dev.type == "cuda":
            raise RuntimeError(
                "Cannot get CUDA generator without ATen_cuda library. PyTorch splits its backend "
                "into two shared libraries: a CPU library and a CUDA library; this error has "
                "occurred because you are trying to use some CUDA functionality, but the CUDA "
                "library has not been loaded by the dynamic linker for some reason.  The CUDA "
                "library MUST be loaded, EVEN IF you don't directly use any symbols from the "
                "CUDA library! One common culprit is a lack of -Wl,--no-as-needed in your link "
                "arguments; many dynamic linkers will delete dynamic library dependencies if you "
                "don't depend on any of their symbols.  You can check if this has occurred by "
                "using ldd on your binary to see if there is a dependency on *_cuda.so library."
            )
        devices.check(dev)
        self._device = dev
        self._initial_seed = 0
        self._rng = np.random.default_rng(0)

    @classmethod
    def _wrapping(cls, rng, seed):
        generator = cls.__new__(cls)
        generator._device = devices.device("cpu")
        generator._initial_seed = seed
        generator._rng = rng
        return generator

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        seed = int(seed) & _MASK64  # PyTorch keeps a negative seed as its 64-bit wrap-around
        # Reseeded in place: whoever holds this generator's NumPy generator sees the new stream.
        self._rng.bit_generator.state = np.random.PCG64(seed).state
        self._initial_seed = seed
        return self

    def seed(self):
        """Seed from the operating system's entropy; returns the seed."""
        seed = secrets.randbits(63)
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        return self._initial_seed

    def get_state(self):
        from nbgrad.autograd.tensor import Tensor

        state = self._rng.bit_generator.state
        raw = (
            state["state"]["state"].to_bytes(16, "little")
            + state["state"]["inc"].to_bytes(16, "little")
            + bytes([state["has_uint32"]])
            + int(state["uinteger"]).to_bytes(4, "little")
        )
        return Tensor._make(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state):
        from nbgrad import dtypes
        from nbgrad.autograd.tensor import Tensor

        if not isinstance(new_state, Tensor) or new_state._dtype is not dtypes.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state._data.size != STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input RNG "
                f"state size to be {new_state._data.size}"
            )
        raw = new_state._data.reshape(-1).tobytes()
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {
                "state": int.from_bytes(raw[:16], "little"),
                "inc": int.from_bytes(raw[16:32], "little"),
            },
            "has_uint32": raw[32],
            "uinteger": int.from_bytes(raw[33:37], "little"),
        }
        return self

    def __repr__(self):
        return f"<torch._C.Generator object at {id(self):#x}>"


def _default():
    from nbgrad.ops import creation

    return creation.default_generator


def rng_of(generator):
    """The NumPy generator to draw from: the default one's, a Generator's, or (for nbgrad's
    own callers, as ``utils.data`` always allowed) a NumPy Generator given as is."""
    if generator is None:
        rng = _default()._rng
    elif isinstance(generator, Generator):
        rng = generator._rng
    elif isinstance(generator, np.random.Generator):
        rng = generator
    else:
        raise TypeError(f"expected a torch.Generator as generator=, got {type(generator).__name__}")
    if _vmaps:
        _drawing_in_vmap(rng)
    return rng


# --- draws inside torch.func.vmap, which runs its function once per element --------------------

_vmaps = []  # [randomness, {id(rng): (rng, state before its first draw)}] per vmap running


def _drawing_in_vmap(rng):
    for randomness, first_states in _vmaps:
        if randomness == "error":
            raise RuntimeError(
                "vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap"
            )
        if randomness == "same" and id(rng) not in first_states:
            first_states[id(rng)] = (rng, rng.bit_generator.state)


@contextlib.contextmanager
def drawing_per_element(randomness):
    """While ``vmap`` (nbgrad/func.py) runs its function once per element, draws follow its
    ``randomness``: "error" raises PyTorch's error at any draw, "different" lets each element
    draw its own numbers, "same" gives every element the numbers the first one drew (each
    generator it used is put back, before each element, to its state before that first draw).
    Yields a context manager to enter around each element."""
    entry = [randomness, {}]

    @contextlib.contextmanager
    def element():
        for rng, state in entry[1].values():
            rng.bit_generator.state = state
        yield

    _vmaps.append(entry)
    try:
        yield element
    finally:
        _vmaps.remove(entry)


def manual_seed(seed):
    """Seed the default generator (shared by every random function); returns it."""
    return _default().manual_seed(seed)


def seed():
    return _default().seed()


def initial_seed():
    return _default().initial_seed()


def get_rng_state():
    return _default().get_state()


def set_rng_state(new_state):
    _default().set_state(new_state)


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"
):  # noqa: E501
    """Restore the default generator's state on exit (nbgrad has only the CPU generator)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
